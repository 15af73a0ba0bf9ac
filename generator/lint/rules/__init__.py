"""judgegen's own lint rules for judge scripts, in catalog order."""

from __future__ import annotations

from generator.lint.rule import Rule
from generator.lint.rules.api import ToolkitCallSignature
from generator.lint.rules.contract import (
    EntryPoint,
    ForbiddenImport,
    ModuleConstants,
    RunnerOwnedSetup,
    UnusedModuleConstant,
)
from generator.lint.rules.data import ExtractionUnused, GroundTruthUnused, UnguardedNoneInClaim
from generator.lint.rules.runtime import (
    BlockingCall,
    Nondeterminism,
    SwallowedInfraError,
    UnawaitedCoroutine,
)
from generator.lint.rules.tree import (
    LeafDecidedTwice,
    LeafNeverDecided,
    NonCriticalUnderCritical,
    UnstableNodeId,
    VerifyNonLeaf,
)

ALL_RULES: tuple[type[Rule], ...] = tuple(
    sorted(
        (
            EntryPoint,
            ModuleConstants,
            ForbiddenImport,
            LeafNeverDecided,
            LeafDecidedTwice,
            UnstableNodeId,
            NonCriticalUnderCritical,
            Nondeterminism,
            GroundTruthUnused,
            UnguardedNoneInClaim,
            ExtractionUnused,
            BlockingCall,
            SwallowedInfraError,
            UnawaitedCoroutine,
            VerifyNonLeaf,
            RunnerOwnedSetup,
            ToolkitCallSignature,
            UnusedModuleConstant,
        ),
        key=lambda rule: rule.id,
    )
)

__all__ = ["ALL_RULES"]
