"""What crosses the Ray boundary between the driver, the gateway and the node runners.

Ray pickles these; they are still versioned pydantic models, so a node running another
judgegen version fails loudly instead of misreading a field.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from toolkit.llm.ledger import LedgerRow
from toolkit.runner.fingerprint import PageReads
from toolkit.runner.results import UsageTotals
from toolkit.sandbox.protocol import EvalOutcome, Reply, SandboxLimits

SCALE_VERSION = 8
"""2: the gateway says which judgegen code it runs (`GatewayInfo.code`); 3: a node's result
carries the infrastructure errors its services raised (`NodeResult.infra`) and its tool
calls (`NodeResult.tool_calls`); 4: the gateway says whether its page source reads a page
whole (`GatewayInfo.stored_pages`); 5: each evaluation sent to a node is one attempt, named
(`NodeResult.attempt`), whose gateway calls carry its name, so the gateway can say what an
attempt lost with its node spent (`AttemptSpend`); 6: an attempt its node reported is ended
at the gateway (`AttemptEnd`), which says what the LLM calls it left running cost
(`LeftRunning`), and a node's result carries the runner's notes (`NodeResult.notes`); 7: an
attempt lost with its node says how many LLM calls it left running too
(`AttemptSpend.left_running`), followed as an ended attempt's; 8: an ended attempt says how
many LLM calls of other attempts it was waiting for (`AttemptEnd.followed`)."""


class _Versioned(BaseModel):
    model_config = ConfigDict(extra="forbid")

    version: int = SCALE_VERSION


class GatewayInfo(_Versioned):
    """What the gateway serves, as the node runners and the driver need to know it."""

    error: str | None = Field(default=None, description="Why the services could not be built.")
    model: str | None = None
    extract_model: str | None = None
    identity: str = Field(default="", description="The backend identity results are keyed by.")
    code: str = Field(
        default="", description="The judgegen code the gateway runs (`toolkit_identity`)."
    )
    pages: bool = False
    screenshots: bool = False
    stored_pages: bool = Field(
        default=False,
        description="The page source reads a page's text, screenshot and their hashes at once "
        "(`stored_page`, a page store), so a node asks for a page in one `page_stored` call.",
    )
    tools: list[str] = Field(default_factory=list)


class GatewayReply(_Versioned):
    """The broker's reply to one call, with the usage the call cost (to charge its evaluation)."""

    reply: Reply
    usage: UsageTotals = Field(default_factory=UsageTotals)
    clipped: list[str] = Field(
        default_factory=list, description="Cited pages the call sent its backend clipped."
    )


class RunnerSettings(_Versioned):
    """How every node runs judges: the same isolation and limits as a local run."""

    sandbox: bool = True
    limits: SandboxLimits = Field(default_factory=SandboxLimits)
    jobs: int = Field(default=4, ge=1, description="Evaluations in flight on one node.")
    require_sandbox: bool = False


class NodeResult(_Versioned):
    """One evaluation done on a node: its outcome, the usage it cost and the pages it read."""

    outcome: EvalOutcome
    usage: UsageTotals = Field(default_factory=UsageTotals)
    clipped: list[str] = Field(
        default_factory=list, description="Cited pages its backend calls sent clipped."
    )
    reads: PageReads = Field(default_factory=PageReads)
    tool_calls: int = Field(
        default=0, description="Tool calls its judge made (`Meter.tool_calls`)."
    )
    infra: list[dict[str, Any]] = Field(
        default_factory=list,
        description="Infrastructure errors the node's services raised to the judge "
        "(`toolkit.runner.metering.Meter.infra`): seen by the node, whatever the judge did.",
    )
    notes: list[str] = Field(
        default_factory=list,
        description="What the node's runner has to tell about how it ran (`Meter.notes`).",
    )
    node_id: str = ""
    attempt: str = Field(default="", description="The attempt this was (`NodeSet.call`).")


class AttemptSpend(_Versioned):
    """What the gateway's calls for one attempt cost (`Gateway.spent`): an attempt lost with
    its node never reported its usage, but the gateway answered (and paid for) its calls."""

    usage: UsageTotals = Field(default_factory=UsageTotals)
    cancelled: int = Field(
        default=0,
        description="Its calls still running when the gateway stopped waiting for them, "
        "cancelled there (the LLM calls they made are counted in `left_running`).",
    )
    left_running: int = Field(
        default=0,
        description="LLM calls of the attempt whose caller stopped waiting (a call cancelled "
        "here) while they went on or were cancelled in turn: what they cost, `Gateway.settle`.",
    )


class AttemptEnd(_Versioned):
    """An attempt its node reported, ended at the gateway (`Gateway.end`): what all its calls
    cost there, and how many LLM calls it left running (what they cost: `LeftRunning`)."""

    usage: UsageTotals = Field(
        default_factory=UsageTotals,
        description="Every call of the attempt, counting those whose answer its node no longer "
        "read (the evaluation ended as they ended): what the node reported, and perhaps more.",
    )
    left_running: int = Field(
        default=0,
        description="LLM calls of the attempt whose caller stopped waiting while they went on "
        "(`toolkit.llm.abandoned`): their cost is counted once they end (`Gateway.settle`).",
    )
    followed: int = Field(
        default=0,
        description="LLM calls of other attempts that the attempt was waiting for when it "
        "ended (identical requests share one call, charged to the attempt that made it): "
        "`toolkit.llm.abandoned.AbandonedSpend.followed`.",
    )


class LeftRunning(_Versioned):
    """What the LLM calls an attempt left running cost (`Gateway.settle`): the ledger rows of
    those that ended within the wait, and how many ended without a row or were still running
    (`toolkit.llm.abandoned.AbandonedSpend`, sent across)."""

    rows: list[LedgerRow] = Field(default_factory=list)
    unrecorded: int = Field(
        default=0, description="Ended with an error the ledger keeps no row of."
    )
    running: int = Field(default=0, description="Still running when the wait ended.")
