"""Is the switch's modelled queue the only bottleneck? Compare, per audio packet, the delay it
really got beyond the base delay with the sojourn the switch predicted for it (telemetry).

Audio records (UDP to the audio port of the phone: its IPv4 address, or in a
run over IPv6, meta.json's ``ip``, the low 32 bits of its IPv6 address in an
IPv6 record) are matched to audio packets by order (one sender, FIFO path,
nothing lost before the switch); packets the switch dropped are skipped. The
order is only trusted as far as the records' sequence numbers run without a
gap: a record lost on the way to the capture (it may have been an audio
packet's) would shift every later match by one, so matching stops at the
first missing sequence number, and the summary says how many were missing.
Records of decision BYPASS (upstream packets, e.g. the ACKs whose window IWA
rewrote) never waited in the queue and are never taken for audio.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import numpy as np

from accessnet.addresses import hosts
from refmodel.constants import Decision

from .metrics import MetricsError, base_delay_ns, owd_ns, read_audio, read_meta
from .telemetry_reader import host_mask, read_telemetry

AUDIO_PORT = 5004


def record_gaps(seq: np.ndarray) -> tuple[int, int | None]:
    """(number of sequence numbers missing between the first and the last record, the first missing one)."""
    s = np.unique(np.asarray(seq, dtype=np.int64))
    if s.size < 2:
        return 0, None
    step = np.diff(s)
    at = np.nonzero(step != 1)[0]
    return int((step[at] - 1).sum()), (int(s[at[0]]) + 1 if at.size else None)


def _matched(rep: Path) -> tuple[dict, np.ndarray, np.ndarray]:
    """meta.json (with ``records_missing``), and for every audio packet that passed the switch, up to the
    first missing telemetry record: (OWD - base delay) - predicted sojourn, and the predicted sojourn."""
    rep = Path(rep)
    meta = read_meta(rep)
    audio = read_audio(rep)
    tel, _ = read_telemetry(rep / "telemetry.pcap")
    missing, first_missing = record_gaps(tel["seq"].to_numpy())
    meta = {**meta, "records_missing": missing}
    phone = hosts(int(meta.get("ip", 4))).client  # runs recorded before [run] ip existed were IPv4
    a = tel[(tel["proto"] == 17) & (tel["dport"] == AUDIO_PORT) & (tel["decision"] != Decision.BYPASS)
            & host_mask(tel, phone)]
    if first_missing is not None:
        a = a[a["seq"] < first_missing]
    a = a.sort_values("seq")
    n = min(len(a), len(audio.df))
    if n == 0:
        raise MetricsError(f"{rep}: no audio telemetry records")
    a = a.iloc[:n]
    d = owd_ns(audio)[:n]
    base = base_delay_ns(audio, meta.get("tcp_start_ns"))
    passed = (a["decision"].to_numpy() != Decision.DROP) & ~np.isnan(d)
    soj = a["sojourn_ns"].to_numpy()[passed]
    return meta, (d - base)[passed] - soj, soj


def sojourn_errors_ns(rep: Path) -> np.ndarray:
    """(OWD - base delay) - predicted sojourn, for every audio packet that passed the switch."""
    return _matched(rep)[1]


def wire_lateness_ms(rep: Path) -> float:
    """The largest lateness the delay lines (the wire, at the top real-time priority) report for any
    frame: more than about a millisecond means the host itself stalled during the run (a noisy VM), and
    no delay measured then says anything about the switch."""
    worst = 0.0
    for log in sorted(Path(rep).glob("delay_*.log")):
        for m in re.finditer(r"max late ([0-9.]+) ms", log.read_text()):
            worst = max(worst, float(m.group(1)))
    return worst


def summary(rep: Path) -> dict:
    """|error| statistics over all audio packets, over those that waited in the queue (the burst part
    of the proof) and over those that met an empty queue (the no-cross-traffic part)."""
    meta, err, soj = _matched(rep)
    e = np.abs(err)
    queued = soj > 0

    def stats(x: np.ndarray) -> dict:
        if x.size == 0:
            return {"packets": 0}
        return {"packets": int(x.size), "median_ms": float(np.median(x)) / 1e6,
                "p99_ms": float(np.percentile(x, 99)) / 1e6, "max_ms": float(x.max()) / 1e6,
                "over_1ms": int((x > 1_000_000).sum())}

    return {"all": stats(e), "queued": stats(e[queued]), "idle": stats(e[~queued]),
            "wire_late_max_ms": wire_lateness_ms(rep), "host_steal_ms": meta.get("host_steal_ms"),
            "case": meta.get("case"), "switch": meta.get("switch"),
            "records_missing": meta["records_missing"]}


if __name__ == "__main__":
    for p in sys.argv[1:]:
        print(p, json.dumps(summary(Path(p))))
