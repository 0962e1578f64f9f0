"""RED (ns-2's, in byte mode), with its rows as the seeds give them per link (mininet/accessnet/scenario.py)."""

from .spec import AqmSpec, KernelPeer, Knob

SPEC = AqmSpec(
    name="red", colour="tab:orange", selector_id=1,
    section="red",
    knobs=(Knob("w_q"), Knob("max_p"), Knob("th_min"), Knob("th_max"), Knob("mean_pktsize", 1500)),
    params="refmodel.params:red_params",
    model="refmodel.red:Red",
    p4=("p4src/include/aqm_red.p4",),
    config_table="red_cfg", entries="controller.entries:red_action", lookup_tables=("red_idle_decay",),
    tests=("tests/test_red.py",),
    tofino=("p4src/tofino/red.p4", "refmodel/tofino_red.py", "tests/test_tofino_red.py"),
    kernel=(KernelPeer("kred", "gold"),),
)
