"""The replay broker's KIP-848 consumer groups (``group.protocol=consumer``): ConsumerGroupHeartbeat and
ConsumerGroupDescribe, the group's target assignment (each subscribed topic's partitions round-robin over its
subscribers) handed out incrementally.  The classic protocol and the offsets are
:class:`~kafkaforensics.broker.group_coordinator.GroupCoordinator`'s, which holds this coordinator (``kip848``)."""
from __future__ import annotations

import time
import uuid
from dataclasses import dataclass, field

from specs.kafka_errors import (FENCED_MEMBER_EPOCH, GROUP_ID_NOT_FOUND, INVALID_GROUP_ID, INVALID_REQUEST, NONE,
                                STALE_MEMBER_EPOCH, UNKNOWN_MEMBER_ID)
from specs.message_types import typed
from specs.messages import (ConsumerGroupDescribeRequest, ConsumerGroupDescribeResponse,
                            ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeatResponse)
from specs.protocol_messages import ApiKey

#: KIP-848 defaults: group.consumer.heartbeat.interval.ms, group.consumer.session.timeout.ms
CONSUMER_HEARTBEAT_MS, CONSUMER_SESSION_MS = 5000, 45000


@dataclass
class ConsumerMember:
    """A member of a KIP-848 (``group.protocol=consumer``) group."""
    member_id: str
    client_id: str
    epoch: int = 0
    subscribed: list = field(default_factory=list)
    assigned: dict = field(default_factory=dict)   # topic id -> sorted partitions
    last_seen: float = field(default_factory=time.monotonic)


@dataclass
class ConsumerGroup:
    group_id: str
    epoch: int = 0
    members: dict = field(default_factory=dict)


def _failed(out: ConsumerGroupHeartbeatResponse, error: int, message: str) -> ConsumerGroupHeartbeatResponse:
    """A KIP-848 heartbeat answered with an error (the member id and epoch it came with)."""
    out.error_code, out.error_message = error, message
    return out


class ConsumerGroupCoordinator:
    """The KIP-848 groups this broker coordinates (``groups``: group id -> :class:`ConsumerGroup`)."""

    def __init__(self, heartbeat_ms: int = CONSUMER_HEARTBEAT_MS):
        self.groups: dict[str, ConsumerGroup] = {}
        self.heartbeat_ms = heartbeat_ms

    def commit_error(self, gid: str, member_id: str, epoch: int) -> int | None:
        """OffsetCommit's check of a KIP-848 member committing at its member epoch (None: ``gid`` is no
        KIP-848 group, or the commit names no epoch)."""
        g = self.groups.get(gid)
        if g is None or epoch < 0:
            return None
        m = g.members.get(member_id)
        return UNKNOWN_MEMBER_ID if m is None else STALE_MEMBER_EPOCH if epoch > m.epoch else NONE

    def heartbeat(self, version: int, body, client_id: str | None, topics: dict) -> ConsumerGroupHeartbeatResponse:
        """One heartbeat of a ``group.protocol=consumer`` member.  ``topics``: name -> (topic id,
        partition count).  Epoch 0 joins (the member id the client chose, or a new one), -1 leaves;
        the group's target assignment spreads the subscribed partitions round-robin over the members
        in id order, and a member is handed a partition only once no other member holds it (the
        previous owner drops it on its own next heartbeat), as the incremental protocol requires."""
        req: ConsumerGroupHeartbeatRequest = typed(ApiKey.CONSUMER_GROUP_HEARTBEAT, body)
        gid, mid, epoch = req.group_id or "", req.member_id or "", req.member_epoch
        out = ConsumerGroupHeartbeatResponse(error_code=NONE, error_message=None, member_id=mid, member_epoch=epoch,
                                             heartbeat_interval_ms=self.heartbeat_ms, assignment=None)
        if not gid:
            return _failed(out, INVALID_GROUP_ID, "empty group id")
        g = self.groups.setdefault(gid, ConsumerGroup(gid))
        now = time.monotonic()
        for other in [x for x in g.members.values() if now - x.last_seen > CONSUMER_SESSION_MS / 1000]:
            del g.members[other.member_id]
            g.epoch += 1
        if epoch == -1 or epoch == -2:  # leave (or a static member going away)
            if g.members.pop(mid, None) is not None:
                g.epoch += 1
            out.member_epoch = -1
            return out
        m = g.members.get(mid)
        if epoch == 0:
            if m is None:
                mid = mid or str(uuid.uuid4())
                m = g.members[mid] = ConsumerMember(mid, client_id or "")
                g.epoch += 1
            if req.subscribed_topic_names is None:
                return _failed(out, INVALID_REQUEST, "SubscribedTopicNames is required to join")
        elif m is None:
            return _failed(out, UNKNOWN_MEMBER_ID, f"unknown member {mid}")
        elif epoch > m.epoch:
            return _failed(out, FENCED_MEMBER_EPOCH, f"epoch {epoch} is ahead of {m.epoch}")
        m.last_seen = now
        if req.subscribed_topic_names is not None and sorted(req.subscribed_topic_names) != m.subscribed:
            m.subscribed = sorted(req.subscribed_topic_names)
            g.epoch += 1
        if req.topic_partitions is not None:  # what the member owns now: revocations confirmed
            owned = {t.topic_id: set(t.partitions) for t in req.topic_partitions}
            m.assigned = {tid: sorted(set(ps) & owned.get(tid, set())) for tid, ps in m.assigned.items()}
        target = self._target(g, topics).get(mid, {})
        held = {(tid, p) for x in g.members.values() if x is not m for tid, ps in x.assigned.items() for p in ps}
        new = {}
        for tid in set(target) | set(m.assigned):
            keep = [p for p in m.assigned.get(tid, []) if p in target.get(tid, ())]
            add = [p for p in target.get(tid, []) if (tid, p) not in held]
            ps = sorted(set(keep) | set(add))
            if ps:
                new[tid] = ps
        if new != m.assigned or epoch == 0 or m.epoch != g.epoch:
            m.assigned, m.epoch = new, g.epoch
            cgh = ConsumerGroupHeartbeatResponse
            out.assignment = cgh.Assignment(topic_partitions=[cgh.TopicPartitions(topic_id=t, partitions=ps)
                                                              for t, ps in sorted(new.items())])
        out.member_id, out.member_epoch = mid, m.epoch
        return out

    def describe(self, version: int, body, topics: dict) -> ConsumerGroupDescribeResponse:
        """ConsumerGroupDescribe: a KIP-848 group's members, their assignments and targets
        (GROUP_ID_NOT_FOUND for a group that is not one, as Kafka answers)."""
        names = {tid: name for name, (tid, _n) in topics.items()}
        cgd = ConsumerGroupDescribeResponse

        def assignment(parts: dict) -> ConsumerGroupDescribeResponse.Assignment:
            return cgd.Assignment(topic_partitions=[cgd.TopicPartitions(topic_id=t, topic_name=names.get(t, ""),
                                                                        partitions=ps)
                                                    for t, ps in sorted(parts.items())])
        req: ConsumerGroupDescribeRequest = typed(ApiKey.CONSUMER_GROUP_DESCRIBE, body)
        out = []
        for gid in req.group_ids:
            g = self.groups.get(gid)
            if g is None:
                out.append(cgd.DescribedGroup(error_code=GROUP_ID_NOT_FOUND,
                                              error_message=f"group {gid} is not a consumer group", group_id=gid,
                                              group_state="Dead", group_epoch=-1, assignment_epoch=-1,
                                              assignor_name="", members=[]))
                continue
            target = self._target(g, topics)
            out.append(cgd.DescribedGroup(
                error_code=NONE, error_message=None, group_id=gid, group_state="Stable" if g.members else "Empty",
                group_epoch=g.epoch, assignment_epoch=g.epoch, assignor_name="uniform",
                members=[cgd.Member(member_id=m.member_id, instance_id=None, rack_id=None, member_epoch=m.epoch,
                                    client_id=m.client_id, client_host="/127.0.0.1",
                                    subscribed_topic_names=m.subscribed, subscribed_topic_regex=None,
                                    assignment=assignment(m.assigned),
                                    target_assignment=assignment(target.get(m.member_id, {})))
                         for m in g.members.values()]))
        return cgd(groups=out)

    @staticmethod
    def _target(g: ConsumerGroup, topics: dict) -> dict:
        """member id -> {topic id: partitions}: each subscribed topic's partitions round-robin over
        its subscribers (in member id order)."""
        out: dict = {mid: {} for mid in g.members}
        for name in sorted({t for x in g.members.values() for t in x.subscribed}):
            if name not in topics:
                continue
            tid, count = topics[name]
            subs = sorted(x.member_id for x in g.members.values() if name in x.subscribed)
            for p in range(count):
                out[subs[p % len(subs)]].setdefault(tid, []).append(p)
        return out
