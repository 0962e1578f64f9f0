"""What an AQM is made of, as data: ``refmodel/aqms/<name>.py`` holds one ``AqmSpec``, ``registry.py`` lists them.

Plain data only (strings, numbers, tuples): this package is imported by ``refmodel/constants.py``, the bottom of
the import graph, so it imports nothing of the project. Code of other layers (the reference model's class, the
controller's entries) is named by its dotted path and resolved by whoever needs it (``resolve``).
docs/adding-an-aqm.md says what each field is for and which files a new AQM touches.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass

# A knob's default when the AQM has none: RED's thresholds must be given; IWA's target follows the jitter budget.
REQUIRED = None


@dataclass(frozen=True)
class Knob:
    """One key of the controller's ``[aqm.<section>]`` table (controller/config.py), in human units, with the
    default its ``refmodel.params`` builder gives it (None: no default there; tests/test_aqm_registry.py
    compares them)."""

    name: str
    default: float | int | None = REQUIRED


@dataclass(frozen=True)
class KernelPeer:
    """A Linux qdisc the lab runs in place of the P4 switch (``[run] switch = "kernel"``; its command line is
    mininet/accessnet/switches.py's ``KERNEL_QDISCS[name]``), and its plot colour."""

    name: str
    colour: str


@dataclass(frozen=True)
class AqmSpec:
    name: str  # the lab's and the report's name: [run] aqms, case names, run directories
    colour: str  # matplotlib colour of its cases' lines (experiments/plots.py)
    # The data plane's selector it runs (the P4 constant AQM_<NAME>, refmodel.constants.Aqm): its own id for
    # an AQM with a P4 file; None for a configuration of another one (redok is RED with other rows and buffer).
    selector_id: int | None = None
    runs: str = ""  # the AQM whose data plane it runs when it has no selector of its own (the controller's name)
    section: str = ""  # the controller's knob table [aqm.<section>] ("" = no knobs); its keys are ``knobs``
    knobs: tuple[Knob, ...] = ()
    params: str = ""  # the refmodel.params builder that turns the knobs into the data plane's integers
    model: str = ""  # the reference model's class ("module:Class"), the P4 file's twin
    p4: tuple[str, ...] = ()  # its P4 files, from the repository's root
    # The P4 tables the controller writes for it (controller/entries.py): its knobs' table in config.p4, and its
    # lookup tables of ranges or products, rewritten whole when the configuration changes.
    config_table: str = ""
    entries: str = ""  # the controller's function of PipelineParams giving its config table's action
    lookup_tables: tuple[str, ...] = ()
    tests: tuple[str, ...] = ()  # the tests of its model and its P4 program
    tofino: tuple[str, ...] = ()  # its Tofino twin: the TNA file (once there is one), the model, the tests
    # What its Tofino twin needs of the packet generator: "module:function" of a link's PipelineParams giving the
    # least and most period (ns) of that link's ticks ("": the queue's alone, refmodel.tofino_queue's); the
    # generator ticks a pipe's links at one period, which controller/pktgen.py picks within every link's bounds.
    tofino_ticks: str = ""
    kernel: tuple[KernelPeer, ...] = ()  # Linux qdiscs of the same family the lab compares it with

    @property
    def has_selector(self) -> bool:
        return self.selector_id is not None


def resolve(path: str) -> object:
    """The object ``"package.module:attribute"`` names (a spec's ``model``, ``params`` or ``entries``): code of
    the layers above refmodel, imported when it is used, never by the registry."""
    module, _, attr = path.partition(":")
    return getattr(importlib.import_module(module), attr)
