"""One module per AQM (its name, selector, knobs, files, plot colour, kernel peers) and their registry."""

from .registry import (AQMS, BY_NAME, COLOURS, KERNEL, KERNEL_NAMES, ORDER, P4_NAMES, SECTIONS, SELECTORS, knob_names,
                       runs)
from .spec import AqmSpec, KernelPeer, Knob, resolve

__all__ = ["AQMS", "BY_NAME", "COLOURS", "KERNEL", "KERNEL_NAMES", "ORDER", "P4_NAMES", "SECTIONS", "SELECTORS",
           "AqmSpec", "KernelPeer", "Knob", "knob_names", "resolve", "runs"]
