"""Refused before anything starts: a kernel AQM the kernel lacks (tried for real in a throwaway namespace),
a P4 AQM on the kernel backend, BMv2 asked for where it is absent. No run directory, no network."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from accessnet import replication, scenario as scen
from accessnet.run import units_of
from refmodel.params import ConfigError

ROOT = Path(__file__).resolve().parent.parent
root_only = pytest.mark.skipif(os.geteuid() != 0, reason="needs root (a throwaway network namespace)")


def units(**over):
    return units_of(scen.load("web1", {"iws": [10], "reps": 1, **over}), 1)


@root_only
def test_a_qdisc_the_kernel_lacks_is_refused_and_one_it_has_passes(monkeypatch):
    replication.preflight(units(aqms=["pfifo"]), None)  # pfifo is in every kernel
    monkeypatch.setitem(replication.KERNEL_QDISCS, "kcodel", lambda buf, prof: "nosuchqdisc limit 5")
    with pytest.raises(ConfigError, match="'kcodel' \\('nosuchqdisc limit 5'\\) is not available in this kernel"):
        replication.preflight(units(aqms=["pfifo", "kcodel"]), None)


def test_p4_aqms_on_the_kernel_backend_and_absent_bmv2_are_refused(monkeypatch):
    with pytest.raises(ConfigError, match="runs on the P4 switch"):
        replication.preflight(units(aqms=["iwa"]), "kernel")
    monkeypatch.setattr(replication, "bmv2_available", lambda: False)
    with pytest.raises(ConfigError, match="BMv2 .* is not available"):
        replication.preflight(units(aqms=["iwa"]), "bmv2")
    replication.preflight(units(aqms=["iwa"]), "model")


@root_only
def test_the_main_job_refuses_before_making_a_run_directory(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text('[run]\nprofile = {name = "x", rate_bps = -1e6, delay_ms = 70}\n[web]\nflows = 1\n')
    r = subprocess.run([sys.executable, "-m", "accessnet.run", "--scenario", str(bad), "--out", str(tmp_path / "out")],
                       cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "rate_bps = -1000000.0" in r.stderr, r.stderr
    assert not (tmp_path / "out").exists()


def test_a_phones_window_without_its_bpf_program_is_refused(monkeypatch, tmp_path):
    (tmp_path / "rwnd.bpf.o").write_bytes(b"")  # the object there, its loader not: whichever is missing is named
    monkeypatch.setattr(replication, "RWND_OBJECT", tmp_path / "rwnd.bpf.o")
    monkeypatch.setattr(replication, "RWND_LOADER", tmp_path / "rwnd-attach")
    with pytest.raises(ConfigError, match="rwnd-attach is missing: run 'make setup'"):
        replication.preflight(units(profile="pam13radio", buffer="256p", aqms=["fifo"]), "model")
    replication.preflight(units(profile="hspa", aqms=["fifo"]), "model")  # no window: nothing needed
