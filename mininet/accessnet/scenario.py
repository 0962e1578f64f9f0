"""Scenarios are data: ``mininet/scenarios/<name>.toml``. This module reads one,
checks it, and expands it into the cases (profile x buffer x AQM x IW) of a run.

See ``mininet/scenarios/README.md`` for the keys. A user adds a scenario by
adding a file; no code changes.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import itertools
import math
import os
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from controller.config import params_from_dict, with_jitter_budget
from refmodel.aqms import KERNEL_NAMES, P4_NAMES, SECTIONS, runs
from refmodel.constants import Telemetry
from refmodel.params import JITTER_BUDGET_MS, ConfigError

from .addresses import IP_VERSIONS
from .browse import DEFAULTS as USERS_DEFAULTS
from .browse import MODES as USER_MODES
from .irto import check_irto
from .profiles import Profile, buffer_packets, profile
from .webrtc import DEFAULTS as WEBRTC_DEFAULTS
from .webrtc import DIAG_ARRIVALS, PION_BINARY, STACK, STACKS

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
P4_AQMS = P4_NAMES  # refmodel/aqms/
KERNEL_AQMS = KERNEL_NAMES

TOP_KEYS = {"description", "run", "audio", "web", "bulk", "burst", "aqm", "rtc", "users", "webrtc", "quic"}
TCP_SECTIONS = ("web", "burst", "bulk", "users")  # the workloads whose flows the route's initcwnd (the IW) sets
QUIC_IW = 10  # aioquic's initial window, in datagrams (accessnet.quic)
RUN_KEYS = {"profile", "buffer", "aqms", "iws", "reps", "seed", "cc", "duration_s", "switch", "audio_only_s",
            "tail_s", "jitter_budget_ms", "rate_changes", "irto_s", "ip", "telemetry", "nodelay"}
# [run] telemetry: which packets the P4 switch reports (refmodel.constants.Telemetry): "all", or "datagrams" (the
# audio's records only, which the single-bottleneck check reads) where a run's TCP would load BMv2 with clones
TELEMETRY_MODES = tuple(t.name.lower() for t in Telemetry)
SAFE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_+-]{0,63}")  # scenario, sweep and profile names: path-safe
CC_NAME = re.compile(r"[a-z][a-z0-9_]{0,15}")

# Every value a scenario may hold, with its allowed range: (kind, low, high), bounds inclusive; "num" is an
# int or a float, "int" an int, "range" a [low, high] pair of numbers within the bounds; "choice" one of the
# strings in ``low`` (high unused); ("one_of", values): an int equal to one of the values; ("bool",): true or false.
RANGES: dict[str, dict[str, tuple]] = {
    "run": {"reps": ("int", 1, 100_000), "seed": ("int", 0, 2**62), "duration_s": ("num", 1, 86_400),
            "audio_only_s": ("num", 0.1, 86_400), "tail_s": ("num", 0, 3600), "jitter_budget_ms": ("num", 0.001, 1000),
            "ip": ("one_of", IP_VERSIONS), "telemetry": ("choice", TELEMETRY_MODES, None), "nodelay": ("bool",)},
    "audio": {"interval_ms": ("num", 1, 1000), "payload": ("int", 0, 1400)},
    "web": {"flows": ("int", 1, 1000), "total_bytes": ("int", 1, 10**11), "start_s": ("range", 0, 86_400)},
    "burst": {"flows": ("int", 1, 1000), "total_bytes": ("int", 1, 10**11), "start_s": ("range", 0, 86_400),
              "second_after_s": ("num", 0, 86_400)},
    "bulk": {"start_s": ("num", 0, 86_400), "bytes": ("int", 1, 10**14)},
    "rtc": {"start_kbps": ("num", 1, 10**6), "max_kbps": ("num", 1, 10**6), "size": ("int", 64, 1472),
            "start_s": ("num", 0, 86_400)},
    "webrtc": {"start_kbps": ("num", 1, 10**6), "min_kbps": ("num", 1, 10**6), "max_kbps": ("num", 1, 10**6),
               "fps": ("num", 1, 120), "start_s": ("num", 0, 86_400), "max_burst_ms": ("num", 0, 10_000),
               "flows": ("int", 1, 4), "stack": ("choice", STACKS, None),
               "diag_arrival": ("choice", DIAG_ARRIVALS, None), "diag_rtt_ms": ("num", 1, 10_000)},
    "users": {"count": ("int", 1, 1000), "min_bytes": ("int", 1, 10**11), "max_bytes": ("int", 1, 10**11),
              "idle_mean_s": ("num", 0.001, 86_400), "start_s": ("num", 0, 86_400),
              "mode": ("choice", USER_MODES, None), "objects": ("int", 1, 1000), "connections": ("int", 1, 256),
              "keepalive_timeout_s": ("num", 0.001, 86_400)},
    # streams: aioquic lets a peer open 128 at once; total_bytes: a response is one buffer in the server
    "quic": {"connections": ("int", 1, 100), "streams": ("int", 1, 100), "total_bytes": ("int", 1, 10**8),
             "start_s": ("range", 0, 86_400)},
}
# [users] keys that apply only to some modes (accessnet.browse).
USERS_MODE_KEYS = {"objects": ("keepalive", "h2"), "connections": ("keepalive",),
                   "keepalive_timeout_s": ("keepalive", "h2")}


def _is_num(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def check_value(where: str, key: str, value, spec: tuple) -> None:
    """Refuse a value outside its kind or range, naming the key, the value and what is allowed."""
    kind, *bounds = spec
    if kind == "choice":
        choices = bounds[0]
        if not (isinstance(value, str) and value in choices):
            raise ConfigError(f"{where} {key} = {value!r}: must be one of {', '.join(map(repr, choices))}")
        return
    if kind == "bool":
        if not isinstance(value, bool):
            raise ConfigError(f"{where} {key} = {value!r}: must be true or false")
        return
    if kind == "one_of":
        values = bounds[0]
        ok = isinstance(value, int) and not isinstance(value, bool) and value in values
        allowed = f"one of {', '.join(map(str, values))}"
        if not ok:
            raise ConfigError(f"{where} {key} = {value!r}: must be {allowed}")
        return
    lo, hi = bounds
    if kind == "range":
        ok = (isinstance(value, list) and len(value) == 2 and all(_is_num(x) for x in value)
              and lo <= value[0] <= value[1] <= hi)
        allowed = f"[low, high] with {lo} <= low <= high <= {hi}"
    else:
        ok = (isinstance(value, int) and not isinstance(value, bool) if kind == "int" else _is_num(value)) \
            and lo <= value <= hi
        allowed = f"{'an integer' if kind == 'int' else 'a number'} in [{lo}, {hi}]"
    if not ok:
        raise ConfigError(f"{where} {key} = {value!r}: must be {allowed}")


def check_sections(data: dict, label: str) -> None:
    """Every key of every traffic section and of [run] (except the ones checked where they are read)."""
    if not isinstance(data.get("description", ""), str):
        raise ConfigError(f"{label}: description must be a string")
    for section, ranges in RANGES.items():
        table = data.get(section, {})
        if not isinstance(table, dict):
            raise ConfigError(f"{label}: [{section}] must be a table")
        extra = set(table) - set(ranges) - (RUN_KEYS if section == "run" else set())
        if extra:
            raise ConfigError(f"{label}: [{section}] unknown key(s) {sorted(extra)}; allowed {sorted(ranges)}")
        for key, spec in ranges.items():
            if key in table:
                check_value(f"{label}: [{section}]", key, table[key], spec)
    for section, lo, hi in (("users", "min_bytes", "max_bytes"), ("rtc", "start_kbps", "max_kbps"),
                            ("web", "flows", "total_bytes"), ("burst", "flows", "total_bytes")):
        t = data.get(section, {})
        if lo in t and hi in t and t[lo] > t[hi]:
            raise ConfigError(f"{label}: [{section}] {lo} = {t[lo]!r} is above {hi} = {t[hi]!r}")
    check_users(data, label)
    check_webrtc(data, label)
    check_quic(data, label)


def check_quic(data: dict, label: str) -> None:
    """[quic]: at least one byte per stream, its IW not mislabelled, and aioquic importable (pinned in
    requirements.txt: 'make setup' installs it)."""
    if "quic" not in data:
        return
    q = data["quic"]
    streams = q.get("connections", 1) * q.get("streams", 6)
    if q.get("total_bytes", 372_000) < streams:
        raise ConfigError(f"{label}: [quic] total_bytes = {q.get('total_bytes', 372_000)!r} is below connections x "
                          f"streams = {streams}: every stream needs at least one byte")
    iws = data.get("run", {}).get("iws", [10])
    if not any(s in data for s in TCP_SECTIONS) and iws != [QUIC_IW]:
        raise ConfigError(f"{label}: [run] iws = {iws!r} with [quic] alone: the IW is the TCP server's route "
                          f"initcwnd, and QUIC runs aioquic's own window of {QUIC_IW} datagrams in every case; "
                          f"use iws = [{QUIC_IW}] (or add a TCP workload whose IW it varies)")
    if importlib.util.find_spec("aioquic") is None:
        raise ConfigError(f"{label}: [quic] needs aioquic, which is not installed in this Python "
                          f"(run 'make setup': requirements.txt pins it)")


def check_users(data: dict, label: str) -> None:
    """[users]: the keys of the persistent modes only with a mode that has them, and every object of a page at
    least one byte."""
    u = {**USERS_DEFAULTS, **data.get("users", {})}
    mode = u["mode"]
    for key, modes in USERS_MODE_KEYS.items():
        if key in data.get("users", {}) and mode not in modes:
            raise ConfigError(f"{label}: [users] {key} applies to mode {' or '.join(map(repr, modes))}, not to "
                              f"mode = {mode!r}")
    if "users" in data and mode != "fresh" and u["objects"] > u["min_bytes"]:
        raise ConfigError(f"{label}: [users] objects = {u['objects']!r} is above min_bytes = {u['min_bytes']!r}: "
                          "every object of a page needs a byte")


def check_webrtc(data: dict, label: str) -> None:
    """[webrtc]: its rates in order with the defaults filled in, not beside [rtc] (both write rtc_tx.csv and
    rtc_rx.csv), and its stack there: aiortc importable (pinned in requirements.txt: 'make setup' installs it),
    or for ``stack = "pion"`` the program build/pion-rtc ('make setup' builds it with Go), which has no
    ``max_burst_ms`` (aiortc's receiver's burst cap)."""
    if "webrtc" not in data:
        return
    if "rtc" in data:
        raise ConfigError(f"{label}: [rtc] and [webrtc] cannot be in one scenario: both are the run's real-time "
                          "flow (rtc_tx.csv, rtc_rx.csv)")
    w = {**WEBRTC_DEFAULTS, **data["webrtc"]}
    if not w["min_kbps"] <= w["start_kbps"] <= w["max_kbps"]:
        raise ConfigError(f"{label}: [webrtc] needs min_kbps <= start_kbps <= max_kbps; got {w['min_kbps']!r}, "
                          f"{w['start_kbps']!r}, {w['max_kbps']!r} (defaults {WEBRTC_DEFAULTS})")
    if w.get("stack", STACK) == "pion":
        if diag := [k for k in ("diag_arrival", "diag_rtt_ms") if k in data["webrtc"]]:
            raise ConfigError(f"{label}: [webrtc] {', '.join(diag)}: diagnostics of the aiortc receiver; stack = "
                              "\"pion\" has none")
        if "max_burst_ms" in data["webrtc"]:
            raise ConfigError(f"{label}: [webrtc] max_burst_ms is the aiortc receiver's burst cap; stack = \"pion\" "
                              "has no such key (Pion's estimator is at the sender)")
        if not os.access(PION_BINARY, os.X_OK):
            raise ConfigError(f"{label}: [webrtc] stack = \"pion\" needs {PION_BINARY}, which is not built (run "
                              "'make setup': it builds tools/pion-rtc with Go 1.24 or newer)")
        return
    if importlib.util.find_spec("aiortc") is None:
        raise ConfigError(f"{label}: [webrtc] needs aiortc, which is not installed in this Python "
                          f"(run 'make setup': requirements.txt pins it)")


@functools.cache
def available_cc() -> tuple[str, ...] | None:
    """The kernel's available TCP congestion controls (None where the kernel does not say)."""
    try:
        return tuple(open("/proc/sys/net/ipv4/tcp_available_congestion_control").read().split())
    except OSError:
        return None


def check_cc(cc, label: str) -> str:
    if not isinstance(cc, str) or not CC_NAME.fullmatch(cc):
        raise ConfigError(f"{label}: [run] cc = {cc!r}: must be a congestion control's name ([a-z][a-z0-9_]*)")
    have = available_cc()
    if have is not None and cc not in have:
        raise ConfigError(f"{label}: [run] cc = {cc!r} is not available in this kernel: allowed {', '.join(have)} "
                          f"(load it with 'modprobe tcp_{cc}')")
    return cc


def check_name(kind: str, name: str) -> str:
    if not SAFE_NAME.fullmatch(name):
        raise ConfigError(f"{kind} name {name!r}: must be letters, digits, '_', '+' or '-' (at most 64, not "
                          "starting with a sign): it becomes part of directory names")
    return name


@dataclass(frozen=True)
class Case:
    """One cell of the matrix: everything one replication needs."""

    scenario: str
    profile: Profile
    buffer: dict  # {"packets": n} or {"bytes": n}
    aqm: str
    iw: int
    switch_cfg: dict  # [link]/[buffer]/[aqm] table for controller.config (its [aqm.iwa] budget_s: jitter_budget_ms)
    spec: dict = field(repr=False)  # the scenario's traffic sections
    nominal_buffer: dict | None = None  # the scenario's buffer (redok replaces it with its own): pairs cases
    irto_s: float | None = None  # the hosts' initial RTO ([run] irto_s); None: the kernel's
    ip: int = 4  # the IP family the workloads talk over ([run] ip)
    # the audio's jitter budget ([run] jitter_budget_ms): the switch's install-time IWA target (switch_cfg) and the
    # tuner's (both read switch_cfg's [aqm.iwa] budget_s), recorded in meta.json
    jitter_budget_ms: float = JITTER_BUDGET_MS
    # the real-time flow's WebRTC stack ([webrtc] stack, default aiortc); None without a [webrtc] section
    stack: str | None = None

    @property
    def _draw_suffix(self) -> str:
        """What the case's name, pairing unit and draws carry beyond the defaults: the initial RTO when set, and
        ``-ip6`` for IPv6 (IPv4 names are what they were before the key existed, so older runs resume)."""
        return ("" if self.irto_s is None else f"-irto{self.irto_s:g}") + ("" if self.ip == 4 else f"-ip{self.ip}")

    @property
    def _stack_suffix(self) -> str:
        """``-pion`` for a [webrtc] flow on the Pion stack; aiortc, the default, adds nothing (its cases keep the
        names they had before the stack was a case's)."""
        return "" if self.stack in (None, STACK) else f"-{self.stack}"

    @property
    def _suffix(self) -> str:
        return self._draw_suffix + self._stack_suffix

    @property
    def name(self) -> str:
        """Directory name of the case in a run: the workload (scenario) first, so that two scenarios can never
        be confused in one run directory (e.g. ``web6-hspa-48p-iwa-iw10``, ``web6-hspa-48p-iwa-iw10-ip6``)."""
        return f"{self.scenario}-{self.profile.name}-{_buf_name(self.buffer)}-{self.aqm}-iw{self.iw}{self._suffix}"

    @property
    def pair_key(self) -> str:
        """The pairing unit: everything of the case except the AQM. Cases with the same key see the same
        random draws in a replication number (paired comparisons, BRIEF); profiles, buffers, IWs and IP
        families are different designs and draw independently. redok's own buffer does not unpair it from
        the others. The WebRTC stack is part of the unit (each stack's AQMs pair with its own FIFO) but not of
        the draws (``draw_key``)."""
        return self.draw_key + self._stack_suffix

    @property
    def draw_key(self) -> str:
        """What the replication's random draws hash (``rep_seed``): the pairing unit without the WebRTC stack,
        so both stacks of a case meet the same web users, start times and switch seed in replication k (the
        stacks pair as the AQMs do; experiments.seeds pairs them by meta.json's seed). Without a Pion stack it
        is ``pair_key`` itself, so every seed is what it was before the stack was part of the name."""
        return (f"{self.scenario}-{self.profile.name}-{_buf_name(self.nominal_buffer or self.buffer)}-iw{self.iw}"
                f"{self._draw_suffix}")

    def rep_seed(self, base_seed: int, rep: int) -> int:
        """The seed of replication ``rep``: a stable hash of the scenario's seed, the draw unit (``draw_key``:
        the pairing unit without the WebRTC stack) and the replication number (never of the AQM or the stack),
        so every AQM and both stacks of a scenario get the same start times, sizes, traffic-tool seeds and
        switch seed in the same replication number."""
        h = hashlib.sha256(f"{int(base_seed)}/{self.draw_key}/{int(rep)}".encode()).digest()
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
    irto_s: float | None = None  # initial RTO of the server and client (s); None = the kernel's (accessnet.irto)
    ip: int = 4  # the IP family the workloads talk over ([run] ip: 4 or 6)
    nodelay: bool = False  # the web server turns Nagle's algorithm off ([run] nodelay: TCP_NODELAY)


def _switch_cfg(prof: Profile, buf: dict, aqm: str, knobs: dict, telemetry: str = "all") -> tuple[dict, dict]:
    """The controller's [link]/[buffer]/[aqm] table for one AQM, and the buffer it really uses."""
    a: dict = {"name": runs(aqm)}
    if aqm == "red":
        a["red"] = dict(knobs.get("red") or RED_ROWS.get(prof.name) or RED_ROWS["hspa"])
    elif aqm == "redok":
        row, pkts = REDOK_ROWS.get(prof.name, REDOK_ROWS["hspa"])
        a["red"] = dict(knobs.get("redok") or row)
        buf = {"packets": pkts}
    elif aqm in SECTIONS and aqm in knobs:  # codel, pie, iwa: the scenario's [aqm.<name>] as it is
        a[aqm] = dict(knobs[aqm])
    link = {"rate_bps": prof.rate_bps, **({} if telemetry == "all" else {"telemetry": telemetry})}
    return {"link": link, "buffer": dict(buf), "aqm": a}, buf


def find(name_or_path: str) -> Path:
    path = Path(name_or_path)
    if not path.suffix:
        path = SCENARIO_DIR / f"{name_or_path}.toml"
    if not path.exists():
        known = ", ".join(sorted(p.stem for p in SCENARIO_DIR.glob("*.toml")))
        raise ConfigError(f"scenario {name_or_path!r} not found (known: {known})")
    return path


def load(name_or_path: str, overrides: dict | None = None, stack: str | None = None) -> Scenario:
    """Read a scenario; ``overrides`` replace keys of its [run] table and ``stack`` its [webrtc] stack (a
    sweep's matrix does this)."""
    path = find(name_or_path)
    try:
        data = tomllib.loads(path.read_text())
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as e:
        raise ConfigError(f"{path}: {e}") from None
    return build(path, data, overrides, stack)


def _sections(path: Path, data: dict, overrides: dict | None, stack: str | None = None) -> tuple[dict, dict]:
    """The scenario's sections with ``overrides`` laid over [run] and ``stack`` over [webrtc] stack (a scenario
    without [webrtc] refuses it: the key would add a flow), and its [run] table: every section and key name
    known, every traffic section's values in range (raises ConfigError)."""
    if not isinstance(data, dict):
        raise ConfigError(f"{path.name}: not a table of sections")
    unknown = set(data) - TOP_KEYS
    if unknown:
        raise ConfigError(f"{path.name}: unknown section(s) {sorted(unknown)}; allowed {sorted(TOP_KEYS)}")
    if overrides:
        data = {**data, "run": {**data.get("run", {}), **overrides}}
    if stack is not None:
        if not isinstance(data.get("webrtc"), dict):
            raise ConfigError(f"{path.name}: a WebRTC stack ({stack!r}, a sweep's stacks) for a scenario without "
                              "[webrtc]: it has no real-time flow to run on it")
        data = {**data, "webrtc": {**data["webrtc"], "stack": stack}}
    run = data.get("run", {})
    if not isinstance(run, dict):
        raise ConfigError(f"{path.name}: [run] must be a table")
    bad = set(run) - RUN_KEYS
    if bad:
        raise ConfigError(f"{path.name}: [run] unknown key(s) {sorted(bad)}; allowed {sorted(RUN_KEYS)}")
    check_sections(data, path.name)
    return data, run


def _link(run: dict, label: str) -> tuple[Profile, dict]:
    """[run]'s link profile and buffer, with its rate changes checked: well formed, and not on a radio
    profile, whose link draws its own rate every slot."""
    if not isinstance(run.get("rate_changes", []), list):
        raise ConfigError(f"{label}: [run] rate_changes must be a list of [at_s, rate_bps]")
    for item in run.get("rate_changes", []):
        if (not isinstance(item, list) or len(item) != 2 or not all(isinstance(x, (int, float)) for x in item)
                or item[0] < 0 or item[1] <= 0):
            raise ConfigError(f"{label}: [run] rate_changes item {item!r}: expected [at_s >= 0, rate_bps > 0]")
    try:
        prof = profile(run.get("profile", "hspa"))
        buf = buffer_packets(run.get("buffer", "2bdp"), prof)
    except ConfigError as e:
        raise ConfigError(f"{label}: [run] {e}") from None
    if prof.rate_min_bps is not None and run.get("rate_changes"):
        raise ConfigError(f"{label}: [run] rate_changes with profile {prof.name!r}: its radio draws the link's "
                          "rate every slot; give one or the other")
    return prof, buf


def _aqms_and_iws(run: dict, label: str) -> tuple[list[str], list[int]]:
    """[run]'s AQMs (lower-cased, each a known one) and initial windows (1..100 segments): the cases'
    matrix."""
    aqms = run.get("aqms", ["fifo"])
    if not isinstance(aqms, list) or not aqms or not all(isinstance(a, str) for a in aqms):
        raise ConfigError(f"{label}: [run] aqms = {aqms!r}: must be a non-empty list of AQM names")
    aqms = [a.lower() for a in aqms]
    for a in aqms:
        if a not in P4_AQMS + KERNEL_AQMS:
            raise ConfigError(f"{label}: aqm {a!r} is unknown: allowed {', '.join(P4_AQMS + KERNEL_AQMS)}")
    iws = run.get("iws", [10])
    if (not isinstance(iws, list) or not iws
            or not all(isinstance(i, int) and not isinstance(i, bool) and 1 <= i <= 100 for i in iws)):
        raise ConfigError(f"{label}: [run] iws = {iws!r}: each IW must be 1..100 segments")
    return aqms, iws


def _aqm_knobs(data: dict, label: str) -> dict:
    """The [aqm] section: a table per P4 AQM at most (its knobs go into that AQM's switch table)."""
    knobs = data.get("aqm", {})
    if not isinstance(knobs, dict) or set(knobs) - set(P4_AQMS):
        raise ConfigError(f"{label}: [aqm] holds one table per P4 AQM ({', '.join(P4_AQMS)}); got "
                          f"{sorted(knobs) if isinstance(knobs, dict) else knobs!r}")
    return knobs


def _case_switch_cfg(label: str, prof: Profile, buf: dict, aqm: str, knobs: dict,
                     budget_ms: float, telemetry: str = "all") -> tuple[dict, dict]:
    """``_switch_cfg`` with the jitter budget in it, checked by the controller's rules for a P4 AQM; and the
    buffer the case really uses."""
    cfg, real_buf = _switch_cfg(prof, buf, aqm, knobs, telemetry)
    try:
        cfg = with_jitter_budget(cfg, budget_ms)  # the switch installs IWA's target from it, the tuner tunes for it
    except ConfigError as e:
        raise ConfigError(f"{label}: {e} ([run] jitter_budget_ms, default {JITTER_BUDGET_MS:g})") from None
    if aqm in P4_AQMS:
        _check_switch_cfg(label, aqm, cfg)
    return cfg, real_buf


def _switch(run: dict, aqms: list[str], label: str) -> str:
    """[run]'s switch, which must carry every AQM of the run: the kernel's has none of the P4 ones."""
    switch = run.get("switch", "auto")
    if switch not in ("auto", "bmv2", "model", "kernel"):
        raise ConfigError(f"{label}: [run] switch = {switch!r}: allowed auto, bmv2, model, kernel")
    if switch == "kernel" and any(a in P4_AQMS for a in aqms):
        raise ConfigError(f"{label}: [run] switch = 'kernel' has only the kernel AQMs ({', '.join(KERNEL_AQMS)}); "
                          f"{', '.join(a for a in aqms if a in P4_AQMS)} run on the P4 switch")
    return switch


def build(path: Path, data: dict, overrides: dict | None = None, stack: str | None = None) -> Scenario:
    """A scenario from its data (a file's, or the copy a run directory's run.json keeps); named by
    ``path``'s stem; ``overrides`` and ``stack`` as ``load``'s. The checks run in a fixed order: a scenario
    with several faults is refused for the first one."""
    path = Path(path)
    check_name("scenario", path.stem)
    data, run = _sections(path, data, overrides, stack)
    prof, buf = _link(run, path.name)
    aqms, iws = _aqms_and_iws(run, path.name)
    knobs = _aqm_knobs(data, path.name)
    irto_s = check_irto(run.get("irto_s"), path.name)
    ip = int(run.get("ip", 4))  # checked with [run]'s RANGES
    budget_ms = float(run.get("jitter_budget_ms", JITTER_BUDGET_MS))  # checked with [run]'s RANGES
    telemetry = run.get("telemetry", "all")  # checked with [run]'s RANGES
    rtc_stack = data["webrtc"].get("stack", STACK) if "webrtc" in data else None  # checked with [webrtc]'s RANGES
    cases = []
    for aqm, iw in itertools.product(aqms, iws):
        cfg, real_buf = _case_switch_cfg(path.name, prof, buf, aqm, knobs, budget_ms, telemetry)
        cases.append(Case(path.stem, prof, real_buf, aqm, iw, cfg, data, dict(buf), irto_s, ip, budget_ms,
                          rtc_stack))
    switch = _switch(run, aqms, path.name)
    cc = check_cc(run.get("cc", "cubic"), path.name)
    return Scenario(path.stem, path, data, cases, int(run.get("reps", 3)), int(run.get("seed", 1)),
                    cc, float(run.get("duration_s", 40.0)), switch, irto_s, ip, bool(run.get("nodelay", False)))


def _check_switch_cfg(label: str, aqm: str, cfg: dict) -> None:
    """The switch's table for a P4 AQM, checked by the controller's own rules (the same ones that would
    refuse it at run time, after the network is built)."""
    try:
        params_from_dict(cfg)
    except ConfigError as e:
        raise ConfigError(f"{label}: aqm {aqm}: {e}") from None
    except (TypeError, ValueError, KeyError) as e:
        raise ConfigError(f"{label}: aqm {aqm}: bad knob ({type(e).__name__}: {e})") from None
