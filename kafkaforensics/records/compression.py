"""Kafka's five codecs as the library calls them (their ids, wire quirks and bounds live in ``specs.codecs``).

The decompression bound is ``specs.codecs.MAX_DECOMPRESSED`` (one knob for the specs and the library).
"""
from specs.codecs import CODEC_NAMES, GZIP, LZ4, NONE, SNAPPY, ZSTD, codec_id, compress, decompress

__all__ = ["CODEC_NAMES", "GZIP", "LZ4", "NONE", "SNAPPY", "ZSTD", "codec_id", "compress", "decompress"]
