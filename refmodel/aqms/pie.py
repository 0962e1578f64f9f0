"""PIE (RFC 8033), probabilities in Q32."""

from .spec import AqmSpec, KernelPeer, Knob

SPEC = AqmSpec(
    name="pie", colour="tab:pink", selector_id=3,
    section="pie",
    knobs=(Knob("target_s", 0.015), Knob("tupdate_s", 0.015), Knob("alpha", 0.125), Knob("beta", 1.25),
           Knob("max_burst_s", 0.150)),
    params="refmodel.params:pie_params",
    model="refmodel.pie:Pie",
    p4=("p4src/include/aqm_pie.p4",),
    config_table="pie_cfg", entries="controller.entries:pie_action", lookup_tables=("pie_alpha_mul", "pie_beta_mul"),
    tests=("tests/test_pie.py",),
    tofino=("p4src/tofino/pie.p4", "refmodel/tofino_pie.py", "tests/test_tofino_pie.py"),
    tofino_ticks="refmodel.tofino_pie:tick_period_bounds",
    kernel=(KernelPeer("kpie", "tab:olive"),),
)
