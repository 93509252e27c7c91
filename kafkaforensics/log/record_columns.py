"""Records of many batches decoded at once into columns (numpy): for scans, exports and Spark.

``batch.decode_records`` walks a batch record by record in Python.  Here every field of every
record of a run of batches is decoded together with vectorised numpy gathers.  Only finding where
each record starts is sequential (each length says where the next record is): with many batches
in a run it is done in lockstep -- step k reads the k-th record length of every batch at once --
and with few, by a Python walk over the record-length varints.  Keys and values stay
``(start, length)`` pairs into one buffer, so a consumer that wants Arrow columns never makes a
Python object per record; :meth:`RecordColumns.keys`, :meth:`~RecordColumns.values` and
:meth:`~RecordColumns.records` make them when asked.

Anything the vectorised checks do not accept -- a malformed record, a varint over nine bytes,
offsets or timestamps near the int64 limits (``records.int64``), a legacy entry -- is decoded by ``Batch.records()`` instead, which
also raises the same located error.  ``tests/test_record_columns.py`` proves the two paths equal.
"""
from __future__ import annotations

from itertools import chain
from typing import TYPE_CHECKING

from specs import record_batch as R
from specs.layout import INT32_MAX, INT32_MIN
from specs.lazy import lazy

from kafkaforensics.records.batch import Batch, Record, read_varint, v2_record_bytes
from kafkaforensics.errors import KafkaFormatError
from kafkaforensics.log.segment import BatchScanner, offset_from_name, open_buffer
from kafkaforensics.records import int64, walks

#: numpy, loaded by the first decode (``kfx dump`` imports this module plainly and a dump that
#: prints no records never loads numpy)
if TYPE_CHECKING:  # the annotations'
    import numpy as np
else:
    np = lazy("numpy", globals())

#: batches' bytes gathered into one decode by :func:`iter_record_columns`
CHUNK_BYTES = 4 << 20
#: how many records :meth:`RecordColumns.iter_records` makes its per-record lists for at a time
RECORD_SLICE = 4096
#: records are walked in lockstep when each step advances at least this many batches on average
#: (a step is a dozen numpy calls on small arrays; below this many batches the Python walk is faster)
LOCKSTEP_MIN_BATCHES = 128


class _Fallback(Exception):
    """The vectorised path declines these batches: decode them one by one."""


class RecordColumns:
    """The records of ``batches``, column by column (all arrays of one length, in log order).

    ``buf`` holds the batches' record bytes (decompressed); ``key_start``/``key_length`` and
    ``value_start``/``value_length`` index into it, a length of -1 meaning null.  ``batch`` is the
    index into ``batches`` of each record's batch.  Headers are spans too, one row per header in
    log order: ``header_record`` (the record's index), ``header_key_start``/``header_key_length``
    and ``header_value_start``/``header_value_length``; :attr:`headers` makes them Python objects.
    """

    __slots__ = ("batches", "buf", "batch", "offset", "timestamp", "create_time", "attributes",
                 "key_start", "key_length", "value_start", "value_length",
                 "header_record", "header_key_start", "header_key_length",
                 "header_value_start", "header_value_length", "_header_map")
    batches: list[Batch] | None  # None where the decoder was given no Batch objects (decode_sections)
    buf: bytes
    batch: np.ndarray
    offset: np.ndarray
    timestamp: np.ndarray
    create_time: np.ndarray
    attributes: np.ndarray
    key_start: np.ndarray
    key_length: np.ndarray
    value_start: np.ndarray
    value_length: np.ndarray
    header_record: np.ndarray
    header_key_start: np.ndarray
    header_key_length: np.ndarray
    header_value_start: np.ndarray
    header_value_length: np.ndarray
    _header_map: dict | None

    def __len__(self) -> int:
        return len(self.offset)

    def _slices(self, start, length) -> list:
        buf = self.buf
        s = start.tolist()
        e = (start + np.maximum(length, 0)).tolist()
        out: list[bytes | None] = list(map(buf.__getitem__, map(slice, s, e)))
        for i in np.flatnonzero(length < 0).tolist():
            out[i] = None
        return out

    def keys(self) -> list:
        """Each record's key as bytes (None for a null key)."""
        return self._slices(self.key_start, self.key_length)

    def values(self) -> list:
        """Each record's value as bytes (None for a null value)."""
        return self._slices(self.value_start, self.value_length)

    @property
    def headers(self) -> dict:
        """Record index -> its list of (key, value) headers, for the records that have headers
        (keys decoded as UTF-8, as ``Batch.records()`` does; made once, when first asked)."""
        if self._header_map is None:
            keys = [k.decode("utf-8", "replace") for k in self._slices(self.header_key_start, self.header_key_length)]
            pairs = list(zip(keys, self._slices(self.header_value_start, self.header_value_length)))
            out: dict = {}
            for i, pair in zip(self.header_record.tolist(), pairs):
                out.setdefault(i, []).append(pair)
            self._header_map = out
        return self._header_map

    def header_lists(self) -> list:
        """Each record's headers as a list of (key, value) pairs."""
        out: list[list] = [[] for _ in range(len(self))]
        for i, h in self.headers.items():
            out[i] = h
        return out

    def _decoded_batches(self) -> list[Batch]:
        """The batches the records came from (what their producer fields and timestamp types are read
        from); a ValueError for columns :func:`decode_sections` made, which have none."""
        if self.batches is None:
            raise ValueError("columns decoded from records sections (decode_sections) carry no batches")
        return self.batches

    def sequences(self) -> np.ndarray:
        """Each record's producer sequence (-1 without one); sequences wrap at Integer.MAX_VALUE."""
        batches = self._decoded_batches()
        base = np.array([b.base_sequence for b in batches], np.int64)[self.batch]
        if not (base >= 0).any():
            return np.full(len(self), -1, np.int64)
        first = np.array([b.base_offset for b in batches], np.int64)[self.batch]
        # offset - first is the record's offsetDelta (modulo 2^64, all Java's int reads of it)
        return np.where(base >= 0, int64.increment_sequence(base, self.offset - first), -1)

    def records(self) -> list[Record]:
        """The records as :class:`Record` objects, equal to the batches' ``records()`` joined."""
        return list(self.iter_records())

    def iter_records(self):
        """The records as :class:`Record` objects, made as the iterator is advanced: each is
        garbage before many more are made when the consumer drops it, and the per-record lists
        behind them are made :data:`RECORD_SLICE` records at a time, so that they stay in the CPU
        cache (measured: 15-20 % faster over zstd runs than lists of a whole run)."""
        # only a v2 LogAppendTime batch still stores the producer's timestamps (its deltas); a legacy
        # message's one timestamp is the log append time (found by the decoders' differential target)
        n = len(self)
        batch_lat = [b.magic >= 2 and bool(b.attributes & R.TIMESTAMP_TYPE_MASK) for b in self._decoded_batches()]
        lat = np.array(batch_lat, bool)[self.batch] if any(batch_lat) else None
        with_headers = [()] * n
        for i, h in self.headers.items():
            with_headers[i] = h
        sequence = self.sequences()

        def records(a: int):
            b = a + RECORD_SLICE
            columns = [self.offset[a:b].tolist(), self.timestamp[a:b].tolist(),
                       self._slices(self.key_start[a:b], self.key_length[a:b]),
                       self._slices(self.value_start[a:b], self.value_length[a:b]),
                       map(list, with_headers[a:b]), self.attributes[a:b].tolist(), sequence[a:b].tolist()]
            if lat is not None:  # LogAppendTime batches keep the producer's timestamp as create_time
                columns.append([c if f else None for c, f in zip(self.create_time[a:b].tolist(), lat[a:b].tolist())])
            return map(Record, *columns)

        return chain.from_iterable(map(records, range(0, n, RECORD_SLICE)))


def _decode_columns_fast(batches: list[Batch]) -> RecordColumns:
    """Decode every record of ``batches`` (any magic; v2 batches take the vectorised path, what it
    declines :func:`_from_records`).  ``decode_columns`` with ``records.walks.SPEEDUPS`` on."""
    try:
        if any(b.magic < 2 for b in batches):
            raise _Fallback
        return _vectorised(batches)
    except _Fallback:
        return _from_records(batches)


def runs(batches, chunk_bytes: int | None = None):
    """``batches`` in consecutive lists of about ``chunk_bytes`` (default :data:`CHUNK_BYTES`): the
    runs the columnar decoder takes at once."""
    chunk_bytes = chunk_bytes or CHUNK_BYTES
    run, size = [], 0
    for b in batches:
        run.append(b)
        size += b.size
        if size >= chunk_bytes:
            yield run
            run, size = [], 0
    if run:
        yield run


def iter_record_columns(path: str, *, chunk_bytes: int | None = None):
    """Yield :class:`RecordColumns` for runs of about ``chunk_bytes`` of a ``.log`` file's batches.

    The walk is :class:`~kafkaforensics.log.segment.BatchScanner`'s (it ends where framing breaks);
    a batch whose records cannot be decoded raises its located :class:`KafkaFormatError`.
    """
    with open_buffer(path) as buf:
        for run in runs(BatchScanner(buf, file=path, base_offset=offset_from_name(path)), chunk_bytes):
            yield decode_columns(run)


def iter_records(path: str):
    """Every record of a ``.log`` file as a :class:`Record` (deep iteration), decoded a run of
    batches at a time by the columnar decoder; equal to each batch's ``records()`` in turn.
    (Chained in C: a Python generator here would cost a frame switch per record.)"""
    return chain.from_iterable(map(RecordColumns.iter_records, iter_record_columns(path)))


# --------------------------------------------------------------------------------------------
def _from_records(batches) -> RecordColumns:
    """The exact path: each batch's ``records()`` (raises its error), then laid out as columns."""
    parts: list[bytes] = []
    key_start: list[int] = []
    key_length: list[int] = []
    value_start: list[int] = []
    value_length: list[int] = []
    h_record: list[int] = []
    h_key_start: list[int] = []
    h_key_length: list[int] = []
    h_value_start: list[int] = []
    h_value_length: list[int] = []
    offs: list[int] = []
    tss: list[int] = []
    creates: list[int | None] = []
    attrs: list[int] = []
    which: list[int] = []
    at = 0

    def span(v, starts, lengths):
        nonlocal at
        if v is None:
            starts.append(at)
            lengths.append(-1)
        else:
            v = bytes(v)
            parts.append(v)
            starts.append(at)
            lengths.append(len(v))
            at += len(v)

    for i, b in enumerate(batches):
        for r in b.records():
            span(r.key, key_start, key_length)
            span(r.value, value_start, value_length)
            for hk, hv in r.headers:
                h_record.append(len(offs))
                span(hk.encode("utf-8"), h_key_start, h_key_length)  # decoded with "replace": stable
                span(hv, h_value_start, h_value_length)
            offs.append(r.offset)
            tss.append(r.timestamp)
            creates.append(r.timestamp if r.create_time is None else r.create_time)
            attrs.append(r.attributes)
            which.append(i)
    c = RecordColumns()
    c.batches = batches
    c.buf = b"".join(parts)
    c.batch = np.array(which, np.int64)
    c.offset, c.timestamp, c.create_time = _int64(offs), _int64(tss), _int64(creates)
    c.attributes = np.array(attrs, np.int64)
    c.key_start, c.key_length = np.array(key_start, np.int64), np.array(key_length, np.int64)
    c.value_start, c.value_length = np.array(value_start, np.int64), np.array(value_length, np.int64)
    c.header_record = np.array(h_record, np.int64)
    c.header_key_start, c.header_key_length = np.array(h_key_start, np.int64), np.array(h_key_length, np.int64)
    c.header_value_start = np.array(h_value_start, np.int64)
    c.header_value_length = np.array(h_value_length, np.int64)
    c._header_map = None
    return c


#: every record of a run of batches as columns (a :class:`~.walks.RecordDecoder`): the vectorised
#: decoder, or with ``records.walks.SPEEDUPS`` off each batch's ``records()`` (bound once, here)
decode_columns = walks.bind("decode_columns", _decode_columns_fast, _from_records)


def _int64(values: list) -> np.ndarray:
    """``values`` as int64: ``Batch.records()`` gives only offsets and timestamps within int64
    (the :mod:`~kafkaforensics.records.int64` rule)."""
    return np.array(values, np.int64)


def _within_safe(a: np.ndarray) -> bool:
    """Whether every value of ``a`` is strictly within +-``int64.SAFE`` (compared as signed values:
    ``np.abs`` of -2^63 is -2^63)."""
    return not len(a) or (int(a.min()) > -int64.SAFE and int(a.max()) < int64.SAFE)


def _record_starts(data: bytes, pos: int, end: int, count: int, starts: list) -> None:
    """Append the position of each of ``count`` records from ``pos``; they must fill [pos, end)
    exactly (checked once at the end: a bad length only sends the walk astray until then)."""
    append = starts.append
    for _ in range(count):
        append(pos)
        b = data[pos]
        if b < 0x80:
            if b & 1:
                raise _Fallback  # a negative length: the exact path reports it
            pos += 1 + (b >> 1)
        else:
            c = data[pos + 1]
            if c < 0x80:
                v = (b & 0x7F) | (c << 7)
                if v & 1:
                    raise _Fallback
                pos += 2 + (v >> 1)
            else:
                v, pos = read_varint(data, pos)
                if v < 0:
                    raise _Fallback
                pos += v
    if pos != end:
        raise _Fallback


def _walk_lockstep(arr: np.ndarray, first: np.ndarray, size: np.ndarray, count: np.ndarray) -> np.ndarray:
    """What :func:`_record_starts` finds, for all batches at once: step k reads the k-th record length of
    every batch that has a k-th record (one numpy pass per step instead of one Python step per
    record).  Record positions come out in log order."""
    out = np.empty(int(count.sum()), np.int64)
    slot = np.cumsum(count) - count  # where each batch's first record goes in ``out``
    pos = first.copy()
    active = np.flatnonzero(count > 0)
    k = 0
    limit = len(arr)
    while len(active):
        p = pos[active]
        out[slot[active] + k] = p
        length, after = _varints(arr, p)
        if (length < 0).any() or (length > limit).any():
            raise _Fallback  # a negative length (the exact path reports it), or one no buffer holds
        pos[active] = after + length
        k += 1
        active = active[count[active] > k]
    if (pos != first + size).any():
        raise _Fallback
    return out


def _varints(arr: np.ndarray, p: np.ndarray):
    """Zigzag varints at positions ``p`` (at most nine bytes each): (values, positions after)."""
    last = len(arr) - 1
    b = arr[np.minimum(p, last)].astype(np.int64)
    v = b & 0x7F
    cont = np.flatnonzero(b & 0x80)
    q = p + 1
    shift = 7
    while len(cont):
        if shift > 56:
            raise _Fallback
        qi = q[cont]
        bb = arr[np.minimum(qi, last)].astype(np.int64)
        v[cont] |= (bb & 0x7F) << shift
        q[cont] = qi + 1
        cont = cont[(bb & 0x80) != 0]
        shift += 7
    return (v >> 1) ^ -(v & 1), q


def _vectorised(batches) -> RecordColumns:
    bodies = []
    for b in batches:
        try:
            bodies.append(v2_record_bytes(b))
        except KafkaFormatError:
            raise _Fallback from None
    buf = bodies[0] if len(bodies) == 1 else b"".join(bodies)
    size = np.array([len(body) for body in bodies], np.int64)
    attrs = np.array([b.attributes for b in batches], np.int64)
    lat = (attrs & R.TIMESTAMP_TYPE_MASK) != 0
    c = decode_sections(buf, np.cumsum(size) - size, size, np.array([b.count for b in batches], np.int64),
                        np.array([b.base_offset for b in batches], np.int64),
                        np.array([b.first_timestamp for b in batches], np.int64), lat,
                        np.array([b.max_timestamp for b in batches], np.int64) if lat.any() else None)
    c.batches = batches
    return c


def decode_sections(buf, first: np.ndarray, size: np.ndarray, count: np.ndarray, base_offset: np.ndarray,
                    base_ts: np.ndarray, lat: np.ndarray, max_ts: np.ndarray | None) -> RecordColumns:
    """The records of v2 batches whose (decompressed) records sections lie at ``buf[first:first +
    size]``, each with its header's ``recordCount``, ``baseOffset``, ``baseTimestamp``, whether its
    timestamps are LogAppendTime (``lat``) and ``maxTimestamp`` (needed only where ``lat``), all
    per-batch int64 arrays.  Raises ``_Fallback`` for anything the exact path must decode (the
    caller then decodes those batches with :func:`decode_columns`).  ``batches`` of the result is
    None."""
    if ((count < 0) | (count > size // 7 + 1)).any():
        raise _Fallback
    if not (_within_safe(base_offset) and _within_safe(base_ts)):
        raise _Fallback  # int64 sums could overflow where Python's ints do not
    arr = np.frombuffer(buf, np.uint8) if len(buf) else np.zeros(1, np.uint8)
    if int(count.max(initial=0)) * LOCKSTEP_MIN_BATCHES <= int(count.sum()):  # each step advances many batches
        p = _walk_lockstep(arr, first, size, count)
    else:
        starts: list = []
        try:
            for at, n, k in zip(first.tolist(), size.tolist(), count.tolist()):
                _record_starts(buf, at, at + n, k, starts)
        except (IndexError, KafkaFormatError):
            raise _Fallback from None
        p = np.array(starts, np.int64)
    which = np.repeat(np.arange(len(count), dtype=np.int64), count)
    length, body = _varints(arr, p)
    end = body + length
    attrs = arr[np.minimum(body, len(arr) - 1)].astype(np.int64)
    ts_delta, q = _varints(arr, body + 1)
    off_delta, after = _varints(arr, q)
    if ((after - q > 5) | (off_delta < INT32_MIN) | (off_delta > INT32_MAX)).any():
        raise _Fallback  # Java's offsetDelta is an int (5 bytes, 32 bits): the exact path reads it so
    q = after
    key_length, q = _varints(arr, q)
    key_start = q
    q = q + np.maximum(key_length, 0)
    value_length, q = _varints(arr, q)
    value_start = q
    q = q + np.maximum(value_length, 0)
    header_count = arr[np.minimum(q, len(arr) - 1)]
    if ((length < 6) | (key_length < -1) | (value_length < -1)).any():
        raise _Fallback
    plain = header_count == 0
    if (q[plain] + 1 != end[plain]).any():
        raise _Fallback
    with_headers = np.flatnonzero(~plain)
    spans = _header_spans(arr, with_headers, q[with_headers], end[with_headers])
    if not (_within_safe(off_delta) and _within_safe(ts_delta)):
        raise _Fallback
    c = RecordColumns()
    c.batches = None
    c.buf = buf
    c.batch = which
    c.offset = base_offset[which] + off_delta
    c.create_time = base_ts[which] + ts_delta
    if lat.any():
        if max_ts is None:
            raise ValueError("LogAppendTime batches need their maxTimestamp (max_ts)")
        c.timestamp = np.where(lat[which], max_ts[which], c.create_time)
    else:
        c.timestamp = c.create_time
    c.attributes = attrs
    c.key_start, c.key_length = key_start, key_length
    c.value_start, c.value_length = value_start, value_length
    (c.header_record, c.header_key_start, c.header_key_length,
     c.header_value_start, c.header_value_length) = spans
    c._header_map = None
    return c


#: records with more headers than this take the exact path (the vectorised decoder makes one
#: round of numpy gathers per header slot)
MAX_HEADER_ROUNDS = 64


def _header_spans(arr: np.ndarray, record: np.ndarray, at: np.ndarray, end: np.ndarray) -> tuple:
    """Decode the headers of the records ``record`` whose header-count varint is at ``at`` and
    whose bodies end at ``end``: (record index, key start, key length, value start, value length)
    per header, record by record.  Every length is bounded by what is left of its record, and the
    headers must end exactly where the record does; anything else goes to the exact path."""
    if (at >= end).any():
        raise _Fallback
    count, p = _varints(arr, at)
    if ((count < 0) | (count > end - p)).any():
        raise _Fallback
    rounds = int(count.max()) if len(count) else 0
    if rounds > MAX_HEADER_ROUNDS:
        raise _Fallback
    first = np.cumsum(count) - count  # where each record's headers start among all headers
    total = int(count.sum())
    key_start, key_length, value_start, value_length = (np.empty(total, np.int64) for _ in range(4))
    live = np.arange(len(count))
    for k in range(rounds):  # the k-th header of every record that has more than k
        live = live[count[live] > k]
        slot, stop = first[live] + k, end[live]
        klen, pk = _varints(arr, p[live])
        if ((klen < 0) | (klen > stop - pk)).any():
            raise _Fallback
        key_start[slot], key_length[slot] = pk, klen
        vlen, pv = _varints(arr, pk + klen)
        vlen = np.maximum(vlen, -1)  # any negative value length is a null value
        if (vlen > stop - pv).any():
            raise _Fallback
        value_start[slot], value_length[slot] = pv, vlen
        p[live] = pv + np.maximum(vlen, 0)
    if (p != end).any():
        raise _Fallback
    return np.repeat(record, count), key_start, key_length, value_start, value_length
