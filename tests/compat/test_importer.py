"""The import codemod: which imports it rewrites, what it leaves alone, what it reports."""

from __future__ import annotations

import importlib

import pytest

from generator.importer import rewrite_source
from toolkit.compat.mapping import MODULES, exported_names
from toolkit.errors import SpecError

ENTRY = "\n\nasync def evaluate_answer(client, answer, agent_name, answer_name, cache, semaphore, logger, model='o4-mini'):\n    return {}\n"


def rewrite(code: str):
    return rewrite_source(code + ENTRY)


def rewritten_head(code: str) -> str:
    return rewrite(code).code.decode().split("\n\n")[0]


def test_from_import_is_pointed_at_the_compat_module():
    out = rewritten_head("from mind2web2.evaluator import Evaluator, AggregationStrategy")
    assert out == "from toolkit.compat.evaluator import Evaluator, AggregationStrategy"


def test_aliased_names_keep_their_aliases():
    out = rewritten_head("from mind2web2.verification_tree import VerificationNode as VN")
    assert out == "from toolkit.compat.verification_tree import VerificationNode as VN"


def test_multiline_import_keeps_its_layout_and_comments():
    code = "from mind2web2.evaluator import (\n    Evaluator,  # main\n    VerificationNode,\n)"
    out = rewritten_head(code)
    assert out == code.replace("mind2web2.evaluator", "toolkit.compat.evaluator")


def test_import_module_as_alias_imports_the_target_module():
    out = rewritten_head("import mind2web2.api_tools.tool_googlemap as gm")
    assert out == "import toolkit.tools.maps as gm"


def test_bare_dotted_import_binds_the_compat_root_under_the_same_name():
    out = rewritten_head("import mind2web2.utils.cache_filesys")
    assert out == "import toolkit.compat as mind2web2"
    namespace: dict = {}
    exec(out + "\ncache = mind2web2.utils.cache_filesys.CacheFileSys('dir')", namespace)
    assert namespace["cache"] is not None


def test_only_mind2web2_aliases_of_a_multi_import_change():
    assert (
        rewritten_head("import os, mind2web2 as m, json") == "import os, toolkit.compat as m, json"
    )


def test_submodule_imported_by_name_from_its_package():
    out = rewritten_head("from mind2web2.api_tools import tool_googlemap")
    assert out == "from toolkit.compat.api_tools import tool_googlemap"
    namespace: dict = {}
    exec(out, namespace)
    assert hasattr(namespace["tool_googlemap"], "GoogleMapsTool")


def test_star_import_is_rewritten():
    out = rewritten_head("from mind2web2.utils.cache import *")
    assert out == "from toolkit.compat.utils.cache import *"


def test_import_inside_a_function_is_rewritten():
    result = rewrite(
        "def helper():\n    from mind2web2 import CacheFileSys\n    return CacheFileSys"
    )
    assert "    from toolkit.compat import CacheFileSys\n" in result.code.decode()


def test_other_imports_and_code_stay_byte_identical():
    code = "import asyncio\nfrom pydantic import BaseModel\nfrom mind2web2x import y\nx = 1  # mind2web2\n"
    result = rewrite_source(code + ENTRY)
    assert result.code.decode() == code + ENTRY
    assert result.rewrites == []


def test_crlf_line_endings_survive():
    code = "from mind2web2 import Evaluator\r\nx = 1\r\n" + ENTRY.replace("\n", "\r\n")
    out = rewrite_source(code.encode()).code
    assert out == code.replace("mind2web2", "toolkit.compat").encode()


def test_unknown_name_is_reported_with_its_line_and_left_unchanged():
    result = rewrite("import os\nfrom mind2web2.evaluator import Evaluator, SourceKind")
    assert [(p.line, p.module, p.name) for p in result.problems] == [
        (2, "mind2web2.evaluator", "SourceKind")
    ]
    assert "from mind2web2.evaluator import Evaluator, SourceKind" in result.code.decode()


def test_unknown_module_is_reported_for_both_import_forms():
    result = rewrite("from mind2web2.crawl import crawl\nimport mind2web2.metrics as m")
    assert [(p.line, p.module, p.name) for p in result.problems] == [
        (1, "mind2web2.crawl", None),
        (2, "mind2web2.metrics", None),
    ]
    assert result.rewrites == []


def test_rewrites_record_line_module_target_and_names():
    result = rewrite("import os\nfrom mind2web2 import Evaluator as E, LLMClient")
    [entry] = result.rewrites
    assert (entry.line, entry.module, entry.target) == (2, "mind2web2", "toolkit.compat")
    assert entry.names == ["Evaluator", "LLMClient"]


def test_judge_without_an_entry_point_is_reported():
    result = rewrite_source("from mind2web2 import Evaluator\n")
    assert len(result.problems) == 1
    assert "evaluate_answer" in result.problems[0].message


def test_source_that_is_not_python_is_a_spec_error():
    with pytest.raises(SpecError) as info:
        rewrite_source("def broken(:\n", "judges/broken.py")
    assert info.value.file == "judges/broken.py"


@pytest.mark.parametrize("module", sorted(MODULES))
def test_every_mapped_module_imports_and_exports_its_names(module):
    target = importlib.import_module(MODULES[module])
    names = exported_names(module)
    assert names
    assert all(hasattr(target, name) for name in names)


PUBLISHED_IMPORT_HEADERS = [
    "from mind2web2 import Evaluator, AggregationStrategy, CacheFileSys",
    "from mind2web2 import CacheFileSys, Evaluator, VerificationNode, AggregationStrategy, LLMClient",
    "from mind2web2.evaluator import Evaluator, VerificationNode, AggregationStrategy",
    "from mind2web2.verification_tree import VerificationNode, AggregationStrategy",
    "from mind2web2.utils.cache_filesys import CacheFileSys",
    "from mind2web2.utils.cache import CacheClass",
    "from mind2web2.llm_client.base_client import LLMClient",
    "from mind2web2.api_tools import tool_googlemap",
    "from mind2web2.eval_toolkit import create_evaluator, Extractor, Verifier",
]


@pytest.mark.parametrize("header", PUBLISHED_IMPORT_HEADERS)
def test_import_lines_seen_in_published_judges_all_map_and_run(header):
    result = rewrite(header)
    assert result.problems == []
    exec(result.code.decode().split("\n\n")[0], {})


def test_bare_package_import_binds_the_compat_root():
    assert rewritten_head("import mind2web2") == "import toolkit.compat as mind2web2"


def test_missing_attribute_of_an_imported_module_is_reported_at_its_use():
    result = rewrite(
        "import mind2web2.api_tools.tool_googlemap as gm\n\ntool = gm.DirectionsTool()"
    )
    assert [(p.line, p.module, p.name) for p in result.problems] == [
        (3, "mind2web2.api_tools.tool_googlemap", "DirectionsTool")
    ]


def test_attributes_the_compat_modules_provide_are_accepted():
    code = (
        "import mind2web2.evaluator\n"
        "from mind2web2.api_tools import tool_googlemap\n\n"
        "ev = mind2web2.evaluator.Evaluator()\n"
        "maps = tool_googlemap.GoogleMapsTool()\n"
        "strategy = mind2web2.verification_tree.AggregationStrategy.PARALLEL\n"
    )
    assert rewrite(code).problems == []


def test_unknown_submodule_reached_through_the_root_is_reported():
    result = rewrite("import mind2web2\n\nurls = mind2web2.crawl.discover_task_urls")
    assert [(p.module, p.name) for p in result.problems] == [("mind2web2", "crawl")]


def test_local_variable_shadowing_an_imported_module_is_not_checked():
    code = (
        "from mind2web2 import evaluator, Evaluator\n\n"
        "def build():\n"
        "    evaluator = Evaluator()\n"
        "    return evaluator.add_leaf(id='x', desc='x')\n"
    )
    assert rewrite(code).problems == []


def test_import_statement_rewrites_record_the_bound_name():
    result = rewrite("import mind2web2.evaluator\nimport mind2web2.verification_tree as vt")
    assert [(r.target, r.alias) for r in result.rewrites] == [
        ("toolkit.compat", "mind2web2"),
        ("toolkit.compat.verification_tree", "vt"),
    ]
