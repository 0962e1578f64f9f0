"""The AQMs of the project, in the order the lab runs and the report lists them. Every list of AQM names, the
data plane's selector (``refmodel.constants.Aqm``, p4src/include/constants.p4) and the knob tables the
controller accepts derive from ``AQMS``; tests/test_aqm_registry.py checks the files each spec names.
Adding an AQM: docs/adding-an-aqm.md."""

from __future__ import annotations

from . import codel, fifo, iwa, pie, red, redok
from .spec import AqmSpec, KernelPeer

AQMS: tuple[AqmSpec, ...] = tuple(m.SPEC for m in (fifo, red, redok, codel, pie, iwa))
BY_NAME: dict[str, AqmSpec] = {a.name: a for a in AQMS}
# The AQMs with a data plane of their own, by selector id (the P4 constants AQM_<NAME>).
SELECTORS: tuple[AqmSpec, ...] = tuple(sorted((a for a in AQMS if a.has_selector), key=lambda a: a.selector_id))
# The knob tables the controller accepts ([aqm.<section>]), each with its keys.
SECTIONS: dict[str, AqmSpec] = {a.section: a for a in AQMS if a.section}
# The names the lab runs on the P4 switch (or its model), and the Linux qdiscs it runs instead.
P4_NAMES: tuple[str, ...] = tuple(a.name for a in AQMS)
KERNEL: tuple[KernelPeer, ...] = tuple(k for a in AQMS for k in a.kernel)
KERNEL_NAMES: tuple[str, ...] = tuple(k.name for k in KERNEL)
# Every name a case may carry, P4 AQMs first: the report's order.
ORDER: tuple[str, ...] = P4_NAMES + KERNEL_NAMES
COLOURS: dict[str, str] = {a.name: a.colour for a in AQMS} | {k.name: k.colour for k in KERNEL}


def runs(name: str) -> str:
    """The controller's AQM for a lab AQM ``name``: its own name, or the AQM whose data plane it runs (redok:
    red); a name not registered here (a kernel qdisc) as it is."""
    spec = BY_NAME.get(name)
    return (spec.runs or spec.name) if spec else name


def knob_names(section: str) -> set[str]:
    """The keys of the controller's [aqm.<section>] table."""
    return {k.name for k in SECTIONS[section].knobs}
