"""One partition over both tiers, as Kafka's ``UnifiedLog`` sees it: the remote segments from the
remote log start up to the local log start (the first local segment's base offset: what is below it
is read from the remote tier), then the local segments."""
from __future__ import annotations

from typing import NamedTuple

from kafkaforensics.errors import KafkaFormatError
from kafkaforensics.log.partition import Partition
from kafkaforensics.log.remote.tier import RemoteSegment, RemoteTier

#: the two tiers a segment can be in
REMOTE, LOCAL = "remote", "local"


class TieredSegment(NamedTuple):
    """A segment of the unified view: its tier, its base offset, the local segment (or None) and the
    remote one (or None)."""
    tier: str
    base_offset: int
    local: object | None
    remote: RemoteSegment | None


def remote_below(tier: RemoteTier, topic: str, partition: int, local_start: int | None,
                 topic_id: str | None = None) -> list[RemoteSegment]:
    """The partition's remote segments UnifiedLog reads from the tier: those starting below the local
    log start (all of them when there is no local segment); those of ``topic_id`` (the local
    ``partition.metadata``'s) when the tier holds that incarnation, else every one the keys give."""
    segs = tier.segments(topic, partition, topic_id if topic_id in tier.topic_ids(topic) else None)
    return segs if local_start is None else [s for s in segs if s.base_offset < local_start]


def unified_segments(tier: RemoteTier | None, topic: str, partition: int, local: list,
                     topic_id: str | None = None) -> list[TieredSegment]:
    """The partition's segments in offset order over both tiers: remote ones below the first local
    segment's base offset (of ``topic_id``'s incarnation, :func:`remote_below`), then ``local``
    (segments with a ``base_offset``)."""
    start = local[0].base_offset if local else None
    remote = remote_below(tier, topic, partition, start, topic_id) if tier is not None else []
    return ([TieredSegment(REMOTE, s.base_offset, None, s) for s in remote]
            + [TieredSegment(LOCAL, s.base_offset, s, None) for s in local])


def local_view(pd: Partition) -> tuple[int | None, str | None]:
    """(local log start, topic id) of a partition dir: its first segment's base offset (None: it holds
    none) and its ``partition.metadata``'s topic id (None: none, or unreadable -- verify says why)."""
    try:
        meta = pd.partition_metadata()
    except KafkaFormatError:
        meta = None
    return (pd.segments[0].base_offset if pd.segments else None), (meta or {}).get("topicId")
