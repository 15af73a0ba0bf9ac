"""The messages between the `judgegen` executable and a warm server, as the server reads
them. The client writes the same fields with the standard library only (`client.py`): it
runs before pydantic is imported; `client.WIRE_VERSION` is the
`version` here; a test holds the two together."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class Hello(BaseModel):
    """The server's first words on a connection, before it reads or checks anything: the
    client sends its command only to a server that is there to take it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    version: Literal[3] = 3
    hello: Literal[True] = True


class Request(BaseModel):
    """A command to run as the client would have run it: sent with its fds 0, 1 and 2."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    version: Literal[3] = 3
    key: str
    argv0: str
    argv: list[str]
    cwd: str
    umask: int = Field(ge=0, le=0o777)
    positional_env: dict[str, str]
    ignored: list[int] = Field(
        default_factory=list,
        description="Signals the caller ignores (SIGHUP under `nohup`, SIGINT in a script's "
        "background job): the command ignores them too, as a cold one inherits them.",
    )


class Reply(BaseModel):
    """Whether the server runs the command (and the process group to signal), or why not."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    version: Literal[3] = 3
    accepted: bool
    pid: int | None = None
    reason: str | None = None


class End(BaseModel):
    """How the served command ended: its exit code, or the signal that killed it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    version: Literal[3] = 3
    exit: int
    signal: int | None = None
