"""The TNA program's IWA (p4src/tofino/iwa.p4, iwa_types.p4) against its twin (refmodel/tofino_iwa.py), without a
Tofino: the pass-2 header's layout and the op bits in the P4 are the twin's, and the parser's SYN option layouts
are the three the P4 documents. The compile itself is docs/tofino.md's ("IWA on Tofino 2: where the P4 stands")."""

from __future__ import annotations

import re
from pathlib import Path

from refmodel.tofino_iwa import PASS2_BITS, Op

ROOT = Path(__file__).resolve().parent.parent
TYPES = (ROOT / "p4src/tofino/iwa_types.p4").read_text()
GRANT = (ROOT / "p4src/tofino/iwa_grant.p4").read_text()
UPSTREAM = (ROOT / "p4src/tofino/iwa_upstream.p4").read_text()
STEPS = (ROOT / "p4src/tofino/iwa_steps.p4").read_text()
GRANT_STEPS = (ROOT / "p4src/tofino/iwa_grant_steps.p4").read_text()
EGRESS = (ROOT / "p4src/tofino/iwa_egress.p4").read_text()
PARSER = (ROOT / "p4src/tofino/parser.p4").read_text()


def _struct(name: str, kind: str = "header") -> list[tuple[str, int]]:
    body = re.search(rf"{kind} {name} {{(.*?)}}", TYPES, re.S)
    assert body, name
    return [(f, int(w)) for w, f in re.findall(r"(?:bit|int)<(\d+)>\s+(\w+);", body.group(1))]


def test_pass2_header_is_the_twins():
    fields = _struct("iwa_pass2_h")
    assert fields == [("op", 12), ("field", 16), ("scale", 4), ("vq_ns", 32), ("word", 32)]
    assert sum(w for _, w in fields) == PASS2_BITS
    assert _struct("iwa_pass2_t", "struct") == fields


def test_op_bits_are_the_twins():
    p4 = {m.group(1): int(m.group(2)) for m in re.finditer(r"const bit<12> IWA_OP_(\w+)\s*=\s*(\d+);", TYPES)}
    assert p4 == {op.name: int(op.value) for op in Op}


def test_the_wire_packs_the_twins_layout_into_pass2_h():
    """pass 1 packs op 12, field 16, scale 4 into pass2_h's 8, 8, 16 bits; pass 2 unpacks them the same way
    (through identity hashes, iwa_steps.p4: as ALU moves the slices split the PHV groups they touch). The field
    is packed from its whole copy through the hash unit (fld_pk): slices of md.iwa.fld itself split its group."""
    pack = {
        "op": "iwa_pack_op.get({op[11:4]})", "reason": "iwa_pack_reason.get({op[3:0], md.iwa.fld_pk[15:12]})",
        "count": "iwa_pack_count.get({md.iwa.fld_pk[11:0], md.iwa.scale[3:0]})",
    }
    for f, expr in pack.items():
        assert f"md.pass2.{f} = {expr};" in STEPS
    assert "md.iwa.fld_pk = iwa_pack_fld.get({md.iwa.fld});" in GRANT
    assert GRANT.index("md.iwa.fld_pk = ") > GRANT.index("md.iwa.fld = md.iwa.win32;\n    }")  # the final field
    assert "iwa_pack_1(op);" in UPSTREAM and "iwa_pack_2();" in UPSTREAM   # after the grant (resubmitted)
    for line in ("md.iwa2.op = iwa_unpack_op.get({md.pass2.op, md.pass2.reason[7:4]});",
                 "md.iwa2.field = iwa_unpack_field.get({md.pass2.reason[3:0], md.pass2.count[15:4]});",
                 "md.iwa.field32 = iwa_unpack_field32.get({16w0, md.pass2.reason[3:0], md.pass2.count[15:4]});",
                 "md.iwa.scale = iwa_unpack_scale8.get({4w0, md.pass2.count[3:0]});"):
        assert line in STEPS
    assert all(f"iwa_unpack_{i}();" in UPSTREAM for i in (1, 2, 3))
    for h in ("iwa_pack_op", "iwa_pack_reason", "iwa_pack_count", "iwa_pack_fld", "iwa_unpack_op", "iwa_unpack_field",
              "iwa_unpack_field32", "iwa_unpack_scale8"):
        assert re.search(rf"Hash<bit<\d+>>\(HashAlgorithm_t\.IDENTITY\) {h};", STEPS + GRANT_STEPS), h
    # and a round trip of the bits, as Python
    for op, fld, scale in ((0xFFF, 0xFFFF, 0xF), (0x801, 0x1234, 7), (1, 0, 0)):
        p_op, p_reason, p_count = op >> 4, ((op & 0xF) << 4) | (fld >> 12), ((fld & 0xFFF) << 4) | scale
        assert (p_op << 4 | p_reason >> 4, (p_reason & 0xF) << 12 | p_count >> 4, p_count & 0xF) == (op, fld, scale)


def test_syn_layouts_have_the_window_scale_where_the_parser_looks():
    """The option bytes Linux, Windows and macOS send, and the byte each parser state takes the shift from."""
    linux = bytes.fromhex("020405b4 0402 080a 00000001 00000000 01 030307".replace(" ", ""))
    linux_nots = bytes.fromhex("020405b4 0101 0402 01 030307".replace(" ", ""))
    windows = bytes.fromhex("020405b4 01 030308 0101 0402".replace(" ", ""))
    macos = bytes.fromhex("020405b4 01 030306 0101 080a 00000001 00000000 0402 0000".replace(" ", ""))
    for opts, where, n in ((windows, 4, 12), (linux_nots, 8, 12), (linux, 16, 20), (macos, 4, 24)):
        assert len(opts) == n
        assert opts[where:where + 3] == b"\x01\x03\x03"
    for name, off in (("tcp_opt12_h", (4, 8)), ("tcp_opt20_h", (16,)), ("tcp_opt24_h", (4,))):
        fields, pos, at = _struct(name), 0, {}
        for f, w in fields:
            at[f] = pos
            pos += w // 8
        nops = [at[f] for f, _ in fields if f.endswith("_nop")]
        assert tuple(nops) == off


def _grant_inputs() -> set[str]:
    """The words the grant (iwa_grant.p4 and its steps) reads and never writes: what its pass 1 must give it.
    A control's third argument is its output (IwaProduct, IwaScaleUp, IwaScaleDown, IwaShare)."""
    text = GRANT + GRANT_STEPS
    names = set(re.findall(r"\bmd\.((?:iwa\.cfg|iwa|cfg)\.\w+)", text))
    written = set(re.findall(r"\bmd\.((?:iwa\.cfg|iwa|cfg)\.\w+)\s*=[^=]", text))
    written |= {m.group(1) for m in re.finditer(r"\.apply\([^,]+,[^,]+,\s*md\.((?:iwa|cfg)\.\w+)", text)}
    return names - written


def test_egress_gets_every_word_the_grant_reads():
    """With -DIWA_GRANT_EGRESS=1 the grant runs in egress (iwa_egress.p4) on what pass 1 bridged: every word it
    reads is set from the bridge there (by egress's parser or its first action), and pass 1 fills each bridge
    field it takes from."""
    inputs = _grant_inputs()
    assert {"iwa.vq", "iwa.backlog", "iwa.edge", "iwa.own", "cfg.rate_class", "iwa.cfg.target_ns"} <= inputs
    from_bridge = dict(re.findall(r"md\.((?:iwa\.cfg|iwa|cfg)\.\w+) = hdr\.iwa_b\.(\w+)", EGRESS + PARSER))
    missing = inputs - set(from_bridge)
    assert not missing, f"the grant reads {sorted(missing)}, which egress does not take from the bridge"
    for word, field in from_bridge.items():   # each bridge field carries the word egress takes it for
        source = "hdr.tcp.ackNo" if word == "iwa.ack" else f"md.{word}"   # (the grant's IWA_ACK: egress's md.iwa.ack)
        assert re.search(rf"hdr\.iwa_b\.{field} = (\(bit<8>\))?{re.escape(source)};", UPSTREAM), (word, field)
    # and the grant's own names egress sets from the flags (pass 1's locals and its checkpoint test)
    for local, field in (("released", "released"), ("mine_cur", "mine_cur"), ("iwa_seqhi_mss", "seqhi_mss")):
        assert re.search(rf"\b{local} = hdr\.iwa_b\.{field}\b", EGRESS), local
        assert re.search(rf"hdr\.iwa_b\.{field} = (\(bit<8>\))?{local};", UPSTREAM), local
    assert "hdr.iwa_b.reached = reached;" in UPSTREAM and "if (iwa_short == 0)" in UPSTREAM
    assert "if (hdr.iwa_b.reached == 1)" in EGRESS and "iwa_short = 0;" in EGRESS
    fields = [f for f, _ in _struct("iwa_bridge_h")]
    assert fields[0] == "kind" and set(from_bridge.values()) <= set(fields)
    assert sum(w for _, w in _struct("iwa_bridge_h")) % 8 == 0


def test_the_recirculated_header_is_the_resubmitted_one():
    """Egress writes the mark, the port and the gap, then the twin's 96 bits in pass2's layout (vq in bytes: the second
    pass converts them and adds the gap); the parser takes the mark, port and gap as iwa_recirc_h and the rest
    as pass2_h, which the second pass unpacks as a resubmitted one."""
    out = _struct("iwa_recirc_out_h")
    assert out[:3] == _struct("iwa_recirc_h") == [("mark", 8), ("port", 16), ("gap", 32)]
    assert out[3:] == _struct("iwa_pass2_h")
    for f, word in (("op", "md.iwa.op"), ("field", "md.iwa.fld_pk[15:0]"), ("scale", "md.iwa.scale[3:0]"),
                    ("vq_ns", "md.iwa.vq_bytes"), ("word", "iwa_word"), ("mark", "IWA_RECIRC_MARK"),
                    ("port", "hdr.iwa_b.port"), ("gap", "(bit<32>)iwa_vq_gap")):
        assert f"hdr.iwa_r.{f} = {word};" in EGRESS, f
    # the parser takes the mark and port, then the 96 bits, then the packet; the deparser writes them in that order
    rc = PARSER.index("pkt.extract(hdr.iwa_rc);")
    assert rc < PARSER.index("pkt.extract(md.pass2);", rc) < PARSER.index("transition parse_ethernet;", rc)
    assert PARSER.index("pkt.emit(hdr.iwa_r);") < PARSER.index("pkt.emit(hdr.ethernet);", PARSER.index("pkt.emit(hdr.iwa_r);"))
