"""Scenarios are data: ``mininet/scenarios/<name>.toml``. This module reads one,
checks it, and expands it into the cases (profile x buffer x AQM x IW) of a run.

See ``mininet/scenarios/README.md`` for the keys. A user adds a scenario by
adding a file; no code changes.
"""

from __future__ import annotations

import hashlib
import itertools
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from refmodel.params import ConfigError

from .profiles import Profile, buffer_packets, profile

SCENARIO_DIR = Path(__file__).resolve().parent.parent / "scenarios"

# The seeds' RED and REDok rows (BRIEF, from 001_...): thresholds in packets.
RED_ROWS = {
    "edge": dict(w_q=0.002, max_p=0.1, th_min=3, th_max=9),
    "hspa": dict(w_q=0.002, max_p=0.1, th_min=5, th_max=20),
    "lte": dict(w_q=0.002, max_p=0.1, th_min=5, th_max=20),
}
REDOK_ROWS = {
    "edge": (dict(w_q=0.2, max_p=0.65, th_min=3, th_max=40), 50),
    "hspa": (dict(w_q=0.02, max_p=0.65, th_min=3, th_max=50), 100),
    "lte": (dict(w_q=0.001, max_p=0.1, th_min=5, th_max=125), 400),
}
P4_AQMS = ("fifo", "red", "redok", "codel", "pie", "iwa")
KERNEL_AQMS = ("pfifo", "kred", "kcodel", "kfq_codel", "kpie")

TOP_KEYS = {"description", "run", "audio", "web", "bulk", "burst", "aqm", "rtc", "users"}
RUN_KEYS = {"profile", "buffer", "aqms", "iws", "reps", "seed", "cc", "duration_s", "switch", "audio_only_s",
            "tail_s", "jitter_budget_ms", "rate_changes"}


@dataclass(frozen=True)
class Case:
    """One cell of the matrix: everything one replication needs."""

    scenario: str
    profile: Profile
    buffer: dict  # {"packets": n} or {"bytes": n}
    aqm: str
    iw: int
    switch_cfg: dict  # [link]/[buffer]/[aqm] table for controller.config
    spec: dict = field(repr=False)  # the scenario's traffic sections
    nominal_buffer: dict | None = None  # the scenario's buffer (redok replaces it with its own): pairs cases

    @property
    def name(self) -> str:
        """Directory name of the case in a run: the workload (scenario) first, so that two scenarios can never
        be confused in one run directory (e.g. ``web6-hspa-48p-iwa-iw10``)."""
        return f"{self.scenario}-{self.profile.name}-{_buf_name(self.buffer)}-{self.aqm}-iw{self.iw}"

    @property
    def pair_key(self) -> str:
        """The pairing unit: everything of the case except the AQM. Cases with the same key see the same
        random draws in a replication number (paired comparisons, BRIEF); profiles, buffers and IWs are
        different designs and draw independently. redok's own buffer does not unpair it from the others."""
        return f"{self.scenario}-{self.profile.name}-{_buf_name(self.nominal_buffer or self.buffer)}-iw{self.iw}"

    def rep_seed(self, base_seed: int, rep: int) -> int:
        """The seed of replication ``rep``: a stable hash of the scenario's seed, the pairing unit and the
        replication number (never of the AQM), so every AQM of a scenario gets the same start times, sizes,
        traffic-tool seeds and switch seed in the same replication number."""
        h = hashlib.sha256(f"{int(base_seed)}/{self.pair_key}/{int(rep)}".encode()).digest()
        return int.from_bytes(h[:6], "big")


def _buf_name(buf: dict) -> str:
    return f"{buf['packets']}p" if "packets" in buf else f"{buf['bytes']}B"


@dataclass(frozen=True)
class Scenario:
    name: str
    path: Path
    data: dict
    cases: list[Case]
    reps: int
    seed: int
    cc: str
    duration_s: float
    switch: str  # "auto" | "bmv2" | "model" | "kernel"


def _switch_cfg(prof: Profile, buf: dict, aqm: str, knobs: dict) -> tuple[dict, dict]:
    """The controller's [link]/[buffer]/[aqm] table for one AQM, and the buffer it really uses."""
    a: dict = {"name": "red" if aqm == "redok" else aqm}
    if aqm == "red":
        a["red"] = dict(knobs.get("red") or RED_ROWS.get(prof.name) or RED_ROWS["hspa"])
    elif aqm == "redok":
        row, pkts = REDOK_ROWS.get(prof.name, REDOK_ROWS["hspa"])
        a["red"] = dict(knobs.get("redok") or row)
        buf = {"packets": pkts}
    elif aqm in ("codel", "pie", "iwa") and aqm in knobs:
        a[aqm] = dict(knobs[aqm])
    return {"link": {"rate_bps": prof.rate_bps}, "buffer": dict(buf), "aqm": a}, buf


def find(name_or_path: str) -> Path:
    path = Path(name_or_path)
    if not path.suffix:
        path = SCENARIO_DIR / f"{name_or_path}.toml"
    if not path.exists():
        known = ", ".join(sorted(p.stem for p in SCENARIO_DIR.glob("*.toml")))
        raise ConfigError(f"scenario {name_or_path!r} not found (known: {known})")
    return path


def load(name_or_path: str, overrides: dict | None = None) -> Scenario:
    """Read a scenario; ``overrides`` replace keys of its [run] table (a sweep's matrix does this)."""
    path = find(name_or_path)
    try:
        data = tomllib.loads(path.read_text())
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as e:
        raise ConfigError(f"{path}: {e}") from None
    return build(path, data, overrides)


def build(path: Path, data: dict, overrides: dict | None = None) -> Scenario:
    """A scenario from its data (a file's, or the copy a run directory's run.json keeps); named by
    ``path``'s stem."""
    path = Path(path)
    unknown = set(data) - TOP_KEYS
    if unknown:
        raise ConfigError(f"{path.name}: unknown section(s) {sorted(unknown)}; allowed {sorted(TOP_KEYS)}")
    if overrides:
        data = {**data, "run": {**data.get("run", {}), **overrides}}
    run = data.get("run", {})
    bad = set(run) - RUN_KEYS
    if bad:
        raise ConfigError(f"{path.name}: [run] unknown key(s) {sorted(bad)}; allowed {sorted(RUN_KEYS)}")
    for item in run.get("rate_changes", []):
        if (not isinstance(item, list) or len(item) != 2 or not all(isinstance(x, (int, float)) for x in item)
                or item[0] < 0 or item[1] <= 0):
            raise ConfigError(f"{path.name}: [run] rate_changes item {item!r}: expected [at_s >= 0, rate_bps > 0]")
    if not 0 < float(run.get("jitter_budget_ms", 40)) <= 1000:
        raise ConfigError(f"{path.name}: [run] jitter_budget_ms must be in (0, 1000]")
    prof = profile(run.get("profile", "hspa"))
    buf = buffer_packets(run.get("buffer", "2bdp"), prof)
    aqms = [str(a).lower() for a in run.get("aqms", ["fifo"])]
    for a in aqms:
        if a not in P4_AQMS + KERNEL_AQMS:
            raise ConfigError(f"{path.name}: aqm {a!r} is unknown: allowed {', '.join(P4_AQMS + KERNEL_AQMS)}")
    iws = [int(i) for i in run.get("iws", [10])]
    if any(i < 1 or i > 100 for i in iws):
        raise ConfigError(f"{path.name}: iws = {iws}: each IW must be 1..100 segments")
    knobs = data.get("aqm", {})
    cases = []
    for aqm, iw in itertools.product(aqms, iws):
        cfg, real_buf = _switch_cfg(prof, buf, aqm, knobs)
        cases.append(Case(path.stem, prof, real_buf, aqm, iw, cfg, data, dict(buf)))
    switch = str(run.get("switch", "auto"))
    if switch not in ("auto", "bmv2", "model", "kernel"):
        raise ConfigError(f"{path.name}: switch = {switch!r}: allowed auto, bmv2, model, kernel")
    return Scenario(path.stem, path, data, cases, int(run.get("reps", 3)), int(run.get("seed", 1)),
                    str(run.get("cc", "cubic")), float(run.get("duration_s", 40.0)), switch)
