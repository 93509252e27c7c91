"""Kafka's five codecs with their wire quirks, every decompression bounded.

* gzip   -- a plain gzip stream.
* snappy -- snappy-java's framed stream (``\\x82SNAPPY\\x00`` header, int32-prefixed raw blocks),
            which Kafka writes for every magic; raw snappy and Google's framing are also read.
* lz4    -- LZ4 frames; magic 0 wrote the header checksum over the magic bytes too (KafkaLZ4 quirk):
            read both, write the quirk for magic 0.
* zstd   -- streamed frames carry no content size, so decompression always streams with a bound.

Each codec's library is imported on first use (:mod:`specs.lazy`): reading a segment's headers, or
gzip batches alone, never loads the others.
"""
from __future__ import annotations

import gzip
import io
import struct
import threading
import zlib

from .errors import CompressionError
from .lazy import lazy

#: each codec's library, imported when a block of that codec is first met
lz4_frame = lazy("lz4.frame", globals())
snappy = lazy("snappy", globals())
zstandard = lazy("zstandard", globals())

#: Kafka's CompressionType: the id the attributes' compression bits carry, and its name
#: (``schemas.record_batch.BatchAttributes`` and ``schemas.legacy.MessageAttributes`` are built from this table).
CODEC_NAMES = ("none", "gzip", "snappy", "lz4", "zstd")
NONE, GZIP, SNAPPY, LZ4, ZSTD = range(len(CODEC_NAMES))

#: Upper bound on what one compressed block may expand to (a batch is at most message.max.bytes
#: compressed; Kafka itself bounds by the JVM heap). Adjustable for odd archives.
MAX_DECOMPRESSED = 256 * 1024 * 1024

XERIAL_MAGIC = b"\x82SNAPPY\x00"
XERIAL_HEADER = struct.Struct(">8sii")
XERIAL_BLOCK = 32 * 1024
_I32 = struct.Struct(">i")
LZ4_MAGIC = b"\x04\x22\x4d\x18"


def codec_id(name: str) -> int:
    try:
        return CODEC_NAMES.index(name)
    except ValueError:
        raise CompressionError(f"unknown codec {name!r}") from None


def decompress(codec: int, data, *, magic: int = 2, bound: int | None = None) -> bytes:
    bound = MAX_DECOMPRESSED if bound is None else bound
    try:
        if codec == GZIP:
            out = _gunzip(data, bound)
        elif codec == SNAPPY:
            out = _unsnappy(bytes(data), bound)
        elif codec == LZ4:
            out = _unlz4(bytes(data), magic, bound)
        elif codec == ZSTD:
            out = _unzstd(data, bound)
        elif codec == NONE:
            out = bytes(data)
        else:
            raise CompressionError(f"unknown compression codec id {codec}")
    except CompressionError:
        raise
    except Exception as e:  # every library raises its own type; the user gets ours
        raise CompressionError(f"{CODEC_NAMES[codec] if 0 <= codec < len(CODEC_NAMES) else codec}: {e}") from None
    if len(out) > bound:
        raise CompressionError(f"block expands past the {bound}-byte bound")
    return out


def compress(codec: int, data: bytes, *, magic: int = 2) -> bytes:
    if codec == NONE:
        return bytes(data)
    if codec == GZIP:
        return gzip.compress(data, compresslevel=6, mtime=0)
    if codec == SNAPPY:
        return _snappy_xerial(data)
    if codec == LZ4:
        out = lz4_frame.compress(data, block_size=lz4_frame.BLOCKSIZE_MAX64KB, block_linked=False,
                                 content_checksum=False, store_size=False)
        return _lz4_with_broken_hc(out) if magic == 0 else out
    if codec == ZSTD:
        return zstandard.ZstdCompressor(level=3, write_content_size=False).compress(data)
    raise CompressionError(f"unknown compression codec id {codec}")


def _gunzip(data, bound: int) -> bytes:
    d = zlib.decompressobj(16 + zlib.MAX_WBITS)
    out = d.decompress(data, bound + 1)
    # concatenated gzip members are legal in a stream
    while d.eof and d.unused_data and len(out) <= bound:
        rest = d.unused_data
        d = zlib.decompressobj(16 + zlib.MAX_WBITS)
        out += d.decompress(rest, bound + 1 - len(out))
    if not d.eof and len(out) <= bound:
        raise CompressionError("gzip stream is truncated")
    return out


def _unsnappy(data: bytes, bound: int) -> bytes:
    if data.startswith(XERIAL_MAGIC):
        if len(data) < XERIAL_HEADER.size:
            raise CompressionError("snappy-java header is truncated")
        pos, out_buf, total = XERIAL_HEADER.size, io.BytesIO(), 0
        while pos < len(data):
            if pos + 4 > len(data):
                raise CompressionError("snappy-java block length is truncated")
            (n,) = _I32.unpack_from(data, pos)
            pos += 4
            if n < 0 or pos + n > len(data):
                raise CompressionError(f"snappy-java block of {n} bytes runs past the data")
            block = data[pos:pos + n]
            pos += n
            if _snappy_raw_length(block) > bound - total:  # checked before allocating
                raise CompressionError(f"block expands past the {bound}-byte bound")
            total += out_buf.write(snappy.uncompress(block))
        return out_buf.getvalue()
    if data.startswith(b"\xff\x06\x00\x00sNaPpY"):
        return snappy.StreamDecompressor().decompress(data)
    if _snappy_raw_length(data) > bound:
        raise CompressionError(f"block expands past the {bound}-byte bound")
    return snappy.uncompress(data)


def _snappy_raw_length(block: bytes) -> int:
    """The uncompressed length a raw snappy block declares (an unsigned varint preamble)."""
    n = shift = 0
    for i in range(min(5, len(block))):
        b = block[i]
        n |= (b & 0x7F) << shift
        if b < 0x80:
            return n
        shift += 7
    raise CompressionError("snappy block has no valid length preamble")


def _snappy_xerial(data: bytes) -> bytes:
    parts = [XERIAL_HEADER.pack(XERIAL_MAGIC, 1, 1)]
    for i in range(0, len(data), XERIAL_BLOCK):
        block = snappy.compress(data[i:i + XERIAL_BLOCK])
        parts.append(_I32.pack(len(block)))
        parts.append(block)
    return b"".join(parts)


def _lz4_header_end(frame: bytes) -> int:
    """Index of the header-checksum byte of an LZ4 frame."""
    if len(frame) < 7 or frame[:4] != LZ4_MAGIC:
        raise CompressionError("not an LZ4 frame")
    flg = frame[4]
    end = 6 + (8 if flg & 0x08 else 0) + (4 if flg & 0x01 else 0)
    if len(frame) <= end:
        raise CompressionError("LZ4 frame header is truncated")
    return end


def _lz4_with_broken_hc(frame: bytes) -> bytes:
    """Kafka magic 0 quirk: the header checksum was computed over the magic bytes as well."""
    end = _lz4_header_end(frame)
    hc = (xxh32(frame[0:end]) >> 8) & 0xFF
    return frame[:end] + bytes([hc]) + frame[end + 1:]


_LZ4 = threading.local()


def _unlz4(data: bytes, magic: int, bound: int) -> bytes:
    if magic == 0:
        end = _lz4_header_end(data)
        hc = (xxh32(data[4:end]) >> 8) & 0xFF  # accept the broken checksum: replace with the right one
        data = data[:end] + bytes([hc]) + data[end + 1:]
    d = getattr(_LZ4, "d", None)
    if d is None:  # one decompressor a thread, reset per frame: a fresh one maps fresh buffers per batch
        d = _LZ4.d = lz4_frame.LZ4FrameDecompressor()
    d.reset()
    try:
        out = _lz4_frame(d, data, bound)
        if not d.eof and len(out) <= bound:
            raise CompressionError("LZ4 frame is truncated")
    except BaseException:
        # a decompressor that failed keeps state reset() does not clear (the next, valid frame then
        # fails with ERROR_frameSize_wrong): a fresh one for the next frame, so that a frame decodes
        # the same whatever was decoded before it (found by the decoders' differential fuzz target)
        _LZ4.d = None
        raise
    return out


def _lz4_frame(d, data: bytes, bound: int) -> bytes:
    """One frame through the reset decompressor ``d``, the output grown in steps (asking for
    ``bound`` at once would allocate the whole bound per batch)."""
    step = _first_step(len(data), bound)
    out = d.decompress(data, max_length=step)
    if not d.eof and not d.needs_input:
        out_buf = io.BytesIO()
        total = out_buf.write(out)
        while not d.eof and not d.needs_input and total <= bound:
            step = min(step * 2, bound + 1 - total)
            total += out_buf.write(d.decompress(b"", max_length=step))
        out = out_buf.getvalue()
    return out


_ZSTD = threading.local()


def _unzstd(data, bound: int) -> bytes:
    d = getattr(_ZSTD, "d", None)
    if d is None:  # one decompressor a thread: building one per batch costs more than the batch
        d = _ZSTD.d = zstandard.ZstdDecompressor()
    data = memoryview(data)
    one = _unzstd_one_frame(d, data, bound)
    if one is not None:
        return one
    obj = d.decompressobj()
    # pieces go into one growing buffer that getvalue() hands over without a copy: a list of
    # pieces joined at the end would hold the output twice at its peak
    out_buf, total, pos = io.BytesIO(), 0, 0
    while True:
        # feed input in slices small enough that one slice cannot blow far past the bound:
        # a zstd block expands at most ~32768-fold (4 bytes of RLE block -> 128 KiB)
        step = max(1024, (bound + 1 - total) >> 15)
        out = obj.decompress(data[pos:pos + step])
        pos = min(pos + step, len(data))
        if out:
            total += out_buf.write(out)
            if total > bound:
                break
        if obj.eof:  # a frame ended: Kafka's stream reads on into a following frame, if any
            rest = obj.unused_data + bytes(data[pos:])
            if not rest:
                break
            data, pos, obj = memoryview(rest), 0, d.decompressobj()
        elif pos >= len(data):
            raise CompressionError("zstd frame is truncated")
    return out_buf.getvalue()


def _unzstd_one_frame(d, data: memoryview, bound: int) -> bytes | None:
    """A single frame that states its size (librdkafka's and our own batches do; the Java client's
    streaming frames do not), decompressed straight into one buffer of that size: no pieces to
    join, so a large batch costs its size once, not twice. ``None`` when the frame does not state
    a believable size or more frames follow; the streaming path then reads them as Kafka does."""
    try:
        size = zstandard.frame_content_size(data[:18])  # a frame header is at most 18 bytes
    except zstandard.ZstdError:
        return None
    # a header may claim anything: believe it only within the bound and zstd's largest ratio
    if size < 0 or size > bound or size > len(data) << 15:
        return None
    try:
        return d.decompress(data, max_output_size=size, allow_extra_data=False)
    except zstandard.ZstdError:
        return None


def _first_step(compressed: int, bound: int) -> int:
    """First output size to ask a streaming decompressor for (then doubled up to ``bound`` + 1)."""
    return min(max(1 << 16, 8 * compressed), bound + 1)


# --- xxHash32, only ever run over an LZ4 frame header (at most 15 bytes) --------------------
_P1, _P2, _P3, _P4, _P5 = 2654435761, 2246822519, 3266489917, 668265263, 374761393
_M = 0xFFFFFFFF


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (32 - r))) & _M


def xxh32(data: bytes, seed: int = 0) -> int:
    n, i = len(data), 0
    if n >= 16:
        v = [(seed + _P1 + _P2) & _M, (seed + _P2) & _M, seed, (seed - _P1) & _M]
        while i + 16 <= n:
            for k in range(4):
                (lane,) = struct.unpack_from("<I", data, i + 4 * k)
                v[k] = (_rotl((v[k] + lane * _P2) & _M, 13) * _P1) & _M
            i += 16
        h = (_rotl(v[0], 1) + _rotl(v[1], 7) + _rotl(v[2], 12) + _rotl(v[3], 18)) & _M
    else:
        h = (seed + _P5) & _M
    h = (h + n) & _M
    while i + 4 <= n:
        (lane,) = struct.unpack_from("<I", data, i)
        h = (_rotl((h + lane * _P3) & _M, 17) * _P4) & _M
        i += 4
    while i < n:
        h = (_rotl((h + data[i] * _P5) & _M, 11) * _P1) & _M
        i += 1
    h ^= h >> 15
    h = (h * _P2) & _M
    h ^= h >> 13
    h = (h * _P3) & _M
    h ^= h >> 16
    return h
