"""tools/tofino_depth.py: the depths it reads from bf-p4c's dependency-graph log, and (with bf-p4c) a probe
that agrees with the whole compile's log."""

import shutil
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
import tofino_depth  # noqa: E402

LOG = """...
    Maximum stage number according to dependences: 
      INGRESS: 27
      EGRESS: 30
GRAPH
    cond-1 -- CONTROL_COND_TRUE --> tbl_a
...
    Maximum stage number according to dependences: 
      INGRESS: 24
      EGRESS: 25
GRAPH
"""


def test_every_block_is_read_in_order():
    assert tofino_depth.depths(LOG) == [{"ingress": 27, "egress": 30}, {"ingress": 24, "egress": 25}]
    assert tofino_depth.depths("no graph yet") == []


@pytest.mark.skipif(not (shutil.which("bf-p4c") or Path("/opt/p4/tofino/bin/bf-p4c").exists()),
                    reason="bf-p4c not found (make toolchain TOFINO=1): the probe is not run")
def test_the_probe_measures_the_default_tofino2_program():
    d = tofino_depth.probe("tofino2", [])
    assert set(d) >= {"ingress", "egress"} and 1 <= d["ingress"] <= 20 and 1 <= d["egress"] <= 20
