"""The Evaluator a judge drives: it builds the rubric tree and routes extraction/verification.

It keeps the public Mind2Web 2 method names and keyword arguments so their judges port by an
import rewrite alone. Differences, on purpose: an infrastructure failure marks the node
`error` and the evaluation `incomplete` (never a silent 0); `score()` and `get_summary()`
always reflect the final tree.
"""

from __future__ import annotations

import asyncio
import builtins
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel

from toolkit.backends import (
    DEFAULT_JUDGE_MODEL,
    UNAVAILABLE_REASON,
    ExtractRequest,
    JudgingBackend,
    ScriptedBackend,
    Verdict,
    VerifyRequest,
)
from toolkit.callsite import judge_line, track_origins
from toolkit.errors import TreeError
from toolkit.extraction import coerce_extraction
from toolkit.keywords import strict_keywords
from toolkit.sources import (
    DetachedCheck,
    NoPages,
    PageSource,
    SourceChecker,
    normalize_sources,
    settle,
)
from toolkit.tree import (
    AggregationStrategy,
    VerificationNode,
    prerequisite_leaves,
    tree_statistics,
)

SUMMARY_VERSION = 1
VERIFY_CANCELLED = "verify_cancelled"
"""Kind of the error a verification cancelled before its verdict leaves in the summary (the
judge stopped waiting for it, or ran out of time): its leaf got no verdict, so the evaluation
is incomplete, the judge's error (`toolkit.runner.judging` reports it so)."""


class Evaluator:
    """The `ev` a judge's `evaluate(ev)` receives: its root node already exists.

    Build the rubric under `ev.root` with `add_parallel` / `add_sequential` / `add_leaf` /
    `add_custom_node`, read the answer with `extract`, decide each leaf exactly once with
    `verify` (or `add_custom_node` for a Python check). The runner scores the tree. Every
    method rejects an unknown keyword with a `TypeError` that names the closest valid one.
    """

    def __init__(self) -> None:
        self.root: VerificationNode | None = None
        self.backend: JudgingBackend = ScriptedBackend()
        self.pages: PageSource = NoPages()
        self.task_id: str = ""
        self.task_description: str = ""
        self.answer: str = ""
        self.agent_name: str = "unknown_agent"
        self.answer_name: str = "unknown_answer"
        self.judge_model: str = DEFAULT_JUDGE_MODEL
        self.extract_model: str = DEFAULT_JUDGE_MODEL
        self.errors: list[dict[str, Any]] = []
        self.verifications: list[dict[str, Any]] = []
        self.missing_sources: list[str] = []
        self.detach_partners = False
        """Whether a verification returns once a cited page supports its claim, leaving its
        wave partners' checks running (`toolkit.sources`): set by a runner that calls
        `settle_partners` before it takes the summary."""
        self._detached: list[DetachedCheck] = []
        self._extractions: list[dict[str, Any]] = []
        self._ground_truth: list[dict[str, Any]] = []
        self._custom_info: list[dict[str, Any]] = []
        self._used_ids: set[str] = set()
        self._parents: dict[int, VerificationNode] = {}
        track_origins()  # a verification the judge runs in a task is placed at its own line

    @classmethod
    @strict_keywords
    def create(
        cls,
        *,
        task_id: str,
        task_description: str,
        answer: str,
        backend: JudgingBackend,
        pages: PageSource | None = None,
        strategy: AggregationStrategy | str = AggregationStrategy.PARALLEL,
        agent_name: str | None = None,
        answer_name: str | None = None,
        judge_model: str | None = None,
        extract_model: str | None = None,
    ) -> Evaluator:
        """A ready evaluator with its root node, without calling `initialize`."""
        evaluator = cls()
        evaluator.initialize(
            task_id=task_id,
            strategy=strategy,
            agent_name=agent_name,
            answer_name=answer_name,
            task_description=task_description,
            answer=answer,
            backend=backend,
            pages=pages,
            verify_model=judge_model,
            extract_model=extract_model,
        )
        return evaluator

    @strict_keywords
    def initialize(
        self,
        task_id: str,
        strategy: AggregationStrategy | str = AggregationStrategy.PARALLEL,
        agent_name: str | None = None,
        answer_name: str | None = None,
        *,
        client: Any = None,
        backend: JudgingBackend | None = None,
        pages: PageSource | None = None,
        task_description: str | None = None,
        answer: str | None = None,
        default_model: str | None = None,
        extract_model: str | None = None,
        verify_model: str | None = None,
    ) -> VerificationNode:
        """Create the (non-critical) root and bind the backend, pages, answer and task.

        `client` is a runner-provided judge context carrying `backend` and `pages` (Mind2Web
        2's spelling); the compatibility layer also accepts and drops their cache, semaphore
        and logger. An unknown keyword is a `TypeError` naming the closest valid one.
        """
        backend = backend or getattr(client, "backend", None)
        pages = pages or getattr(client, "pages", None)
        if backend is not None:
            self.backend = backend
        if pages is not None:
            self.pages = pages
        self.task_id = task_id
        self.agent_name = agent_name or "unknown_agent"
        self.answer_name = answer_name or "unknown_answer"
        self.task_description = task_description or f"Evaluation for {task_id}"
        self.answer = answer or ""
        default_model = default_model or getattr(backend, "model", None)
        self.judge_model = verify_model or default_model or DEFAULT_JUDGE_MODEL
        extract_default = getattr(backend, "extract_model", None) or self.judge_model
        self.extract_model = extract_model or extract_default
        self.root = VerificationNode(
            id="root",
            desc=self.task_description,
            critical=False,
            strategy=AggregationStrategy(strategy),
        )
        self._used_ids = {"root"}
        self._parents = {}
        return self.root

    # -- building the tree -------------------------------------------------------------

    def _unique_id(self, base_id: str) -> str:
        if base_id not in self._used_ids:
            self._used_ids.add(base_id)
            return base_id
        counter = 1
        while f"{base_id}_{counter}" in self._used_ids:
            counter += 1
        self._used_ids.add(f"{base_id}_{counter}")
        return f"{base_id}_{counter}"

    def _add(self, parent: VerificationNode | None, *, id: str, **fields: Any) -> VerificationNode:
        if self.root is None:
            raise TreeError("Evaluator not initialized: call initialize() or Evaluator.create().")
        node = VerificationNode(id=self._unique_id(id), **fields)
        target = parent or self.root
        target.add_node(node)
        self._parents[builtins.id(node)] = target
        return node

    @strict_keywords
    def add_parallel(
        self,
        id: str,
        desc: str,
        parent: VerificationNode | None = None,
        critical: bool = False,
    ) -> VerificationNode:
        """Add a group scored as the mean of its non-critical children.

        Any critical child below 1 scores the group 0; all-critical children give 1.
        `critical=True` makes this group gate its own parent (and forces its children to be
        critical). `parent=None` attaches it to the root. A repeated id gets `_1`, `_2`, ….
        """
        return self._add(parent, id=id, desc=desc, critical=critical, strategy="parallel")

    @strict_keywords
    def add_sequential(
        self,
        id: str,
        desc: str,
        parent: VerificationNode | None = None,
        critical: bool = False,
    ) -> VerificationNode:
        """Add a group whose children are checked in order: after the first child scoring
        below 1, every later child is skipped (score 0). Use it when later checks only make
        sense if earlier ones hold (e.g. "the item exists" before "its price is right").
        Scoring after the cut is as in `add_parallel`.
        """
        return self._add(parent, id=id, desc=desc, critical=critical, strategy="sequential")

    @strict_keywords
    def add_leaf(
        self,
        id: str,
        desc: str,
        parent: VerificationNode | None = None,
        critical: bool = False,
        score: float = 0.0,
        status: str = "initialized",
    ) -> VerificationNode:
        """Add a leaf that a later `verify(claim=..., node=leaf)` decides, exactly once.

        `critical=True` means the parent scores 0 unless this leaf passes. `score` and
        `status` are for porting old judges only; a new judge leaves them alone.
        """
        if score not in (0.0, 1.0):
            raise TreeError(f"Leaf nodes must have binary scores (0.0 or 1.0), got {score}")
        if status not in {"passed", "failed", "skipped", "initialized"}:
            raise TreeError(f"Invalid leaf status '{status}'")
        return self._add(parent, id=id, desc=desc, critical=critical, score=score, status=status)

    @strict_keywords
    def add_custom_node(
        self,
        result: bool,
        id: str,
        desc: str,
        parent: VerificationNode | None = None,
        critical: bool = True,
    ) -> VerificationNode:
        """Add a leaf decided at once by a Python check (`result` is its verdict).

        Critical by default, so a failure scores the parent 0 — the usual existence gate
        ("the answer names a commit"). Pass `critical=False` for partial credit. Never
        skipped, costs no LLM call; prefer `toolkit.checks` helpers for `result`.
        """
        passed = bool(result)
        return self._add(
            parent,
            id=id,
            desc=desc,
            critical=critical,
            score=1.0 if passed else 0.0,
            status="passed" if passed else "failed",
        )

    @strict_keywords
    def add_ground_truth(self, gt_info: dict, gt_type: str = "ground_truth") -> None:
        """Record ground truth in the summary's info list."""
        self._ground_truth.append({gt_type: gt_info})

    @strict_keywords
    def add_custom_info(
        self, info: dict, info_type: str = "custom", info_name: str | None = None
    ) -> None:
        """Record any extra information in the summary's info list."""
        self._custom_info.append({info_name or info_type: info})

    @strict_keywords
    def find_node(self, node_id: str) -> VerificationNode | None:
        """The node with this id, or None."""
        if self.root is None:
            return None
        return next((n for n in self.root.iter_nodes() if n.id == node_id), None)

    def _parent_of(self, node: VerificationNode) -> VerificationNode | None:
        parent = self._parents.get(id(node))
        if parent is not None or self.root is None or node is self.root:
            return parent
        for candidate in self.root.iter_nodes():
            if any(child is node for child in candidate.children):
                self._parents[id(node)] = candidate
                return candidate
        return None

    # -- judging --------------------------------------------------------------------------

    @strict_keywords
    async def extract(
        self,
        prompt: str,
        template_class: type[BaseModel],
        extraction_name: str = "extraction",
        source: str | None = None,
        additional_instruction: str | None = None,
    ) -> BaseModel:
        """Extract `template_class` from the answer (`source=None`) or from the cited page.

        Give every template field a default (`str | None = None`, `list[X] = []`): a value
        the text does not state comes back null. Use `list[...]` fields for repeated items.
        A missing page yields an all-null result (no model call). The result is recorded in
        the summary under `extraction_name`. An infrastructure failure raises `InfraError`;
        let it propagate (the evaluation is reported incomplete, never scored 0).
        """
        return await self._extract(
            prompt, template_class, extraction_name, source, additional_instruction
        )

    async def _extract(
        self,
        prompt: str,
        template_class: type[BaseModel],
        extraction_name: str,
        source: str | None,
        additional_instruction: str | None,
        *,
        screenshots: bool = True,
    ) -> BaseModel:
        """`extract`, with whether a cited page's screenshots are shown, which only the
        Mind2Web 2 layer chooses (its `use_screenshot`; see `ExtractRequest`)."""
        if self.root is None:
            raise TreeError("Evaluator not initialized: call initialize() or Evaluator.create().")
        try:  # a template that cannot be filled (`TemplateError`) is recorded too
            request = ExtractRequest.for_template(
                template_class,
                prompt=prompt,
                source=source,
                source_text=self.answer if source is None else None,
                task_description=self.task_description,
                additional_instruction=additional_instruction,
                task_id=self.task_id,
                screenshots=screenshots,
            )
            if source is None:
                raw = await self.backend.extract(request)
            else:  # the page is attached where the page store lives
                raw = await self._sources().extract(request, source)
            result = coerce_extraction(template_class, raw)
        except Exception as exc:
            self._record_error("extract", extraction_name, exc)
            raise
        self._extractions.append({extraction_name: result.model_dump(mode="json")})
        return result

    @strict_keywords
    async def verify(
        self,
        claim: str,
        node: VerificationNode | None,
        sources: str | Sequence[str] | None = None,
        *,
        extra_prerequisites: Sequence[VerificationNode] | None = None,
        additional_instruction: str | None = None,
    ) -> bool:
        """Decide `node` by checking `claim`; returns whether it passed.

        No sources: a plain check. One URL: is the claim supported by that page. Several:
        supported by any; pages are checked two at a time in order, and the first that
        supports the claim decides (later ones are not checked). `sources` are URLs the
        answer cites for the claim (from an extraction); `additional_instruction` tells the
        verifier what variation to accept or what to focus on (e.g. "dates in any format"). The leaf is `skipped`
        without any backend call when a prerequisite leaf (critical siblings at every level,
        sequential predecessors, `extra_prerequisites`) is failed or skipped.
        """
        return await self._verify(
            claim,
            node,
            sources,
            extra_prerequisites=extra_prerequisites,
            additional_instruction=additional_instruction,
        )

    async def _verify(
        self,
        claim: str,
        node: VerificationNode | None,
        sources: str | Sequence[str] | None,
        *,
        extra_prerequisites: Sequence[VerificationNode] | None,
        additional_instruction: str | None,
        trials: int | None = None,
        screenshots: bool = True,
    ) -> bool:
        """`verify`, with the per-verification options only the Mind2Web 2 layer passes
        (`trials`, `screenshots`: see `VerifyRequest`); a judge's run settings choose them."""
        if node is not None:
            blocked = next(
                (
                    leaf
                    for leaf in prerequisite_leaves(node, self._parent_of, extra_prerequisites)
                    if leaf.status in ("failed", "skipped")
                ),
                None,
            )
            if blocked is not None:
                node.score, node.status = 0.0, "skipped"
                self._log_verification(node, claim, [], None, f"skipped: '{blocked.id}' failed")
                return False
        if additional_instruction == "None":
            additional_instruction = None
        urls = normalize_sources(sources)
        # a list of sources none of which is a URL (an extraction gave no link: [None], [""])
        # cites a page that is not there: unsupported, never a plain check of the claim
        cites_nothing = not urls and isinstance(sources, (list, tuple)) and len(sources) > 0
        # logged in the order verifications start, not finish
        entry: dict[str, Any] = {"line": judge_line()}
        self.verifications.append(entry)
        try:
            if cites_nothing:
                verdict, used = Verdict(passed=False, reasoning=UNAVAILABLE_REASON), None
            else:
                plain = self._plain_request(claim, additional_instruction, trials, screenshots)
                checker = self._sources()
                verdict, used = await checker.decide(plain, urls, self._target(node, claim))
                self._detached += checker.detached
                self.errors += checker.partner_errors
        except Exception as exc:
            self.verifications[:] = [e for e in self.verifications if e is not entry]
            self._verify_failed(node, claim, exc)
            return False
        except asyncio.CancelledError:
            self.verifications[:] = [e for e in self.verifications if e is not entry]
            self._cancelled(node, claim)
            raise
        if node is not None:
            node.score, node.status = (1.0, "passed") if verdict.passed else (0.0, "failed")
            node.error = None
        self._log_verification(node, claim, urls, used, verdict.reasoning, verdict.passed, entry)
        return verdict.passed

    def _cancelled(self, node: VerificationNode | None, claim: str) -> None:
        """Record a verification cancelled before its verdict (`asyncio.wait_for` around
        `verify`, `task.cancel()`): its leaf is `error`, never a failed check whose score
        would depend on how fast the verdict came, and the evaluation incomplete."""
        target = f"leaf '{node.id}'" if node is not None else f"claim {claim[:80]!r}"
        message = (
            f"the verification of {target} was cancelled before its verdict: the judge "
            "stopped waiting for it (asyncio.wait_for, task.cancel) or ran out of time. Let "
            "every ev.verify finish: the runner's --timeout stops a judge that is too slow"
        )
        if node is not None:
            node.score, node.status = 0.0, "error"
            node.error = (
                "CancelledError: its verification was cancelled before its verdict (the judge "
                "stopped waiting for it, or ran out of time)"
            )
        self.errors.append(
            {
                "operation": "verify",
                "target": self._target(node, claim),
                "type": "CancelledError",
                "kind": VERIFY_CANCELLED,
                "message": message,
            }
        )

    def _sources(self) -> SourceChecker:
        return SourceChecker(
            self.backend, self.pages, self.missing_sources, detach=self.detach_partners
        )

    async def settle_partners(self) -> None:
        """Wait for the wave partners' checks verifications left running (`detach_partners`):
        one that failed leaves its claim's verdict as it is and makes the evaluation
        incomplete (`toolkit.sources.partner_error`). Not while a verification the judge
        started is still running: the judge returned without its verdict, its own error
        (`toolkit.runner.judging.unfinished_verifications`), and waiting here would give that
        verdict time to arrive that a sandboxed judge's never gets; `discard_partners` ends
        them instead."""
        if any("passed" not in entry for entry in self.verifications):
            return
        detached, self._detached = self._detached, []
        self.errors += await settle(detached)

    def discard_partners(self) -> None:
        """Cancel the wave partners' checks still running (the judge failed, ran out of time
        or left a verification running: its evaluation is incomplete already); a sandboxed
        job's are cancelled alike (`toolkit.runner.judging.settles_partners`)."""
        for check in self._detached:
            check.task.cancel()
        self._detached = []

    @staticmethod
    def _target(node: VerificationNode | None, claim: str) -> str:
        """How an error entry names a verification: its leaf, else the claim's start."""
        return node.id if node is not None else claim[:80]

    def _verify_failed(self, node: VerificationNode | None, claim: str, exc: BaseException) -> None:
        """A verification's failure: its leaf is `error`, the evaluation incomplete."""
        if node is not None:
            node.score, node.status = 0.0, "error"
            node.error = f"{type(exc).__name__}: {exc}"
        self._record_error("verify", self._target(node, claim), exc)

    def _plain_request(
        self, claim: str, instruction: str | None, trials: int | None, screenshots: bool
    ) -> VerifyRequest:
        """The verification of `claim` before any page is attached."""
        return VerifyRequest(
            claim=claim,
            task_description=self.task_description,
            answer=self.answer,
            additional_instruction=instruction,
            task_id=self.task_id,
            trials=trials,
            screenshots=screenshots,
        )

    @strict_keywords
    async def batch_verify(
        self,
        claims_and_sources: Sequence[tuple[str, Any, VerificationNode, str | None]],
    ) -> list[bool | BaseException]:
        """Run several `(claim, sources, node, additional_instruction)` verifications at once.

        Returns one entry per tuple, in order: the verdict, or the exception it raised
        (exceptions are returned in the list, not raised).
        """
        return await asyncio.gather(
            *(
                self.verify(claim=c, node=n, sources=s, additional_instruction=a)
                for c, s, n, a in claims_and_sources
            ),
            return_exceptions=True,
        )

    def _record_error(self, operation: str, target: str, exc: BaseException) -> None:
        self.errors.append(
            {
                "operation": operation,
                "target": target,
                "type": type(exc).__name__,
                "kind": getattr(exc, "kind", "exception"),
                "message": str(exc),
            }
        )

    def _log_verification(
        self,
        node: VerificationNode | None,
        claim: str,
        sources: list[str],
        supported_by: str | None,
        reasoning: str,
        passed: bool | None = None,
        entry: dict[str, Any] | None = None,
    ) -> None:
        """Fill `entry` (the slot reserved when the verification started) or append one.

        `line` is the judge line that called `verify` (for the generator's evidence checks).
        """
        if entry is None:
            entry = {"line": judge_line()}
            self.verifications.append(entry)
        entry.update(
            node_id=node.id if node else None,
            claim=claim,
            sources=sources,
            supported_by=supported_by,
            passed=passed,
            reasoning=reasoning,
        )

    # -- results --------------------------------------------------------------------------

    @property
    def status(self) -> str:
        """`incomplete` when any infrastructure error happened or a verification was
        cancelled before its verdict, else `complete`."""
        if self.errors:
            return "incomplete"
        has_error = self.root is not None and any(
            n.status == "error" for n in self.root.iter_nodes()
        )
        return "incomplete" if has_error else "complete"

    def score(self) -> float:
        """The root's score for the tree as it is now."""
        return 0.0 if self.root is None else self.root.compute_score(mutate=True)

    def get_summary(self) -> dict[str, Any]:
        """Mind2Web 2's result shape plus task_id, status, errors, verifications, missing pages.

        The info list holds extractions, then ground truth, then custom info, as theirs does.
        """
        final = self.score()
        info = [*self._extractions, *self._ground_truth, *self._custom_info] or [
            {"no_info": "No information recorded"}
        ]
        return {
            "version": SUMMARY_VERSION,
            "task_id": self.task_id,
            "agent_name": self.agent_name,
            "answer_name": self.answer_name,
            "final_score": final,
            "status": self.status,
            "errors": list(self.errors),
            "judge_model": self.judge_model,
            "extract_model": self.extract_model,
            "eval_breakdown": [
                {
                    "info": info,
                    "verification_tree": self.root.to_dict() if self.root else {},
                }
            ],
            "tree_statistics": (
                tree_statistics(self.root)
                if self.root
                else {"depth": 0, "total_nodes": 0, "leaf_nodes": 0}
            ),
            "verifications": list(self.verifications),
            "missing_sources": list(self.missing_sources),
        }
