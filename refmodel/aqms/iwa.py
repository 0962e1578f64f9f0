"""IWA, the initial-window-aware AQM (docs/iwa.md): start shaping of new TCP flows, CoDel for the rest. The flow
tracker and the start shaper are its parts of the pipeline; the other AQMs run them too (telemetry), unshaped."""

from .spec import AqmSpec, Knob

SPEC = AqmSpec(
    name="iwa", colour="tab:green", selector_id=4,
    section="iwa",
    # target_s: none, it follows budget_s (refmodel.params.iwa_target_ns); budget_s's is JITTER_BUDGET_MS
    knobs=(Knob("budget_s", 0.040), Knob("target_s"), Knob("mtu_bytes", 1514), Knob("hold_s", 1.0),
           Knob("age_s", 10.0)),
    params="refmodel.params:iwa_params",
    model="refmodel.iwa:Iwa",
    p4=("p4src/include/aqm_iwa.p4", "p4src/include/start_shaper.p4", "p4src/include/flow_tracker.p4",
        "p4src/include/tcp_window.p4"),
    # no lookup tables of the controller's: iwa_share's rows are constants of start_shaper.p4
    config_table="iwa_cfg", entries="controller.entries:iwa_action",
    tests=("tests/test_iwa.py", "tests/test_iwa_state.py", "tests/test_iwa_bound.py"),
    # the twin of its start shaper in Tofino 2 passes; no TNA program yet (issue 34, item 2)
    tofino=("p4src/tofino/iwa.p4", "p4src/tofino/iwa_types.p4", "p4src/tofino/iwa_upstream.p4",
            "p4src/tofino/iwa_grant.p4", "p4src/tofino/iwa_steps.p4", "p4src/tofino/iwa_grant_steps.p4",
            "p4src/tofino/iwa_egress.p4", "refmodel/tofino_iwa.py",
            "tests/test_tofino_iwa.py", "tests/test_tofino_iwa_p4.py"),
    tofino_ticks="refmodel.tofino_iwa:tick_period_bounds",
)
