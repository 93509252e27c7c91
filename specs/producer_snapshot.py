"""``<offset>.snapshot``: producer state (Kafka's ProducerSnapshot message, version 1).

Version int16, then a CRC-32C of everything after the CRC field, then an int32-counted array of
entries.
"""
from __future__ import annotations

from .layout import Layout, lazy_specs

VERSION = 1

PRODUCER_ENTRY = Layout(
    ("producerId", "q"),
    ("epoch", "h"),
    ("lastSequence", "l"),
    ("lastOffset", "q"),
    ("offsetDelta", "l"),
    ("timestamp", "q"),
    ("coordinatorEpoch", "l"),
    ("currentTxnFirstOffset", "q"),
)
ENTRY_STRUCT, ENTRY_FIELDS = PRODUCER_ENTRY.struct, PRODUCER_ENTRY.names


def _specs() -> dict:
    """The construct specs, made on first use (``S.ProducerSnapshot``): see :func:`.layout.lazy_specs`."""
    import construct as c

    from kafkaforensics.checksums import crc32c

    from .primitives import CrcSealed

    ProducerEntry = PRODUCER_ENTRY.spec()
    ProducerSnapshot = c.Struct(
        "version" / c.Const(VERSION, c.Int16sb),
        "sealed" / CrcSealed(c.Int32ub, crc32c, c.PrefixedArray(c.Int32sb, ProducerEntry)),
    )
    return {"ProducerEntry": ProducerEntry, "ProducerSnapshot": ProducerSnapshot}


__getattr__ = lazy_specs(globals(), _specs)
