"""Finding the valid batches of damaged bytes: walking sound bytes batch by batch and, past damage,
searching for the next place a batch header is plausible (``kfx salvage``'s search, which
``kfx recover`` uses to count what a truncation drops and ``kfx analyze`` to report the valid
batches after damage).

A regular expression finds candidate headers (so zeroed or garbage regions are crossed at C speed,
never byte by byte in Python); a candidate counts only if its framing, its CRC and every record in
it (decompressed if need be) are valid.
"""
from __future__ import annotations

import re

from specs import legacy as L
from specs import record_batch as R
from specs.layout import INT32_MAX

from kafkaforensics.errors import KafkaFormatError
from kafkaforensics.log.segment import LOG_PREFIX, RESIDENT_WINDOW, release_pages
from kafkaforensics.records import int64
from kafkaforensics.records.batch import parse_legacy_header, parse_v2_header, resolve_legacy_wrapper

# A plausible header at the match position: a positive size of at least 14 bytes, then either
# magic 2 with an attributes word below 0x80, or magic 0/1 with attributes below 0x10.
_CANDIDATE = re.compile(
    rb"(?=[\x00-\xff]{8}"
    rb"(?:[\x01-\x7f][\x00-\xff]{3}|\x00[\x01-\xff][\x00-\xff]{2}|\x00\x00[\x01-\xff][\x00-\xff]|\x00\x00\x00[\x0e-\xff])"
    rb"[\x00-\xff]{4}"
    rb"(?:\x02[\x00-\xff]{4}\x00[\x00-\x7f]|[\x00\x01][\x00-\x0f]))")


#: Largest batch a search candidate may claim to be (a false candidate could otherwise make the
#: CRC check read far ahead). Walking sound bytes from a valid batch has no such limit.
MAX_CANDIDATE_BYTES = 64 << 20


def _plausible_v2(b) -> bool:
    """Header checks a real v2 batch always passes; random bytes almost never do."""
    return (0 <= b.count <= b.last_offset - b.base_offset + 1 and b.compression <= 4
            and b.producer_id >= -1 and b.producer_epoch >= -1 and b.base_sequence >= -1
            and b.size <= MAX_CANDIDATE_BYTES)


def _legacy_lengths_fit(buf, pos: int, size: int, magic: int) -> bool:
    """A legacy message's key and value lengths must account for its size exactly."""
    p = pos + L.KEY_LENGTH_OFFSET[magic]
    n, end = L.LENGTH.struct.size, pos + L.LOG_OVERHEAD + size
    klen = int.from_bytes(buf[p:p + n], "big", signed=True)
    if klen < -1 or p + n + max(klen, 0) + n > end:
        return False
    q = p + n + max(klen, 0)
    vlen = int.from_bytes(buf[q:q + n], "big", signed=True)
    return q + n + max(vlen, 0) == end and vlen >= -1


def valid_batch_at(buf, pos: int, file: str | None = None, *, deep: bool = True):
    """The batch starting at ``pos`` if its framing, CRC and (``deep``) records are valid, else None.

    Batches met while walking sound bytes are taken on their CRC, as Kafka takes them; a candidate
    found by searching damaged bytes must also decode record by record."""
    n = len(buf)
    if pos + R.HEADER_SIZE_UP_TO_MAGIC > n:
        return None
    _offset, size = LOG_PREFIX.unpack_from(buf, pos)
    magic = buf[pos + R.MAGIC_OFFSET]
    if size < L.RECORD_OVERHEAD_V0 or pos + L.LOG_OVERHEAD + size > n:
        return None
    try:
        if magic == 2:
            if size + R.LOG_OVERHEAD < R.HEADER_SIZE:
                return None
            b = parse_v2_header(buf, pos, file)
            if b.last_offset < b.base_offset or int64.offset_problem(b.base_offset, b.last_offset) or (
                    deep and not _plausible_v2(b)):
                return None
            if not b.crc_valid():
                return None
            if deep:
                recs = b.records()
                if recs and (recs[0].offset < b.base_offset or recs[-1].offset > b.last_offset):
                    return None
            return b
        if magic in (0, 1):
            if size < (L.RECORD_OVERHEAD_V0 if magic == 0 else L.RECORD_OVERHEAD_V1):
                return None
            b = parse_legacy_header(buf, pos, file)
            if deep and (b.compression > 3 or b.size > MAX_CANDIDATE_BYTES or not _legacy_lengths_fit(buf, pos, size, magic)):
                return None
            if not b.crc_valid():
                return None
            resolve_legacy_wrapper(b)
            if int64.offset_problem(b.base_offset, b.last_offset) or not (
                    0 <= b.last_offset - b.base_offset <= INT32_MAX):
                return None  # no segment holds a wrapper whose inner offsets are out of order or span past an int32
            return b
    except (KafkaFormatError, ValueError, IndexError):
        return None
    return None


def offset_damage_at(buf, pos: int) -> str | None:
    """Why the framed, CRC-valid v2 batch at ``pos`` is damage all the same -- its offsets are
    negative or leave int64 (the CRC does not cover the base offset) -- or None."""
    if pos + R.HEADER_SIZE > len(buf) or buf[pos + R.MAGIC_OFFSET] != 2:
        return None
    _offset, size = LOG_PREFIX.unpack_from(buf, pos)
    if size + R.LOG_OVERHEAD < R.HEADER_SIZE or pos + R.LOG_OVERHEAD + size > len(buf):
        return None
    b = parse_v2_header(buf, pos)
    why = int64.offset_problem(b.base_offset, b.last_offset)
    return why if why and b.crc_valid() else None


def scan_file(buf, file: str, *, progress=None):
    """Yield (batch, skipped_range_or_None) for every valid batch of ``buf``; the final item may
    be (None, tail_range) for a damaged tail."""
    n = len(buf)
    pos = 0
    gap = None
    reported = 0
    released = 0
    while pos + R.HEADER_SIZE_UP_TO_MAGIC <= n:
        b = valid_batch_at(buf, pos, file, deep=gap is not None or pos == 0)
        if b is not None:
            yield b, ((gap, pos) if gap is not None else None)
            gap = None
            pos += b.size
            if pos - released > RESIDENT_WINDOW:
                release_pages(buf, released, pos - (1 << 20))
                released = pos - (1 << 20)
        else:
            if gap is None:
                gap = pos
            m = _CANDIDATE.search(buf, pos + 1)
            if m is None:
                pos = n
                break
            pos = m.start()
        if progress is not None and pos - reported >= 1 << 22:
            progress(pos - reported)
            reported = pos
    if progress is not None:
        progress(n - reported)
    if gap is not None or pos < n:
        yield None, (gap if gap is not None else pos, n)
