#!/usr/bin/env python3
"""make doctor: one line per capability, yes or no, each found by trying it.

Qdiscs are tested by adding them to a veth inside a throwaway network
namespace of our own, which is removed afterwards."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys


def run(*cmd: str) -> bool:
    try:
        return subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=30).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def which(name: str) -> str | None:
    prefix = os.environ.get("P4_PREFIX", "/opt/p4")
    return shutil.which(name) or shutil.which(name, path=os.path.join(prefix, "bin"))


def qdisc_checks() -> dict[str, bool]:
    qdiscs = {
        "netem": ["netem", "delay", "1ms"], "tbf": ["tbf", "rate", "1mbit", "burst", "1514", "limit", "10000"],
        "htb": ["htb"], "pfifo": ["pfifo"], "bfifo": ["bfifo"],
        "red": ["red", "limit", "100000", "min", "10000", "max", "30000", "avpkt", "1000", "burst", "20",
                "bandwidth", "2mbit"],
        "codel": ["codel"], "fq_codel": ["fq_codel"], "pie": ["pie"], "fq": ["fq"], "cake": ["cake"],
    }
    ns = f"iwlab-doctor-{os.getpid()}"
    if not run("ip", "netns", "add", ns):
        return {q: False for q in qdiscs}
    try:
        ok = run("ip", "-n", ns, "link", "add", "dva", "type", "veth", "peer", "name", "dvb")
        out = {}
        for name, args in qdiscs.items():
            out[name] = ok and run("ip", "netns", "exec", ns, "tc", "qdisc", "replace", "dev", "dva", "root", *args)
            run("ip", "netns", "exec", ns, "tc", "qdisc", "del", "dev", "dva", "root")
        return out
    finally:
        run("ip", "netns", "del", ns)


PINS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "toolchain.versions")


def read_pins(path: str) -> dict[str, str]:
    """KEY=VALUE lines of a toolchain.versions file ({} when absent)."""
    try:
        with open(path) as f:
            lines = [ln.strip() for ln in f]
    except OSError:
        return {}
    return dict(ln.split("=", 1) for ln in lines if ln and not ln.startswith("#") and "=" in ln)


def version_of(exe: str | None) -> str:
    if not exe:
        return "not found"
    try:
        r = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"? ({e})"
    text = (r.stdout + r.stderr).strip().splitlines()
    return text[-1].strip() if text else "?"


def version_lines(p4c: str | None, ssg: str | None) -> list[str]:
    """The pinned toolchain (tools/toolchain.versions) next to the versions found."""
    pins = read_pins(PINS)
    prefix = os.environ.get("P4_PREFIX", "/opt/p4")
    installed = read_pins(os.path.join(prefix, "share", "iwlab", "toolchain.versions"))

    def pin(k: str) -> str:
        ref, commit = pins.get(k + "_REF", "?"), pins.get(k + "_COMMIT", "")
        return ref[:10] if ref == commit else f"{ref} ({commit[:10]})"

    if not installed:
        built = f"not by make toolchain (no {prefix}/share/iwlab/toolchain.versions)"
    elif all(installed.get(k) == v for k, v in pins.items() if k.endswith("_COMMIT")):
        built = "by make toolchain, from these pins"
    else:
        built = "by make toolchain, from OTHER pins: run make toolchain again"
    return [
        f"pinned (tools/toolchain.versions): p4c {pin('P4C')}, behavioral-model {pin('BMV2')}, PI {pin('PI')}, "
        f"p4runtime {pin('P4RUNTIME')}",
        f"found: p4c-bm2-ss {version_of(p4c)}; simple_switch_grpc {version_of(ssg)}",
        f"toolchain in {prefix}: built {built}",
    ]


def main() -> int:
    is_root = os.geteuid() == 0
    ns = f"iwlab-doctor-ns-{os.getpid()}"
    namespaces = is_root and run("ip", "netns", "add", ns)
    if namespaces:
        run("ip", "netns", "del", ns)
    p4c = which("p4c-bm2-ss")
    ssg = which("simple_switch_grpc")
    cli = which("simple_switch_CLI")
    mininet = run("/usr/bin/python3", "-c", "import mininet.net")
    thrift = run("/usr/bin/python3", "-c", "import thrift")
    lines = [
        ("root", is_root, ""),
        ("network namespaces", namespaces, ""),
        ("P4 compiler (p4c-bm2-ss)", bool(p4c), p4c or ""),
        ("BMv2 (simple_switch_grpc)", bool(ssg), ssg or ""),
        ("P4Runtime server (simple_switch_grpc)", bool(ssg), ""),
        ("BMv2 CLI (simple_switch_CLI + python3-thrift)", bool(cli) and thrift, cli or ""),
        ("Mininet (python3 -c 'import mininet')", mininet, ""),
        ("tcpdump", bool(shutil.which("tcpdump")), ""),
        ("ethtool", bool(shutil.which("ethtool")), ""),
    ]
    if namespaces:
        for q, ok in qdisc_checks().items():
            lines.append((f"qdisc {q}", ok, ""))
    else:
        lines.append(("qdiscs", False, "not checked: needs root and namespaces"))
    width = max(len(n) for n, _, _ in lines)
    for name, ok, note in lines:
        print(f"{name:<{width}}  {'yes' if ok else 'no '}  {note}".rstrip())
    for line in version_lines(p4c, ssg):
        print(line)
    if not (p4c and ssg):
        print("to install the P4 toolchain: make toolchain (about 65 min on 2 cores; P4_SOURCES=dir offline)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
