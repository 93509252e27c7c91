"""``<offset>.snapshot`` as a construct schema: ``ProducerSnapshot`` is the version, then a CRC-32C
sealing the counted entries. The layouts are :mod:`specs.producer_snapshot`."""
from __future__ import annotations

import construct as c
from crc32c import crc32c

from ..primitives import CrcSealed, fixed
from ..producer_snapshot import PRODUCER_ENTRY, SNAPSHOT_HEADER, VERSION

__all__ = ["ProducerEntry", "SnapshotHeader", "ProducerSnapshot"]

ProducerEntry = fixed(PRODUCER_ENTRY)
SnapshotHeader = fixed(SNAPSHOT_HEADER)

_FIELD = {sc.name: sc.subcon for sc in SnapshotHeader.subcons}
ProducerSnapshot = c.Struct(
    "version" / c.Const(VERSION, _FIELD["version"]),
    "sealed" / CrcSealed(_FIELD["crc"], crc32c, c.PrefixedArray(_FIELD["count"], ProducerEntry)),
)
