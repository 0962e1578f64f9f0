"""CoDel (RFC 8289). Under IWA it also holds the queue of the flows no window holds (docs/iwa.md)."""

from .spec import AqmSpec, KernelPeer, Knob

SPEC = AqmSpec(
    name="codel", colour="tab:purple", selector_id=2,
    section="codel",
    knobs=(Knob("target_s", 0.005), Knob("interval_s", 0.100)),
    params="refmodel.params:codel_params",
    model="refmodel.codel:Codel",
    p4=("p4src/include/aqm_codel.p4",),
    config_table="codel_cfg", entries="controller.entries:codel_action", lookup_tables=("codel_control_law",),
    tests=("tests/test_codel.py",),
    tofino=("p4src/tofino/codel.p4", "refmodel/tofino_codel.py", "tests/test_tofino_codel.py"),
    tofino_ticks="refmodel.tofino_codel:tick_period_bounds",
    # fq_codel has no P4 twin: CoDel per flow queue, compared beside CoDel's
    kernel=(KernelPeer("kcodel", "tab:blue"), KernelPeer("kfq_codel", "tab:cyan")),
)
