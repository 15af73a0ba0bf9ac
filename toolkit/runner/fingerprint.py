"""What a result depends on, recorded in it so a rerun can tell a fresh result from a stale one.

Invariant: two evaluations with equal fingerprints would produce the same result (given the
response cache), so the runner redoes a result exactly when its fingerprint differs from the
one the current inputs and configuration give. Most inputs are known before the judge runs;
the pages it read are only known after, so the fingerprint records them (`PageReads`) and a
rerun compares them with what the page source holds now (`pages_unchanged`).
"""

from __future__ import annotations

import base64
import os
import re
import sys
import time
import unicodedata
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from toolkit.awaitables import resolve
from toolkit.errors import PageStoreError
from toolkit.util.code_files import CLOCK_TICK_NS, Stamp, first_change, stamps_unless_changed
from toolkit.util.deferred import DEFERRED_FROZEN
from toolkit.util.hashing import sha256_bytes, sha256_file, sha256_text, sha256_tree

FINGERPRINT_VERSION = 3
"""3: `PageReads.shots`, the screenshots sent with the pages. `tools` came later, optional:
a result without it made no tool call that anyone recorded."""
JUDGE_TEMPLATES = "toolkit"
"""The prompts/ subfolder of the templates judges use (generator templates do not count)."""


class PageReads(BaseModel):
    """The cited pages an evaluation asked for: content hash by URL, the screenshots read
    with them, and the URLs missing."""

    model_config = DEFERRED_FROZEN

    read: dict[str, str] = Field(
        default_factory=dict, description="URL → `sha256:` of the page text the judge read."
    )
    shots: dict[str, str | None] = Field(
        default_factory=dict,
        description="URL → `sha256:` of the screenshot bytes read with the page (sent with "
        "each claim checked against it), None when the page had none.",
    )
    missing: tuple[str, ...] = Field(
        default=(), description="Cited URLs the page source did not have (sorted)."
    )


class Fingerprint(BaseModel):
    """The inputs an evaluation result was computed from."""

    model_config = DEFERRED_FROZEN

    version: int = FINGERPRINT_VERSION
    judge_sha256: str | None = Field(
        default=None, description="Hash of the judge module's bytes; None when no judge ran."
    )
    templates_sha256: str = Field(
        description="Hash of the templates judges use (prompts/toolkit), not generator ones."
    )
    toolkit_version: str = Field(
        description="The toolkit that ran the judge: its version and a hash of its code "
        "(`toolkit_identity`)."
    )
    judge_model: str | None = Field(default=None, description="Model deciding verifications.")
    extract_model: str | None = Field(default=None, description="Model doing extractions.")
    backend: str = Field(
        description="Identity of the judging backend (class, or factory spec and code hash)."
    )
    answer_sha256: str = Field(description="Hash of the answer's raw bytes as read from disk.")
    pages: PageReads | None = Field(
        default=None, description="Pages the evaluation read (None: no judge ran, or unknown)."
    )
    tools: str | None = Field(
        default=None,
        description="The tool provider (`--maps`) the result depends on: in a result, the one "
        "its judge called (None: it called no tool); before a run, the one judges are offered.",
    )

    def same_inputs(self, other: Fingerprint) -> bool:
        """Whether this result's fingerprint holds for `other`, the one the inputs give now:
        equal but for the pages read (which only the evaluation itself reveals) and, when
        this result called no tool, the tool provider (it could not have changed it)."""
        return not self.changed(other)

    def changed(self, other: Fingerprint) -> list[str]:
        """The fields in which this result's fingerprint does not hold for `other` (see
        `same_inputs`), in field order: empty when it holds."""
        ignored = {"pages"} | ({"tools"} if self.tools is None else set())
        return [
            name
            for name in type(self).model_fields
            if name not in ignored and getattr(self, name) != getattr(other, name)
        ]


def backend_identity(backend: Any, spec: str | None = None) -> str:
    """A stable name for a judging backend: its factory spec, or class and provider/models."""
    if spec:
        return spec
    cls = type(backend)
    parts = [f"{cls.__module__}.{cls.__qualname__}"]
    for attribute in ("provider", "model", "extract_model", "trials"):
        value = getattr(backend, attribute, None)
        if value not in (None, ""):
            parts.append(f"{attribute}={value}")
    return " ".join(parts)


def make_fingerprint(
    *,
    judge_sha256: str | None,
    answer_sha256: str,
    backend: Any,
    backend_spec: str | None = None,
    templates_digest: str | None = None,
    tools: str | None = None,
) -> Fingerprint:
    """The fingerprint the current configuration gives one (judge, answer) pair, before the
    judge runs (so without `pages`); `tools` names the tool provider judges are offered.

    `templates_digest` (from `judge_templates_sha256()`) saves rehashing for every answer.
    """
    return Fingerprint(
        judge_sha256=judge_sha256,
        templates_sha256=templates_digest or judge_templates_sha256(),
        toolkit_version=toolkit_identity(),
        judge_model=getattr(backend, "model", None),
        extract_model=getattr(backend, "extract_model", None) or getattr(backend, "model", None),
        backend=backend_identity(backend, backend_spec),
        answer_sha256=answer_sha256,
        tools=tools,
    )


VERDICT_PACKAGES = ("pydantic", "pydantic_core", "jinja2", "jsonschema_rs", "publicsuffixlist")
"""Installed packages whose behaviour enters a verdict: reading what a model answered (pydantic,
jsonschema_rs), the prompts it is asked (jinja2), and the domain checks (publicsuffixlist, whose
suffix list each release updates)."""
_DIST_INFO = re.compile(r"^(?P<name>[^-]+)-(?P<version>[^-]+?)(?:-py[^-]*)?\.(?:dist|egg)-info$")


@dataclass(frozen=True)
class ToolkitCode:
    """The toolkit's identity (`toolkit_identity`) and the files results name through it and
    through `templates_sha256` — its Python source, the prompt renderer, the judge templates —
    stamped as this process hashed them: `REPLACED` for one that may have changed after this
    process loaded it or while it was hashed, which no file on disk matches."""

    identity: str
    files: Mapping[str, Stamp | None]

    def changed(self, loaded: Mapping[str, Stamp | None] | None = None) -> str | None:
        """Why code run now would not be what the results name: the first of `files` that is
        not as hashed — in `loaded` (a process's stamps of the files it loaded: a fork
        server's `Ready.code`), or on disk now when None. None when every one is."""
        if loaded is None:
            found = first_change(self.files)
        else:
            found = next(
                (
                    f"{path} changed"
                    for path, was in self.files.items()
                    if loaded.get(path, was) != was
                ),
                None,
            )
        if found is None:
            return None
        return (
            f"{found} during the run, after judgegen hashed its code for the results' "
            "fingerprints: they would name code other than the code that judged; rerun"
        )


@cache
def toolkit_code() -> ToolkitCode:
    """The toolkit that judges and the files it comes from (`ToolkitCode`), hashed and
    stamped once per process (~4 ms, and a stat per file), so that code loaded later — by a fork
    server started after an edit, a module or template first loaded mid-run — can be told
    apart from the code the results name."""
    import prompts
    import toolkit

    began = time.time_ns()
    root = Path(toolkit.__file__).parent
    code = sha256_tree(root) + sha256_file(prompts.__file__) + runtime_identity()
    identity = f"{toolkit.__version__}+code.{sha256_text(code).removeprefix('sha256:')[:16]}"
    templates = _files_under(prompts.PROMPTS_DIR / JUDGE_TEMPLATES, "*")
    sources = [*_files_under(root, "*.py"), prompts.__file__]
    loaded = {getattr(m, "__file__", None) for m in list(sys.modules.values())}
    rendered = prompts.environment.cache_info().currsize > 0  # templates it may have read
    earlier = [p for p in sources if p in loaded] + (templates if rendered else [])
    later = [p for p in sources if p not in loaded] + ([] if rendered else templates)
    files = stamps_unless_changed(earlier, toolkit.IMPORTING_SINCE_NS, CLOCK_TICK_NS)
    files |= stamps_unless_changed(later, began, CLOCK_TICK_NS)
    return ToolkitCode(identity, files)


def _files_under(root: Path, pattern: str) -> list[str]:
    """The files under `root` matching `pattern`, as `sha256_tree` and `prompts_sha256` find
    them."""
    return [str(path) for path in sorted(root.rglob(pattern)) if path.is_file()]


def toolkit_identity() -> str:
    """The toolkit that judges, as `<version>+code.<hash>`: the hash covers its Python source,
    the prompt renderer's and the runtime it judges with (`runtime_identity`), so a result
    computed by other toolkit code — a fix to scoring, voting or request building in a
    checkout whose version did not change — or under another Python or another release of a
    package deciding verdicts is redone, never reused as fresh. Hashed once per process
    (`toolkit_code`)."""
    return toolkit_code().identity


def runtime_identity() -> str:
    """Python's version, its Unicode database's (name and text checks fold with it) and each
    `VERDICT_PACKAGES` release installed, e.g. `python 3.11.7 unicode 14.0.0 jinja2 3.1.6 ...`
    (`none` for one not installed)."""
    python = ".".join(str(part) for part in sys.version_info[:3])
    versions = installed_versions(VERDICT_PACKAGES)
    packages = " ".join(f"{name} {versions.get(name, 'none')}" for name in VERDICT_PACKAGES)
    return f"python {python} unicode {unicodedata.unidata_version} {packages}"


def installed_versions(names: Iterable[str], path: Iterable[str] | None = None) -> dict[str, str]:
    """The version of each distribution in `names` installed on the import path (`path`,
    default `sys.path`), as import finds it: the first entry holding its metadata folder wins.
    Read from the folders' names (`jinja2-3.1.6.dist-info`), a listing per entry: loading
    `importlib.metadata` to ask would cost a fresh rerun ~18 ms."""
    wanted = {_normalized(name): name for name in names}
    found: dict[str, str] = {}
    for entry in dict.fromkeys(sys.path if path is None else path):
        try:
            listed = os.listdir(entry or ".")
        except OSError:
            continue
        for item in sorted(listed):
            match = _DIST_INFO.match(item)
            if match is None:
                continue
            name = wanted.get(_normalized(match["name"]))
            if name is not None and name not in found:
                found[name] = match["version"]
        if len(found) == len(wanted):
            break
    return found


def _normalized(name: str) -> str:
    """A distribution's name as metadata folders may spell it (PEP 503, with `_`)."""
    return re.sub(r"[-_.]+", "_", name).lower()


def judge_templates_sha256() -> str:
    """Hash of the prompt templates judges render (prompts/toolkit), for fingerprints."""
    from prompts import prompts_sha256

    return prompts_sha256(JUDGE_TEMPLATES)


async def pages_unchanged(reads: PageReads, pages: Any) -> bool:
    """Whether `pages` (a page source, or None) still gives what the evaluation read: the same
    text for every page read, the same screenshot (or still none) for every screenshot read,
    and still nothing for every page that was missing."""
    for url, digest in reads.read.items():
        if await _current_hash(pages, url) != digest:
            return False
    for url, shot in reads.shots.items():
        if await _current_shot_hash(pages, url) != shot:
            return False
    for url in reads.missing:
        if await _current_hash(pages, url) is not None:
            return False
    return True


def screenshot_digest(image: str | None) -> str | None:
    """`sha256:` of the bytes of a base64 screenshot (as page sources give them), None for none."""
    return sha256_bytes(base64.b64decode(image)) if image else None


async def _current_shot_hash(pages: Any, url: str) -> str | None:
    """The screenshot hash a read of `url` would note now (a page store hashes the stored
    bytes, without encoding them)."""

    def read(source: Any) -> Any:
        shot = getattr(source, "screenshot", None)
        return shot(url) if callable(shot) else None

    return await _noted_now(pages, url, "screenshot_hash", read, screenshot_digest)


async def _current_hash(pages: Any, url: str) -> str | None:
    """The text hash a read of `url` would note now (a page store gives it without the text)."""
    return await _noted_now(
        pages, url, "text_hash", lambda source: source.get(url), lambda t: sha256_text(str(t))
    )


async def _noted_now(
    pages: Any,
    url: str,
    stored: str,
    read: Callable[[Any], Any],
    digest: Callable[[Any], str | None],
) -> str | None:
    """What a read of `url` from `pages` would note now: the source's own `stored(url)` hash
    when it keeps one, else `digest` of what `read(pages)` gives (None stays None). A page
    store that cannot be read (`PageStoreError`) raises: it tells nothing of the page, and
    a result redone against it would only be overwritten with an incomplete one."""
    if pages is None:
        return None
    try:
        kept = getattr(pages, stored, None)
        if callable(kept):
            return await resolve(kept(url))
        value = await resolve(read(pages))
    except PageStoreError:
        raise
    except Exception:
        return "unreadable"  # differs from every hash and from None: the result is redone
    return None if value is None else digest(value)
