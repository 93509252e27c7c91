"""The remote tier (KIP-405 tiered storage) read offline: :class:`RemoteTier` over a bucket/prefix or a
dir of segment objects (Aiven's plugin layout, or raw copies of partition dirs), each
:class:`RemoteCopy` (a segment's copy in the tier) read as a :class:`~kafkaforensics.log.segment.Segment`
every reader walks unchanged."""
from kafkaforensics.log.remote.store import RemoteTierError
from kafkaforensics.log.remote.tier import RemoteCopy, RemoteTier

__all__ = ["RemoteCopy", "RemoteTier", "RemoteTierError"]
