"""The device config a Tofino switch takes over P4Runtime, as Stratum defines it.

Stratum (stratum_bf, stratum_bfrt) reads the ``p4_device_config`` of
``SetForwardingPipelineConfig`` as a ``stratum.hal.barefoot.BfPipelineConfig``
(stratum/hal/lib/barefoot/bf.proto)::

    message BfPipelineConfig {
      message Profile {
        string profile_name = 1;         // the pipeline's name (bf-p4c: "pipe")
        bytes context = 2;               // <out>/pipe/context.json
        bytes binary = 3;                // <out>/pipe/tofino.bin (tofino2.bin)
        repeated uint32 pipe_scope = 4;  // hardware pipes it runs on; empty: all
      }
      string p4_name = 1;
      bytes bfruntime_info = 2;          // <out>/bf-rt.json
      repeated Profile profiles = 3;
    }

The message is built here from that definition with protobuf's own descriptor
classes, so the bytes are protobuf's encoding, not a hand-written one.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

_PROTO_PACKAGE = "stratum.hal.barefoot"


def _file_descriptor() -> descriptor_pb2.FileDescriptorProto:
    f = descriptor_pb2.FileDescriptorProto(name="iwlab/stratum_bf.proto", package=_PROTO_PACKAGE, syntax="proto3")
    F = descriptor_pb2.FieldDescriptorProto
    cfg = f.message_type.add(name="BfPipelineConfig")
    prof = cfg.nested_type.add(name="Profile")
    for name, number, typ, label in (("profile_name", 1, F.TYPE_STRING, F.LABEL_OPTIONAL),
                                     ("context", 2, F.TYPE_BYTES, F.LABEL_OPTIONAL),
                                     ("binary", 3, F.TYPE_BYTES, F.LABEL_OPTIONAL),
                                     ("pipe_scope", 4, F.TYPE_UINT32, F.LABEL_REPEATED)):
        prof.field.add(name=name, number=number, type=typ, label=label)
    cfg.field.add(name="p4_name", number=1, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL)
    cfg.field.add(name="bfruntime_info", number=2, type=F.TYPE_BYTES, label=F.LABEL_OPTIONAL)
    cfg.field.add(name="profiles", number=3, type=F.TYPE_MESSAGE, label=F.LABEL_REPEATED,
                  type_name=f".{_PROTO_PACKAGE}.BfPipelineConfig.Profile")
    return f


_POOL = descriptor_pool.DescriptorPool()
_POOL.Add(_file_descriptor())
BfPipelineConfig = message_factory.GetMessageClass(_POOL.FindMessageTypeByName(f"{_PROTO_PACKAGE}.BfPipelineConfig"))


class DeviceConfigError(RuntimeError):
    """The compiler's output is not there, or not complete."""


@dataclass(frozen=True)
class CompilerOutput:
    """Where bf-p4c put one program's files (``bf-p4c -o DIR``)."""

    directory: Path
    pipe: str = "pipe"

    def files(self) -> tuple[Path, Path, Path]:
        d = self.directory
        bfrt = next((p for p in (d / "bfrt.json", d / "bf-rt.json") if p.exists()), d / "bfrt.json")
        binary = next((p for p in (d / self.pipe / "tofino.bin", d / self.pipe / "tofino2.bin") if p.exists()),
                      d / self.pipe / "tofino.bin")
        return bfrt, d / self.pipe / "context.json", binary


def device_config(out: CompilerOutput, p4_name: str, pipe_scope: tuple[int, ...] = ()) -> bytes:
    """The ``p4_device_config`` bytes for Stratum from bf-p4c's output directory."""
    bfrt, context, binary = out.files()
    missing = [str(p) for p in (bfrt, context, binary) if not p.is_file()]
    if missing:
        raise DeviceConfigError(f"bf-p4c output incomplete in {out.directory}: missing {', '.join(missing)} "
                                "(the open backend writes tofino.bin only where its assembler was built)")
    msg = BfPipelineConfig(p4_name=p4_name, bfruntime_info=bfrt.read_bytes())
    msg.profiles.add(profile_name=out.pipe, context=context.read_bytes(), binary=binary.read_bytes(),
                     pipe_scope=list(pipe_scope))
    return msg.SerializeToString()


def parse_device_config(blob: bytes):
    """The message back from its bytes (tests, and a check before sending)."""
    msg = BfPipelineConfig()
    msg.ParseFromString(blob)
    return msg


def main(argv: list[str] | None = None) -> int:
    """``python -m controller.stratum OUT_DIR P4_NAME DEST``: pack bf-p4c's output for Stratum."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 3:
        print("usage: python -m controller.stratum BF_P4C_OUT_DIR P4_NAME DEST", file=sys.stderr)
        return 2
    try:
        blob = device_config(CompilerOutput(Path(args[0])), args[1])
    except DeviceConfigError as e:
        print(f"no device config: {e}", file=sys.stderr)
        return 1
    Path(args[2]).write_bytes(blob)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
