"""The fresh stamp: a rerun of `judgegen run` with nothing to redo, answered in milliseconds.

After a run that leaves nothing to redo, `record` renders what the same command would print
if rerun at once (it runs the slow fresh path again, output captured) and stores it in
`RESULTS/.judgegen-fresh.stamp` under a key: a hash of the command's parsed flags (without
--overwrite), the working directory, the whole environment, the interpreter, judgegen's code
and version, the judge templates, the config file, and a manifest of every input (answers or
trajectories, judges, reviews, results, page store, and the recordings or policy modules an
offline provider answers from, which the stamp lists as `watched`). `replay` — stdlib only, run before
pydantic, asyncio or the runner is imported — prints the stored output when the key computed
now is the stored one and the provider would answer from the same files now (a module added
where a policy's import now finds it is a new file to watch), and otherwise says no, so the
slow path decides. Any doubt is a no:
an unreadable or foreign stamp, a file that cannot be read, a symlink inside an input tree, a
busy results folder, a flag whose effect runs user code (--backend, a --maps factory, --ray).

Files are known by content (sha256) up to `CONTENT_LIMIT` bytes, and beyond that (or when
not JSON in a trajectories folder: screenshots, logs) by stat: size, mtime, ctime, inode. A
stat is trusted once its ctime is `SETTLE_S` seconds old, so any later change shows as a new
ctime (git's "racy" rule, with room for coarse file-system clocks); a file with a newer stat
is known by content instead, and the stamp lists it so the fast path hashes it too.

The stamp vouches for what this process's code printed, so a run whose code files changed after
it loaded them (a `git pull` during a long run) is not stamped: otherwise the new code's key
would replay the old code's output, and a change to what counts as fresh would go unseen.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import stat
import sys
import time
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any, Final

import click

STAMP_FILE = ".judgegen-fresh.stamp"
"""JSON inside, but not named *.json: tools that glob a results folder for results skip it."""
STAMP_VERSION: Final = 3
"""2: `watched`, the files an offline provider answers from; 3: `provider`, whose files they are."""
LOCK_FILE = ".judgegen-run.lock"
"""`toolkit.runner.results_lock.LOCK_FILE` (not imported: `run --help` loads this module)."""
CONTENT_LIMIT = 4 << 20
SETTLE_S = 2.0
JUDGE_TEMPLATES = "toolkit"
"""`toolkit.runner.fingerprint.JUDGE_TEMPLATES` (not imported: that module loads pydantic)."""
CODE_PACKAGES = ("toolkit", "generator", "prompts")
STAMP_FIELDS = {"version", "key", "hashed", "watched", "provider", "stdout", "stderr", "exit_code"}
CODE_LOADED_NS: Final = time.time_ns()
"""When this process loaded judgegen's code, near enough: `run` loads this module before any
judging code runs, and a code file changed less than `SETTLE_S` before counts as changed after."""


class Unstampable(Exception):
    """The inputs cannot be captured in a key: the fast path does not apply."""


def eligible(params: dict[str, Any]) -> bool:
    """Whether a run with these flags may be answered from a stamp: not on a cluster, and
    running no user code (a --backend or --maps factory) the stamp could not vouch for."""
    return (
        params.get("ray_address") is None
        and params.get("backend_spec") is None
        and params.get("maps_spec") in (None, "google", "none")
    )


def replay_fresh_run(command: Callable[..., Any]) -> Callable[..., Any]:
    """Decorate `judgegen run`: answer from the stamp when it holds, else run `command`."""

    @functools.wraps(command)
    def wrapper(**kwargs: Any) -> Any:
        code = replay(kwargs)
        if code is not None:
            sys.exit(code)
        return command(**kwargs)

    return wrapper


def replay(params: dict[str, Any]) -> int | None:
    """Print the stamped output and return its exit code when the stamp matches these flags
    and the inputs now; None (nothing printed) otherwise."""
    if params.get("overwrite") or not eligible(params):
        return None
    results = Path(params["results"])
    try:
        with _idle_results(results):
            stamp = read_stamp(results / STAMP_FILE)
            if stamp is None:
                return None
            if stamp["key"] != stamp_key(params, stamp["hashed"], watched=stamp["watched"])[0]:
                return None
            if not _same_sources(stamp["provider"], stamp["watched"]):
                return None
    except Exception:  # any doubt: the slow path decides
        return None
    click.echo(stamp["stdout"], nl=False)  # through the streams the slow path's echo uses
    click.echo(stamp["stderr"], nl=False, err=True)
    return int(stamp["exit_code"])


def _same_sources(provider: str | None, watched: tuple[str, ...]) -> bool:
    """Whether `provider` answers from exactly the `watched` files now: the key hashes those
    files, but a module added where one of the policy's imports now finds it (a helper its
    `try: import` skipped, a file shadowing another on sys.path) is a file the stamp does not
    list, which the slow path's fingerprint would see. Its parent packages are not run."""
    if provider is None:
        return not watched
    from toolkit.llm.answer_source import answer_sources

    return tuple(str(path) for path in answer_sources(provider, importing=False)) == watched


@contextmanager
def _idle_results(results: Path) -> Iterator[None]:
    """Share the results folder's run lock (the `flock` a run holds exclusively, see
    `toolkit.runner.results_lock`) while the stamp is checked, so no run writes meanwhile;
    raise OSError when a run holds it or it is absent."""
    import fcntl

    path = results / LOCK_FILE
    fd = os.open(path, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        if os.fstat(fd).st_ino != os.stat(path).st_ino:
            raise OSError(f"{path} was replaced")
        yield
    finally:
        os.close(fd)  # closing releases the lock


def read_stamp(path: Path) -> dict[str, Any] | None:
    """The stamp at `path` if it is one of this version and shape, else None."""
    try:
        data = json.loads(path.read_bytes())
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or set(data) != STAMP_FIELDS:
        return None
    version, code = data["version"], data["exit_code"]
    if type(version) is not int or version != STAMP_VERSION or type(code) is not int or code:
        return None  # only runs that exit 0 are stamped
    if not all(isinstance(data[name], str) for name in ("key", "stdout", "stderr")):
        return None
    hashed, watched = data["hashed"], data["watched"]
    if not all(
        isinstance(v, list) and all(isinstance(p, str) for p in v) for v in (hashed, watched)
    ):
        return None
    if data["provider"] is not None and not isinstance(data["provider"], str):
        return None
    return {**data, "hashed": frozenset(hashed), "watched": tuple(watched)}


def remove_stamp(results: Path) -> None:
    """Delete the results folder's stamp: a run is about to write it."""
    with suppress(OSError):
        (results / STAMP_FILE).unlink()


def record(
    params: dict[str, Any],
    render: Callable[[], tuple[str, str, int] | None],
    watched: tuple[str, ...] = (),
    provider: str | None = None,
) -> bool:
    """Stamp what `render()` gives — (stdout, stderr, exit code) of the slow fresh path run
    now, or None when it has something to redo — if it exits 0, warns nothing (a warning's
    text reaches stderr once per process) and every input is the same before and after
    rendering. `watched`: the files `provider` (its spec) answers from (absolute paths),
    keyed too. The caller holds the results lock. Returns whether stamped."""
    if not eligible(params):
        return False
    try:
        before, hashed = stamp_key(params, code_loaded_ns=CODE_LOADED_NS, watched=watched)
        with warnings.catch_warnings(record=True) as warned:
            warnings.simplefilter("always")  # a warning a rerun would print, seen or not
            rendered = render()
        if rendered is None or rendered[2] != 0 or warned:
            return False
        if stamp_key(params, hashed, watched=watched)[0] != before:
            return False
    except Exception:  # inputs that cannot be keyed, or anything unexpected: no stamp
        return False
    from generator.cli.fresh_stamp_record import FreshStamp
    from toolkit.util.files import write_atomic

    stamp = FreshStamp(
        key=before,
        hashed=sorted(hashed),
        watched=list(watched),
        provider=provider,
        stdout=rendered[0],
        stderr=rendered[1],
        exit_code=0,
    )
    try:
        write_atomic(Path(params["results"]) / STAMP_FILE, stamp.model_dump_json(indent=1) + "\n")
    except OSError:  # e.g. a full disk: the run's own work is done and stands
        return False
    return True


def stamp_key(
    params: dict[str, Any],
    hashed: frozenset[str] | None = None,
    *,
    code_loaded_ns: int | None = None,
    watched: tuple[str, ...] = (),
) -> tuple[str, frozenset[str]]:
    """The hash of everything the output of `judgegen run` with `params` depends on when it
    has nothing to redo (see the module docstring), the `watched` files and folders included,
    and the files known by content although
    large: those in `hashed` or, when it is None, those whose stat is too recent to trust.
    Raises Unstampable (e.g. a file outside `hashed` with a stat too recent to trust, or, given
    when the code was loaded, a code file changed since or a loaded module's file gone)."""
    manifest = _Manifest(hashed)
    digest = hashlib.sha256()

    def add(*parts: Any) -> None:
        digest.update(json.dumps(parts, sort_keys=True).encode() + b"\n")

    add("judgegen fresh stamp", STAMP_VERSION, _flags(params))
    add(os.getcwd(), os.path.realpath(os.getcwd()), sys.executable, sys.version)
    add(_environment())
    add(_code(manifest, code_loaded_ns), _templates_digest(), _config())
    answers = params.get("answers") or params.get("trajectories")
    trees = [
        ("inputs", answers, _json_by_content if params.get("trajectories") else _always),
        ("judges", params.get("judges"), _always),
        ("reviews", params.get("reviews"), _always),
        ("results", params.get("results"), _always),
        ("pages", params.get("pages"), _always),
        ("tasks", params.get("tasks_dir"), _always),
    ]
    for label, root, by_content in trees:
        if root is not None:
            tree = manifest.tree(Path(root), by_content, skip=_SKIPPED.get(label, _never))
            add(label, str(root), os.path.realpath(root), tree)
    for source in watched:  # a folder of recordings, or a recordings or module file and its log
        if os.path.isdir(source):
            listing = [manifest.tree(Path(source), _always, skip=_never)]
        else:
            listing = [manifest.single(path) for path in (source, source + "-wal")]
        add("answered from", source, listing)
    if answers is not None:
        parent = Path(answers).parent  # a task's answers/ folder: its spec is read too
        add(
            "task spec", [(p.name, p.is_file()) for p in (parent / "task.yaml", parent / "task.md")]
        )
    return "sha256:" + digest.hexdigest(), frozenset(manifest.hashed)


def _flags(params: dict[str, Any]) -> list[Any]:
    """The parsed flags as JSON values, --overwrite left out (a run with it records what the
    same command without it prints)."""
    flags = []
    for name, value in sorted(params.items()):
        if name == "overwrite":
            continue
        if isinstance(value, tuple):
            value = [_plain(v) for v in value]
        flags.append([name, _plain(value)])
    return flags


def _plain(value: Any) -> Any:
    if value is None or isinstance(value, bool | int | float | str | list):
        return value
    if isinstance(value, Path):
        return ["path", str(value)]
    raise Unstampable(f"flag value {value!r}")


def _environment() -> str:
    """Hash of every environment variable (so no value is kept anywhere)."""
    items = json.dumps(sorted(os.environ.items()))
    return hashlib.sha256(items.encode("utf-8", "surrogateescape")).hexdigest()


def _code(manifest: _Manifest, loaded_ns: int | None = None) -> list[Any]:
    """judgegen's version and code files (by stat) and the installed packages' folders. Given
    when the code was loaded (ns), raises Unstampable when a code file changed after (or
    `SETTLE_S` before: it may have been read earlier), a packages folder changed after, or a
    module this process loaded is gone, so the code listed is the code that ran."""
    import toolkit

    since = None if loaded_ns is None else loaded_ns - int(SETTLE_S * 1e9)
    listed: list[Any] = [toolkit.__version__]
    for name in CODE_PACKAGES:
        module = sys.modules.get(name) or __import__(name)
        root = Path(module.__file__ or "").parent
        tree = manifest.tree(root, _never, skip=_compiled, changed_since=since)
        if since is not None:
            _loaded_files_listed(root, tree)
        listed.append([name, str(root), tree])
    for entry in sys.path:
        if entry.endswith(("site-packages", "dist-packages")) and os.path.isdir(entry):
            info = os.stat(entry)
            if loaded_ns is not None and info.st_ctime_ns >= loaded_ns:
                raise Unstampable(f"packages were installed or removed in {entry} during the run")
            listed.append([entry, info.st_mtime_ns, info.st_ctime_ns, info.st_ino])
    return listed


def _loaded_files_listed(root: Path, tree: list[Any]) -> None:
    """Raise Unstampable when a module loaded from under `root` has no file in its `tree`."""
    files = {entry[0] for entry in tree if entry[1:] != ["dir"]}
    prefix = f"{root}{os.sep}"
    for module in list(sys.modules.values()):
        path = getattr(module, "__file__", None)
        if not isinstance(path, str) or not path.startswith(prefix):
            continue
        relative = path[len(prefix) :].replace(os.sep, "/")
        if not _compiled(relative) and relative not in files:
            raise Unstampable(f"{path}, which this run loaded, is gone")


def _templates_digest() -> str:
    """The judge templates' hash, as result fingerprints record it."""
    from prompts import prompts_sha256

    return prompts_sha256(JUDGE_TEMPLATES)


def _config() -> list[Any]:
    """The config file the settings would read, and its bytes' hash."""
    from toolkit.config import find_config

    path = find_config()
    if path is None:
        return [None]
    try:
        return [str(path), hashlib.sha256(path.read_bytes()).hexdigest()]
    except OSError as exc:
        return [str(path), f"unreadable: {exc.errno}"]


def _json_by_content(name: str) -> bool:
    """In a trajectories folder only the JSON (answers, score files) is read: screenshots
    and logs are known by stat."""
    return name.endswith(".json")


def _never(name: str) -> bool:
    return False


def _always(name: str) -> bool:
    return True


def _compiled(relative: str) -> bool:
    """Byte-code caches: written as code is imported, never what code does."""
    return "__pycache__" in relative.split("/")


def _stamp_or_lock(relative: str) -> bool:
    """The stamp, its temp files and the run lock: never inputs."""
    return relative in (STAMP_FILE, LOCK_FILE) or (
        relative.startswith(f".{STAMP_FILE}.") and relative.endswith(".tmp")
    )


def _shared_memory(relative: str) -> bool:
    """SQLite's shared-memory index (`-shm`): rebuilt from the -wal log, which counts."""
    return relative.endswith("-shm")


def _not_a_spec(relative: str) -> bool:
    """In a tasks folder only the task folders, their specs and their labels matter to `run`
    (it warns of a judge generated from another spec, or checked against other intended
    scores): sample answers and pages inside are left out."""
    parts = relative.split("/")
    if len(parts) == 2:
        return parts[1] not in ("task.yaml", "task.md", "labels")
    return len(parts) > 2 and (len(parts) > 3 or parts[1] != "labels")


_SKIPPED: dict[str, Callable[[str], bool]] = {
    "results": _stamp_or_lock,
    "pages": _shared_memory,
    "tasks": _not_a_spec,
}
"""What a tree's manifest leaves out (by path relative to the tree)."""


class _Manifest:
    """Lists folders for a key: each file by content, or by stat once the stat is trusted."""

    def __init__(self, hashed: frozenset[str] | None) -> None:
        self.settled_before = time.time_ns() - int(SETTLE_S * 1e9)
        self.given = hashed
        self.hashed: set[str] = set(hashed or ())

    def tree(
        self,
        root: Path,
        by_content: Callable[[str], bool],
        *,
        skip: Callable[[str], bool],
        changed_since: int | None = None,
    ) -> list[Any]:
        """Every folder and file under `root` but those `skip` names (by relative path), or
        `["absent"]`: each file with its content hash, or its stat when larger than
        `CONTENT_LIMIT` or not `by_content` (by name). Raises Unstampable on a symlink inside,
        a special file, an untrusted stat or a file whose ctime is `changed_since` (ns) or
        later, OSError on a read error. Folders first, then files, each sorted, then each
        folder's own listing (os.walk's order); paths are strings, as pathlib would print
        them, since a key lists hundreds of files and pathlib costs microseconds per path."""
        if not os.path.lexists(root):
            return ["absent"]  # e.g. no reviews/ yet: its appearance changes the key
        if not root.is_dir():
            raise Unstampable(f"{root} is not a folder")
        base = "" if str(root) == "." else f"{root}{os.sep}"
        listed: list[Any] = []
        folders = [""]
        while folders:
            relative_dir = folders.pop()
            with os.scandir(base + relative_dir if relative_dir else root) as scan:
                entries = list(scan)
            dirs: list[str] = []
            files: list[os.DirEntry[str]] = []
            for entry in entries:
                if _is_dir(entry):
                    if entry.is_symlink():
                        raise Unstampable(f"symlink {base}{relative_dir}{entry.name}")
                    if not skip(relative_dir + entry.name):
                        dirs.append(entry.name)
                else:
                    files.append(entry)
            dirs.sort()
            listed += [[relative_dir + name, "dir"] for name in dirs]
            for entry in sorted(files, key=lambda file: file.name):
                relative = relative_dir + entry.name
                if not skip(relative):
                    info = entry.stat(follow_symlinks=False)
                    if changed_since is not None and info.st_ctime_ns >= changed_since:
                        raise Unstampable(f"{base}{relative} changed after judgegen's code loaded")
                    listed.append([relative, *self.file(info, base + relative, by_content)])
            folders += [f"{relative_dir}{name}/" for name in reversed(dirs)]
        return listed

    def single(self, path: str) -> list[Any]:
        """One file on its own, by content or (once trusted) by stat; `["absent"]` if none."""
        try:
            info = os.stat(path, follow_symlinks=False)
        except FileNotFoundError:
            return ["absent"]
        return self.file(info, path, _always)

    def file(self, info: os.stat_result, path: str, by_content: Callable[[str], bool]) -> list[Any]:
        """One file of a tree (at `path`, with `info` its stat), by content or by stat."""
        if not stat.S_ISREG(info.st_mode):
            raise Unstampable(f"{path} is not a regular file")
        small = info.st_size <= CONTENT_LIMIT and by_content(os.path.basename(path))
        if not small and path not in self.hashed and info.st_ctime_ns >= self.settled_before:
            if self.given is not None:
                raise Unstampable(f"{path} changed too recently to trust its stat")
            self.hashed.add(path)  # known by content until a later stamp trusts its stat
        if small or path in self.hashed:
            return [_file_sha256(path)]
        return [info.st_size, info.st_mtime_ns, info.st_ctime_ns, info.st_ino]


def _is_dir(entry: os.DirEntry[str]) -> bool:
    """Whether `entry` is a folder, following a symlink (as os.walk sorts entries)."""
    try:
        return entry.is_dir()
    except OSError:
        return False


def _file_sha256(path: str) -> str:
    with open(path, "rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()
