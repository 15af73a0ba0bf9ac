"""External tools a judge may call (e.g. maps), always through the runner's broker.

A judge constructs a tool with no arguments, as in Mind2Web 2; the tool finds the channel to
the broker in `current_tools`, which the runner sets for the duration of one evaluation.
Without a channel, or without a provider behind it, a call raises `InfraError` (node
`error`), never a crash or a silent failure.
"""

from __future__ import annotations

from contextvars import ContextVar
from typing import Any, Protocol

from toolkit.errors import InfraError


class ToolCaller(Protocol):
    """Sends a named tool call with JSON arguments and returns its JSON result."""

    async def call(self, name: str, args: dict[str, Any]) -> Any: ...


current_tools: ContextVar[ToolCaller | None] = ContextVar("judgegen_tools", default=None)
# Failed tool calls of the current evaluation, kept even when the judge swallows the error
# (published judges wrap tool calls in `except Exception`), so the result is incomplete: each
# a failure of the tool (kind `tool`), whatever its provider raised, as the runner notes it.
current_tool_errors: ContextVar[list[dict[str, Any]] | None] = ContextVar(
    "judgegen_tool_errors", default=None
)


async def call_tool(name: str, **args: Any) -> Any:
    """Call tool `name` through the current channel; InfraError when none is configured."""
    try:
        caller = current_tools.get()
        if caller is None:
            raise InfraError(
                f"tool '{name}' is not available: no tool provider is configured", kind="tool"
            )
        return await caller.call(name, args)
    except Exception as exc:
        errors = current_tool_errors.get()
        if errors is not None:
            errors.append(
                {
                    "operation": "tool",
                    "target": name,
                    "type": type(exc).__name__,
                    "kind": exc.kind if isinstance(exc, InfraError) else "tool",
                    "message": str(exc),
                }
            )
        raise
