"""REDok: RED with the seeds' "ok" rows and its own buffer per link (scenario.py's REDOK_ROWS). No data plane
of its own: the controller runs it as ``red`` with these knobs, so it has no selector, P4 file or model."""

from .spec import AqmSpec

SPEC = AqmSpec(name="redok", colour="tab:brown", runs="red")
