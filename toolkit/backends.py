"""Judging backends: what answers a judge's `extract` and `verify` requests.

The Evaluator never talks to an LLM directly; it builds an `ExtractRequest` or a
`VerifyRequest` (one source per request) and asks a backend. `LLMBackend` renders the
prompts in `prompts/toolkit/` and calls an LLM client with majority voting;
`ScriptedBackend` answers from plain Python callables, for tests and deterministic judges.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field, field_validator

from toolkit.awaitables import resolve
from toolkit.errors import TemplateError

if TYPE_CHECKING:  # the LLM layer loads with LLMBackend's first request: judges never need it
    from toolkit.llm.models import ImagePart, LLMRequest, LLMResponse, Message

DEFAULT_JUDGE_MODEL = "o4-mini"
SCREENSHOT_PARTS = 16
"""Screenshots whose request part `LLMBackend` keeps, so each is hashed once per page."""
UNAVAILABLE_REASON = (
    "unsupported: source unavailable (the page is missing, invalid or inaccessible)"
)


class ExtractRequest(BaseModel):
    """Extract structured information from the answer (`source` None) or from one cited page."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    prompt: str
    template_class: type[BaseModel] | None = Field(
        default=None, description="The pydantic template; None once the request crossed a process."
    )
    output_schema: dict[str, Any] = Field(description="JSON schema of the template.")
    schema_name: str = "Extraction"
    source: str | None = Field(default=None, description="URL of the page, None for the answer.")
    source_text: str | None = Field(
        default=None,
        description="The answer text, or the page text (None when the page is missing).",
    )
    images: list[str] = Field(default_factory=list, description="Base64 JPEG page screenshots.")
    task_description: str = ""
    additional_instruction: str | None = None
    task_id: str | None = None
    screenshots: bool = Field(
        default=True, description="Show the model `images`; False sends the page text alone."
    )

    @classmethod
    def for_template(cls, template_class: type[BaseModel], **fields: Any) -> ExtractRequest:
        """Build a request whose schema is taken from `template_class`."""
        return cls(
            template_class=template_class,
            output_schema=_schema_of(template_class),
            schema_name=template_class.__name__,
            **fields,
        )


@lru_cache(maxsize=2)
def _rules(purpose: str) -> str:
    """The system rules for "extract" or "verify" requests: a template without variables,
    rendered once (every request sends the same text)."""
    from prompts import render

    return render(f"toolkit/rules_{purpose}.j2")


@lru_cache(maxsize=512)
def _schema_of(template_class: type[BaseModel]) -> dict[str, Any]:
    """The template's JSON schema, built once per class (shared: never mutate it).

    A template with a map field (`dict[str, X]`, `dict`) is a `TemplateError`: strict
    structured output closes every object (`toolkit.llm.schema`), so the model could only
    ever fill a map with `{}` and the judge would silently read an empty result.
    """
    schema = template_class.model_json_schema()
    maps = _map_fields(schema, schema, "", frozenset())
    if maps:
        fields = ", ".join(f"'{path or '(the template itself)'}'" for path in maps)
        raise TemplateError(
            f"extraction template {template_class.__name__} has a map field (a dict with free "
            f"keys) at {fields}: structured output closes every object, so the model could only "
            "ever return it empty. Fix: use a list of models with key and value fields, e.g. "
            "`class Entry(BaseModel): key: str | None = None; value: int | None = None` and "
            "`entries: list[Entry] = []`"
        )
    return schema


def _map_fields(node: Any, root: dict[str, Any], path: str, seen: frozenset[str]) -> list[str]:
    """The paths (`places[].tags`) of the maps under `node`: objects without declared
    properties, in every place `toolkit.llm.schema` closes objects, following `$ref`s (each
    once per path, so a recursive model ends)."""
    if not isinstance(node, dict):
        return []
    found: list[str] = []
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/") and ref not in seen:
        target: Any = root
        for part in ref[2:].split("/"):
            target = target.get(part) if isinstance(target, dict) else None
        found += _map_fields(target, root, path, seen | {ref})
    if node.get("type") == "object" and "properties" not in node:
        found.append(path)
    for name, child in node.get("properties", {}).items():
        found += _map_fields(child, root, f"{path}.{name}" if path else name, seen)
    for key in ("anyOf", "oneOf", "allOf"):
        for child in node.get(key, []):
            found += _map_fields(child, root, path, seen)
    return found + _map_fields(node.get("items"), root, f"{path}[]", seen)


def warm_template_schemas() -> None:
    """Build, as a judge's first `extract` does, the schema of a throwaway template shaped
    like judges' (optional fields, a list default, a nested list of models), and check an
    output against it. pydantic compiles and caches what that needs on first use (0.4–1.6 ms
    of CPU and ~95 page faults per job, `bench/startup_bench.py`): the sandbox's fork server
    calls this once idle, so the jobs it forks afterwards inherit it instead."""

    class _Place(BaseModel):
        name: str | None = None
        year: int | None = None
        official: bool | None = None
        urls: list[str] = Field(default_factory=list)

    class _Places(BaseModel):
        places: list[_Place] = Field(default_factory=list)

    _Places.model_json_schema()
    _Places.model_validate({"places": [{"name": "x", "year": 1, "urls": ["https://a.example"]}]})


class VerifyRequest(BaseModel):
    """Is `claim` true (no sources), or supported by the one page in `sources`?"""

    claim: str
    sources: list[str] = Field(default_factory=list, description="Zero or one URL.")
    page_texts: list[str | None] = Field(
        default_factory=list, description="Text of each source; None when the page is missing."
    )
    images: list[str] = Field(default_factory=list, description="Base64 JPEG page screenshots.")
    task_description: str = ""
    answer: str = ""
    additional_instruction: str | None = None
    task_id: str | None = None
    trials: int | None = Field(
        default=None,
        description="Trials to majority-vote (odd, 1 = one call); None: the backend's own count.",
    )
    screenshots: bool = Field(
        default=True, description="Show the model `images`; False sends the page text alone."
    )

    @field_validator("trials")
    @classmethod
    def _odd_trials(cls, trials: int | None) -> int | None:
        """A majority of an even count can tie, so only an odd count of at least 1 is valid."""
        if trials is not None and (trials < 1 or trials % 2 == 0):
            raise ValueError(f"trials must be an odd number of at least 1, got {trials}")
        return trials

    @property
    def source_missing(self) -> bool:
        """True when a source was cited but its page is not available."""
        return bool(self.sources) and any(text is None for text in self.page_texts)


class Verdict(BaseModel):
    """The outcome of one verification."""

    passed: bool
    reasoning: str = ""


@runtime_checkable
class JudgingBackend(Protocol):
    """What the Evaluator needs: structured extraction and binary verification."""

    async def extract(self, request: ExtractRequest) -> BaseModel | dict[str, Any]: ...

    async def verify(self, request: VerifyRequest) -> Verdict: ...


class LLMClientLike(Protocol):
    """The one method of the LLM layer a backend needs."""

    async def complete(self, request: LLMRequest) -> LLMResponse: ...


ExtractFn = Callable[[ExtractRequest], BaseModel | dict[str, Any] | Awaitable[Any]]
VerifyFn = Callable[[VerifyRequest], Verdict | bool | Awaitable[Any]]


def _empty_extraction(request: ExtractRequest) -> dict[str, Any]:
    return {}


def _always_pass(request: VerifyRequest) -> Verdict:
    return Verdict(passed=True, reasoning="scripted: pass")


class ScriptedBackend:
    """A backend made of two callables (sync or async); called once per request.

    `extract` returns a template instance or a dict (missing fields become null);
    `verify` returns a `Verdict` or a bool. `calls` records every request, in order.
    """

    def __init__(self, extract: ExtractFn | None = None, verify: VerifyFn | None = None) -> None:
        self._extract = extract or _empty_extraction
        self._verify = verify or _always_pass
        self.calls: list[ExtractRequest | VerifyRequest] = []

    async def extract(self, request: ExtractRequest) -> BaseModel | dict[str, Any]:
        self.calls.append(request)
        return await resolve(self._extract(request))

    async def verify(self, request: VerifyRequest) -> Verdict:
        self.calls.append(request)
        result = await resolve(self._verify(request))
        if isinstance(result, bool):
            return Verdict(passed=result, reasoning=f"scripted: {'pass' if result else 'fail'}")
        return result


_TEMPLATES = ("extract_answer", "extract_page", "verify_page", "verify_plain")
"""The per-request templates (the rules templates are rendered once, by `_rules`)."""


class _VerdictSchema(BaseModel):
    reasoning: str = Field(description="Short, evidence-based justification.")
    result: bool = Field(description="True only when the claim is correct / supported.")


class LLMBackend:
    """Renders `prompts/toolkit/*.j2`, calls the LLM layer, and majority-votes verifications.

    Each verification trial is a distinct request (its `sample_index`), so the response cache
    keeps trials apart; voting stops as soon as one outcome has a majority of `trials`.
    """

    def __init__(
        self,
        client: LLMClientLike,
        *,
        model: str = DEFAULT_JUDGE_MODEL,
        extract_model: str | None = None,
        trials: int = 3,
        max_page_chars: int = 400_000,
        provider: str = "",
    ) -> None:
        if trials < 1:
            raise ValueError("trials must be at least 1")
        self.client = client
        self.model = model
        self.extract_model = extract_model or model
        self.trials = trials
        self.max_page_chars = max_page_chars
        self.provider = provider
        self._screenshots: OrderedDict[int, ImagePart] = OrderedDict()

    async def extract(self, request: ExtractRequest) -> dict[str, Any]:
        """Ask the model to fill the template; screenshots only when the request allows; a
        missing page yields an all-null template."""
        if request.source is not None and request.source_text is None:
            return {}
        from prompts import render
        from toolkit.llm.models import LLMRequest, RequestMeta, SystemBlock

        name = "extract_answer" if request.source is None else "extract_page"
        text = render(
            f"toolkit/{name}.j2",
            prompt=request.prompt,
            task_description=request.task_description,
            source=request.source,
            text=self._clip(request.source_text or ""),
            additional_instruction=request.additional_instruction,
        )
        llm_request = LLMRequest(
            provider=self.provider,
            model=self.extract_model,
            system=(SystemBlock(text=_rules("extract"), cache=True),),
            messages=(self._user_turn(text, request.images if request.screenshots else []),),
            output_schema=request.output_schema,
            schema_name=request.schema_name,
            metadata=RequestMeta(purpose="extract", task_id=request.task_id),
        )
        response = await self.client.complete(llm_request)
        return response.parsed if isinstance(response.parsed, dict) else {}

    async def verify(self, request: VerifyRequest) -> Verdict:
        """Majority vote over up to `trials` distinct samples (the request's own count when it
        names one); screenshots only when the request allows; no call for a missing page."""
        if request.source_missing:
            return Verdict(passed=False, reasoning=UNAVAILABLE_REASON)
        from prompts import render
        from toolkit.llm.models import LLMRequest, RequestMeta, SystemBlock

        name = "verify_page" if request.sources else "verify_plain"
        text = render(
            f"toolkit/{name}.j2",
            claim=request.claim,
            task_description=request.task_description,
            source=request.sources[0] if request.sources else None,
            page_text=self._clip(request.page_texts[0] or "") if request.sources else "",
            additional_instruction=request.additional_instruction,
        )
        base = LLMRequest(
            provider=self.provider,
            model=self.model,
            system=(SystemBlock(text=_rules("verify"), cache=True),),
            messages=(self._user_turn(text, request.images if request.screenshots else []),),
            output_schema=_schema_of(_VerdictSchema),
            schema_name="VerificationResult",
            metadata=RequestMeta(purpose="verify", task_id=request.task_id),
        )
        trials = self.trials if request.trials is None else request.trials
        return await self._vote(base, trials)

    async def _vote(self, base: LLMRequest, trials: int) -> Verdict:
        """Majority of `trials`: the first majority-sized round goes out at once, then only as
        many trials as could still decide; never more calls than voting one at a time."""
        need = trials // 2 + 1
        votes: list[_VerdictSchema] = []
        while True:
            counts = [sum(v.result == side for v in votes) for side in (True, False)]
            missing = need - max(counts)
            if missing <= 0 or len(votes) >= trials:
                break
            indices = range(len(votes), min(len(votes) + missing, trials))
            votes += await _all([self._trial(base, index) for index in indices])
        return _majority(votes, need)

    async def _trial(self, base: LLMRequest, index: int) -> _VerdictSchema:
        response = await self.client.complete(base.with_sample(index))
        return _VerdictSchema.model_validate(response.parsed)

    def warm(self) -> None:
        """Do a first request's one-time work now — compile the prompt templates, load the
        LLM request models, build the verdict schema's validator — so it is off the path of
        the first call (the sandboxed runner calls this while its fork server starts)."""
        from prompts import environment
        from toolkit.llm import models  # noqa: F401  (loaded for the first request)
        from toolkit.llm.schema import output_problems

        for name in _TEMPLATES:
            environment().get_template(f"toolkit/{name}.j2")
        for purpose in ("extract", "verify"):
            _rules(purpose)
        output_problems({"reasoning": "", "result": True}, _schema_of(_VerdictSchema))

    def _user_turn(self, text: str, images: list[str]) -> Message:
        """The user turn of a request. A screenshot this backend was given before as the very
        same string (the page store hands out one string per page while it is being checked)
        reuses its part, so its 40 KB is hashed once per page rather than once per claim."""
        from toolkit.llm.models import ImagePart, Message, TextPart

        parts: list[TextPart | ImagePart] = [TextPart(text=text)]
        for image in images:
            part = self._screenshots.get(id(image))
            if part is None or part.data is not image:
                part = self._screenshots[id(image)] = ImagePart(data=image)
                if len(self._screenshots) > SCREENSHOT_PARTS:
                    self._screenshots.popitem(last=False)
            else:
                self._screenshots.move_to_end(id(image))
            parts.append(part)
        return Message(role="user", content=tuple(parts))

    def _clip(self, text: str) -> str:
        if len(text) <= self.max_page_chars:
            return text
        return text[: self.max_page_chars] + "\n… [CONTENT TRUNCATED]"


def _majority(votes: list[_VerdictSchema], need: int) -> Verdict:
    """The outcome with `need` votes (else the larger side), with the reasoning of the trial
    that completed it, in trial order (what voting one at a time would have returned)."""
    seen = {True: 0, False: 0}
    for vote in votes:
        seen[vote.result] += 1
        if seen[vote.result] >= need:
            return Verdict(passed=vote.result, reasoning=vote.reasoning)
    winner = seen[True] > seen[False]
    return Verdict(passed=winner, reasoning=[v for v in votes if v.result == winner][-1].reasoning)


async def _all(calls: list[Awaitable[_VerdictSchema]]) -> list[_VerdictSchema]:
    """Run `calls` together; every call finishes (paid calls stay accounted) before the first
    error, if any, is raised."""
    results = await asyncio.gather(*calls, return_exceptions=True)
    for result in results:
        if isinstance(result, BaseException):
            raise result
    return [r for r in results if isinstance(r, _VerdictSchema)]
