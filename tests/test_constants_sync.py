"""The P4 program and the reference model share their numbers: check they agree."""

import importlib.util
import re
from pathlib import Path

from refmodel import arith
from refmodel import constants as C
from refmodel.params import FIELD_BITS

P4 = Path(__file__).resolve().parent.parent / "p4src"


def p4_consts(*files: str):
    text = "".join((P4 / f).read_text() for f in files or ("include/constants.p4",))
    # bit<N> and int<N> alike (PIE_TWO_PERCENT is an int<64>: a bit<N>-only pattern skipped it silently)
    out = {m[1]: int(m[2], 0) for m in re.finditer(r"const\s+(?:bit|int)<\d+>\s+(\w+)\s*=\s*(-?\w+);", text)}
    out.update({m[1]: int(m[2], 0) for m in re.finditer(r"#define\s+(\w+)\s+(\d+)", text)})
    return out


def test_enums_match():
    c = p4_consts()
    for enum, prefix in ((C.Aqm, "AQM_"), (C.Decision, "DECISION_"), (C.Reason, "REASON_"),
                         (C.TrafficClass, "CLASS_"), (C.TrackFlag, "TRACK_")):
        for member in enum:
            assert c[prefix + member.name] == member.value, prefix + member.name
        p4_names = {k for k in c if k.startswith(prefix)}
        assert p4_names == {prefix + m.name for m in enum}


def test_flow_state_bits_match():
    c = p4_consts()
    for name in ("FLOW_SCALE_MASK", "FLOW_SHAPE", "FLOW_ANNOUNCED", "FLOW_ACKED", "FLOW_EPOCH", "FLOW_COUNTED",
                 "FLOW_FRESH", "FLOW_CLOSED", "FLOW_IDLE", "FLOW_PAUSED", "FLOW_SHUT", "FLOW_HELD", "FLOW_STAMP_SHIFT", "EPOCH_MASK",
                 "SYN_SEEN", "SYN_WS", "WS_MAX"):
        assert c[name] == getattr(C, name), name
    assert c["TCP_OPT_BYTES"] == 40  # the most options a TCP header carries: (15 - 5) * 4


def test_scalars_match():
    c = p4_consts()
    assert c["RING_SIZE"] == C.RING_SIZE
    from refmodel.params import TCP_FRAME_OVERHEAD
    assert c["TCP_FRAME_OVERHEAD"] == TCP_FRAME_OVERHEAD
    assert c["FLOW_SLOTS"] == C.FLOW_SLOTS
    assert c["N_LINKS"] == C.N_LINKS and C.N_LINKS & (C.N_LINKS - 1) == 0  # a power of two: ids are masked
    assert c["COUNTER_SLOTS"] == C.COUNTER_SLOTS
    assert c["TELEMETRY_ETHERTYPE"] == C.TELEMETRY_ETHERTYPE
    assert c["TELEMETRY_SESSION"] == C.TELEMETRY_SESSION
    assert c["TELEMETRY_VERSION"] == C.TELEMETRY_VERSION
    assert c["BYTE_TIME_FRAC"] == C.BYTE_TIME_FRAC
    assert c["IDLE_KEY_SHIFT"] == C.IDLE_KEY_SHIFT
    assert c["CODEL_TIME_SHIFT"] == C.CODEL_TIME_SHIFT
    assert c["PIE_COEF_TO_PROB"] == C.PIE_COEF_FRAC - C.PROB_FRAC
    # the transmit-time tables (queue_model.p4, refmodel/arith.py)
    assert c["RATE_CLASSES"] == arith.RATE_CLASSES
    assert c["TX_LO_BITS"] == arith.TX_LO_BITS
    assert c["TX_MAX_FRAME"] == arith.MAX_FRAME
    assert c["TX_HI_ENTRIES"] == arith.TX_HI_ENTRIES
    assert c["MANT_BITS"] == arith.MANT_BITS and c["MANT_ENTRIES"] == arith.MANT_ENTRIES
    # the log and exp tables (logexp.p4)
    for name in ("LOG_FRAC", "LOG_MANT_BITS", "LOG_ENTRIES", "EXP_KEY_BITS", "EXP_ENTRIES", "EXP_FRAC", "LOG_ZERO",
                 "LOG_ONE_BITS"):
        assert c[name] == getattr(arith, name), name


def generator(name: str):
    """A generator of P4 source in tools/ (not a package: loaded from its file)."""
    spec = importlib.util.spec_from_file_location(name, P4.parent / "tools" / f"{name}.py")
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    return gen


def test_the_log_and_exp_rows_are_the_models():
    """p4src/include/rows/ holds what tools/gen_logexp_rows.py writes from refmodel/arith.py today."""
    gen = generator("gen_logexp_rows")
    for name, text in gen.FILES.items():
        assert (P4 / "include" / "rows" / name).read_text() == text(), f"run tools/gen_logexp_rows.py ({name})"


def test_the_constants_are_the_models():
    """p4src/include/constants.p4 is what tools/gen_constants.py writes from the model and the AQMs' registry
    (refmodel/aqms/) today: an AQM registered there has its AQM_<NAME> selector in the P4 program."""
    gen = generator("gen_constants")
    assert (P4 / "include" / "constants.p4").read_text() == gen.text(), "run tools/gen_constants.py"


def test_action_parameter_widths_match():
    text = (P4 / "include" / "config.p4").read_text() + (P4 / "include" / "aqm_red.p4").read_text() \
        + (P4 / "include" / "aqm_codel.p4").read_text() + (P4 / "include" / "aqm_pie.p4").read_text()
    params = {}
    for m in re.finditer(r"action\s+\w+\(([^)]*)\)", text, re.S):
        for arg in m[1].split(","):
            arg = arg.strip()
            if arg:
                w, name = re.match(r"bit<(\d+)>\s+(\w+)", arg).groups()
                params[name] = int(w)
    for name, width in params.items():
        if name in ("aqm", "ecn", "telemetry"):
            continue
        assert FIELD_BITS[name] == width, name


def test_pie_constants_and_scaling_ladder_match():
    from refmodel import pie
    c = p4_consts()
    for name in ("P_MAX", "TWO_PERCENT", "TENTH", "FIFTH", "DELAY_250MS"):
        assert c["PIE_" + name] == getattr(pie, name), name
    text = (P4 / "include" / "aqm_pie.p4").read_text()
    ladder = re.findall(r"if \(p < (\w+)\) \{\s*delta = delta >> (\d+);", text)
    assert len(ladder) == len(pie.SCALE_STEPS), ladder  # every step of RFC 8033's table, in order
    steps = tuple((c[b] if b in c else int(b), int(s)) for b, s in ladder)
    assert steps == pie.SCALE_STEPS


def test_tna_codel_matches_its_twin():
    """p4src/tofino/codel.p4's flags and the control law's size, as refmodel/tofino_codel.py and the
    controller (controller/tofino.py) use them."""
    from controller import tofino
    from refmodel import tofino_codel as T
    c = p4_consts("tofino/codel.p4", "tofino/types.p4")
    for name in ("PENDING", "FRESH", "NOT_RECENT", "FLAGS"):
        assert c["CODEL_" + name] == getattr(T, name), name
    assert c["CODEL_LAWS"] == tofino.CODEL_LAWS
    assert c["CODEL_LAW_ENTRIES"] >= max(len(law) for law in tofino.law_profiles([]))


def test_tna_pie_matches_its_twin():
    """p4src/tofino/pie.p4's constants, its scale table and the term tables' size, as
    refmodel/tofino_pie.py and the controller use them."""
    from controller import tofino
    from refmodel import tofino_pie as T
    c = p4_consts("tofino/pie.p4", "tofino/types.p4")
    assert (c["PIE_GATE_BURST"], c["PIE_Q31_TWO"], c["PIE_Q31_FIFTH"]) == (T.BURST, T.TWO_PERCENT, T.FIFTH)
    assert (c["PIE_QLOW"], c["PIE_OLDLOW"], c["PIE_PLOW"], c["PIE_E_OFFSET"]) == (T.QLOW, T.OLDLOW, T.PLOW,
                                                                                T.E_OFFSET)
    assert c["PIE_GATE_OPEN"] == T.OPEN
    assert c["PIE_250MS"] == T.DELAY_250MS
    assert c["PIE_PROFILES"] == tofino.PIE_PROFILES
    assert c["PIE_TERM_ENTRIES"] == 2 * len(T.term_keys())
    assert c["PIE_SCALE_ROWS"] >= len(T.scale_rows())
    # pie_scale's default action (no row matches: p >= 2^31 cannot happen) is no shift and no cap
    text = (P4 / "tofino" / "pie.p4").read_text()
    assert re.search(r"default_action = set_scale\((\d+), (\d+)\);", text).groups() == (str(T.E_OFFSET),
                                                                                     str(T.CAP_NONE))


def test_multiples_by_shifts_are_the_products():
    """gen_constants' ``times`` macros (a constant's multiples as sums of shifts, for a Tofino) evaluate, as C
    operators do on 32-bit values, to the product for every factor up to 64; and IW_MIN_BYTES in constants.p4 is
    IW_MIN_SEGMENTS times its argument."""
    gen = generator("gen_constants")

    def expand(line: str, x: int) -> int:
        m = re.match(r"#define\s+\w+\(x\)\s+(.*?)\s*(/\*.*)?$", line)
        return eval(m[1].replace("(x)", f"({x})")) & 0xFFFFFFFF  # only +, << and parentheses: Python's agree

    for factor in range(1, 65):
        line = gen.times("T", factor)
        for x in (0, 1, 1448, 9000, 0x7FFF):
            assert expand(line, x) == x * factor, (factor, x, line)
    line = next(s for s in (P4 / "include" / "constants.p4").read_text().splitlines() if "IW_MIN_BYTES(x)" in s)
    assert expand(line, 1448) == 1448 * C.IW_MIN_SEGMENTS
