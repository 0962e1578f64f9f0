"""Access link profiles (BRIEF, from the seeds) and buffer sizes."""

from __future__ import annotations

import re
from dataclasses import dataclass

from refmodel.params import ConfigError

MSS_FRAME = 1500  # the seeds count BDP in 1500 B packets


@dataclass(frozen=True)
class Profile:
    name: str
    rate_bps: float  # bottleneck rate (downstream)
    delay_ms: float  # one-way propagation delay of the access link
    server_delay_ms: float = 11.0  # server to access link, one way

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
}
# The seeds' BDPs, rounded as they state them (EDGE 7, HSPA 24, LTE 125).
SEED_BDP = {"edge": 7, "hspa": 24, "lte": 125}


def profile(spec: str | dict) -> Profile:
    """A named profile, or a custom one: {"name", "rate_bps", "delay_ms", "server_delay_ms"}."""
    if isinstance(spec, dict):
        try:
            return Profile(str(spec.get("name", "custom")), float(spec["rate_bps"]), float(spec["delay_ms"]),
                           float(spec.get("server_delay_ms", 11.0)))
        except KeyError as e:
            raise ConfigError(f"profile: missing {e.args[0]}") from None
    try:
        return PROFILES[spec.lower()]
    except KeyError:
        raise ConfigError(f"profile = {spec!r} is unknown: allowed {', '.join(PROFILES)} or a table") from None


def buffer_packets(spec: str | int, prof: Profile) -> dict:
    """'2bdp', 'bdp', '50p' / 50 -> {'packets': n}; '72000B' -> {'bytes': n}."""
    if isinstance(spec, int):
        return {"packets": spec}
    s = spec.strip().lower()
    m = re.fullmatch(r"(\d*\.?\d*)\s*\*?\s*bdp", s)
    if m:
        k = float(m[1]) if m[1] else 1.0
        bdp = SEED_BDP.get(prof.name, max(1, round(prof.bdp_packets)))
        return {"packets": max(1, round(k * bdp))}
    m = re.fullmatch(r"(\d+)\s*p(ackets)?", s)
    if m:
        return {"packets": int(m[1])}
    m = re.fullmatch(r"(\d+)\s*b(ytes)?", s)
    if m:
        return {"bytes": int(m[1])}
    raise ConfigError(f"buffer = {spec!r}: expected e.g. '2bdp', 'bdp', '50p' or '72000B'")
