"""Batches and records as the library hands them out, decoded on the fast path.

The fast path reads headers with a :class:`struct.Struct` derived from ``specs.record_batch`` /
``specs.legacy`` and decodes records with inlined varint arithmetic; ``tests/test_specs.py``
proves it equal to the construct specs.  A :class:`Batch` is one v2 record batch or one legacy
log entry (possibly a compressed wrapper) at a byte position of a file.
"""
from __future__ import annotations

import zlib
from typing import Any, cast

from kafkaforensics.records.checksums import crc32c

from specs import legacy as L
from specs import record_batch as R

from kafkaforensics.records import compression
from kafkaforensics.records import int64, schema
from kafkaforensics.errors import KafkaFormatError


_HDR = R.HEADER_STRUCT
_LEG = L.PREFIX_STRUCT
_I32 = L.LENGTH.struct      # a legacy message's key and value length
_I64 = L.TIMESTAMP.struct   # the magic 1 timestamp, and offsets
_CTRL_KEY = R.CONTROL_KEY_STRUCT        # (version, type): tests/test_specs.py proves the order
_END_TXN = R.END_TXN_MARKER_STRUCT      # (version, coordinatorEpoch)


class Record:
    """One record (v2) or one inner message (legacy)."""

    __slots__ = ("offset", "timestamp", "key", "value", "headers", "attributes", "sequence", "create_time")

    def __init__(self, offset, timestamp, key, value, headers=(), attributes=0, sequence=-1, create_time=None):
        self.offset = offset
        self.timestamp = timestamp
        self.key = key
        self.value = value
        self.headers = headers
        self.attributes = attributes
        self.sequence = sequence
        self.create_time = create_time  # LogAppendTime batches: the producer's timestamp still stored

    def __repr__(self):
        return (f"Record(offset={self.offset}, timestamp={self.timestamp}, key={self.key!r}, "
                f"value={self.value!r}, headers={self.headers!r})")

    def __eq__(self, other):
        return isinstance(other, Record) and all(getattr(self, s) == getattr(other, s) for s in self.__slots__)

    @property
    def control_type(self) -> int:
        """The type of this record's control key (``specs.schemas.record_batch.ControlRecordKey``); -1
        when the key is too short to hold one."""
        if self.key is None or len(self.key) < _CTRL_KEY.size:
            return -1
        return _CTRL_KEY.unpack_from(self.key, 0)[1]

    def control(self) -> dict | None:
        """Decode this record as a control record (key: version, type; value: end-txn marker)."""
        if self.key is None or len(self.key) < _CTRL_KEY.size:
            return None
        version, ctype = _CTRL_KEY.unpack_from(self.key, 0)
        out = {"type": R.CONTROL_TYPES.get(ctype, f"UNKNOWN({ctype})"), "version": version}
        if ctype in (R.ABORT, R.COMMIT):
            if self.value is not None and len(self.value) >= _END_TXN.size:
                out["version"], out["coordinatorEpoch"] = _END_TXN.unpack_from(self.value, 0)
            else:
                out["coordinatorEpoch"] = None
        return out


class Batch:
    """A record batch (magic 2) or a legacy log entry (magic 0/1) at ``position`` in a file.

    ``data`` is the whole batch (header included) as a buffer; nothing is decompressed until
    :meth:`records` is called.
    """

    __slots__ = ("position", "size", "magic", "base_offset", "last_offset", "count",
                 "partition_leader_epoch", "crc", "attributes", "first_timestamp", "max_timestamp",
                 "producer_id", "producer_epoch", "base_sequence", "data", "_records", "file")
    position: int
    size: int
    magic: int
    base_offset: int
    last_offset: int
    count: int | None  # a legacy compressed wrapper's: None until its inner messages are counted
    partition_leader_epoch: int
    crc: int
    attributes: int
    first_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    data: Any  # the batch's bytes: a slice of the file's buffer (bytes, mmap slice or memoryview)
    _records: "list[Record] | None"
    file: str | None

    # -- derived fields --------------------------------------------------------------------
    @property
    def compression(self) -> int:
        return self.attributes & R.COMPRESSION_MASK

    @property
    def compression_name(self) -> str:
        c = self.compression
        return compression.CODEC_NAMES[c] if c < len(compression.CODEC_NAMES) else f"unknown({c})"

    @property
    def timestamp_type(self) -> str:
        if self.magic == 0:
            return "NoTimestampType"
        return "LogAppendTime" if self.attributes & R.TIMESTAMP_TYPE_MASK else "CreateTime"

    @property
    def is_transactional(self) -> bool:
        return self.magic >= 2 and bool(self.attributes & R.TRANSACTIONAL_MASK)

    @property
    def is_control(self) -> bool:
        return self.magic >= 2 and bool(self.attributes & R.CONTROL_MASK)

    @property
    def has_delete_horizon(self) -> bool:
        return self.magic >= 2 and bool(self.attributes & R.DELETE_HORIZON_MASK)

    @property
    def delete_horizon_ms(self) -> int | None:
        return self.first_timestamp if self.has_delete_horizon else None

    @property
    def last_sequence(self) -> int:
        if self.magic < 2 or self.base_sequence == R.NO_SEQUENCE:
            return R.NO_SEQUENCE
        # Kafka's incrementSequence: sequences wrap from Integer.MAX_VALUE to 0
        return int64.increment_sequence(self.base_sequence, self.last_offset - self.base_offset)

    @property
    def next_offset(self) -> int:
        """The offset after this batch's last (a log end offset, a fetch's next position)."""
        return self.last_offset + 1

    def crc_valid(self) -> bool:
        """Check the stored checksum: CRC-32C over attributes..end (v2), CRC32 over magic..end (legacy)."""
        if self.magic >= 2:
            return crc32c(self.data[R.ATTRIBUTES_OFFSET:]) == self.crc
        return (zlib.crc32(self.data[L.MAGIC_OFFSET:]) & 0xFFFFFFFF) == self.crc

    def records(self) -> list[Record]:
        """Every record of the batch (decompressing it if needed), with absolute offsets."""
        if self._records is None:
            try:
                if self.magic >= 2:
                    self._records = _decode_v2_records(self)
                else:
                    self._records = _decode_legacy_records(self)
            except KafkaFormatError as e:
                raise e.located(file=self.file, position=self.position, offset=self.base_offset)
        return self._records

    def to_json(self) -> dict:
        """The batch-level fields of ``kfx dump --format json`` (``schema.BATCH_COLUMNS``, in order)."""
        values = (self.base_offset, self.last_offset, self.count, self.position, self.size, self.magic, self.crc,
                  self.crc_valid(), self.compression_name, self.timestamp_type, self.is_transactional,
                  self.is_control, self.producer_id, self.producer_epoch, self.base_sequence, self.last_sequence,
                  self.partition_leader_epoch, self.first_timestamp, self.max_timestamp,
                  self.delete_horizon_ms if self.magic >= 2 else None)
        return dict(zip(schema.BATCH_KEYS, values))

    def __repr__(self):
        return (f"Batch(magic={self.magic}, offsets={self.base_offset}..{self.last_offset}, "
                f"position={self.position}, size={self.size}, codec={self.compression_name})")


def parse_v2_header(buf, pos: int, file: str | None = None) -> Batch:
    """Read a v2 header at ``pos`` of ``buf`` (which must hold the whole batch)."""
    (base_offset, length, ple, magic, crc, attrs, lod, first_ts, max_ts, pid, epoch, base_seq,
     count) = _HDR.unpack_from(buf, pos)
    b = Batch()
    b.position = pos
    b.size = length + R.LOG_OVERHEAD
    b.magic = magic
    b.base_offset = base_offset
    b.last_offset = base_offset + lod
    b.count = count
    b.partition_leader_epoch = ple
    b.crc = crc
    b.attributes = attrs
    b.first_timestamp = first_ts
    b.max_timestamp = max_ts
    b.producer_id = pid
    b.producer_epoch = epoch
    b.base_sequence = base_seq
    b.data = buf[pos:pos + b.size]
    b._records = None
    b.file = file
    return b


def parse_header(buf, pos: int = 0, file: str | None = None) -> Batch:
    """The header at ``pos`` of either kind, by the magic byte every kind holds at the same place."""
    if buf[pos + R.MAGIC_OFFSET] >= 2:
        return parse_v2_header(buf, pos, file)
    return parse_legacy_header(buf, pos, file)


def parse_legacy_header(buf, pos: int, file: str | None = None) -> Batch:
    """Read a legacy log entry at ``pos``; a compressed wrapper reports its inner offsets lazily."""
    offset, size, crc, magic, attrs = _LEG.unpack_from(buf, pos)
    b = Batch()
    b.position = pos
    b.size = size + L.LOG_OVERHEAD
    b.magic = magic
    b.crc = crc
    b.attributes = attrs
    b.partition_leader_epoch = -1
    b.producer_id = -1
    b.producer_epoch = -1
    b.base_sequence = -1
    b.data = buf[pos:pos + b.size]
    b._records = None
    b.file = file
    ts = _I64.unpack_from(buf, pos + L.TIMESTAMP_OFFSET)[0] if magic == 1 else -1
    b.first_timestamp = ts
    b.max_timestamp = ts
    b.last_offset = offset
    if attrs & L.COMPRESSION_MASK:
        b.base_offset = offset  # corrected below once the inner set is known
        b.count = None
    else:
        b.base_offset = offset
        b.count = 1
    return b


def resolve_legacy_wrapper(b: Batch) -> None:
    """Fill base offset and count of a compressed legacy wrapper (needs decompression)."""
    if b.magic < 2 and b.count is None:
        recs = b.records()
        b.count = len(recs)
        if recs:
            b.base_offset = recs[0].offset


_VARINT_MASK = ((1 << 32) - 1, (1 << 64) - 1)


def read_varint(data, pos: int, limit: int | None = None, max_bytes: int = 10) -> tuple[int, int]:
    """The zigzag varint at ``pos`` and the position after it: at most ``max_bytes`` bytes (Kafka's
    readers: 5 for an int, 10 for a long), all before ``limit`` (default: the end of ``data``); the
    bits past the int's or the long's width are dropped, as Java's shifts drop them.
    The decoders' slow path (their one- and two-byte varints are inline) and the broker's validator."""
    limit = len(data) if limit is None else limit
    value = shift = 0
    for _ in range(max_bytes):
        if pos >= limit:
            raise KafkaFormatError("record", f"a varint runs past the end of its {limit} bytes")
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            value &= _VARINT_MASK[max_bytes > 5]  # Java's int (5 bytes) or long drops the bits past it
            return (value >> 1) ^ -(value & 1), pos
        shift += 7
    raise KafkaFormatError("record", f"varint longer than {max_bytes} bytes")


def decode_headers(data, pos: int, end: int):
    """The headers of one record: the count varint at ``pos``, then key/value pairs; returns
    (list of (str, bytes|None), position after).  May raise IndexError past the data's end.
    (Only the record-by-record decoder calls this, for records that have headers: the columnar
    decoder decodes headers as spans, so the varints here go through the shared reader.)"""
    hcount, pos = read_varint(data, pos)
    if hcount < 0 or hcount > end - pos:
        raise KafkaFormatError("record", f"header count {hcount} out of range")
    headers = []
    for _h in range(hcount):
        hk, pos = read_varint(data, pos)
        if hk < 0:
            raise KafkaFormatError("record", f"negative header key length {hk}")
        hkey = data[pos:pos + hk].decode("utf-8", "replace")
        pos += hk
        hv, pos = read_varint(data, pos)
        if hv < 0:
            hval = None
        else:
            hval = data[pos:pos + hv]
            pos += hv
        headers.append((hkey, hval))
    return headers, pos


def decode_records(data: bytes, count: int, base_offset: int, base_ts: int, base_seq: int,
                   log_append_time: int | None) -> list[Record]:
    """Decode ``count`` v2 records from ``data`` (uncompressed record bytes).

    Varints of one and two bytes (nearly all of them) are decoded inline; longer ones call
    :func:`read_varint`.
    """
    n = len(data)
    if count < 0 or count > n // 7 + 1:
        raise KafkaFormatError("record", f"record count {count} does not fit in {n} bytes")
    out: list[Record] = []
    try:
        pos, wide = _decode_into(out, data, count, base_offset, base_ts, base_seq, log_append_time)
    except IndexError:
        raise KafkaFormatError("record", f"records run past the end of the batch ({n} bytes)") from None
    if pos != n:
        raise KafkaFormatError("record", f"{n - pos} bytes left after the last of {count} records")
    if wide:
        _at_int64_edge(out)
    return out


def _bad_length(what: str, length: int):
    raise KafkaFormatError("record", f"negative {what} length {length}")


def _decode_into(out: list, data: bytes, count: int, base_offset: int, base_ts: int, base_seq: int,
                 log_append_time: int | None) -> tuple[int, bool]:
    """:func:`decode_records`' loop: the records appended to ``out``; (where they end, whether a sum may
    have left int64). An IndexError: the records run past ``data``."""
    append, vs, R, n, pos = out.append, read_varint, Record, len(data), 0
    seq, inc, safe = base_seq >= 0, int64.increment_sequence, int64.within_safe
    wide = not (safe(base_offset) and safe(base_ts))  # sums may leave int64
    for _ in range(count):
        b = data[pos]
        if b < 0x80:
            length = (b >> 1) ^ -(b & 1); pos += 1
        else:
            c = data[pos + 1]
            if c < 0x80:
                b = (b & 0x7F) | (c << 7); length = (b >> 1) ^ -(b & 1); pos += 2
            else:
                length, pos = vs(data, pos)
        end = pos + length
        if length < 6 or end > n:
            raise KafkaFormatError("record", f"record length {length} runs past the batch ({n - pos} bytes left)")
        attrs = data[pos]
        b = data[pos + 1]
        if b < 0x80:
            ts_delta = (b >> 1) ^ -(b & 1); pos += 2
        else:
            c = data[pos + 2]
            if c < 0x80:
                b = (b & 0x7F) | (c << 7); ts_delta = (b >> 1) ^ -(b & 1); pos += 3
            else:
                ts_delta, pos = vs(data, pos + 1)
                wide = wide or not safe(ts_delta)
        b = data[pos]
        if b < 0x80:
            off_delta = (b >> 1) ^ -(b & 1); pos += 1
        else:
            c = data[pos + 1]
            if c < 0x80:
                b = (b & 0x7F) | (c << 7); off_delta = (b >> 1) ^ -(b & 1); pos += 2
            else:  # an int in Java (ByteUtils.readVarint): at most 5 bytes, 32 bits
                off_delta, pos = vs(data, pos, None, 5)
                wide = wide or not safe(off_delta)
        b = data[pos]
        if b < 0x80:
            klen = (b >> 1) ^ -(b & 1); pos += 1
        else:
            c = data[pos + 1]
            if c < 0x80:
                b = (b & 0x7F) | (c << 7); klen = (b >> 1) ^ -(b & 1); pos += 2
            else:
                klen, pos = vs(data, pos)
        if klen < 0:
            key = None if klen == -1 else _bad_length("key", klen)
        else:
            key = data[pos:pos + klen]; pos += klen
        b = data[pos]
        if b < 0x80:
            vlen = (b >> 1) ^ -(b & 1); pos += 1
        else:
            c = data[pos + 1]
            if c < 0x80:
                b = (b & 0x7F) | (c << 7); vlen = (b >> 1) ^ -(b & 1); pos += 2
            else:
                vlen, pos = vs(data, pos)
        if vlen < 0:
            value = None if vlen == -1 else _bad_length("value", vlen)
        else:
            value = data[pos:pos + vlen]; pos += vlen
        if data[pos] == 0:
            pos += 1; headers = []
        else:
            headers, pos = decode_headers(data, pos, end)
        if pos != end:
            raise KafkaFormatError("record", f"record body is {length} bytes but its fields span {length + pos - end}")
        ts = base_ts + ts_delta
        append(R(base_offset + off_delta, ts if log_append_time is None else log_append_time, key, value, headers,
                 attrs, inc(base_seq, off_delta) if seq else -1, None if log_append_time is None else ts))
    return pos, wide


def _at_int64_edge(records: list[Record]) -> None:
    """The int64 rule (:mod:`.int64`) over records whose sums may have left int64: an offset
    outside int64 is damage; timestamps wrap as Java's long addition does."""
    for r in records:
        if not int64.fits(r.offset):
            raise KafkaFormatError("record", f"record offset {r.offset} leaves int64 (base offset + offsetDelta)")
        r.timestamp = int64.java_long(r.timestamp)
        if r.create_time is not None:
            r.create_time = int64.java_long(r.create_time)


def v2_record_bytes(b: Batch) -> bytes:
    """The records section of a v2 batch, decompressed (raises an unlocated KafkaFormatError)."""
    if b.size < R.HEADER_SIZE:
        raise KafkaFormatError("batch", f"batch size {b.size} is below the {R.HEADER_SIZE}-byte header")
    body = bytes(b.data[R.HEADER_SIZE:])
    codec = b.compression
    if codec:
        body = compression.decompress(codec, body, magic=2)
    return body


def _decode_v2_records(b: Batch) -> list[Record]:
    lat = b.max_timestamp if b.attributes & R.TIMESTAMP_TYPE_MASK else None
    # only a legacy compressed wrapper's count is None; a v2 header always carries its own
    count = cast(int, b.count)
    return decode_records(v2_record_bytes(b), count, b.base_offset, b.first_timestamp, b.base_sequence, lat)


def iter_legacy_entries(data: bytes, *, depth: int = 0):
    """Yield (offset, magic, attributes, timestamp, key, value, crc, crc_ok) of a legacy message set."""
    pos, n = 0, len(data)
    while pos + L.LOG_OVERHEAD <= n:
        offset, size = _I64.unpack_from(data, pos)[0], _I32.unpack_from(data, pos + L.SIZE_OFFSET)[0]
        start = pos + L.LOG_OVERHEAD
        end = start + size
        if size < L.RECORD_OVERHEAD_V0 or end > n:
            raise KafkaFormatError("message", f"inner message size {size} out of range")
        crc = int.from_bytes(data[pos + L.CRC_OFFSET:pos + L.MAGIC_OFFSET], "big")
        magic, attrs = data[pos + L.MAGIC_OFFSET], data[pos + L.ATTRIBUTES_OFFSET]
        if magic == 1:
            ts = _I64.unpack_from(data, pos + L.TIMESTAMP_OFFSET)[0]
        elif magic == 0:
            ts = -1
        else:
            raise KafkaFormatError("message", f"inner message magic {magic}")
        p = pos + L.KEY_LENGTH_OFFSET[magic]
        fields = []
        for name in ("key", "value"):  # int32 length (-1: null) and bytes, each within the message
            if p + _I32.size > end:
                raise KafkaFormatError("message", f"inner message {name} length runs past its {size} bytes")
            length = _I32.unpack_from(data, p)[0]
            p += _I32.size
            if length > end - p:
                raise KafkaFormatError("message", f"inner message {name} of {length} bytes runs past its {size} bytes")
            fields.append(None if length < 0 else data[p:p + length])
            p += max(length, 0)
        key, value = fields
        if p != end:
            raise KafkaFormatError("message", f"inner message fields span {p - start} of {size} bytes")
        yield offset, magic, attrs, ts, key, value, crc, (zlib.crc32(data[pos + L.MAGIC_OFFSET:end]) & 0xFFFFFFFF) == crc
        pos = end
    if pos != n:
        raise KafkaFormatError("message", f"{n - pos} stray bytes after the inner message set")


def _decode_legacy_records(b: Batch) -> list[Record]:
    data = bytes(b.data)
    entries = list(iter_legacy_entries(data))
    if len(entries) != 1:
        raise KafkaFormatError("message", "a legacy log entry must hold exactly one message")
    offset, magic, attrs, ts, key, value, crc, ok = entries[0]
    codec = attrs & L.COMPRESSION_MASK
    if not codec:
        return [Record(offset, ts, key, value, [], attrs)]
    if value is None:
        raise KafkaFormatError("message", "compressed wrapper has a null value")
    inner = list(iter_legacy_entries(compression.decompress(codec, value, magic=magic)))
    if not inner:
        return []
    log_append = magic >= 1 and bool(attrs & L.TIMESTAMP_TYPE_MASK)
    if magic >= 1:
        base = offset - inner[-1][0]  # v1: inner offsets are relative, the wrapper holds the last
    else:
        base = 0
    for o in {min(e[0] for e in inner), max(e[0] for e in inner)} if base else ():
        if not int64.fits(base + o):
            raise KafkaFormatError("message", f"inner offset {o} of a wrapper at offset {offset} gives "
                                              f"{base + o}, which leaves int64")
    return [Record(base + o, ts if log_append else its, k, v, [], a)
            for (o, _m, a, its, k, v, _c, _ok) in inner]
