"""make build TARGET=tofino|tofino2 (tools/build_tofino.sh): without bf-p4c it says so and builds
nothing; with it, the TNA program compiles for both targets and its P4Info is the one the controller's
tests check against (controller/p4info/), so the committed copy cannot go stale unnoticed."""

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from controller import tna_p4info

ROOT = Path(__file__).resolve().parent.parent
P4_PREFIX = Path(os.environ.get("P4_PREFIX", "/opt/p4"))


def bf_p4c() -> str | None:
    return shutil.which("bf-p4c") or next(
        (str(p) for p in [P4_PREFIX / "tofino" / "bin" / "bf-p4c"] if p.exists()), None)


def test_without_bf_p4c_the_build_is_skipped_with_its_reason(tmp_path):
    env = {"PATH": "/usr/bin:/bin", "P4_PREFIX": str(tmp_path)}
    r = subprocess.run(["bash", "tools/build_tofino.sh", "tofino"], cwd=ROOT, env=env, capture_output=True,
                       text=True)
    assert r.returncode == 0
    assert "SKIPPED" in r.stdout and "make toolchain TOFINO=1" in r.stdout
    r = subprocess.run(["bash", "tools/build_tofino.sh", "tofino3"], cwd=ROOT, env=env, capture_output=True,
                       text=True)
    assert r.returncode == 2 and "unknown target" in r.stderr


@pytest.mark.skipif(bf_p4c() is None, reason="bf-p4c not found (make toolchain TOFINO=1): the TNA program "
                    "is not compiled here; its committed P4Info is still checked by test_tofino_controller.py")
@pytest.mark.parametrize("target,chip,arch,defines", [
    ("tofino", "tofino", "tna", []), ("tofino2", "tofino2", "t2na", []),
    ("tofino2-red", "tofino2", "t2na", ["-DWITH_RED=1", "-DWITH_CODEL=0", "-DWITH_PIE=0"]),
    ("tofino2-iwa", "tofino2", "t2na", ["-DWITH_IWA=1", "-DWITH_CODEL=1", "-DWITH_PIE=0", "-DIWA_OMIT_P1_TAIL",
                                        "-DIWA_SLOT_BITS=15"])])
def test_the_tna_program_compiles_to_the_committed_p4info(tmp_path, target, chip, arch, defines):
    out = tmp_path / target  # the flags of tools/build_tofino.sh (-g adds snapshot externs to the P4Info)
    r = subprocess.run([bf_p4c(), "--target", chip, "--arch", arch, *defines, "-g", "-o", str(out),
                        "--p4runtime-files", str(tmp_path / "p4info.txtpb"),
                        str(ROOT / "p4src" / "tofino" / "bottleneck_tna.p4")], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert (out / "pipe" / "context.json").exists()
    kept = ROOT / "controller" / "p4info" / f"{target}.p4info.txtpb"
    fresh = tna_p4info.without_snapshots(tna_p4info.load(tmp_path / "p4info.txtpb"))
    assert fresh == tna_p4info.load(kept), (
        f"{kept} is stale: `make build TARGET={target}` refreshes it; commit the result")
