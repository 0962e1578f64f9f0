"""Rate classes: the tables that depend on a link's rate, shared by the links of that rate.

Neither program multiplies by the link's time per byte. Each *rate class* has
tables the controller fills from the rate: ``tx_time_hi`` and ``tx_time_lo``,
the two shares of a frame's transmit time (refmodel/arith.py: ``tx_split``;
the TNA program has these two), and in the v1model program IWA's three
product tables (p4src/include/mantissa.p4, ``RateProduct``): payload bytes
per ns for the start phase's span and for a grant's room, ns per payload byte
for the bytes granted beyond replacement. A link's configuration names its
class; links with the same numbers share one.

A rate change must never show a link half-written tables. So a new rate goes
into a class no link uses (a fresh one is inserted, a free one overwritten),
and only then is the link pointed at it: each step is one write the switch
applies before the next. ``RateClasses`` remembers what each class holds; it
is pure bookkeeping, the caller writes the entries it returns.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import NamedTuple

import finsy as fy

from refmodel import arith
from refmodel.params import ConfigError, PipelineParams

from .entries import product_rows

# IWA's product tables (their P4Info aliases) and which of RateKey's constants each holds
PRODUCT_TABLES = (("span_bytes.products", "bytes_per_ns_q32"), ("room_bytes.products", "bytes_per_ns_q32"),
                  ("grant_ns.products", "payload_ns_q16"))


class RateKey(NamedTuple):
    """What a rate class's tables are computed from."""

    byte_time_q16: int
    bytes_per_ns_q32: int
    payload_ns_q16: int


def rate_key(p: PipelineParams) -> RateKey:
    return RateKey(p.queue.byte_time_q16, p.iwa.bytes_per_ns_q32, p.iwa.payload_ns_q16)


def tx_entries(byte_time_q16: int, rate_class: int) -> list[fy.P4TableEntry]:
    """The rate class's two transmit-time tables (refmodel/arith.py: tx_split)."""
    split = arith.tx_split(byte_time_q16)
    hi = [fy.P4TableEntry("tx_time_hi", match=fy.P4TableMatch(rate_class=rate_class, len_hi=i),
                          action=fy.P4TableAction("set_tx_hi", ns=ns)) for i, ns in enumerate(split.hi)]
    lo = [fy.P4TableEntry("tx_time_lo", match=fy.P4TableMatch(rate_class=rate_class, len_lo=i),
                          action=fy.P4TableAction("add_tx_lo", ns=ns)) for i, ns in enumerate(split.lo)]
    return hi + lo


def product_entries(key: RateKey, rate_class: int) -> list[fy.P4TableEntry]:
    """IWA's product tables of the class: m * k for every mantissa m (refmodel/arith.py: mul_rows)."""
    return [e for table, const in PRODUCT_TABLES
            for e in product_rows(table, table.replace("products", "set_product"), getattr(key, const),
                                  {"rate_class": rate_class})]


def class_entries(key: RateKey, rate_class: int) -> list[fy.P4TableEntry]:
    """Every table entry of one rate class of the v1model program."""
    return tx_entries(key.byte_time_q16, rate_class) + product_entries(key, rate_class)


Contents = dict[str, tuple[int, ...]]  # table -> its values in key order (what a class holds, from the switch)


def contents(entries: Iterable[fy.P4TableEntry]) -> Contents:
    """A class's entries as table -> values in the order of their non-class key."""
    rows: dict[str, dict[int, int]] = {}
    for e in entries:
        (k,) = [v for f, v in e.match.items() if f != "rate_class"]
        (v,) = e.action.args.values()
        rows.setdefault(e.table_id, {})[k] = v
    return {t: tuple(v for _, v in sorted(r.items())) for t, r in rows.items()}


class RateClasses:
    """What each of the switch's rate classes holds (class -> RateKey)."""

    def __init__(self, n_classes: int = arith.RATE_CLASSES) -> None:
        self.n_classes = n_classes
        self.holds: dict[int, RateKey] = {}
        self.foreign: dict[int, Contents] = {}  # written by another controller

    def learn(self, found: dict[int, Contents]) -> None:
        """Classes another controller wrote (class -> its tables, read from the switch): one with the same
        tables is reused, and none of them is ever overwritten (who uses them is not known here)."""
        self.foreign = {c: t for c, t in found.items() if c not in self.holds}

    def place(self, key: RateKey, in_use: Iterable[int]) -> tuple[int, str, list[fy.P4TableEntry]]:
        """The class for these numbers and what to write first: ``(class, "insert" | "modify" | "", entries)``.
        A class that already holds them is reused as it is; otherwise a never-written class gets its tables
        inserted, or a class none of ``in_use`` refers to is overwritten."""
        for cls, held in self.holds.items():
            if held == key:
                return cls, "", []
        for cls, tables in self.foreign.items():
            if tables == contents(class_entries(key, cls)):
                del self.foreign[cls]
                self.holds[cls] = key
                return cls, "", []
        busy = set(in_use)
        fresh = next((c for c in range(self.n_classes) if c not in self.holds and c not in self.foreign), None)
        if fresh is not None:
            op, cls = "insert", fresh
        else:
            cls = next((c for c in sorted(self.holds) if c not in busy), -1)
            if cls < 0:
                raise ConfigError(f"more than {self.n_classes} distinct link rates at once: the program holds "
                                  f"{self.n_classes} rate classes")
            op = "modify"
        ents = class_entries(key, cls)  # raises before anything is recorded
        self.holds[cls] = key
        return cls, op, ents

    def forget(self) -> None:
        """The switch's tables were cleared (a pipeline push, delete_all)."""
        self.holds.clear()
        self.foreign.clear()
