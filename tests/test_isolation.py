"""Two runs of the main job at once on one host (what a second terminal does): each in its own lab slot,
both complete, and neither loses data."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from experiments.metrics import read_audio, read_flows

ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="needs root (network namespaces)")


def test_two_runs_at_once_both_complete_with_their_data(tmp_path):
    runs = []
    for k in range(2):
        out = tmp_path / f"run{k}"
        runs.append((out, subprocess.Popen(
            [sys.executable, "-m", "accessnet.run", "--scenario", "smoke", "--switch", "model", "--out", str(out)],
            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)))
    labs = []
    for out, p in runs:
        text, _ = p.communicate(timeout=240)
        assert p.returncode == 0, text[-3000:]
        reps = list(out.glob("*/*/rep0"))
        assert len(reps) == 1 and not list(out.glob("*/*/*.tmp")), text[-3000:]
        meta = json.loads((reps[0] / "meta.json").read_text())
        assert meta["status"] == "ok", meta.get("error")
        labs.append(meta["lab"])
        audio = read_audio(reps[0]).df
        assert len(audio) > 150 and audio["recv_ns"].notna().mean() > 0.99  # the audio got through
        flows = read_flows(reps[0])
        assert flows["completed"].tolist() == [1] and flows["bytes"].tolist() == [100000]
    assert labs[0] != labs[1]  # each in its own lab slot (names, namespaces, record)
