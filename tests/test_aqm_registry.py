"""The AQMs' registry (refmodel/aqms/) against the files and lists it stands for: an AQM registered there and
missing elsewhere, or present elsewhere and not registered, fails here (docs/adding-an-aqm.md lists the files).
The lists that derive from the registry (scenario.P4_AQMS, cases.AQM_ORDER, plots.AQM_COLOURS, config.KNOWN,
refmodel.constants.Aqm, p4src/include/constants.p4) are checked too, so a hand-written copy creeping back in
fails as well."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import pytest

from refmodel import constants as C
from refmodel.aqms import AQMS, BY_NAME, KERNEL_NAMES, ORDER, P4_NAMES, SECTIONS, SELECTORS, knob_names, resolve

ROOT = Path(__file__).resolve().parents[1]
INCLUDE = ROOT / "p4src" / "include"
NAMES = [a.name for a in AQMS]


def test_names_are_unique_and_selectors_number_from_zero():
    assert len(set(ORDER)) == len(ORDER)
    assert [a.selector_id for a in SELECTORS] == list(range(len(SELECTORS)))
    assert [(m.name, m.value) for m in C.Aqm] == [(a.name.upper(), a.selector_id) for a in SELECTORS]


@pytest.mark.parametrize("name", NAMES)
def test_an_aqm_without_a_selector_runs_one_with(name):
    a = BY_NAME[name]
    if a.has_selector:
        assert not a.runs
    else:  # redok: another AQM's data plane with its own knobs; nothing of its own to check
        assert BY_NAME[a.runs].has_selector and not (a.p4 or a.model or a.knobs or a.tofino)


@pytest.mark.parametrize("name", NAMES)
def test_its_files_exist(name):
    a = BY_NAME[name]
    for f in a.p4 + a.tests + a.tofino:
        assert (ROOT / f).is_file(), f"{name}: {f} is registered but missing"
    if a.has_selector:
        assert f"p4src/include/aqm_{name}.p4" in a.p4 and a.tests and a.model


def test_every_aqm_file_is_registered_and_included():
    """p4src/include/aqm_*.p4, refmodel/tofino_<aqm>.py and tests/test_tofino_<aqm>.py each belong to an AQM, and
    the program includes every AQM's P4 files."""
    registered = {f for a in AQMS for f in a.p4 + a.tofino}
    for path in sorted(INCLUDE.glob("aqm_*.p4")):
        assert str(path.relative_to(ROOT)) in registered, f"{path.name} belongs to no AQM in refmodel/aqms/"
    for pattern in ("refmodel/tofino_*.py", "tests/test_tofino_*.py", "p4src/tofino/*.p4"):
        for path in sorted(ROOT.glob(pattern)):
            stem = path.stem.removeprefix("test_").removeprefix("tofino_")
            if stem in BY_NAME:
                assert str(path.relative_to(ROOT)) in registered, f"{path} belongs to no AQM's Tofino twin"
    program = (ROOT / "p4src" / "bottleneck.p4").read_text()
    for a in AQMS:
        for f in a.p4:
            assert f'#include "{Path(f).relative_to("p4src")}"' in program, f"{a.name}: {f} is not included"


@pytest.mark.parametrize("name", [a.name for a in SELECTORS])
def test_the_model_and_the_program_dispatch_on_its_selector(name):
    """Both pipelines select the AQM by its selector: FIFO (0) is what either does when no other one is chosen."""
    a = BY_NAME[name]
    assert callable(getattr(resolve(a.model), "decide", None)), a.model
    if a.selector_id != 0:
        assert f"Aqm.{name.upper()}" in (ROOT / "refmodel" / "pipeline.py").read_text()
        assert f"AQM_{name.upper()}" in (ROOT / "p4src" / "bottleneck.p4").read_text()
    tables = "".join(p.read_text() for p in INCLUDE.glob("*.p4"))
    for t in filter(None, (a.config_table, *a.lookup_tables)):
        assert re.search(rf"\btable {t}\b", tables), f"{name}: table {t} is not in p4src/include/"
    if any(f.startswith("p4src/tofino/") for f in a.tofino):  # a TNA program: the TNA controller can run it
        assert f"Aqm.{name.upper()}" in (ROOT / "controller" / "tofino.py").read_text()


@pytest.mark.parametrize("section", list(SECTIONS))
def test_its_knobs_are_its_builders(section):
    """Each knob is a parameter of its refmodel.params builder with the default the spec says (None: none)."""
    a = SECTIONS[section]
    params = inspect.signature(resolve(a.params)).parameters
    for k in a.knobs:
        assert k.name in params, f"{section}.{k.name} is not a parameter of {a.params}"
        default = params[k.name].default
        assert (None if default is inspect.Parameter.empty else default) == k.default, f"{section}.{k.name}"


def test_the_lists_derive_from_the_registry():
    from accessnet import scenario
    from accessnet.switches import KERNEL_QDISCS
    from controller.config import KNOWN
    from experiments.cases import AQM_ORDER
    from experiments.plots import AQM_COLOURS

    assert scenario.P4_AQMS == P4_NAMES and scenario.KERNEL_AQMS == KERNEL_NAMES
    assert tuple(KERNEL_QDISCS) == KERNEL_NAMES, "a kernel peer in refmodel/aqms/ needs its qdisc in switches.py"
    assert AQM_ORDER == ORDER and set(AQM_COLOURS) == set(ORDER)
    assert {k.removeprefix("aqm.") for k in KNOWN if k.startswith("aqm.")} == set(SECTIONS)
    assert all(KNOWN[f"aqm.{s}"] == knob_names(s) for s in SECTIONS)


@pytest.mark.parametrize("name", [a.name for a in AQMS if a.tofino_ticks])
def test_its_tick_bounds_are_its_twins(name):
    """``tofino_ticks`` names a function of the twin's module that gives a link of this AQM a non-empty range of
    packet-generator periods within the queue's (controller/pktgen.py intersects them per pipe)."""
    from refmodel.params import pipeline_params
    from refmodel.tofino_queue import tick_period_bounds as queue_bounds
    a = BY_NAME[name]
    assert a.tofino_ticks.split(":")[0].replace(".", "/") + ".py" in a.tofino
    lo, hi = resolve(a.tofino_ticks)(pipeline_params(2e6, name, limit_bytes=50_000))
    qlo, qhi = queue_bounds(pipeline_params(2e6, name, limit_bytes=50_000))
    assert 1 <= lo <= hi and max(lo, qlo) <= min(hi, qhi)
