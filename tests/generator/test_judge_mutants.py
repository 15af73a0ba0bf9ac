"""A gate audit by deliberately wrong judges: every way an LLM-drafted judge is wrong that we
know of is rejected by a gate, and the gate that rejects it is the one named for it.

Two honest judges pass every gate: `launch_gate`'s (a critical, sequential official-page gate,
a date and a day count) and the reviewed `nobel_physics_2023` judge (three laureates, each
with a cited award and affiliation). Each mutant damages one of them the way drafted judges go
wrong: a claim checked against the answer text instead of the cited page, a verdict ignored
or overwritten, a critical flag flipped, a missing value that passes, a tolerance that lets
anything through, a page the judge picked instead of the one cited, an expected value copied
from a sample answer, one required item of several checked. Each is run through the gates as
`generate` runs them, with the base task's authored replies (and `judge_mutants/`'s verdicts
for the claims only wrong judges ask): lint, debug, acceptance, then mutation testing with
`--min-kill-rate` set to what the honest judge achieves and every rewrite keeping the meaning
held to its score (the date written as ISO: extraction of a rewritten answer is authored, as
for a mutated one, as that text writes the value). The first gate that fails it is the one
named; a mutant no gate catches yet is an `xfail` whose reason says what gate it needs.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pytest
from click.testing import CliRunner

from generator.cli import main
from generator.review.record import StageRecord
from generator.stages.checking import check_candidate, close_judge_runs, mutation_stage
from generator.stages.context import build_context
from generator.stages.pipeline import check_mutation, start_run
from generator.stages.provenance import strip_header
from generator.stages.run import GenerationFailed, PipelineOptions
from generator.stages.spec import load_spec
from tests.generator.scripted_generation import EXAMPLE_REPLIES, ROOT, FixturePolicy
from tests.generator.test_typical_mistakes import FIXTURE as LAUNCH_GATE
from tests.generator.test_typical_mistakes import honest_source, page_store
from toolkit.llm.client import LLMClient
from toolkit.llm.models import LLMRequest
from toolkit.llm.scripted import ScriptedProvider

MUTANT_VERDICTS = ROOT / "tests" / "fixtures" / "generator" / "judge_mutants"
NOBEL = "nobel_physics_2023"


@dataclass(frozen=True)
class Base:
    """An honest judge, its task and authored replies, and the kill rate it achieves."""

    task_dir: Path
    replies: Path
    source: str
    kill_rate: float


BASES = {
    "launch": Base(LAUNCH_GATE, LAUNCH_GATE / "replies", honest_source(), 1.0),
    "nobel": Base(
        ROOT / "tasks" / NOBEL,
        EXAMPLE_REPLIES / NOBEL / "replies",
        strip_header((ROOT / "generated_judges" / f"{NOBEL}.py").read_text()),
        0.5,  # 2 of 4: the good answer's year and "Nobel Prize" may change unnoticed
    ),
}


class MutantPolicy(FixturePolicy):
    """The base task's authored replies; verdicts from its own file, then `judge_mutants/`'s."""

    def __init__(self, base: Base) -> None:
        super().__init__(base.task_dir, base.replies, fixed_usage=False)
        extra = MUTANT_VERDICTS / f"{load_spec(base.task_dir).task_id}.verdicts.json"
        self.entries = json.loads((base.replies / "verdicts.json").read_text())
        self.entries += json.loads(extra.read_text())

    def verdict(self, request: LLMRequest) -> dict:
        prompt = request.prompt_text()
        for entry in self.entries:
            if entry["claim"] in prompt and (entry.get("source") or "") in prompt:
                return {"reasoning": entry["reasoning"], "result": entry["passed"]}
        raise KeyError(f"no authored verdict for this verification:\n{prompt[-1500:]}")


@pytest.fixture(scope="module")
def pages(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A page store per base task: the launch pages, and the example pages of the laureates."""
    root = tmp_path_factory.mktemp("pages")
    nobel = root / NOBEL
    imported = ["cache-pages", "--import-m2w2", str(ROOT / "examples" / "pages")]
    assert CliRunner().invoke(main, [*imported, "--store", str(nobel)]).exit_code == 0
    return {"launch": page_store(root / "launch_gate"), "nobel": nobel}


@dataclass
class Gates:
    """Which gate rejected a judge first (None: none did) and the stages it recorded."""

    caught_by: str | None
    stages: list[StageRecord]
    kill_rate: float | None = None
    failure: str | None = None


async def run_gates(
    source: str, base: Base, pages: Path, tmp: Path, *, gate_kill_rate: bool = True
) -> Gates:
    """`source` through the gates as `generate` runs them on a candidate: lint, debug and
    acceptance (`check_candidate`), then mutation testing (`check_mutation`: every rewrite
    keeping the meaning keeps the score, and the kill rate clears `--min-kill-rate`, set to
    the honest judge's unless `gate_kill_rate` is False)."""
    loaded = load_spec(base.task_dir)
    options = PipelineOptions(
        model="m",
        extract_model="e",
        repo=tmp,
        commit=False,
        isolation="in_process",
        pages=pages,
        min_kill_rate=base.kill_rate if gate_kill_rate else None,
    )
    client = LLMClient(ScriptedProvider(MutantPolicy(base)), model="m")
    context = build_context(loaded, judges_dir=tmp, reviews_dir=tmp)
    run = start_run(loaded, options, client, None, lambda message: None, context)
    try:
        checked = await check_candidate(run, source, 0, "candidate")
        if checked.problem is not None:  # `lint+debug` when both found something
            return Gates(checked.problem.stage.split("+")[0], run.stages)
        mutation = await mutation_stage(run, checked.source)
        try:
            check_mutation(run, mutation)
        except GenerationFailed as exc:
            return Gates("mutation", run.stages, mutation.kill_rate, str(exc))
        return Gates(None, run.stages, mutation.kill_rate)
    finally:
        await close_judge_runs(run)


@dataclass(frozen=True)
class Mutant:
    """One wrong judge: its base, the gate that must reject it, and the edits that make it."""

    base: str
    gate: str
    edits: tuple[tuple[str, str], ...]

    def source(self) -> str:
        """The base judge with every edit applied (each must apply exactly once)."""
        source = BASES[self.base].source
        for old, new in self.edits:
            assert source.count(old) == 1, old
            source = source.replace(old, new)
        return source


ENTRY = "async def evaluate(ev: Evaluator) -> None:\n"
LAUNCH_PAGE_CHECK = """\
    confirms = ev.add_leaf(
        id="official_page_confirms_launch",
        desc="The official page confirms the launch date",
        parent=gate,
        critical=True,
    )
    await ev.verify(
        claim=f"The Helios-2 probe launched on {GROUND_TRUTH['launch_date']}.",
        node=confirms,
        sources=launch.page_url,
    )
"""
LAUNCH_URL = 'checks.url_in_domain(launch.page_url, GROUND_TRUTH["official_domain"]),'
LAUNCH_DAYS = 'checks.same_number(launch.days_to_orbit, GROUND_TRUTH["days_to_orbit"]),'
LAUNCH_DATE = (
    'result=checks.same_date(launch.launch_date, GROUND_TRUTH["launch_date"], dayfirst=False),'
)
NOBEL_AWARD_VERIFY = """\
        await ev.verify(
            claim=f"{truth['name']} was awarded the 2023 Nobel Prize in Physics.",
            node=award_leaf,
            sources=person.source_urls,
        )
"""
NOBEL_AWARD_CHECK = (
    """\
        award_leaf = ev.add_leaf(
            id=f"laureate_{index}_award_supported",
            desc=f"A cited page supports {truth['name']}'s 2023 Nobel Prize in Physics",
            parent=award,
            critical=True,
        )
"""
    + NOBEL_AWARD_VERIFY
)
NOBEL_AWARD_SOURCES = "            node=award_leaf,\n            sources=person.source_urls,\n"
NOBEL_AFFILIATION_SOURCES = "            node=supported,\n            sources=person.source_urls,\n"

MUTANTS: dict[str, Mutant] = {
    # (a) the claim is checked against the answer's own text, never the cited page
    "launch-page_claim_checked_against_the_answer_text": Mutant(
        "launch", "debug", (("        sources=launch.page_url,\n", ""),)
    ),
    "launch-page_claim_checked_against_the_answer_text_quietly": Mutant(
        "launch",
        "debug",
        (
            ("        sources=launch.page_url,\n", ""),
            ("The official page confirms the launch date", "The launch date is confirmed"),
        ),
    ),
    "nobel-award_checked_against_the_answer_text": Mutant(
        "nobel", "debug", ((NOBEL_AWARD_SOURCES, "            node=award_leaf,\n"),)
    ),
    "nobel-affiliation_checked_against_the_answer_text_quietly": Mutant(
        "nobel",
        "acceptance",
        (
            (NOBEL_AFFILIATION_SOURCES, "            node=supported,\n"),
            (
                "A cited page supports {truth['name']}'s affiliation",
                "{truth['name']}'s affiliation is right",
            ),
        ),
    ),
    # (b) the page is opened but its verdict does not decide the leaf
    "launch-page_verdict_ignored": Mutant(
        "launch",
        "debug",
        (
            (
                LAUNCH_PAGE_CHECK,
                """\
    await ev.verify(
        claim=f"The Helios-2 probe launched on {GROUND_TRUTH['launch_date']}.",
        node=None,
        sources=launch.page_url,
    )
    ev.add_custom_node(
        result=bool(launch.page_url),
        id="official_page_confirms_launch",
        desc="The official page confirms the launch date",
        parent=gate,
        critical=True,
    )
""",
            ),
        ),
    ),
    "launch-page_verdict_overwritten": Mutant(
        "launch",
        "debug",
        (
            (
                "        sources=launch.page_url,\n    )\n",
                "        sources=launch.page_url,\n    )\n    if launch.page_url:\n"
                '        confirms.score, confirms.status = 1.0, "passed"\n',
            ),
        ),
    ),
    "nobel-award_verdict_outweighed": Mutant(
        "nobel",
        "debug",
        (
            (
                NOBEL_AWARD_CHECK,
                """\
        on_page = await _on_page(
            ev, f"{truth['name']} was awarded the 2023 Nobel Prize in Physics.", person.source_urls
        )
        ev.add_custom_node(
            result=on_page or bool(person.source_urls),
            id=f"laureate_{index}_award_supported",
            desc=f"A cited page supports {truth['name']}'s 2023 Nobel Prize in Physics",
            parent=award,
        )
""",
            ),
            (
                ENTRY,
                '''async def _on_page(ev: Evaluator, claim: str, urls: list[str]) -> bool:
    """Whether a cited page supports `claim`."""
    return await ev.verify(claim=claim, node=None, sources=urls)


'''
                + ENTRY,
            ),
        ),
    ),
    # (c) one required item of several checked (remove_table_row drops a later laureate)
    "nobel-only_the_first_laureate_checked": Mutant(
        "nobel", "mutation", (("enumerate(expected, 1)", "enumerate(expected[:1], 1)"),)
    ),
    "nobel-laureates_matched_by_position": Mutant(
        "nobel",
        "acceptance",
        (
            (
                'person = _find(extracted.laureates, truth["name"])',
                "person = (\n            extracted.laureates[index - 1]\n"
                "            if len(extracted.laureates) >= index\n"
                "            else Laureate()\n        )",
            ),
        ),
    ),
    # (d) a critical flag off where a failure must zero the parent, or on where it must not
    "launch-official_gate_not_critical": Mutant(
        "launch",
        "acceptance",
        (
            (
                'which confirms the launch",\n        critical=True,',
                'which confirms the launch",\n        critical=False,',
            ),
        ),
    ),
    "launch-day_count_made_critical": Mutant(
        "launch",
        "acceptance",
        (
            (
                '42 days after launch",\n        critical=False,',
                '42 days after launch",\n        critical=True,',
            ),
        ),
    ),
    "nobel-other_laureates_not_critical": Mutant(
        "nobel",
        "debug",
        (
            (
                'laureate",\n        critical=True,',
                'laureate",\n        critical=False,',
            ),
        ),
    ),
    "nobel-affiliation_made_critical": Mutant(
        "nobel",
        "acceptance",
        (
            (
                'is supported",\n            parent=node,\n',
                'is supported",\n            parent=node,\n            critical=True,\n',
            ),
        ),
    ),
    # (e) an exception swallowed as a pass
    "launch-missing_link_swallowed_as_official": Mutant(
        "launch",
        "debug",
        (
            (LAUNCH_URL, "_official(launch.page_url),"),
            (
                ENTRY,
                '''def _official(url: str | None) -> bool:
    """Whether the linked page is on the official mission domain."""
    try:
        return url.split("/")[2].endswith(GROUND_TRUTH["official_domain"])
    except Exception:
        return True


'''
                + ENTRY,
            ),
        ),
    ),
    "nobel-award_errors_swallowed": Mutant(
        "nobel",
        "lint",
        (
            (
                NOBEL_AWARD_VERIFY,
                """\
        try:
            await ev.verify(
                claim=f"{truth['name']} was awarded the 2023 Nobel Prize in Physics.",
                node=award_leaf,
                sources=person.source_urls,
            )
        except Exception:
            award_leaf.score, award_leaf.status = 1.0, "passed"
""",
            ),
        ),
    ),
    # (f) the wrong field read
    "launch-day_count_read_from_the_date": Mutant(
        "launch",
        "lint",
        (("same_number(launch.days_to_orbit,", "same_number(launch.launch_date,"),),
    ),
    "nobel-cited_check_reads_the_name": Mutant(
        "nobel", "debug", (("result=bool(person.source_urls),", "result=bool(person.name),"),)
    ),
    "nobel-claims_checked_on_pages_the_judge_builds": Mutant(
        "nobel",
        "debug",
        (
            (
                NOBEL_AWARD_SOURCES,
                "            node=award_leaf,\n" + '            sources=_facts(truth["name"]),\n',
            ),
            (
                NOBEL_AFFILIATION_SOURCES,
                "            node=supported,\n" + '            sources=_facts(truth["name"]),\n',
            ),
            (
                ENTRY,
                '''def _facts(name: str) -> str:
    """The laureate's facts page on nobelprize.org."""
    slug = name.split()[-1].lower().replace("'", "")
    return f"https://www.nobelprize.org/prizes/physics/2023/{slug}/facts/"


'''
                + ENTRY,
            ),
        ),
    ),
    # (g) a missing value passes
    "launch-missing_day_count_passes": Mutant(
        "launch",
        "debug",
        (
            (
                "result=" + LAUNCH_DAYS,
                "result=launch.days_to_orbit is None\n        or " + LAUNCH_DAYS,
            ),
        ),
    ),
    "launch-missing_link_passes_the_gate": Mutant(
        "launch",
        "debug",
        (("result=" + LAUNCH_URL, "result=launch.page_url is None\n        or " + LAUNCH_URL),),
    ),
    # (h) a tolerance so loose a wrong value passes
    "launch-day_count_within_half": Mutant(
        "launch",
        "acceptance",
        (
            (
                "result=" + LAUNCH_DAYS,
                "result=checks.same_number(\n"
                '            launch.days_to_orbit, GROUND_TRUTH["days_to_orbit"], rel_tol=0.5\n'
                "        ),",
            ),
        ),
    ),
    # shift_day moves the date within its month
    "launch-launch_date_compared_by_month": Mutant(
        "launch",
        "mutation",
        (
            (
                LAUNCH_DATE,
                "result=str(checks.parse_date(launch.launch_date))[:7]\n"
                '        == GROUND_TRUTH["launch_date"][:7],',
            ),
        ),
    ),
    # (i) an expected value taken from the sample answers, not the task (reformat_date writes
    # the good answer's date as 2024-03-14: the same day, a lower score)
    "launch-launch_date_copied_from_the_good_answer": Mutant(
        "launch", "mutation", ((LAUNCH_DATE, 'result=launch.launch_date == "March 14, 2024",'),)
    ),
    "launch-ground_truth_mistyped": Mutant(
        "launch", "acceptance", (('"days_to_orbit": 42,', '"days_to_orbit": 24,'),)
    ),
}

# Mutants no gate catches yet: the gate each would need.
UNCAUGHT: dict[str, str] = {}


def _param(name: str) -> object:
    marks = [pytest.mark.xfail(strict=True, reason=UNCAUGHT[name])] if name in UNCAUGHT else []
    return pytest.param(name, id=name, marks=marks)


@pytest.mark.parametrize("base", sorted(BASES))
async def test_the_honest_judge_passes_every_gate(
    base: str, pages: dict[str, Path], tmp_path: Path
) -> None:
    gates = await run_gates(BASES[base].source, BASES[base], pages[base], tmp_path)
    assert gates.caught_by is None, [s for s in gates.stages if s.status == "failed"]
    assert gates.kill_rate is not None and gates.kill_rate >= BASES[base].kill_rate


@pytest.mark.parametrize("name", [_param(name) for name in MUTANTS])
async def test_a_wrong_judge_is_rejected_by_the_gate_named_for_it(
    name: str, pages: dict[str, Path], tmp_path: Path
) -> None:
    mutant = MUTANTS[name]
    gates = await run_gates(mutant.source(), BASES[mutant.base], pages[mutant.base], tmp_path)
    assert gates.caught_by == mutant.gate
    failed = [s for s in gates.stages if s.stage == mutant.gate and s.status == "failed"]
    assert failed, f"the {mutant.gate} stage recorded no failure"


async def test_a_judge_comparing_a_copied_date_as_text_is_told_the_rewrite_scores_and_fix(
    pages: dict[str, Path], tmp_path: Path
) -> None:
    """The generation's failure names the answer, the rewrite, both scores and what to do;
    its kill rate alone would have passed the gate."""
    mutant = MUTANTS["launch-launch_date_copied_from_the_good_answer"]
    gates = await run_gates(mutant.source(), BASES["launch"], pages["launch"], tmp_path)
    assert gates.kill_rate is not None and gates.kill_rate >= BASES["launch"].kill_rate
    assert gates.failure is not None
    assert gates.failure == (
        "a rewrite that keeps the answer's meaning changed the judge's score: good: "
        "reformat_date (March 14, 2024 -> 2024-03-14) scored 0.5 instead of 1; compare values by "
        "meaning with toolkit.checks (same_date, parse_number, ...), not by their written form; "
        "never copy an expected value from a sample answer"
    )
    mutation = next(s for s in gates.stages if s.stage == "mutation")
    assert mutation.details[0] == (
        "rewrite changed the score: good: reformat_date (March 14, 2024 -> 2024-03-14) scored 0.5 "
        "instead of 1"
    )


async def test_a_changed_rewrite_fails_the_generation_without_min_kill_rate(
    pages: dict[str, Path], tmp_path: Path
) -> None:
    """No threshold makes a judge that reads how a date is written acceptable."""
    mutant = MUTANTS["launch-launch_date_copied_from_the_good_answer"]
    gates = await run_gates(
        mutant.source(), BASES["launch"], pages["launch"], tmp_path, gate_kill_rate=False
    )
    assert gates.caught_by == "mutation"
    assert gates.failure is not None and "reformat_date" in gates.failure
