"""Function-level diffs and splicing keep reviewed code byte-identical."""

from __future__ import annotations

from generator.review.codediff import diff_functions, splice

OLD = '''"""Judge."""
TASK_ID = "t"


async def evaluate(ev):
    # reviewed by a human
    await check_a(ev)
    await check_b(ev)


async def check_a(ev):
    ev.add_custom_node(result=True, id="a", desc="a")


async def check_b(ev):
    ev.add_custom_node(result=True,   id="b", desc="b")
'''


def test_reformatting_is_not_a_change():
    new = OLD.replace("result=True,   id", "result=True, id").replace(
        "    # reviewed by a human\n", ""
    )
    assert diff_functions(OLD, new).empty


def test_changed_added_and_removed_functions_are_listed():
    new = OLD.replace('id="b", desc="b"', 'id="b", desc="b2"').replace(
        'async def check_a(ev):\n    ev.add_custom_node(result=True, id="a", desc="a")\n',
        'async def check_c(ev):\n    ev.add_custom_node(result=True, id="c", desc="c")\n',
    )
    diff = diff_functions(OLD, new)
    assert (diff.added, diff.removed, diff.changed) == (["check_c"], ["check_a"], ["check_b"])


def test_splice_keeps_unchanged_functions_byte_identical():
    new = OLD.replace("    # reviewed by a human\n", "").replace('desc="b")', 'desc="bee")')
    new = new.replace("result=True,   id", "result=True, id")
    merged = splice(OLD, new)
    assert "    # reviewed by a human\n" in merged
    assert 'ev.add_custom_node(result=True, id="b", desc="bee")' in merged
    assert diff_functions(new, merged).empty


def test_splice_appends_new_functions_and_drops_removed_ones():
    new = (
        OLD + '\n\nasync def check_d(ev):\n    ev.add_custom_node(result=True, id="d", desc="d")\n'
    )
    merged = splice(OLD, new)
    assert merged.startswith(OLD) and "async def check_d" in merged
    assert diff_functions(new, merged).empty


def test_splice_with_changed_module_constants_keeps_reviewed_functions():
    new = OLD.replace('TASK_ID = "t"', 'TASK_ID = "t2"').replace("    # reviewed by a human\n", "")
    merged = splice(OLD, new)
    assert 'TASK_ID = "t2"' in merged and "# reviewed by a human" in merged


def test_splice_keeps_the_order_of_a_new_function_placed_before_the_reviewed_ones():
    helper = 'async def check_0(ev):\n    ev.add_custom_node(result=True, id="z", desc="z")\n'
    new = OLD.replace("async def check_a(ev):", helper + "\n\nasync def check_a(ev):")
    new = new.replace("    # reviewed by a human\n", "")
    merged = splice(OLD, new)
    assert diff_functions(new, merged).empty
    assert "    # reviewed by a human\n" in merged
    assert merged.index("def check_0") < merged.index("def check_a")


def test_a_module_docstring_change_is_named():
    new = OLD.replace('"""Judge."""', '"""Judge, edited."""')
    (change,) = diff_functions(OLD, new).module_level
    assert (change.name, change.kind) == ("module docstring", "changed")
    assert change.to_text() == "~ module docstring: 'Judge.' -> 'Judge, edited.'"
