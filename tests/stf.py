"""P4Testgen's STF packet tests, read into data (tests/test_tofino_testgen.py checks them against the model).

An STF test is a list of table entries (``add TABLE KEY:VALUE... ACTION(ARG:VALUE,...)``), one input packet
(``packet PORT HEX``) and what comes out (``expect PORT HEX``, ``*`` a nibble P4Testgen does not predict; no
``expect``: the packet is dropped). Comments start with ``#``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

ADD = re.compile(r"add (\S+) (.*?)\s*(\S+)\((.*)\)\s*$")


@dataclass(frozen=True)
class Entry:
    table: str  # the last part of the name: forward, link_cfg, link_of, ...
    key: dict[str, int]
    action: str  # the last part: route, set_link_cfg, unconfigured, ...
    args: dict[str, int]


@dataclass
class StfTest:
    name: str
    entries: list[Entry] = field(default_factory=list)
    port: int = -1
    packet: bytes = b""
    expect: list[tuple[int, str]] = field(default_factory=list)  # (port, hex with '*' wildcards)

    def table(self, name: str) -> list[Entry]:
        return [e for e in self.entries if e.table == name]


def _pairs(text: str) -> dict[str, int]:
    out = {}
    for item in filter(None, (t.strip() for t in re.split(r"[ ,]", text))):
        k, v = item.split(":", 1)
        out[k.split(".")[-1]] = int(v, 0)
    return out


def parse(path: Path) -> StfTest:
    t = StfTest(path.stem)
    for line in path.read_text().splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("add "):
            m = ADD.match(line)
            if m is None:
                raise ValueError(f"{path}: cannot read {line!r}")
            table, key, action, args = m.groups()
            t.entries.append(Entry(table.split(".")[-1], _pairs(key), action.split(".")[-1], _pairs(args)))
        elif line.startswith("packet "):
            _, port, data = line.split(None, 2)
            t.port, t.packet = int(port, 0), bytes.fromhex(data.replace(" ", ""))
        elif line.startswith("expect "):
            _, port, data = line.split(None, 2)
            t.expect.append((int(port, 0), data.replace(" ", "").split("$")[0]))
        else:
            raise ValueError(f"{path}: unknown STF line {line!r}")
    return t


def matches(pattern: str, frame: bytes) -> bool:
    """Does ``frame`` agree with an expected packet's hex wherever it is not '*'?"""
    got = frame.hex().upper()
    return len(got) >= len(pattern) and all(p in ("*", g) for p, g in zip(pattern.upper(), got))
