"""Kafka's message-schema model (what Kafka generates its message classes from), declaratively.

A :class:`Message` lists :class:`F` fields with their type, the versions they exist in, the
versions they may be null in, and -- for flexible versions -- their tag.  ``read`` and ``build``
implement the wire encoding for any version: fixed-width integers, strings (int16 length, or a
compact unsigned-varint length in flexible versions), bytes (int32 / compact), arrays (int32 /
compact), UUIDs, nested structs and the tagged-field section of flexible versions.  Lengths are
bounded by the bytes left before anything is allocated.

``build`` takes a dict of field values: a field left out takes its default (Kafka's message JSON
``default``, else 0, false, "", empty), a key that names no field of the message raises
:class:`UnknownField` (a misspelling is never silently dropped).
"""
from __future__ import annotations

import base64
import struct
from dataclasses import dataclass

from .errors import KafkaFormatError

_FIXED = {"bool": "?", "int8": "b", "int16": "h", "uint16": "H", "int32": "i", "uint32": "I", "int64": "q",
          "float64": "d"}
_STRUCTS = {k: struct.Struct(">" + v) for k, v in _FIXED.items()}


def _range(spec):
    """'0+' -> (0, inf); '3' -> (3, 3); '1-4' -> (1, 4); 'none'/None -> None."""
    if spec is None or spec == "none":
        return None
    if spec.endswith("+"):
        return (int(spec[:-1]), 1 << 30)
    if "-" in spec:
        lo, hi = spec.split("-")
        return (int(lo), int(hi))
    return (int(spec), int(spec))


def _in(rng, v) -> bool:
    return rng is not None and rng[0] <= v <= rng[1]


class F:
    """One field: name, type (``int32``, ``string``, ``[]int32``, ``[]SomeStruct``, ``SomeStruct``...)."""

    def __init__(self, name, type, versions, nullable=None, tagged=None, tag=None, default=None, fields=None,
                 flexible=None):
        self.name, self.type = name, type
        # a field may keep the old encoding in flexible versions (RequestHeader.ClientId does)
        self.flexible = _range(flexible) if flexible is not None else "inherit"
        self.versions, self.nullable, self.tagged = _range(versions), _range(nullable), _range(tagged)
        # Kafka's JSON sometimes spells a tag as a string ("0"); on the wire it is an unsigned varint
        self.tag, self.fields = (None if tag is None else int(tag)), fields
        self.default = _default(type, default)


def _default(type_, d):
    if d is None:
        if type_ in _FIXED:
            return False if type_ == "bool" else 0
        if type_ == "uuid":
            return "AAAAAAAAAAAAAAAAAAAAAA"
        if type_ == "string":
            return ""
        if type_ == "bytes":
            return b""
        return None if not type_.startswith("[]") else []
    if d == "null":
        return None
    if type_ == "bool":
        return d is True or d == "true"
    if type_ in _FIXED and isinstance(d, str):
        return float(d) if type_ == "float64" else int(d, 0)
    return d


@dataclass
class _Ctx:
    data: bytes
    pos: int
    flexible: bool
    structs: dict
    #: only the fields the version has, and tagged fields only when the bytes carry them (as
    #: kafka-dump-log prints a record); otherwise every field, absent ones at their defaults
    exact: bool = False

    def take(self, n: int) -> bytes:
        if n < 0 or self.pos + n > len(self.data):
            raise KafkaFormatError("schema", f"{n} bytes wanted at byte {self.pos}, {len(self.data) - self.pos} left",
                                   position=self.pos)
        b = self.data[self.pos:self.pos + n]
        self.pos += n
        return b

    def uvarint(self) -> int:
        n = shift = 0
        while True:
            b = self.take(1)[0]
            n |= (b & 0x7F) << shift
            if b < 0x80:
                return n
            shift += 7
            if shift > 35:
                raise KafkaFormatError("schema", "unsigned varint too long", position=self.pos)


def uvarint(n: int) -> bytes:
    out = bytearray()
    while n > 0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


class Message:
    def __init__(self, name, valid, flexible, fields, api_key=None, structs=None):
        self.name, self.valid, self.flexible = name, _range(valid), _range(flexible)
        self.fields, self.api_key, self.structs = fields, api_key, structs or {}

    def is_flexible(self, version: int) -> bool:
        return _in(self.flexible, version)

    # -- reading ---------------------------------------------------------------------------------
    def read(self, data: bytes, version: int, *, whole: bool = True, exact: bool = False) -> dict:
        """The message in ``data`` as version ``version``; ``exact``: only the fields that version has and
        the tagged fields present in the bytes (else absent fields come back at their defaults)."""
        if not _in(self.valid, version):
            raise KafkaFormatError("schema", f"{self.name} has no version {version}")
        out, used = self.read_prefix(data, version, exact=exact)
        if whole and used != len(data):
            raise KafkaFormatError("schema", f"{len(data) - used} bytes left after {self.name} v{version}",
                                   position=used)
        return out

    def read_prefix(self, data: bytes, version: int, *, exact: bool = False) -> tuple[dict, int]:
        """Read the message at the start of ``data``; returns it and how many bytes it took."""
        if not _in(self.valid, version):
            raise KafkaFormatError("schema", f"{self.name} has no version {version}")
        ctx = _Ctx(bytes(data), 0, self.is_flexible(version), self.structs, exact)
        return _read_struct(ctx, self.fields, version), ctx.pos

    # -- building --------------------------------------------------------------------------------
    def build(self, obj: dict, version: int) -> bytes:
        """The bytes of ``obj`` as version ``version``; :class:`UnknownField` for a key that is no field."""
        return bytes(self.build_into(bytearray(), obj, version))

    def build_into(self, out: bytearray, obj: dict, version: int) -> bytearray:
        """Append ``obj`` to ``out`` (and return it). A ``records`` value that is no bytes is a hole: its
        length is written and the value handed to ``out.hole(value)`` (the broker's sendfile regions)."""
        if not _in(self.valid, version):
            raise KafkaFormatError("schema", f"{self.name} has no version {version}")
        _build_struct(out, self.fields, obj, version, self.is_flexible(version), self.structs, self.name)
        return out


class UnknownField(TypeError):
    """``build`` was given a key that is no field of the message (a misspelling, a field of another message)."""

    def __init__(self, where: str, key, fields, names=None):
        self.where, self.key = where, key
        names = [f.name for f in fields] if names is None else names
        super().__init__(f"{where} has no field {key!r} (its fields: {', '.join(names)})")


#: the field names of each field list (kept with the list, so an id is never reused while cached)
_NAMES: dict = {}
#: keys ``read`` adds beside the fields, accepted back by ``build``
_READ_KEYS = frozenset({"_unknownTaggedFields"})


def _check_keys(obj: dict, fields, where: str) -> None:
    known = _NAMES.get(id(fields))
    if known is None or known[0] is not fields:
        known = _NAMES[id(fields)] = (fields, frozenset(f.name for f in fields) | _READ_KEYS)
    if not known[1].issuperset(obj):
        raise UnknownField(where, next(k for k in obj if k not in known[1]), fields)


def _sub_fields(f: F, structs: dict):
    if f.fields is not None:
        return f.fields
    t = f.type[2:] if f.type.startswith("[]") else f.type
    return structs.get(t)


def _read_struct(ctx: _Ctx, fields, version) -> dict:
    out = {}
    tagged = {}
    for f in fields:
        if ctx.flexible and f.tag is not None and _in(f.tagged, version):
            tagged[f.tag] = f
            if not ctx.exact:
                out[f.name] = f.default
            continue
        if not _in(f.versions, version):
            if not ctx.exact:
                out[f.name] = f.default
            continue
        out[f.name] = _read_value(ctx, f, version)
    if ctx.flexible:
        for _ in range(ctx.uvarint()):
            tag, size = ctx.uvarint(), ctx.uvarint()
            raw = ctx.take(size)
            f = tagged.get(tag)
            if f is None:
                out.setdefault("_unknownTaggedFields", {})[tag] = base64.b64encode(raw).decode()
                continue
            sub = _Ctx(raw, 0, True, ctx.structs, ctx.exact)
            out[f.name] = _read_value(sub, f, version)
    return out


def _read_value(ctx: _Ctx, f: F, version, type_=None):
    if f.flexible != "inherit" and ctx.flexible != _in(f.flexible, version):
        saved, ctx.flexible = ctx.flexible, _in(f.flexible, version)
        try:
            return _read_value(ctx, f, version, type_)
        finally:
            ctx.flexible = saved
    t = type_ or f.type
    nullable = _in(f.nullable, version)
    if t in _STRUCTS:
        s = _STRUCTS[t]
        return s.unpack(ctx.take(s.size))[0]
    if t == "uuid":
        return base64.urlsafe_b64encode(ctx.take(16)).decode().rstrip("=")
    if t in ("string", "bytes", "records"):
        if ctx.flexible:
            n = ctx.uvarint() - 1
        else:
            n = _STRUCTS["int16" if t == "string" else "int32"].unpack(ctx.take(2 if t == "string" else 4))[0]
        if n < 0:
            if n == -1 and nullable or t == "records":
                return None
            raise KafkaFormatError("schema", f"{f.name}: null where it is not nullable", position=ctx.pos)
        raw = ctx.take(n)
        if t == "records":
            return raw  # record batches stay bytes: the record-batch specs read them
        return raw.decode("utf-8", "replace") if t == "string" else base64.b64encode(raw).decode()
    if t.startswith("[]"):
        n = ctx.uvarint() - 1 if ctx.flexible else _STRUCTS["int32"].unpack(ctx.take(4))[0]
        if n < 0:
            if nullable:
                return None
            # Kafka: "non-nullable field ... was serialized as null" (handlers would iterate None)
            raise KafkaFormatError("schema", f"{f.name}: null array where it is not nullable", position=ctx.pos)
        if n > len(ctx.data) - ctx.pos:
            raise KafkaFormatError("schema", f"{f.name}: {n} elements cannot fit in {len(ctx.data) - ctx.pos} bytes",
                                   position=ctx.pos)
        elem = t[2:]
        sub = _sub_fields(f, ctx.structs)
        if sub is not None:
            return [_read_struct(ctx, sub, version) for _ in range(n)]
        return [_read_value(ctx, f, version, elem) for _ in range(n)]
    sub = _sub_fields(f, ctx.structs)
    if sub is None:
        raise KafkaFormatError("schema", f"unknown type {t} of {f.name}")
    if nullable and _STRUCTS["int8"].unpack(ctx.take(1))[0] < 0:  # a nullable struct: int8 -1 null, 1 present
        return None
    return _read_struct(ctx, sub, version)


def _build_struct(out: bytearray, fields, obj: dict, version, flexible, structs, where: str) -> None:
    _check_keys(obj, fields, where)
    tagged = []
    for f in fields:
        v = obj.get(f.name, f.default)
        if flexible and f.tag is not None and _in(f.tagged, version):
            if v != f.default:
                buf = bytearray()
                _build_value(buf, f, v, version, True, structs, where)
                tagged.append((f.tag, bytes(buf)))
            continue
        if not _in(f.versions, version):
            continue
        _build_value(out, f, v, version, flexible, structs, where)
    if flexible:
        out += uvarint(len(tagged))
        for tag, data in sorted(tagged):
            out += uvarint(tag) + uvarint(len(data)) + data


def _build_value(out: bytearray, f: F, v, version, flexible, structs, where: str, type_=None) -> None:
    if f.flexible != "inherit":
        flexible = _in(f.flexible, version)
    t = type_ or f.type
    if t in _STRUCTS:
        out += _STRUCTS[t].pack(v)
    elif t == "uuid":
        out += base64.urlsafe_b64decode(v + "=" * (-len(v) % 4))
    elif t in ("string", "bytes", "records"):
        if v is None:
            out += uvarint(0) if flexible else (_STRUCTS["int16"].pack(-1) if t == "string" else _STRUCTS["int32"].pack(-1))
            return
        if t == "records" and not isinstance(v, (bytes, bytearray, memoryview)) and hasattr(out, "hole"):
            out += uvarint(len(v) + 1) if flexible else _STRUCTS["int32"].pack(len(v))
            out.hole(v)
            return
        raw = v.encode("utf-8") if t == "string" else bytes(v) if t == "records" else base64.b64decode(v)
        if flexible:
            out += uvarint(len(raw) + 1)
        else:
            out += _STRUCTS["int16"].pack(len(raw)) if t == "string" else _STRUCTS["int32"].pack(len(raw))
        out += raw
    elif t.startswith("[]"):
        if v is None:
            out += uvarint(0) if flexible else _STRUCTS["int32"].pack(-1)
            return
        out += uvarint(len(v) + 1) if flexible else _STRUCTS["int32"].pack(len(v))
        sub = _sub_fields(f, structs)
        for item in v:
            if sub is not None:
                _build_struct(out, sub, item, version, flexible, structs, f"{where}.{f.name}[]")
            else:
                _build_value(out, f, item, version, flexible, structs, where, t[2:])
    else:
        if _in(f.nullable, version):
            out += _STRUCTS["int8"].pack(-1 if v is None else 1)
            if v is None:
                return
        _build_struct(out, _sub_fields(f, structs), v or {}, version, flexible, structs, f"{where}.{f.name}")
