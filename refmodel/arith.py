"""Arithmetic a Tofino pipeline can do, and the tables the controller writes for it.

A Tofino stage adds, subtracts, compares and shifts by constants; it does not
multiply two run-time values. Where the v1model program multiplies (the
transmit time ``len * byte_time``), the TNA program (p4src/tofino/) looks the
product up in tables the controller fills from the same parameters. Each
function here says what the data plane computes and bounds its error against
the v1model arithmetic (``params.drain_ns``).
"""

from __future__ import annotations

from dataclasses import dataclass

from .constants import BYTE_TIME_FRAC
from .params import ConfigError

TX_LO_BITS = 6  # len = 64 * hi + lo (p4src/tofino/link.p4: tx_time_hi, tx_time_lo)
MAX_FRAME = 16383 + 14  # the largest frame the tables cover: IPv4 total length < 2^14, plus Ethernet
TX_HI_ENTRIES = (MAX_FRAME >> TX_LO_BITS) + 1
TX_LO_ENTRIES = 1 << TX_LO_BITS
RATE_CLASSES = 64  # p4src/tofino/link.p4: RATE_CLASSES


@dataclass(frozen=True)
class TxSplit:
    """One rate class's two transmit-time tables: hi[len >> 6] + lo[len & 63] ns."""

    hi: tuple[int, ...]
    lo: tuple[int, ...]

    def tx_ns(self, length: int) -> int:
        if not 0 <= length <= MAX_FRAME:
            raise ValueError(f"frame length {length} outside 0..{MAX_FRAME}")
        return self.hi[length >> TX_LO_BITS] + self.lo[length & (TX_LO_ENTRIES - 1)]


def tx_split(byte_time_q16: int) -> TxSplit:
    """The tables for one link rate. Each share is floored on its own, so the sum is
    ``(len * bt) >> 16`` or one less: |error| <= 1 ns per frame, never more time."""
    if byte_time_q16 <= 0:
        raise ConfigError(f"byte_time_q16 = {byte_time_q16!r} is out of range: must be > 0")
    hi = tuple(((h << TX_LO_BITS) * byte_time_q16) >> BYTE_TIME_FRAC for h in range(TX_HI_ENTRIES))
    lo = tuple((lo * byte_time_q16) >> BYTE_TIME_FRAC for lo in range(TX_LO_ENTRIES))
    if hi[-1] + lo[-1] >= 1 << 32:
        raise ConfigError(f"byte_time_q16 = {byte_time_q16}: a {MAX_FRAME} B frame takes 2^32 ns or more")
    return TxSplit(hi, lo)


def serial_gt(a: int, b: int) -> bool:
    """a > b for 32-bit times that wrap (the TNA program's time_t): the sign of a - b."""
    d = (a - b) & 0xFFFFFFFF
    return 0 < d < 1 << 31
