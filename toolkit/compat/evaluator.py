"""`mind2web2.evaluator` for imported judges: judgegen's Evaluator under Mind2Web 2's spellings.

The subclass only adds what older and newer published judges call that the core Evaluator
does not spell the same way (`id_=` for node ids, `close`, `add_existence_node`, id helpers,
`evaluator.verifier.logger` / `evaluator.extractor.logger` in error paths); it never changes
how a tree is built or scored, so an imported judge scores exactly as its native rewrite does.
The core Evaluator rejects unknown keywords; this layer is as lenient as Mind2Web 2 and no
more: it drops what Mind2Web 2 drops (`verify`'s unknown keywords, names that are no node
field given to a node builder, `initialize`'s cache and semaphore), and refuses with a
`TypeError` what Mind2Web 2 refuses (other `initialize` or `extract` keywords) or would act on
where judgegen cannot (node fields given to a builder). Mind2Web 2's options are honoured:
`verify(num_trials=, majority_vote=, use_screenshot=)`, the defaults of
`initialize(config=EvaluatorConfig(...))` and `extract(use_screenshot=)` set the trials voted
over and whether the model sees the page screenshots, as in Mind2Web 2.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from toolkit.backends import DEFAULT_JUDGE_MODEL
from toolkit.compat.eval_toolkit import EvaluatorConfig
from toolkit.evaluator import Evaluator as CoreEvaluator
from toolkit.keywords import keyword_names, unknown_keyword_error
from toolkit.tree import AggregationStrategy, VerificationNode

__all__ = ["DEFAULT_JUDGE_MODEL", "AggregationStrategy", "Evaluator", "VerificationNode"]


def _node_args(id: str | None, desc: str | None, kwargs: dict[str, Any]) -> tuple[str, str]:
    """The node id (given as `id` or as older judges' `id_`) and description, both required."""
    alias = kwargs.pop("id_", None)
    node_id = id if id is not None else alias
    if node_id is None:
        raise TypeError("a node needs an id (`id=` or `id_=`)")
    if desc is None:
        raise TypeError(f"node '{node_id}' needs a description (`desc=`)")
    return node_id, desc


MIND2WEB2_SETUP_KEYWORDS = frozenset(
    {
        "client",
        "task_description",
        "answer",
        "global_cache",
        "global_semaphore",
        "logger",
        "default_model",
        "extract_model",
        "verify_model",
        "config",
        "browser_manager",
    }
)
"""What Mind2Web 2's `initialize` passes on to `create_evaluator`, which takes no others."""


def _known(method: Callable[..., Any], kwargs: dict[str, Any]) -> dict[str, Any]:
    """The keywords of `kwargs` the core `method` accepts."""
    names = keyword_names(method)
    return {name: value for name, value in kwargs.items() if name in names}


def _refuse_node_fields(method: str, taken: set[str], kwargs: dict[str, Any]) -> None:
    """Refuse the node fields among a builder's extra keywords (`TypeError`).

    Mind2Web 2's `add_parallel`/`add_sequential`/`add_leaf` pass their extra keywords to
    `VerificationNode(...)`, which sets the fields among them (a parent's `score`, a leaf's
    `strategy`, ...) and ignores other names; judgegen builds the node from the builder's own
    arguments, so such a field would be dropped and the node differ from Mind2Web 2's. Names
    that are no node field are ignored, as there.
    """
    dropped = sorted((set(VerificationNode.model_fields) - taken) & set(kwargs))
    if dropped:
        raise TypeError(
            f"{method}() got the node field(s) {', '.join(f'`{n}`' for n in dropped)}, which "
            f"Mind2Web 2 sets on the node but {method} does not take under judgegen; set "
            "only id, desc, parent and critical (and a leaf's score and status)"
        )


def _setting(config: Any, name: str) -> Any:
    """`config`'s verification default `name`, or Mind2Web 2's when it sets none."""
    return getattr(config, name, getattr(EvaluatorConfig, name))


def _trials(kwargs: dict[str, Any], config: Any) -> int | None:
    """The trials Mind2Web 2 votes over for one `verify` (`_process_verify_params`,
    `_execute_verification`): 1 without majority voting or for one trial, else the count
    asked for, which must be odd; None when neither the call nor a config names any (the
    run's backend then votes as it always does, 3 trials by default as in Mind2Web 2)."""
    asked = kwargs.get("num_trials") or None  # Mind2Web 2 reads 0 as "the default" too
    if config is None and asked is None and "majority_vote" not in kwargs:
        return None
    trials, named = asked, "num_trials"
    if trials is None:
        trials = _setting(config, "default_num_trials")
        named = "EvaluatorConfig.default_num_trials"
    if isinstance(trials, bool) or not isinstance(trials, int) or trials < 1:
        raise ValueError(f"{named} must be a whole number of at least 1, got {trials!r}")
    if not kwargs.get("majority_vote", _setting(config, "default_majority_vote")) or trials == 1:
        return 1
    if trials % 2 == 0:
        raise ValueError(
            f"{named} must be odd for a majority vote (Mind2Web 2 asserts it), got {trials}; "
            "pass an odd count, or majority_vote=False for one call"
        )
    return trials


def _default_instruction(config: Any) -> str | None:
    """The instruction of a `verify` given none: the config's, as in Mind2Web 2; None for
    Mind2Web 2's own default, the text "None", which the prompts already show for none."""
    default = _setting(config, "default_additional_instruction")
    return None if default == EvaluatorConfig.default_additional_instruction else default


MAX_LOGGED_CHARS = 2000


class JudgeLog(logging.LoggerAdapter[logging.Logger]):
    """The logger Mind2Web 2 judges reach as `evaluator.verifier.logger`: records go to the
    runner's logger for the judge, and warnings and errors are also kept in the result's info
    (`judge_log`), so what a judge noticed in its error paths is not lost in a worker's stderr."""

    def __init__(self, logger: logging.Logger, evaluator: CoreEvaluator) -> None:
        super().__init__(logger, {})
        self._evaluator = evaluator

    def log(self, level: int, msg: object, *args: Any, **kwargs: Any) -> None:
        """Log as `logging.Logger.log` does, keeping warnings and errors in the result."""
        if level >= logging.WARNING:
            try:
                text = str(msg) % args if args else str(msg)
            except (TypeError, ValueError):
                text = " ".join(str(part) for part in (msg, *args))
            entry = {"level": logging.getLevelName(level), "message": text[:MAX_LOGGED_CHARS]}
            self._evaluator.add_custom_info(entry, "judge_log")
        super().log(level, msg, *args, **kwargs)


@dataclass(frozen=True)
class LoggingRole:
    """`evaluator.verifier` / `evaluator.extractor`: only their `logger` is used by judges."""

    logger: JudgeLog


class Evaluator(CoreEvaluator):
    """judgegen's Evaluator, accepting Mind2Web 2's historical keyword spellings."""

    logger: JudgeLog | None = None
    config: Any = None
    """The `EvaluatorConfig` given to `initialize`, if any: the verification defaults."""

    def initialize(
        self,
        task_id: str,
        strategy: AggregationStrategy | str = AggregationStrategy.PARALLEL,
        agent_name: str | None = None,
        answer_name: str | None = None,
        **kwargs: Any,
    ) -> VerificationNode:
        """Create the root; Mind2Web 2's cache, semaphore and browser keywords are dropped, the
        `logger=` it is given backs `verifier.logger` and its `config=` sets the verification
        defaults. A keyword Mind2Web 2's `create_evaluator` does not take either is a
        `TypeError`, as there."""
        accepted = MIND2WEB2_SETUP_KEYWORDS | keyword_names(CoreEvaluator.initialize)
        for name in kwargs:
            if name not in accepted:
                raise unknown_keyword_error("Evaluator.initialize", name, accepted)
        self.config = kwargs.get("config")
        known = _known(CoreEvaluator.initialize, kwargs)
        root = super().initialize(task_id, strategy, agent_name, answer_name, **known)
        given = kwargs.get("logger")
        base = given if isinstance(given, logging.Logger) else None
        self.logger = JudgeLog(base or logging.getLogger(f"judgegen.judge.{task_id}"), self)
        return root

    async def extract(
        self,
        prompt: str,
        template_class: type[BaseModel],
        extraction_name: str = "extraction",
        source: str | None = None,
        additional_instruction: str | None = None,
        *,
        use_screenshot: bool = True,
    ) -> BaseModel:
        """Extract as the core does, with Mind2Web 2's `use_screenshot` (whether the model
        sees a cited page's screenshots; on by default, whatever the `EvaluatorConfig` says,
        as in its `extract_from_url`). Any other keyword is a `TypeError`, as in Mind2Web 2."""
        return await self._extract(
            prompt,
            template_class,
            extraction_name,
            source,
            additional_instruction,
            screenshots=bool(use_screenshot),
        )

    async def verify(
        self,
        claim: str,
        node: VerificationNode | None,
        sources: str | Sequence[str] | None = None,
        **kwargs: Any,
    ) -> bool:
        """Verify as the core does, with Mind2Web 2's `num_trials`, `majority_vote` and
        `use_screenshot` (defaults from the `EvaluatorConfig`); other unknown keywords are
        dropped. An even or non-positive trial count is a `ValueError`, before any call."""
        trials = _trials(kwargs, self.config)
        screenshots = kwargs.get("use_screenshot", _setting(self.config, "default_use_screenshot"))
        instruction = kwargs.get("additional_instruction") or _default_instruction(self.config)
        return await self._verify(
            claim,
            node,
            sources,
            extra_prerequisites=kwargs.get("extra_prerequisites"),
            additional_instruction=instruction,
            trials=trials,
            screenshots=bool(screenshots),
        )

    async def batch_verify(
        self,
        claims_and_sources: Sequence[tuple[str, Any, VerificationNode, str | None]],
        **kwargs: Any,
    ) -> list[bool | BaseException]:
        """Verify several claims at once, through this layer's lenient `verify`."""
        return await asyncio.gather(
            *(
                self.verify(claim=c, node=n, sources=s, additional_instruction=a, **kwargs)
                for c, s, n, a in claims_and_sources
            ),
            return_exceptions=True,
        )

    @property
    def verifier(self) -> LoggingRole:
        """Mind2Web 2's verifier, as far as judges use it: its `logger`."""
        return LoggingRole(self._judge_log())

    @property
    def extractor(self) -> LoggingRole:
        """Mind2Web 2's extractor, as far as judges use it: its `logger`."""
        return LoggingRole(self._judge_log())

    def _judge_log(self) -> JudgeLog:
        if self.logger is None:
            name = f"judgegen.judge.{self.task_id or 'unknown'}"
            self.logger = JudgeLog(logging.getLogger(name), self)
        return self.logger

    def add_parallel(
        self,
        id: str | None = None,
        desc: str | None = None,
        parent: VerificationNode | None = None,
        critical: bool = False,
        **kwargs: Any,
    ) -> VerificationNode:
        """Add a parallel parent; `id_=` is accepted for `id=`, node fields are refused."""
        node_id, node_desc = _node_args(id, desc, kwargs)
        _refuse_node_fields("add_parallel", {"id", "desc", "critical"}, kwargs)
        return super().add_parallel(node_id, node_desc, parent, critical)

    def add_sequential(
        self,
        id: str | None = None,
        desc: str | None = None,
        parent: VerificationNode | None = None,
        critical: bool = False,
        **kwargs: Any,
    ) -> VerificationNode:
        """Add a sequential parent; `id_=` is accepted for `id=`, node fields are refused."""
        node_id, node_desc = _node_args(id, desc, kwargs)
        _refuse_node_fields("add_sequential", {"id", "desc", "critical"}, kwargs)
        return super().add_sequential(node_id, node_desc, parent, critical)

    def add_leaf(
        self,
        id: str | None = None,
        desc: str | None = None,
        parent: VerificationNode | None = None,
        critical: bool = False,
        score: float = 0.0,
        status: str = "initialized",
        **kwargs: Any,
    ) -> VerificationNode:
        """Add a leaf to be decided by `verify`; `id_=` is accepted for `id=`, other node
        fields are refused."""
        node_id, node_desc = _node_args(id, desc, kwargs)
        _refuse_node_fields("add_leaf", {"id", "desc", "critical", "score", "status"}, kwargs)
        return super().add_leaf(node_id, node_desc, parent, critical, score, status)

    def add_custom_node(
        self,
        result: bool,
        id: str | None = None,
        desc: str | None = None,
        parent: VerificationNode | None = None,
        critical: bool = True,
        **kwargs: Any,
    ) -> VerificationNode:
        """Add a leaf decided by a Python check; `id_=` is accepted for `id=`."""
        node_id, node_desc = _node_args(id, desc, kwargs)
        if kwargs:
            raise TypeError(f"add_custom_node got unexpected arguments: {sorted(kwargs)}")
        return super().add_custom_node(result, node_id, node_desc, parent, critical)

    def add_existence_node(
        self, result: bool, id: str, desc: str, **kwargs: Any
    ) -> VerificationNode:
        """Mind2Web 2's older name for `add_custom_node`."""
        return self.add_custom_node(result, id, desc, **kwargs)

    async def close(self) -> None:
        """Nothing to release: pages and browsers belong to the runner."""

    def get_all_node_ids(self) -> list[str]:
        """Every node id in the tree, sorted."""
        return sorted(node.id for node in self._nodes())

    def check_id_available(self, node_id: str) -> bool:
        """True when no node has this id yet."""
        return all(node.id != node_id for node in self._nodes())

    def get_node_count(self) -> int:
        """How many nodes the tree has, root included."""
        return sum(1 for _ in self._nodes())

    def _nodes(self) -> list[VerificationNode]:
        return [] if self.root is None else list(self.root.iter_nodes())
