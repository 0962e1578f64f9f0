"""Interoperability check: read back, with p4runtime-shell (a standard P4Runtime client, run in its own
virtual environment), what this project's controller wrote into a switch.

    python tools/p4rt_shell_readback.py 127.0.0.1:9559

Prints the pipeline's P4Info summary as the switch reports it, every forwarding entry, the default
action of every configuration table and the clone session. Run it with the p4runtime-shell venv's
python (pip install p4runtime-shell), not with the project's .venv.
"""

import sys

import p4runtime_sh.shell as sh

addr = sys.argv[1] if len(sys.argv) > 1 else "127.0.0.1:9559"
# A backup client (lower election id than the controller's 10): reads only.
sh.setup(device_id=1, grpc_addr=addr, election_id=(0, 5), config=None)
try:
    print("tables:", ", ".join(name for name, _ in sh.context.get_objs(sh.P4Type.table)))
    for e in sh.TableEntry("BottleneckIngress.forward").read():
        print("forward:", str(e).replace("\n", " "))
    for t in ("bottleneck_cfg", "red_cfg", "codel_cfg", "pie_cfg", "iwa_cfg"):
        te = sh.TableEntry(f"BottleneckIngress.config.{t}")(is_default=True)
        for e in te.read():
            print(f"{t} default:", str(e.action).replace("\n", " "))
    for c in sh.CloneSessionEntry(100).read():
        print("clone session:", str(c).replace("\n", " "))
finally:
    sh.teardown()
