"""One partition over both tiers, as Kafka's ``UnifiedLog`` sees it: the remote segments from the
remote log start up to the local log start (the first local segment's base offset: what is below it
is read from the remote tier), then the local segments."""
from __future__ import annotations

from typing import NamedTuple

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


def remote_below(tier: RemoteTier, topic: str, partition: int, local_start: int | None) -> list[RemoteSegment]:
    """The partition's remote segments UnifiedLog reads from the tier: those starting below the local
    log start (all of them when there is no local segment)."""
    segs = tier.segments(topic, partition)
    return segs if local_start is None else [s for s in segs if s.base_offset < local_start]


def unified_segments(tier: RemoteTier | None, topic: str, partition: int, local: list) -> list[TieredSegment]:
    """The partition's segments in offset order over both tiers: remote ones below the first local
    segment's base offset, then ``local`` (segments with a ``base_offset``)."""
    start = local[0].base_offset if local else None
    remote = remote_below(tier, topic, partition, start) if tier is not None else []
    return ([TieredSegment(REMOTE, s.base_offset, None, s) for s in remote]
            + [TieredSegment(LOCAL, s.base_offset, s, None) for s in local])
