"""A registry's Protobuf schema as a protobuf ``FileDescriptor``: ``.proto`` text (what the Java
registry stores) parsed by proto-schema-parser and turned into a ``FileDescriptorProto``, or the
base64 ``FileDescriptorProto`` confluent-kafka-python registers; references and the well-known
imports (``google/protobuf/*``) added to the same pool first.
"""
from __future__ import annotations

import base64
import binascii
import functools
import importlib
from typing import TYPE_CHECKING

from specs.lazy import lazy

#: imported on first use (specs/lazy.py): a scan that decodes nothing (``kfx scan`` without
#: ``--decode``) never pays for protobuf and the .proto parser (45 ms quiet, ~110 ms under load)
if TYPE_CHECKING:  # the annotations'
    from google.protobuf import descriptor_pb2
else:
    descriptor_pb2 = lazy("google.protobuf.descriptor_pb2", globals())
descriptor_pool = lazy("google.protobuf.descriptor_pool", globals())
ast = lazy("proto_schema_parser.ast", globals())
proto_parser = lazy("proto_schema_parser.parser", globals())
unknown_fields = lazy("google.protobuf.unknown_fields", globals())


@functools.cache
def _types() -> tuple[dict, dict]:
    """The scalar type names of .proto -> FieldDescriptorProto types, and the parse tree's
    cardinalities -> FieldDescriptorProto labels."""
    F = descriptor_pb2.FieldDescriptorProto
    scalars = {"double": F.TYPE_DOUBLE, "float": F.TYPE_FLOAT, "int64": F.TYPE_INT64, "uint64": F.TYPE_UINT64,
               "int32": F.TYPE_INT32, "fixed64": F.TYPE_FIXED64, "fixed32": F.TYPE_FIXED32, "bool": F.TYPE_BOOL,
               "string": F.TYPE_STRING, "bytes": F.TYPE_BYTES, "uint32": F.TYPE_UINT32, "sfixed32": F.TYPE_SFIXED32,
               "sfixed64": F.TYPE_SFIXED64, "sint32": F.TYPE_SINT32, "sint64": F.TYPE_SINT64}
    labels = {ast.FieldCardinality.REPEATED: F.LABEL_REPEATED, ast.FieldCardinality.REQUIRED: F.LABEL_REQUIRED}
    return scalars, labels


def _camel(name: str) -> str:
    return "".join(p[:1].upper() + p[1:] for p in name.split("_"))


def _field(f, out, *, proto3: bool, oneof: int | None = None):
    """A field of the parse tree added to ``out`` (a message's fields) as a FieldDescriptorProto."""
    fd = out.add(name=f.name, number=f.number)
    scalars, labels = _types()
    fd.label = labels.get(f.cardinality, descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL)
    typ = f.type.lstrip(".") if f.type.startswith(".") else f.type
    if typ in scalars:
        fd.type = scalars[typ]
    else:
        fd.type_name = f.type  # resolved by the pool (relative names too); message or enum found there
    if oneof is not None:
        fd.oneof_index = oneof
    elif proto3 and f.cardinality == ast.FieldCardinality.OPTIONAL:
        fd.proto3_optional = True
    for opt in f.options:
        if opt.name == "packed":
            fd.options.packed = bool(opt.value)
    return fd


def _map_field(f, msg):
    """A ``map<K, V>`` field: its synthetic ``<Name>Entry`` message and the repeated field of it."""
    entry = msg.nested_type.add(name=_camel(f.name) + "Entry")
    entry.options.map_entry = True
    for i, (name, typ) in enumerate((("key", f.key_type), ("value", f.value_type)), 1):
        _field(ast.Field(name=name, number=i, type=typ), entry.field, proto3=False)
    msg.field.add(name=f.name, number=f.number, label=descriptor_pb2.FieldDescriptorProto.LABEL_REPEATED,
                  type_name=entry.name)


def _enum(e, out):
    """An enum of the parse tree added to ``out`` as an EnumDescriptorProto."""
    ed = out.add(name=e.name)
    for v in e.elements:
        if isinstance(v, ast.EnumValue):
            ed.value.add(name=v.name, number=v.number)
        elif isinstance(v, ast.Option) and v.name == "allow_alias":
            ed.options.allow_alias = bool(v.value)


def _message(m, msg, proto3: bool):
    """A message of the parse tree into ``msg`` (a DescriptorProto): fields, maps, oneofs, nested types."""
    for el in m.elements:
        if isinstance(el, ast.Field):
            _field(el, msg.field, proto3=proto3)
        elif isinstance(el, ast.MapField):
            _map_field(el, msg)
        elif isinstance(el, ast.OneOf):
            msg.oneof_decl.add(name=el.name)
            for of in el.elements:
                if isinstance(of, ast.Field):
                    _field(of, msg.field, proto3=proto3, oneof=len(msg.oneof_decl) - 1)
        elif isinstance(el, ast.Message):
            _message(el, msg.nested_type.add(name=el.name), proto3)
        elif isinstance(el, ast.Enum):
            _enum(el, msg.enum_type)
    # proto3 optional fields each live in a synthetic oneof, declared after the real ones
    for fd in msg.field:
        if fd.proto3_optional:
            fd.oneof_index = len(msg.oneof_decl)
            msg.oneof_decl.add(name="_" + fd.name)


def parse_proto(text: str, name: str) -> descriptor_pb2.FileDescriptorProto:
    """``.proto`` text as a FileDescriptorProto (ValueError when it does not parse)."""
    tree = proto_parser.Parser().parse(text)
    fdp = descriptor_pb2.FileDescriptorProto(name=name, syntax=tree.syntax or "proto2")
    proto3 = fdp.syntax == "proto3"
    for el in tree.file_elements:
        if isinstance(el, ast.Package):
            fdp.package = el.name
        elif isinstance(el, ast.Import):
            fdp.dependency.append(el.name)
        elif isinstance(el, ast.Message):
            _message(el, fdp.message_type.add(name=el.name), proto3)
        elif isinstance(el, ast.Enum):
            _enum(el, fdp.enum_type)
    return fdp


def as_file_proto(text: str, name: str) -> descriptor_pb2.FileDescriptorProto:
    """A registry schema string as a FileDescriptorProto: base64 of a serialized one, else .proto text."""
    try:
        fdp = descriptor_pb2.FileDescriptorProto.FromString(base64.b64decode(text, validate=True))
        if fdp.message_type or fdp.enum_type:
            fdp.name = name
            return fdp
    except (binascii.Error, ValueError, Exception):  # noqa: BLE001 - not a descriptor: .proto text
        pass
    return parse_proto(text, name)


def _add_builtin(pool, dep: str) -> None:
    """A well-known import (google/protobuf/..., google/type/...) from protobuf's own pool, its
    generated module imported first (``google/protobuf/timestamp.proto``: ``timestamp_pb2``)."""
    try:
        importlib.import_module(dep.removesuffix(".proto").replace("/", ".") + "_pb2")
    except ImportError:
        pass
    try:
        fd = descriptor_pool.Default().FindFileByName(dep)
    except KeyError:
        return
    for sub in fd.dependencies:
        _add_builtin(pool, sub.name)
    try:
        pool.FindFileByName(dep)
    except KeyError:
        fdp = descriptor_pb2.FileDescriptorProto()
        fd.CopyToProto(fdp)
        pool.Add(fdp)


def file_descriptor(text: str, deps, name: str):
    """The FileDescriptor of a schema, its references (``deps``: (import name, schema text), a
    reference's own references first) added to a pool of its own."""
    pool = descriptor_pool.DescriptorPool()
    protos = [as_file_proto(dep_text, dep_name) for dep_name, dep_text in deps] + [as_file_proto(text, name)]
    for fdp in protos:
        for dep in fdp.dependency:
            _add_builtin(pool, dep)
    for fdp in protos:
        pool.Add(fdp)
    return pool.FindFileByName(name)


def message_at(fd, indexes: list[int]):
    """The message a message-index list names: the file's messages, then nested ones."""
    msgs = fd.message_types_by_name.values()
    desc = None
    for i in indexes:
        msgs = list(msgs)
        if i >= len(msgs):
            raise ValueError(f"message index {indexes} is not in the schema ({len(msgs)} messages there)")
        desc = msgs[i]
        msgs = desc.nested_types
    return desc


def unknown_field_count(msg) -> int:
    """How many fields of a parsed message (and its sub-messages) the schema does not define."""
    n = len(unknown_fields.UnknownFieldSet(msg))
    for fd, val in msg.ListFields():
        if fd.message_type is not None and not fd.message_type.GetOptions().map_entry:
            repeated = fd.is_repeated if hasattr(fd, "is_repeated") else fd.label == fd.LABEL_REPEATED
            for sub in (val if repeated else [val]):
                n += unknown_field_count(sub)
    return n
