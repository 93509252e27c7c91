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

#: The fixed part before the entries: version, the CRC-32C of what follows it, the entry count.
SNAPSHOT_HEADER = Layout(("version", "h"), ("crc", "L"), ("count", "l"))     # ``SnapshotHeader``
HEADER_STRUCT, HEADER_FIELDS = SNAPSHOT_HEADER.struct, SNAPSHOT_HEADER.names
CRC_OFFSET = SNAPSHOT_HEADER.offset("crc")
COUNT_OFFSET = SNAPSHOT_HEADER.offset("count")   # the CRC covers from here to the end
ENTRIES_OFFSET = SNAPSHOT_HEADER.struct.size


def _specs() -> dict:
    """The construct specs, made on first use (``S.ProducerSnapshot``): see :func:`.layout.lazy_specs`."""
    import construct as c

    from crc32c import crc32c

    from .primitives import CrcSealed

    ProducerEntry = PRODUCER_ENTRY.spec()
    SnapshotHeader = SNAPSHOT_HEADER.spec()
    field = {sc.name: sc.subcon for sc in SnapshotHeader.subcons}
    ProducerSnapshot = c.Struct(
        "version" / c.Const(VERSION, field["version"]),
        "sealed" / CrcSealed(field["crc"], crc32c, c.PrefixedArray(field["count"], ProducerEntry)),
    )
    return {"ProducerEntry": ProducerEntry, "SnapshotHeader": SnapshotHeader, "ProducerSnapshot": ProducerSnapshot}


__getattr__ = lazy_specs(globals(), _specs)
