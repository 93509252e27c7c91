"""Which of a tier's objects lie below a partition's local log start (the first local segment's base
offset), for dump and verify, which read and check every such object.  The partition as Kafka's
``UnifiedLog`` reads it (the metadata's finished segments, chained) is
:mod:`kafkaforensics.log.unified_log`, whose bucket is :func:`remote_below`'s (one view of the tier,
the other its caller); the two tiers' names are these."""
from __future__ import annotations

from kafkaforensics.errors import KafkaFormatError
from kafkaforensics.log.partition import Partition
from kafkaforensics.log.remote.tier import RemoteCopy, RemoteTier

#: the two tiers a segment can be in
REMOTE, LOCAL = "remote", "local"


def remote_below(tier: RemoteTier, topic: str, partition: int, local_start: int | None,
                 topic_id: str | None = None) -> list[RemoteCopy]:
    """The partition's remote segments UnifiedLog reads from the tier: those starting below the local
    log start (all of them when there is no local segment); those of ``topic_id`` (the local
    ``partition.metadata``'s) when the tier holds that incarnation, else every one the keys give."""
    segs = tier.segments(topic, partition, topic_id if topic_id in tier.topic_ids(topic) else None)
    return segs if local_start is None else [s for s in segs if s.base_offset < local_start]


def local_view(pd: Partition) -> tuple[int | None, str | None]:
    """(local log start, topic id) of a partition dir: its first segment's base offset (None: it holds
    none) and its ``partition.metadata``'s topic id (None: none, or unreadable -- verify says why)."""
    try:
        meta = pd.partition_metadata()
    except KafkaFormatError:
        meta = None
    return (pd.segments[0].base_offset if pd.segments else None), (meta or {}).get("topicId")
