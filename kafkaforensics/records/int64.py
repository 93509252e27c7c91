"""Java's fixed-width arithmetic at the int64 edge: the one rule for every base + delta of a batch.

Kafka adds a record's deltas to its batch's bases in Java's ``long`` and ``int``
(``DefaultRecord.readFrom``, ``DefaultRecordBatch.lastOffset``/``lastSequence``).  The toolkit's
integers do not wrap, so every place that adds a delta to a base asks this module:

* **offsets** (``baseOffset + lastOffsetDelta``, ``baseOffset + offsetDelta``, a legacy wrapper's
  inner offsets): an offset outside int64 -- or a negative one, which no log holds -- is *damage*
  (:func:`offset_problem` says why; the walks report it located, salvage skips the batch);
* **timestamps** (``firstTimestamp + timestampDelta``) wrap as Java's long addition does
  (:func:`java_long`);
* **sequences** (``baseSequence + offsetDelta``) are Kafka's ``DefaultRecordBatch.incrementSequence``
  in Java's int arithmetic (:func:`increment_sequence`): they wrap at Integer.MAX_VALUE to 0.

:func:`java_int` and :func:`increment_sequence` take Python ints or numpy int64 arrays alike (the
columnar decoder's columns, whose int64 additions wrap as Java's do).
"""
from __future__ import annotations

from specs.layout import INT32_MAX, INT64_MAX

INT64_MIN = -INT64_MAX - 1
#: a base and a delta both strictly within +-SAFE cannot leave int64 when added: the decoders' fast
#: paths check only that (a magnitude, never ``abs()``: numpy's abs(-2^63) is -2^63) and leave the rest
#: to the exact rule
SAFE = 1 << 62
_TWO_64 = 1 << 64
_TWO_32 = 1 << 32
_HALF_32 = 1 << 31


def java_long(v):
    """``v`` wrapped into int64 as Java's long arithmetic wraps it (two's complement)."""
    return (v - INT64_MIN) % _TWO_64 + INT64_MIN


def java_int(v):
    """``v`` wrapped into int32 as Java's int arithmetic wraps it (two's complement)."""
    return ((v + _HALF_32) & (_TWO_32 - 1)) - _HALF_32


def timestamp(base, delta):
    """A record's timestamp: ``firstTimestamp + timestampDelta`` in Java's long (it wraps)."""
    return java_long(base + delta)


def increment_sequence(sequence, increment):
    """Kafka's ``DefaultRecordBatch.incrementSequence(sequence, increment)``, every step in Java's
    int: past Integer.MAX_VALUE a sequence wraps to 0 (and a negative increment, which only damage
    holds, gives what Java gives)."""
    sequence, increment = java_int(sequence), java_int(increment)
    wraps = sequence > java_int(INT32_MAX - increment)
    # increment - (MAX - sequence) - 1 is sequence + increment + 2**31 modulo 2**32
    return java_int(sequence + increment + wraps * _HALF_32)


def within_safe(v) -> bool:
    """Whether ``v`` (an int) is strictly within +-:data:`SAFE`."""
    return -SAFE < v < SAFE


def fits(v) -> bool:
    """Whether the integer ``v`` is a Java long."""
    return INT64_MIN <= v <= INT64_MAX


def offset_problem(first: int, last: int) -> str | None:
    """Why offsets ``first``..``last`` (a base and a base plus a delta) are damage, or None when
    both are offsets a log can hold (0 .. 2^63-1)."""
    if first < 0:
        return f"offset {first} is negative"
    if last > INT64_MAX:
        return f"offset {first} + {last - first} = {last} leaves int64 (2^63-1 is the largest offset)"
    if last < 0:
        return f"offset {last} is negative"
    return None
