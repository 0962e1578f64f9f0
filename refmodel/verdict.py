"""What an AQM says about one packet."""

from __future__ import annotations

from dataclasses import dataclass

from .constants import Reason

EARLY_REASONS = frozenset({Reason.RED_EARLY, Reason.CODEL, Reason.PIE, Reason.IWA_SURPLUS})


@dataclass(frozen=True)
class Verdict:
    drop: bool
    reason: Reason = Reason.NONE
    s1: int = 0  # AQM state that explains the decision (see docs/telemetry.md)
    s2: int = 0

    @property
    def early(self) -> bool:
        """A congestion signal that may become an ECN mark (not a buffer overflow)."""
        return self.drop and self.reason in EARLY_REASONS
