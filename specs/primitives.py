"""Construct building blocks shared by every schema: Kafka's varints, nullable strings, CRC seals, compression,
and the construct Struct of a layout table."""
from __future__ import annotations

import io
import struct

import construct as c

from . import codecs
from .errors import KafkaFormatError
from .layout import Bits, Layout

#: protobuf-style zigzag varint / varlong (Kafka's ByteUtils.readVarint/readVarlong).
Varint = c.ZigZag


class NullableBytes(c.Construct):
    """Bytes behind a length prefix where -1 means null (``None``).

    ``length`` is the construct of the prefix (a zigzag varint in v2 records, int32 in legacy
    messages).  The length is bounded by what is left in the stream before anything is read.
    """

    def __init__(self, length: c.Construct):
        super().__init__()
        self.length = length

    def _parse(self, stream, context, path):
        n = self.length._parsereport(stream, context, path)
        if n == -1:
            return None
        if n < -1:
            raise c.ValidationError(f"negative length {n}", path=path)
        data = c.stream_read(stream, n, path)
        return data

    def _build(self, obj, stream, context, path):
        if obj is None:
            self.length._build(-1, stream, context, path)
            return None
        data = bytes(obj)
        self.length._build(len(data), stream, context, path)
        c.stream_write(stream, data, len(data), path)
        return obj


class NullableString(c.Adapter):
    """A :class:`NullableBytes` decoded as UTF-8 (header keys are Java Strings)."""

    def _decode(self, obj, context, path):
        return None if obj is None else obj.decode("utf-8", "replace")

    def _encode(self, obj, context, path):
        return None if obj is None else obj.encode("utf-8")


class CrcSealed(c.Construct):
    """A checksum field followed by the data it covers.

    Parsing yields ``{"crc": stored, "crcValid": bool, "value": parsed}``; building computes the
    checksum over the built ``subcon`` bytes, so a built object is always sealed correctly.
    ``end`` is a context lambda giving how many bytes the sealed part spans (None = to the end).
    """

    def __init__(self, crc_field: c.Construct, crc_func, subcon: c.Construct):
        super().__init__()
        self.crc_field = crc_field
        self.crc_func = crc_func
        self.subcon = subcon

    def _parse(self, stream, context, path):
        stored = self.crc_field._parsereport(stream, context, path)
        data = c.stream_read_entire(stream, path)
        value = self.subcon._parsereport(io.BytesIO(data), context, path)
        return c.Container(crc=stored, crcValid=(self.crc_func(data) == stored), value=value)

    def _build(self, obj, stream, context, path):
        value = obj["value"] if isinstance(obj, dict) and "value" in obj else obj
        buf = io.BytesIO()
        self.subcon._build(value, buf, context, path)
        data = buf.getvalue()
        self.crc_field._build(self.crc_func(data), stream, context, path)
        c.stream_write(stream, data, len(data), path)
        return obj


class KafkaCompressed(c.Construct):
    """The rest of the stream, compressed as one block with the codec given by ``codec(ctx)``.

    The codec is the 3-bit compression type of the enclosing batch (0 none, 1 gzip, 2 snappy,
    3 lz4, 4 zstd); ``magic(ctx)`` selects the legacy LZ4 header quirk.  Decompression is bounded.
    """

    def __init__(self, subcon: c.Construct, codec, magic):
        super().__init__()
        self.subcon = subcon
        self.codec = codec
        self.magic = magic

    def _parse(self, stream, context, path):
        data = c.stream_read_entire(stream, path)
        codec = c.evaluate(self.codec, context)
        if codec:
            data = codecs.decompress(codec, data, magic=c.evaluate(self.magic, context))
        return self.subcon._parsereport(io.BytesIO(data), context, path)

    def _build(self, obj, stream, context, path):
        buf = io.BytesIO()
        self.subcon._build(obj, buf, context, path)
        data = buf.getvalue()
        codec = c.evaluate(self.codec, context)
        if codec:
            data = codecs.compress(codec, data, magic=c.evaluate(self.magic, context))
        c.stream_write(stream, data, len(data), path)
        return obj


#: the construct field of each struct code of a layout
_FIELDS = {"q": c.Int64sb, "Q": c.Int64ub, "l": c.Int32sb, "L": c.Int32ub, "h": c.Int16sb, "H": c.Int16ub,
           "b": c.Int8sb, "B": c.Int8ub}


def fixed(layout: Layout) -> c.Struct:
    """The construct Struct of a layout's fixed-width fields (the fast paths read the same table)."""
    return c.Struct(*(name / _FIELDS[code] for name, code in layout.fields))


def bit_fields(bits: Bits) -> c.Construct:
    """The construct BitStruct of an attributes integer's bit fields (most significant bit first,
    unused high bits first)."""
    used = sum(w for _, w, _ in bits.fields)
    subcons = ["unused" / c.BitsInteger(bits.width - used)] if used < bits.width else []
    for name, w, names in reversed(bits.fields):
        raw = c.Bit if w == 1 else c.BitsInteger(w)
        if names:
            subcons.append(name / c.Enum(raw, **{n: i for i, n in enumerate(names)}))
        else:
            subcons.append(name / (c.Flag if w == 1 else raw))
    return c.BitStruct(*subcons)


def field_offset(spec: c.Struct, name: str) -> int:
    """Byte offset of field ``name`` in a spec of fixed-width fields."""
    size = 0
    for sc in spec.subcons:
        if sc.name == name:
            return size
        size += sc.sizeof()
    raise KeyError(name)


def _bit_fields(bits: c.Construct) -> list:
    inner = bits
    while not isinstance(inner, c.Struct):  # BitStruct is a Struct inside a bytes/bits transform
        inner = inner.subcon
    return inner.subcons


def bit_mask(bits: c.Construct, name: str) -> int:
    """The mask of field ``name`` in a ``BitStruct`` (fields listed most significant first)."""
    fields = _bit_fields(bits)
    shift = sum(sc.sizeof() for sc in fields)
    for sc in fields:
        shift -= sc.sizeof()
        if sc.name == name:
            return ((1 << sc.sizeof()) - 1) << shift
    raise KeyError(name)


def enum_names(bits: c.Construct, name: str) -> tuple[str, ...]:
    """The names of the ``Enum`` field ``name`` of a ``BitStruct``, indexed by value (values 0..n-1)."""
    (sc,) = [sc for sc in _bit_fields(bits) if sc.name == name]
    mapping = sc.subcon.encmapping
    names = tuple(str(n) for n in sorted(mapping, key=mapping.get))
    if [mapping[n] for n in names] != list(range(len(names))):
        raise ValueError(f"{name}: enum values are not 0..{len(names) - 1}")
    return names


def struct_of(spec: c.Struct) -> tuple[struct.Struct, tuple[str, ...]]:
    """Derive a :class:`struct.Struct` and its field names from a spec of fixed-width fields.

    This is how the fast paths stay one with the specs: they never restate a layout.
    """
    fmt, names = ">", []
    for sc in spec.subcons:
        inner = sc.subcon if isinstance(sc, c.Renamed) else sc
        if not isinstance(inner, c.FormatField):
            raise TypeError(f"{sc.name}: not a fixed-width field")
        fmt += inner.fmtstr[1:]
        names.append(sc.name)
    return struct.Struct(fmt), tuple(names)


def parse(spec: c.Construct, data: bytes, *, file: str | None = None):
    """Parse ``data`` with ``spec``; any failure becomes the project's error, located by byte."""
    stream = io.BytesIO(bytes(data))
    try:
        return spec.parse_stream(stream)
    except KafkaFormatError as e:
        raise e.located(file=file, position=stream.tell())
    except (c.ConstructError, ValueError, OverflowError, UnicodeDecodeError, MemoryError) as e:
        raise KafkaFormatError("spec", f"{type(e).__name__}: {e}".strip(), file=file,
                               position=stream.tell()) from None
