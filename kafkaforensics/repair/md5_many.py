"""MD5 of many short byte strings at once, with numpy: the offset map's key hash (Kafka's cleaner
hashes keys with MD5) for a run of records without a Python call per key.

A message of up to 55 bytes is one 64-byte MD5 block once padded (RFC 1321: 0x80, zeros, the
length in bits as a little-endian 64-bit word); the 64 steps of the block run on uint32 columns,
one lane per message, a chunk of messages at a time so that the columns stay in the CPU cache.
``tests/test_offset_map.py`` proves every digest equal to ``hashlib.md5``'s.
"""
from __future__ import annotations

import math

import numpy as np

#: the longest message one block holds with its padding
ONE_BLOCK = 55
#: messages hashed together (uint32 columns of 64 KiB)
CHUNK = 1 << 14
_SHIFT = [7, 12, 17, 22] * 4 + [5, 9, 14, 20] * 4 + [4, 11, 16, 23] * 4 + [6, 10, 15, 21] * 4
_SINE = [np.uint32(int(abs(math.sin(i + 1)) * 2**32) & 0xFFFFFFFF) for i in range(64)]
_WORD = [i if i < 16 else (5 * i + 1) % 16 if i < 32 else (3 * i + 5) % 16 if i < 48 else 7 * i % 16
         for i in range(64)]
_INIT = (0x67452301, 0xEFCDAB89, 0x98BADCFE, 0x10325476)


def md5_spans(data: np.ndarray, start: np.ndarray, length: np.ndarray) -> np.ndarray:
    """The MD5 of ``data[start[i]:start[i] + length[i]]`` (uint8 array; every length at most
    :data:`ONE_BLOCK`) for each i, as rows of 16 bytes viewed as two little-endian uint64."""
    out = np.empty((len(start), 4), dtype="<u4")
    for i in range(0, len(start), CHUNK):
        out[i:i + CHUNK] = _one_block(data, start[i:i + CHUNK], length[i:i + CHUNK])
    return out.view("<u8")


def _one_block(data, start, length) -> np.ndarray:
    n = len(start)
    block = np.zeros((n, 64), dtype=np.uint8)
    width = int(length.max()) if n else 0
    if width:
        cols = np.arange(width)
        inside = cols < length[:, None]
        block[:, :width] = np.where(inside, data[np.where(inside, start[:, None] + cols, 0)], 0)
    block[np.arange(n), length] = 0x80
    block[:, 56:] = (length.astype("<u8") * 8)[:, None].view(np.uint8)
    words = [np.ascontiguousarray(w) for w in block.view("<u4").T]
    init = [np.full(n, v, dtype=np.uint32) for v in _INIT]
    a, b, c, d = (v.copy() for v in init)
    f, t = np.empty(n, dtype=np.uint32), np.empty(n, dtype=np.uint32)
    for i in range(64):
        if i < 16:    # (b & c) | (~b & d)
            np.bitwise_and(b, c, out=f)
            np.bitwise_and(np.invert(b, out=t), d, out=t)
            f |= t
        elif i < 32:  # (d & b) | (~d & c)
            np.bitwise_and(d, b, out=f)
            np.bitwise_and(np.invert(d, out=t), c, out=t)
            f |= t
        elif i < 48:  # b ^ c ^ d
            np.bitwise_xor(b, c, out=f)
            f ^= d
        else:         # c ^ (b | ~d)
            np.bitwise_or(b, np.invert(d, out=t), out=t)
            np.bitwise_xor(c, t, out=f)
        f += a
        f += _SINE[i]
        f += words[_WORD[i]]
        np.left_shift(f, np.uint32(_SHIFT[i]), out=t)  # rotate left
        f >>= np.uint32(32 - _SHIFT[i])
        f |= t
        f += b
        a, b, c, d, f = d, f, b, c, a  # the old a's array is free: the next step's scratch
    out = np.empty((n, 4), dtype="<u4")
    for j, (v, h) in enumerate(zip((a, b, c, d), init)):
        np.add(v, h, out=out[:, j])
    return out
