"""The LLM clients of one model-calling command, closed as `run` closes its own: in the event
loop, then once more after it, and only then summed up in the `LLM:` line.

A call its provider kept running past `LLMClient.aclose` ends as the command's `asyncio.run`
ends (it cancels what is left), and its ledger row is written then; rows of calls abandoned
and cancelled at the close are written during `aclose`. So the `LLM:` line is printed once
the loop has ended, and the ledger is closed again then: a late row that could not be written
raises its `LedgerError` (exit 3) instead of being lost without a word.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import TYPE_CHECKING, Any, TypeVar

import click

from toolkit.errors import LedgerError

if TYPE_CHECKING:
    from toolkit.llm import LLMClient
    from toolkit.llm.account import Account
    from toolkit.llm.usage import UsageSummary

T = TypeVar("T")
C = TypeVar("C", bound="LLMClient | None")


def warn_unrecorded(llm: UsageSummary | None) -> None:
    """How many LLM calls the ledger has no row of (`UsageSummary.unrecorded_calls`)."""
    if llm is None or not llm.unrecorded_calls:
        return
    click.echo(
        f"warning: {llm.unrecorded_calls} LLM call(s) were still running when the LLM client "
        "closed (their provider ignored the cancellation): the usage ledger has no row of them, "
        "so their cost is unknown to the ledger and left out of the `LLM:` line",
        err=True,
    )


class CommandClients:
    """The LLM clients a command opened (`add`), closed in its loop (`aclose`) and after it.

    `run(work)` runs the command's coroutine, then closes every client's ledger again and
    prints each account's `LLM:` line (with the warning on calls that have no ledger row),
    whether `work` succeeded or not."""

    def __init__(self) -> None:
        self._clients: list[LLMClient] = []

    def add(self, client: C) -> C:
        """Keep `client` (None, a --backend's: nothing to close) to close and sum up; return it."""
        if client is not None and client not in self._clients:
            self._clients.append(client)
        return client

    async def aclose(self) -> None:
        """Close every client in the loop (each cancels its abandoned calls and writes their
        rows); a client's error is raised once all are closed."""
        failure: BaseException | None = None
        for client in self._clients:
            try:
                await client.aclose()
            except Exception as exc:
                failure = failure or exc
        if failure is not None:
            raise failure

    def run(self, work: Coroutine[Any, Any, T]) -> T:
        """`asyncio.run(work)`, then `after_loop` (its `LedgerError` wins over `work`'s error:
        the ledger no longer holds what the command spent)."""
        try:
            return asyncio.run(work)
        finally:
            self.after_loop()

    def after_loop(self) -> None:
        """Once the event loop has ended: close each ledger again (a row written as the loop
        ended that could not be written raises its `LedgerError`, after the `LLM:` line) and
        print each account's `LLM:` line, which now counts every row."""
        lost: LedgerError | None = None
        accounts: list[Account] = []
        for client in self._clients:
            if any(client.account is seen for seen in accounts):
                continue
            accounts.append(client.account)
            try:
                client.ledger.close()
            except LedgerError as exc:
                lost = lost or exc
        for account in accounts:
            click.echo(account.summary_line(), err=True)
            warn_unrecorded(account.summary())
        if lost is not None:
            raise lost
