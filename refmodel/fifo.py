"""Tail drop at the buffer limit (twin of the FIFO branch in ``aqm.p4``)."""

from .constants import Reason
from .queue import Prediction
from .verdict import Verdict


class Fifo:
    def decide(self, q: Prediction) -> Verdict:
        return Verdict(True, Reason.LIMIT) if q.over_limit else Verdict(False)
