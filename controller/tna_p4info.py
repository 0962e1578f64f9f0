"""Loading the TNA program's P4Info, whose registers and counters are Tofino externs.

bf-p4c writes a TNA program's registers, counters, port metadata and snapshots as
P4Info ``externs`` whose info is an ``Any`` holding a ``barefoot.*`` message (p4c:
backends/tofino/bf-p4c/control-plane/proto/barefoot/p4info.proto). protobuf cannot read
the text form without those types, so the ones this program's P4Info holds are declared
here, with that file's field numbers, and the message reads and re-encodes losslessly:

    enum Direction { DIRECTION_INGRESS = 0; DIRECTION_EGRESS = 1; }
    message CounterSpec { enum Unit { UNSPECIFIED = 0; BYTES = 1; PACKETS = 2;
                                      PACKETS_AND_BYTES = 3; } Unit unit = 1; }
    message Counter { CounterSpec spec = 1; int64 size = 2; }
    message Register { p4.config.v1.P4DataTypeSpec type_spec = 1; int64 size = 2;
                       string data_field_name = 3; }
    message PortMetadata { string key_name = 1; p4.config.v1.P4DataTypeSpec type_spec = 2; }
    message Snapshot { string pipe = 1; Direction direction = 2;
                       message Field { uint32 id = 1; string name = 2; int32 bitwidth = 3; }
                       repeated Field fields = 3; }
    message ValueSet { p4.config.v1.P4DataTypeSpec type_spec = 1; int32 size = 2; }
    message DynHash { p4.config.v1.P4DataTypeSpec type_spec = 1;
                      message field_info { string field_name = 1; bool is_constant = 2; }
                      repeated field_info field_infos = 2; int32 hash_width = 3; }

A type not declared here makes ``load`` fail with protobuf's "not found in descriptor pool",
naming it: declare it from that file.
"""

from __future__ import annotations

import sys
from pathlib import Path

from finsy.proto import p4i, p4t  # noqa: F401  (p4t: registers p4types.proto, which Register uses)
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory, text_format

_FILE = "iwlab/barefoot_p4info_subset.proto"


def _declare() -> None:
    pool = descriptor_pool.Default()
    try:
        pool.FindFileByName(_FILE)
        return
    except KeyError:
        pass
    F = descriptor_pb2.FieldDescriptorProto
    f = descriptor_pb2.FileDescriptorProto(name=_FILE, package="barefoot", syntax="proto3",
                                           dependency=["p4/config/v1/p4types.proto"])
    kinds = {"string": F.TYPE_STRING, "int64": F.TYPE_INT64, "int32": F.TYPE_INT32, "uint32": F.TYPE_UINT32,
             "bool": F.TYPE_BOOL}

    def fields(msg, *spec) -> None:
        for name, number, typ, *repeated in spec:
            label = F.LABEL_REPEATED if repeated else F.LABEL_OPTIONAL
            if typ in kinds:
                msg.field.add(name=name, number=number, type=kinds[typ], label=label)
            else:  # a message or enum type, by its full name: ".pkg.Name" or "enum:.pkg.Name"
                enum = typ.startswith("enum:")
                msg.field.add(name=name, number=number, label=label, type=F.TYPE_ENUM if enum else F.TYPE_MESSAGE,
                              type_name=typ.removeprefix("enum:"))

    direction = f.enum_type.add(name="Direction")
    for name, number in (("DIRECTION_INGRESS", 0), ("DIRECTION_EGRESS", 1)):
        direction.value.add(name=name, number=number)
    spec = f.message_type.add(name="CounterSpec")
    unit = spec.enum_type.add(name="Unit")
    for name, number in (("UNSPECIFIED", 0), ("BYTES", 1), ("PACKETS", 2), ("PACKETS_AND_BYTES", 3)):
        unit.value.add(name=name, number=number)
    fields(spec, ("unit", 1, "enum:.barefoot.CounterSpec.Unit"))
    fields(f.message_type.add(name="Counter"), ("spec", 1, ".barefoot.CounterSpec"), ("size", 2, "int64"))
    fields(f.message_type.add(name="Register"), ("type_spec", 1, ".p4.config.v1.P4DataTypeSpec"),
           ("size", 2, "int64"), ("data_field_name", 3, "string"))
    fields(f.message_type.add(name="PortMetadata"), ("key_name", 1, "string"),
           ("type_spec", 2, ".p4.config.v1.P4DataTypeSpec"))
    snap = f.message_type.add(name="Snapshot")
    fields(snap.nested_type.add(name="Field"), ("id", 1, "uint32"), ("name", 2, "string"), ("bitwidth", 3, "int32"))
    fields(snap, ("pipe", 1, "string"), ("direction", 2, "enum:.barefoot.Direction"),
           ("fields", 3, ".barefoot.Snapshot.Field", "repeated"))
    fields(f.message_type.add(name="ValueSet"), ("type_spec", 1, ".p4.config.v1.P4DataTypeSpec"),
           ("size", 2, "int32"))
    dyn = f.message_type.add(name="DynHash")   # the Hash externs (tofino2-iwa's flow hashes and packing)
    fields(dyn.nested_type.add(name="field_info"), ("field_name", 1, "string"), ("is_constant", 2, "bool"))
    fields(dyn, ("type_spec", 1, ".p4.config.v1.P4DataTypeSpec"),
           ("field_infos", 2, ".barefoot.DynHash.field_info", "repeated"), ("hash_width", 3, "int32"))
    pool.Add(f)


_declare()
Register = message_factory.GetMessageClass(descriptor_pool.Default().FindMessageTypeByName("barefoot.Register"))
Counter = message_factory.GetMessageClass(descriptor_pool.Default().FindMessageTypeByName("barefoot.Counter"))


def load(path: Path) -> p4i.P4Info:
    """The P4Info message of a bf-p4c build (text format), its Tofino externs readable."""
    msg = p4i.P4Info()
    text_format.Parse(Path(path).read_text(), msg)
    return msg


def extern_sizes(info: p4i.P4Info) -> dict[str, int]:
    """alias -> size of every Tofino register and counter in the program."""
    out = {}
    for ext in info.externs:
        for inst in ext.instances:
            for cls in (Register, Counter):
                m = cls()
                if inst.info.Unpack(m):
                    out[inst.preamble.alias] = m.size
    return out


def without_snapshots(info: p4i.P4Info) -> p4i.P4Info:
    """The P4Info less its Snapshot externs: debugging aids that bf-p4c -g writes, and not always
    the same ones for the same program, so the committed P4Info leaves them out."""
    out = p4i.P4Info()
    out.CopyFrom(info)
    del out.externs[:]
    out.externs.extend(e for e in info.externs if e.extern_type_name != "Snapshot")
    return out


def main(argv: list[str] | None = None) -> int:
    """``python -m controller.tna_p4info IN OUT``: IN without its Snapshot externs, as text, to OUT."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 2:
        print("usage: python -m controller.tna_p4info IN.p4info.txtpb OUT.p4info.txtpb", file=sys.stderr)
        return 2
    Path(args[1]).write_text(text_format.MessageToString(without_snapshots(load(Path(args[0])))))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
