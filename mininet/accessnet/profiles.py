"""Access link profiles (BRIEF, from the seeds) and buffer sizes."""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from refmodel.params import ConfigError

MSS_FRAME = 1500  # the seeds count BDP in 1500 B packets
RADIO_STREAM = 0x72616469  # "radi": the radio's draws are their own stream, apart from the workloads' (same seed)


@dataclass(frozen=True)
class Profile:
    name: str
    rate_bps: float  # bottleneck rate (downstream)
    delay_ms: float  # one-way propagation delay of the access link
    server_delay_ms: float = 11.0  # server to access link, one way
    # A radio link: with ``rate_min_bps`` the rate is drawn again every ``slot_s`` seconds, uniformly in
    # [rate_min_bps, 2 x rate_bps - rate_min_bps] (mean rate_bps), from the replication's seed.
    rate_min_bps: float | None = None
    slot_s: float = 0.2
    # The phone's advertised receive window in bytes (bpf/rwnd.bpf.c on the client): bounds each flow's flight.
    client_window_bytes: int | None = None

    def rate_schedule(self, seed: int, span_s: float) -> tuple[tuple[float, float], ...]:
        """The link's rate over a replication: (seconds after the audio's start, bit/s), one entry per slot from 0
        to ``span_s``; () for a fixed-rate link. Paired: the same seed gives every AQM the same radio."""
        if self.rate_min_bps is None:
            return ()
        rng = np.random.default_rng([seed, RADIO_STREAM])
        n = int(np.ceil(span_s / self.slot_s))
        rates = rng.uniform(self.rate_min_bps, 2 * self.rate_bps - self.rate_min_bps, n)
        return tuple((round(k * self.slot_s, 6), round(float(r))) for k, r in enumerate(rates))

    def as_meta(self) -> dict:
        """The profile as meta.json records it: name, rate, delays, and a radio's or a phone's window's keys
        only where the profile has them."""
        out = {"name": self.name, "rate_bps": self.rate_bps, "delay_ms": self.delay_ms,
               "server_delay_ms": self.server_delay_ms}
        if self.rate_min_bps is not None:
            out.update(rate_min_bps=self.rate_min_bps, slot_s=self.slot_s)
        if self.client_window_bytes is not None:
            out["client_window_bytes"] = self.client_window_bytes
        return out

    @property
    def rtt_s(self) -> float:
        return 2 * (self.delay_ms + self.server_delay_ms) / 1000

    @property
    def bdp_packets(self) -> float:
        """The seeds' BDP: access rate x access RTT (2 x one-way delay), in 1500 B packets."""
        return self.rate_bps * 2 * self.delay_ms / 1000 / 8 / MSS_FRAME


PROFILES = {
    "edge": Profile("edge", 160e3, 250.0),
    "hspa": Profile("hspa", 2e6, 70.0),
    "lte": Profile("lte", 50e6, 15.0),
    "rtc50": Profile("rtc50", 5e6, 50.0, 0.0),
    "rtc100": Profile("rtc100", 5e6, 100.0, 0.0),
    # PAM'13's HSPA network read as a fixed-rate link (docs/seeds.md): 625 kbit/s, the rate at which one flow's
    # initial window (IW3 and IW10 alike) adds Table 1's largest IPDV beyond the radio's own jitter; 6 ms, so that
    # the audio's one-way delay is its measured median (18.0 ms) with 11 ms server side. Its BMv2 run showed it
    # does not stand for the network (transfers of 5 s, a standing queue of seconds): kept for comparison.
    "pam13": Profile("pam13", 625e3, 6.0),
    # PAM'13's HSPA network as a radio (docs/seeds.md derives each number from Table 1, Fig. 4, 5 and 6): a mean
    # of 2.5 Mbit/s (372 kB end about 1.2 s after the handshakes), each 0.2 s drawn in [0.625, 4.375] Mbit/s (the
    # slowest slot drains one window into Table 1's largest single-flow IPDV), the phone's window of 10 segments
    # (IW10 leaves whole; one or two IW3 flows stay near the 40 ms jitter buffer), 6.7 ms for the 18.0 ms median.
    "pam13radio": Profile("pam13radio", 2.5e6, 6.7, rate_min_bps=625e3, slot_s=0.2, client_window_bytes=14_600),
}
# The seeds' BDPs, rounded as they state them (EDGE 7, HSPA 24, LTE 125).
SEED_BDP = {"edge": 7, "hspa": 24, "lte": 125}


PROFILE_KEYS = {"name": None, "rate_bps": (1e3, 1e11), "delay_ms": (0.0, 10_000.0), "server_delay_ms": (0.0, 10_000.0),
                "rate_min_bps": (1e3, 1e11), "slot_s": (0.1, 60.0), "client_window_bytes": (2048, 65535)}
PROFILE_DEFAULTS = {"server_delay_ms": 11.0, "slot_s": 0.2}
PROFILE_OPTIONAL = {"rate_min_bps", "client_window_bytes"}
PROFILE_NAME = re.compile(r"[a-z0-9][a-z0-9_]{0,31}")


def profile(spec: str | dict) -> Profile:
    """A named profile, or a custom one: {"name", "rate_bps", "delay_ms", "server_delay_ms"} and for a radio
    {"rate_min_bps", "slot_s", "client_window_bytes"}, each value checked (the name becomes part of directory
    names; a built-in name would pick that link's RED rows)."""
    if isinstance(spec, dict):
        extra = set(spec) - set(PROFILE_KEYS)
        if extra:
            raise ConfigError(f"profile: unknown key(s) {sorted(extra)}; allowed {sorted(PROFILE_KEYS)}")
        for key in ("rate_bps", "delay_ms"):
            if key not in spec:
                raise ConfigError(f"profile: missing {key}")
        name = spec.get("name", "custom")
        if not isinstance(name, str) or not PROFILE_NAME.fullmatch(name):
            raise ConfigError(f"profile name = {name!r}: must be [a-z0-9][a-z0-9_]* (at most 32): it becomes part "
                              "of directory names")
        if name in PROFILES:
            raise ConfigError(f"profile name = {name!r} is a built-in profile: give the custom link its own name")
        vals: dict = {}
        for key, (lo, hi) in ((k, r) for k, r in PROFILE_KEYS.items() if r):
            v = spec.get(key, PROFILE_DEFAULTS.get(key))
            if v is None and key in PROFILE_OPTIONAL:
                continue
            if not (isinstance(v, (int, float)) and not isinstance(v, bool) and lo <= v <= hi):
                raise ConfigError(f"profile {key} = {v!r}: must be a number in [{lo:g}, {hi:g}]")
            vals[key] = int(v) if key == "client_window_bytes" else float(v)
        if vals.get("rate_min_bps", 0) > vals["rate_bps"]:
            raise ConfigError(f"profile rate_min_bps = {vals['rate_min_bps']:g} is above its mean rate_bps = "
                              f"{vals['rate_bps']:g}")
        return Profile(name, **vals)
    if not isinstance(spec, str) or spec.lower() not in PROFILES:
        raise ConfigError(f"profile = {spec!r} is unknown: allowed {', '.join(PROFILES)} or a table")
    return PROFILES[spec.lower()]


MAX_PACKETS = 100_000
BYTES_RANGE = (1514, 10**9)


def buffer_packets(spec: str | int, prof: Profile) -> dict:
    """'2bdp', 'bdp', '50p' / 50 -> {'packets': n}; '72000B' -> {'bytes': n}; each within its range."""
    if isinstance(spec, int) and not isinstance(spec, bool):
        out = {"packets": spec}
    elif isinstance(spec, str):
        s = spec.strip().lower()
        bdp_m = re.fullmatch(r"(\d+\.?\d*|\.\d+)?\s*\*?\s*bdp", s)
        p_m = re.fullmatch(r"(\d+)\s*p(ackets)?", s)
        b_m = re.fullmatch(r"(\d+)\s*b(ytes)?", s)
        if bdp_m:
            k = float(bdp_m[1]) if bdp_m[1] else 1.0
            if not 0 < k <= 1000:
                raise ConfigError(f"buffer = {spec!r}: the BDP multiple must be in (0, 1000]")
            bdp = SEED_BDP.get(prof.name, max(1, round(prof.bdp_packets)))
            out = {"packets": max(1, round(k * bdp))}
        elif p_m:
            out = {"packets": int(p_m[1])}
        elif b_m:
            out = {"bytes": int(b_m[1])}
        else:
            raise ConfigError(f"buffer = {spec!r}: expected e.g. '2bdp', 'bdp', '50p' or '72000B'")
    else:
        raise ConfigError(f"buffer = {spec!r}: expected e.g. '2bdp', 'bdp', '50p' or '72000B'")
    if "packets" in out and not 1 <= out["packets"] <= MAX_PACKETS:
        raise ConfigError(f"buffer = {spec!r}: {out['packets']} packets; must be in [1, {MAX_PACKETS}]")
    if "bytes" in out and not BYTES_RANGE[0] <= out["bytes"] <= BYTES_RANGE[1]:
        raise ConfigError(f"buffer = {spec!r}: {out['bytes']} bytes; must be in [{BYTES_RANGE[0]}, {BYTES_RANGE[1]}]")
    return out
