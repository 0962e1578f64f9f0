"""tests/stf.py, the reader of P4Testgen's STF tests (tests/test_tofino_testgen.py), without P4Testgen."""

from __future__ import annotations

import pytest
from stf import matches, parse


SAMPLE = """# A generated test (trimmed)
add TnaIngress.links.forward ingress_port:0x00F TnaIngress.links.route(port:0x009,downstream:0x0)

add TnaIngress.links.link_cfg link:0x0000 TnaIngress.links.unconfigured()
packet 15 0000000000000000000000000800 00002FDD
expect 9 ****************************00002FDD$
"""


def test_the_stf_reader_takes_entries_packet_and_expectation(tmp_path):
    f = tmp_path / "t.stf"
    f.write_text(SAMPLE)
    t = parse(f)
    (fwd,) = t.table("forward")
    assert (fwd.key, fwd.action, fwd.args) == ({"ingress_port": 15}, "route", {"port": 9, "downstream": 0})
    assert t.table("link_cfg")[0].action == "unconfigured" and t.table("link_cfg")[0].args == {}
    assert t.port == 15 and t.packet == bytes.fromhex("000000000000000000000000080000002FDD")
    assert t.expect == [(9, "****************************00002FDD")]
    assert matches(t.expect[0][1], t.packet) and not matches(t.expect[0][1], t.packet[:-1] + b"\x00")
    f.write_text("frobnicate 3\n")
    with pytest.raises(ValueError, match="unknown STF line"):
        parse(f)
