"""What an AQM says about one packet."""

from __future__ import annotations

from dataclasses import dataclass

from .constants import Reason

# IWA_SURPLUS is not among them: it hits senders that ignore the window they were given, and a mark would not
# reduce the queue they build.
EARLY_REASONS = frozenset({Reason.RED_EARLY, Reason.CODEL, Reason.PIE})


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
