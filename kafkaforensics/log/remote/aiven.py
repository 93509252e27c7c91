"""The object layout of Aiven's tiered-storage plugin for Kafka (Aiven-Open/tiered-storage-for-apache-kafka,
Apache 2.0), as its source defines it -- facts carried over, not code:

* keys (``ObjectKeyFactory.mainPath``): ``<prefix><topic>-<topicId>/<partition>/<start offset, 20 digits>-<segment
  id>.<suffix>``, the ids Kafka ``Uuid.toString()`` (22 characters of unpadded URL-safe base64), the suffixes
  ``log``, ``indexes`` and ``rsm-manifest``;
* the manifest (``SegmentManifestV1``, JSON): ``chunkIndex`` (``type`` ``fixed``: ``originalChunkSize``,
  ``originalFileSize``, ``transformedChunkSize``, ``finalTransformedChunkSize``; ``variable``: the same two original
  sizes and ``transformedChunks``, base64 of a zstd frame of ``ChunkSizesBinaryCodec``), ``segmentIndexes``
  (``offset``, ``timestamp``, ``producerSnapshot``, ``leaderEpoch``, ``transaction``: each ``position`` and
  ``size`` inside the ``.indexes`` object, which holds them in that order, each transformed alone), ``compression``
  and ``encryption`` (``dataKey``: ``<key id>:<base64 of the RSA-wrapped AES key>``, ``aad``: base64);
* the ``.log`` object: the segment cut in chunks of ``originalChunkSize`` bytes (the last shorter), each
  zstd-compressed (a frame with its content size) when ``compression``, then, when encrypted, AES-256-GCM with a
  12-byte IV written before the ciphertext and the 16-byte tag after it (Java's ``Cipher.doFinal``), the manifest's
  ``aad`` as associated data; indexes are encrypted the same way, never compressed;
* the data key wrapped by ``RSA/NONE/OAEPWithSHA3-512AndMGF1Padding`` (BouncyCastle: SHA3-512 for OAEP and MGF1).
"""
from __future__ import annotations

import base64
import json
import re
import struct
from dataclasses import dataclass
from typing import NamedTuple

from specs.lazy import lazy

from kafkaforensics.errors import KafkaFormatError
from kafkaforensics.log.segment import file_name

#: the chunk transforms' codecs, loaded when a tier's chunks are compressed or encrypted
zstandard = lazy("zstandard", globals())
aead = lazy("cryptography.hazmat.primitives.ciphers.aead", globals())
crypto_exceptions = lazy("cryptography.exceptions", globals())

#: the plugin's object suffixes (ObjectKeyFactory.Suffix)
LOG_SUFFIX, INDEXES_SUFFIX, MANIFEST_SUFFIX = "log", "indexes", "rsm-manifest"
#: the segment indexes inside ``.indexes``, in the order the plugin writes them (manifest name, our name)
INDEX_ORDER = (("offset", "offset"), ("timestamp", "time"), ("producerSnapshot", "producer-snapshot"),
               ("leaderEpoch", "leader-epoch"), ("transaction", "transaction"))
#: the most bytes the encoded chunk sizes may take (TransformedChunksDeserializer.MAX_DECOMPRESSED_SIZE)
MAX_CHUNK_SIZES_BYTES = 10 * 1024 * 1024
#: the AES-GCM IV written before each encrypted chunk (SegmentEncryptionMetadataV1.IV_SIZE), and the tag after it
IV_SIZE, TAG_SIZE = 12, 16
_UUID = r"[A-Za-z0-9_-]{22}"
_KEY_RE = re.compile(r"^(?P<prefix>.*?)(?P<topic>[^/]+)-(?P<topic_id>%s)/(?P<partition>\d+)/"
                     r"(?P<offset>\d+)-(?P<segment_id>%s)\.(?P<suffix>log|indexes|rsm-manifest)$" % (_UUID, _UUID))


class ObjectKey(NamedTuple):
    """One object key of the plugin's layout, parsed."""
    key: str
    prefix: str
    topic: str
    topic_id: str
    partition: int
    base_offset: int
    segment_id: str
    suffix: str

    @property
    def stem(self) -> str:
        """The key without its suffix: the segment's three objects share it."""
        return self.key[: -len(self.suffix) - 1]


def parse_key(key: str) -> ObjectKey | None:
    """The parts of a plugin object key (None when the key is not one: its start offset must be 20 digits)."""
    m = _KEY_RE.match(key)
    if m is None or len(m["offset"]) != 20:
        return None
    return ObjectKey(key, m["prefix"], m["topic"], m["topic_id"], int(m["partition"]), int(m["offset"]),
                     m["segment_id"], m["suffix"])


def object_key(prefix: str, topic: str, topic_id: str, partition: int, base_offset: int, segment_id: str,
               suffix: str) -> str:
    """ObjectKeyFactory's key of one of a segment's objects."""
    return f"{prefix}{topic}-{topic_id}/{partition}/" + file_name(base_offset, f"-{segment_id}.{suffix}")


# -- ChunkSizesBinaryCodec ------------------------------------------------------------------------
def decode_chunk_sizes(data: bytes) -> list[int]:
    """ChunkSizesBinaryCodec.decode: int32 count; count 1: the value; more: int32 base, one byte of
    bytes-per-value, count-1 big-endian values above the base, then the last value as an int32."""
    try:
        (count,) = struct.unpack_from(">i", data, 0)
        if count <= 1:
            return [] if count <= 0 else [struct.unpack_from(">i", data, 4)[0]]
        base, width = struct.unpack_from(">ib", data, 4)
        if not 1 <= width <= 4:
            raise ValueError(f"bytes per value {width}")
        pos, out = 9, []
        for _ in range(count - 1):
            out.append(base + int.from_bytes(data[pos:pos + width], "big"))
            pos += width
        out.append(struct.unpack_from(">i", data, pos)[0])
        return out
    except (struct.error, ValueError) as e:
        raise KafkaFormatError("remote-manifest", f"chunk sizes cannot be decoded: {e}") from None


def encode_chunk_sizes(values: list[int]) -> bytes:
    """ChunkSizesBinaryCodec.encode (the test writer's); negative values are refused, as there."""
    if any(v < 0 for v in values):
        raise ValueError("Values cannot be negative")
    if len(values) <= 1:
        return struct.pack(">i", len(values)) + b"".join(struct.pack(">i", v) for v in values)
    base = min(values[:-1])
    width = max(_bytes_needed(v - base) for v in values[:-1])
    body = b"".join((v - base).to_bytes(width, "big") for v in values[:-1])
    return struct.pack(">iib", len(values), base, width) + body + struct.pack(">i", values[-1])


def _bytes_needed(v: int) -> int:
    return 1 if v <= 0xFF else 2 if v <= 0xFFFF else 3 if v <= 0xFFFFFF else 4


# -- the chunk index --------------------------------------------------------------------------------
class Chunk(NamedTuple):
    """One chunk of a ``.log`` object: its number, its bytes in the original segment and in the object."""
    id: int
    original_position: int
    original_size: int
    transformed_position: int
    transformed_size: int


@dataclass(frozen=True)
class ChunkIndex:
    """FixedSizeChunkIndex / VariableSizeChunkIndex: the segment's bytes in chunks of ``original_chunk_size``
    (the last one shorter), each one's transformed size."""
    original_chunk_size: int
    original_file_size: int
    transformed_sizes: tuple[int, ...]

    @property
    def chunks(self) -> list[Chunk]:
        """Every chunk (AbstractChunkIndex.materializeChunks)."""
        out, orig, trans, n = [], 0, 0, len(self.transformed_sizes)
        for i, t in enumerate(self.transformed_sizes):
            size = self.original_file_size - (n - 1) * self.original_chunk_size if i == n - 1 \
                else self.original_chunk_size
            out.append(Chunk(i, orig, size, trans, t))
            orig, trans = orig + size, trans + t
        return out

    def chunks_for_range(self, start: int, end: int) -> list[Chunk]:
        """The chunks holding original bytes ``[start, end)`` (chunksForRange)."""
        end = min(end, self.original_file_size)
        if end <= start:
            return []
        first = start // self.original_chunk_size
        last = min((end - 1) // self.original_chunk_size, len(self.transformed_sizes) - 1)
        return self.chunks[first:last + 1]


def _count(original_chunk_size: int, original_file_size: int) -> int:
    return -(-original_file_size // original_chunk_size)


def parse_chunk_index(obj: dict) -> ChunkIndex:
    """The manifest's ``chunkIndex`` (``type`` ``fixed`` or ``variable``)."""
    try:
        kind, chunk, size = obj["type"], int(obj["originalChunkSize"]), int(obj["originalFileSize"])
        if chunk <= 0 or size < 0:
            raise ValueError(f"original chunk size {chunk}, file size {size}")
        if kind == "fixed":
            n = _count(chunk, size)
            sizes = (int(obj["transformedChunkSize"]),) * (n - 1) + (int(obj["finalTransformedChunkSize"]),) * (n > 0)
        elif kind == "variable":
            packed = _zstd_decompress(base64.b64decode(obj["transformedChunks"]), MAX_CHUNK_SIZES_BYTES)
            sizes = tuple(decode_chunk_sizes(packed))
            if len(sizes) != _count(chunk, size):
                raise ValueError(f"{len(sizes)} transformed chunk sizes for {_count(chunk, size)} chunks")
        else:
            raise ValueError(f"unknown chunk index type {kind!r}")
    except KafkaFormatError:
        raise
    except (KeyError, TypeError, ValueError) as e:
        raise KafkaFormatError("remote-manifest", f"chunk index: {type(e).__name__}: {e}") from None
    return ChunkIndex(chunk, size, sizes)


def chunk_index_json(index: ChunkIndex, variable: bool) -> dict:
    """The manifest's ``chunkIndex`` of an index (the test writer's), as the plugin's Jackson writes it."""
    head = {"originalChunkSize": index.original_chunk_size, "originalFileSize": index.original_file_size}
    if not variable:
        t = index.transformed_sizes
        return {"type": "fixed", **head, "transformedChunkSize": t[0] if len(t) > 1 else t[-1] if t else 0,
                "finalTransformedChunkSize": t[-1] if t else 0}
    packed = base64.b64encode(_zstd_compress(encode_chunk_sizes(list(index.transformed_sizes)))).decode()
    return {"type": "variable", **head, "transformedChunks": packed}


# -- the manifest ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class Manifest:
    """SegmentManifestV1: the chunk index, each segment index's (position, size) in ``.indexes``,
    whether chunks are compressed, and the encryption (key id, wrapped data key, AAD) or None."""
    chunk_index: ChunkIndex
    indexes: dict
    compression: bool
    key_id: str | None
    wrapped_key: bytes | None
    aad: bytes | None
    raw: dict


def parse_manifest(data: bytes) -> Manifest:
    """The ``.rsm-manifest`` JSON; anything else is a ``remote-manifest`` :class:`KafkaFormatError`."""
    try:
        obj = json.loads(data)
        indexes = {ours: (int(obj["segmentIndexes"][theirs]["position"]), int(obj["segmentIndexes"][theirs]["size"]))
                   for theirs, ours in INDEX_ORDER if obj["segmentIndexes"].get(theirs) is not None}
        compression = obj["compression"]
        if not isinstance(compression, bool):
            raise ValueError(f"compression {compression!r}")
        enc = obj.get("encryption")
        key_id = wrapped = aad = None
        if enc is not None:
            key_id, sep, b64 = enc["dataKey"].partition(":")
            if not sep or not key_id or ":" in b64:
                raise ValueError("malformed encrypted data key string")
            wrapped, aad = base64.b64decode(b64, validate=True), base64.b64decode(enc["aad"], validate=True)
    except KafkaFormatError:
        raise
    except (ValueError, KeyError, TypeError, AttributeError) as e:  # json.JSONDecodeError is a ValueError
        raise KafkaFormatError("remote-manifest", f"not a segment manifest: {type(e).__name__}: {e}") from None
    return Manifest(parse_chunk_index(obj.get("chunkIndex") or {}), indexes, compression, key_id, wrapped, aad, obj)


# -- the transforms --------------------------------------------------------------------------------
def _zstd_decompress(data: bytes, limit: int) -> bytes:
    """One zstd frame, refused when it says (or turns out) to hold more than ``limit`` bytes: a
    damaged frame header never makes the reader allocate what it claims."""
    try:
        size = zstandard.frame_content_size(data)
        if size > limit:
            raise KafkaFormatError("remote-chunk", f"zstd frame says {size} bytes, more than the {limit} expected")
        return zstandard.ZstdDecompressor().decompress(data, max_output_size=limit)
    except zstandard.ZstdError as e:
        raise KafkaFormatError("remote-chunk", f"zstd: {e}") from None


def _zstd_compress(data: bytes) -> bytes:
    return zstandard.ZstdCompressor(write_content_size=True).compress(data)


def decrypt(data: bytes, data_key: bytes, aad: bytes) -> bytes:
    """One encrypted chunk or index: IV, then AES-256-GCM ciphertext and tag, ``aad`` associated."""
    if len(data) < IV_SIZE + TAG_SIZE:
        raise KafkaFormatError("remote-chunk", f"{len(data)} bytes: shorter than an IV and a GCM tag")
    if len(data_key) != 32:
        raise KafkaFormatError("remote-key", f"the data key is {len(data_key)} bytes, not an AES-256 key's 32")
    try:
        return aead.AESGCM(data_key).decrypt(data[:IV_SIZE], data[IV_SIZE:], aad)
    except crypto_exceptions.InvalidTag:
        raise KafkaFormatError("remote-chunk", "AES-GCM authentication failed (wrong data key, or damaged bytes)") from None


def encrypt(data: bytes, data_key: bytes, aad: bytes, iv: bytes) -> bytes:
    """The plugin's encryption of a chunk (the test writer's): IV + ciphertext + tag."""
    return iv + aead.AESGCM(data_key).encrypt(iv, data, aad)


def detransform(chunk: bytes, manifest: Manifest, data_key: bytes | None, original_size: int) -> bytes:
    """A chunk of the ``.log`` object back to its original bytes: decrypted, then decompressed."""
    if manifest.aad is not None:
        chunk = decrypt(chunk, data_key or b"", manifest.aad)
    if manifest.compression:
        chunk = _zstd_decompress(chunk, original_size)
    return chunk


def transform(chunk: bytes, compression: bool, data_key: bytes | None, aad: bytes | None, iv: bytes = b"") -> bytes:
    """The plugin's transform of a chunk (the test writer's): compressed, then encrypted."""
    if compression:
        chunk = _zstd_compress(chunk)
    if data_key is not None and aad is not None:
        chunk = encrypt(chunk, data_key, aad, iv)
    return chunk
