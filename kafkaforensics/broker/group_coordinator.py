"""The replay broker's group coordinator: the classic (eager) consumer-group protocol and offsets.

JoinGroup (MEMBER_ID_REQUIRED first for v4+, as KIP-394 asks), a rebalance that completes when
every known member has rejoined or the rebalance timeout passes (a new group waits a short initial
delay so that members starting together land in one generation), SyncGroup (the leader's
assignment handed to each member), Heartbeat (REBALANCE_IN_PROGRESS / ILLEGAL_GENERATION /
UNKNOWN_MEMBER_ID), LeaveGroup, session expiry, and OffsetCommit / OffsetFetch persisted to a JSON
file outside the log dir so that a restarted server resumes them.  Waiting uses asyncio futures:
this module lives at the server's edge; the protocol and the log logic stay I/O-free.
"""
from __future__ import annotations

import asyncio
import json
import struct
import os
import time
import uuid
from dataclasses import dataclass, field

from kafkaforensics.fsutil import atomic_write

from specs.kafka_errors import (ILLEGAL_GENERATION, INCONSISTENT_GROUP_PROTOCOL, INVALID_GROUP_ID,
                                FENCED_MEMBER_EPOCH, GROUP_ID_NOT_FOUND, INVALID_REQUEST, MEMBER_ID_REQUIRED, NONE,
                                REBALANCE_IN_PROGRESS, STALE_MEMBER_EPOCH, UNKNOWN_MEMBER_ID)
from specs.message_types import typed
from specs.protocol_messages import ApiKey


def _all_committed(stored: dict) -> list:
    """(topic, its partitions) of every offset in a group's ``stored`` commits ("topic:partition" keys)."""
    pairs: dict = {}
    for k in stored:
        name, part = k.rsplit(":", 1)
        pairs.setdefault(name, []).append(int(part))
    return [(n, sorted(ps)) for n, ps in sorted(pairs.items())]


@dataclass
class Member:
    member_id: str
    client_id: str
    session_ms: int
    rebalance_ms: int
    protocols: list
    instance_id: str | None = None
    last_seen: float = field(default_factory=time.monotonic)
    join: asyncio.Future | None = None
    sync: asyncio.Future | None = None
    assignment: str = ""


@dataclass
class Group:
    group_id: str
    state: str = "Empty"
    generation: int = 0
    protocol_type: str | None = None
    protocol: str | None = None
    leader: str | None = None
    members: dict = field(default_factory=dict)
    completing: asyncio.Task | None = None
    initial_delay_pending: bool = False


OFFSETS_TOPIC_PARTITIONS = 50  # offsets.topic.num.partitions' default
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


def java_string_hash(s: str) -> int:
    """String.hashCode() over UTF-16 code units, as an int32."""
    h = 0
    for unit in struct.unpack(f"<{len(s.encode('utf-16-le')) // 2}H", s.encode("utf-16-le")):
        h = (31 * h + unit) & 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h


def offsets_partition_for(group_id: str, partitions: int = OFFSETS_TOPIC_PARTITIONS) -> int:
    """Kafka's Utils.abs(groupId.hashCode) % partitions (abs of MIN_VALUE is 0)."""
    h = java_string_hash(group_id)
    return (0 if h == -(1 << 31) else abs(h)) % partitions


class GroupCoordinator:
    def __init__(self, state_path: str | None, initial_delay_ms: int = 300, offsets_writer=None):
        self.offsets_writer = offsets_writer  # writable broker: commits also go to __consumer_offsets
        self.groups: dict[str, Group] = {}
        self.consumer_groups: dict[str, ConsumerGroup] = {}
        self.heartbeat_ms = CONSUMER_HEARTBEAT_MS
        self.state_path = state_path
        self.initial_delay = initial_delay_ms / 1000
        self.offsets: dict[str, dict] = {}
        if state_path and os.path.exists(state_path):
            with open(state_path, encoding="utf-8") as f:
                self.offsets = json.load(f)

    # -- offsets ---------------------------------------------------------------------------------
    def _persist(self) -> None:
        if self.state_path:
            os.makedirs(os.path.dirname(self.state_path), exist_ok=True)
            atomic_write(self.state_path, json.dumps(self.offsets, sort_keys=True).encode())

    def commit(self, version: int, body) -> dict:
        """OffsetCommit: a member of the generation (or a KIP-848 member at its epoch), or no group at all."""
        req = typed(ApiKey.OFFSET_COMMIT, body)
        gid, gen = req.group_id, req.generation_id_or_member_epoch
        g = self.groups.get(gid)
        err = NONE
        cg = self.consumer_groups.get(gid)
        if cg is not None and gen >= 0:  # a KIP-848 member commits with its member epoch
            m = cg.members.get(req.member_id)
            err = UNKNOWN_MEMBER_ID if m is None else STALE_MEMBER_EPOCH if gen > m.epoch else NONE
        elif gen >= 0:
            if g is None or req.member_id not in g.members:
                err = UNKNOWN_MEMBER_ID
            elif gen != g.generation:
                err = ILLEGAL_GENERATION
            elif g.state == "PreparingRebalance":
                err = REBALANCE_IN_PROGRESS
        topics = [{"Name": t.name, "Partitions": [{"PartitionIndex": p.partition_index, "ErrorCode": err}
                                                  for p in t.partitions]}
                  for t in req.topics]
        if err == NONE:
            self.store(gid, [(t.name, p.partition_index, p.committed_offset, p.committed_leader_epoch,
                              p.committed_metadata) for t in req.topics for p in t.partitions])
        return {"Topics": topics}

    def store(self, gid: str, commits: list, write: bool = True) -> None:
        """Keep (topic, partition, offset, leader epoch, metadata) commits of a group; ``write``: also
        append them to __consumer_offsets (a transaction's commits are there already)."""
        for topic, part, offset, epoch, metadata in commits:
            self.offsets.setdefault(gid, {})[f"{topic}:{part}"] = {"offset": offset, "leaderEpoch": epoch,
                                                                   "metadata": metadata}
        self._persist()
        if write and self.offsets_writer is not None:
            self.offsets_writer(gid, [(t, p, o, e, m or "") for t, p, o, e, m in commits])

    def _fetch_group(self, gid: str, topics) -> list:
        """The group's committed offsets of the (typed) topics asked; None: of every topic it has any."""
        stored = self.offsets.get(gid, {})
        wanted = _all_committed(stored) if topics is None else [(t.name, t.partition_indexes) for t in topics]
        out = []
        for name, indexes in wanted:
            parts = []
            for p in indexes:
                c = stored.get(f"{name}:{p}")
                parts.append({"PartitionIndex": p, "CommittedOffset": c["offset"] if c else -1,
                              "CommittedLeaderEpoch": c["leaderEpoch"] if c else -1,
                              "Metadata": (c["metadata"] if c else "") or "", "ErrorCode": NONE})
            out.append({"Name": name, "Partitions": parts})
        return out

    def fetch_offsets(self, version: int, body) -> dict:
        req = typed(ApiKey.OFFSET_FETCH, body)
        if version >= 8:
            return {"Groups": [
                {"GroupId": g.group_id, "Topics": self._fetch_group(g.group_id, g.topics), "ErrorCode": NONE}
                for g in req.groups]}
        return {"ErrorCode": NONE, "Topics": self._fetch_group(req.group_id, req.topics)}

    # -- admin: ListGroups, DescribeGroups --------------------------------------------------------
    def known_groups(self, logged=()) -> dict[str, Group]:
        """Live groups, and the groups only their committed offsets tell of (this coordinator's and
        ``logged``, the log's __consumer_offsets): those are Empty consumer groups."""
        out = {gid: Group(gid, protocol_type="consumer") for gid in [*logged, *self.offsets]}
        out.update(self.groups)
        for gid, cg in self.consumer_groups.items():  # KIP-848 groups (GroupType "consumer")
            out[gid] = Group(gid, state="Stable" if cg.members else "Empty", protocol_type="consumer",
                             generation=cg.epoch)
            out[gid].kip848 = True
        return out

    def list_groups(self, version: int, body, logged=()) -> dict:
        req = typed(ApiKey.LIST_GROUPS, body)
        states = req.states_filter or []
        types = req.types_filter or []
        out = []
        for gid, g in sorted(self.known_groups(logged).items()):
            kind = "consumer" if getattr(g, "kip848", False) else "classic"
            if (states and g.state not in states) or (types and kind not in types):
                continue
            out.append({"GroupId": gid, "ProtocolType": g.protocol_type or "", "GroupState": g.state,
                        "GroupType": kind})
        return {"ErrorCode": NONE, "Groups": out}

    def describe_groups(self, version: int, body, logged=()) -> dict:
        known = self.known_groups(logged)
        out = []
        for gid in typed(ApiKey.DESCRIBE_GROUPS, body).groups:
            g = known.get(gid)
            if g is None:  # Kafka describes an unknown group as Dead, with no error (GROUP_ID_NOT_FOUND from v6)
                out.append({"ErrorCode": GROUP_ID_NOT_FOUND if version >= 6 else NONE, "ErrorMessage": None,
                            "GroupId": gid, "GroupState": "Dead", "ProtocolType": "", "ProtocolData": "",
                            "Members": [], "AuthorizedOperations": -2147483648})
                continue
            stable = g.state == "Stable"
            out.append({"ErrorCode": NONE, "ErrorMessage": None, "GroupId": gid, "GroupState": g.state,
                        "ProtocolType": g.protocol_type or "", "ProtocolData": (g.protocol or "") if stable else "",
                        "AuthorizedOperations": -2147483648,
                        "Members": [{"MemberId": m.member_id, "GroupInstanceId": m.instance_id,
                                     "ClientId": m.client_id, "ClientHost": "/127.0.0.1",
                                     "MemberMetadata": dict(m.protocols).get(g.protocol, b"") if stable else b"",
                                     "MemberAssignment": (m.assignment or b"") if stable else b""}
                                    for m in g.members.values()]})
        return {"Groups": out}

    # -- KIP-848: ConsumerGroupHeartbeat ----------------------------------------------------------
    def consumer_heartbeat(self, version: int, body, client_id: str | None, topics: dict) -> dict:
        """One heartbeat of a ``group.protocol=consumer`` member.  ``topics``: name -> (topic id,
        partition count).  Epoch 0 joins (the member id the client chose, or a new one), -1 leaves;
        the group's target assignment spreads the subscribed partitions round-robin over the members
        in id order, and a member is handed a partition only once no other member holds it (the
        previous owner drops it on its own next heartbeat), as the incremental protocol requires."""
        req = typed(ApiKey.CONSUMER_GROUP_HEARTBEAT, body)
        gid, mid, epoch = req.group_id or "", req.member_id or "", req.member_epoch
        out = {"ErrorCode": NONE, "ErrorMessage": None, "MemberId": mid, "MemberEpoch": epoch,
               "HeartbeatIntervalMs": self.heartbeat_ms, "Assignment": None}
        if not gid:
            return dict(out, ErrorCode=INVALID_GROUP_ID, ErrorMessage="empty group id")
        g = self.consumer_groups.setdefault(gid, ConsumerGroup(gid))
        now = time.monotonic()
        for other in [x for x in g.members.values() if now - x.last_seen > CONSUMER_SESSION_MS / 1000]:
            del g.members[other.member_id]
            g.epoch += 1
        if epoch == -1 or epoch == -2:  # leave (or a static member going away)
            if g.members.pop(mid, None) is not None:
                g.epoch += 1
            return dict(out, MemberEpoch=-1)
        m = g.members.get(mid)
        if epoch == 0:
            if m is None:
                mid = mid or str(uuid.uuid4())
                m = g.members[mid] = ConsumerMember(mid, client_id or "")
                g.epoch += 1
            if req.subscribed_topic_names is None:
                return dict(out, ErrorCode=INVALID_REQUEST, ErrorMessage="SubscribedTopicNames is required to join")
        elif m is None:
            return dict(out, ErrorCode=UNKNOWN_MEMBER_ID, ErrorMessage=f"unknown member {mid}")
        elif epoch > m.epoch:
            return dict(out, ErrorCode=FENCED_MEMBER_EPOCH, ErrorMessage=f"epoch {epoch} is ahead of {m.epoch}")
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
            out["Assignment"] = {"TopicPartitions": [{"TopicId": t, "Partitions": ps} for t, ps in sorted(new.items())]}
        return dict(out, MemberId=mid, MemberEpoch=m.epoch)

    def consumer_describe(self, version: int, body, topics: dict) -> dict:
        """ConsumerGroupDescribe: a KIP-848 group's members, their assignments and targets
        (GROUP_ID_NOT_FOUND for a group that is not one, as Kafka answers)."""
        names = {tid: name for name, (tid, _n) in topics.items()}

        def assignment(parts: dict) -> dict:
            return {"TopicPartitions": [{"TopicId": t, "TopicName": names.get(t, ""), "Partitions": ps}
                                        for t, ps in sorted(parts.items())]}
        out = []
        for gid in typed(ApiKey.CONSUMER_GROUP_DESCRIBE, body).group_ids:
            g = self.consumer_groups.get(gid)
            if g is None:
                out.append({"ErrorCode": GROUP_ID_NOT_FOUND, "ErrorMessage": f"group {gid} is not a consumer group",
                            "GroupId": gid, "GroupState": "Dead", "GroupEpoch": -1, "AssignmentEpoch": -1,
                            "AssignorName": "", "Members": []})
                continue
            target = self._target(g, topics)
            out.append({"ErrorCode": NONE, "ErrorMessage": None, "GroupId": gid,
                        "GroupState": "Stable" if g.members else "Empty", "GroupEpoch": g.epoch,
                        "AssignmentEpoch": g.epoch, "AssignorName": "uniform",
                        "Members": [{"MemberId": m.member_id, "InstanceId": None, "RackId": None, "MemberEpoch": m.epoch,
                                     "ClientId": m.client_id, "ClientHost": "/127.0.0.1",
                                     "SubscribedTopicNames": m.subscribed, "SubscribedTopicRegex": None,
                                     "Assignment": assignment(m.assigned),
                                     "TargetAssignment": assignment(target.get(m.member_id, {}))}
                                    for m in g.members.values()]})
        return {"Groups": out}

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

    # -- membership ------------------------------------------------------------------------------
    def _response(self, g: Group, m: Member, err=NONE) -> dict:
        leader = m.member_id == g.leader
        return {"ErrorCode": err, "GenerationId": g.generation, "ProtocolType": g.protocol_type,
                "ProtocolName": g.protocol, "Leader": g.leader or "", "MemberId": m.member_id,
                "Members": [{"MemberId": x.member_id, "GroupInstanceId": x.instance_id,
                             "Metadata": dict(x.protocols).get(g.protocol, "")} for x in g.members.values()]
                if leader else []}

    async def join(self, version: int, body, client_id: str | None) -> dict:
        r = await self._join(version, body, client_id)
        if version < 7 and r.get("ProtocolName") is None:  # null only from v7: older versions carry ""
            r = dict(r, ProtocolName="")
        return r

    async def _join(self, version: int, body, client_id: str | None) -> dict:
        req = typed(ApiKey.JOIN_GROUP, body)
        gid = req.group_id or ""
        if not gid:
            return {"ErrorCode": INVALID_GROUP_ID, "GenerationId": -1, "Leader": "", "MemberId": "", "Members": [],
                    "ProtocolName": None}
        g = self.groups.setdefault(gid, Group(gid))
        mid = req.member_id or ""
        protocols = [(p.name, p.metadata) for p in req.protocols]
        if g.protocol_type and req.protocol_type != g.protocol_type and g.members:
            return {"ErrorCode": INCONSISTENT_GROUP_PROTOCOL, "GenerationId": -1, "Leader": "", "MemberId": mid,
                    "Members": [], "ProtocolName": None}
        if not mid:
            mid = f"{client_id or 'member'}-{uuid.uuid4()}"
            if version >= 4:
                return {"ErrorCode": MEMBER_ID_REQUIRED, "GenerationId": -1, "Leader": "", "MemberId": mid,
                        "Members": [], "ProtocolName": None}
        rebalance_ms = req.rebalance_timeout_ms
        session_ms = req.session_timeout_ms
        m = g.members.get(mid)
        if m is None:
            m = g.members[mid] = Member(mid, client_id or "", session_ms, rebalance_ms if rebalance_ms > 0 else session_ms,
                                        protocols, req.group_instance_id)
        else:
            m.protocols, m.session_ms = protocols, session_ms
        m.last_seen = time.monotonic()
        g.protocol_type = req.protocol_type
        m.join = asyncio.get_running_loop().create_future()
        self._prepare_rebalance(g)
        self._maybe_complete(g)
        return await m.join

    def _prepare_rebalance(self, g: Group) -> None:
        if g.state == "PreparingRebalance":
            return
        was_empty = g.state == "Empty"
        for x in g.members.values():  # members waiting in SyncGroup must rejoin
            if x.sync is not None and not x.sync.done():
                x.sync.set_result({"ErrorCode": REBALANCE_IN_PROGRESS, "Assignment": ""})
        g.state = "PreparingRebalance"
        g.initial_delay_pending = was_empty  # members starting together land in one generation
        timeout = max((x.rebalance_ms for x in g.members.values()), default=5000) / 1000
        g.completing = asyncio.get_running_loop().create_task(self._complete_later(g, timeout, was_empty))

    @staticmethod
    def _all_rejoined(g: Group) -> bool:
        return all(x.join is not None and not x.join.done() for x in g.members.values())

    async def _complete_later(self, g: Group, timeout: float, initial: bool) -> None:
        if initial:
            await asyncio.sleep(self.initial_delay)
            g.initial_delay_pending = False
            if self._all_rejoined(g):
                self._complete(g)
                return
            timeout -= self.initial_delay
        await asyncio.sleep(max(0.0, timeout))
        if g.state == "PreparingRebalance":
            self._complete(g)

    def _maybe_complete(self, g: Group) -> None:
        if g.state == "PreparingRebalance" and not g.initial_delay_pending and self._all_rejoined(g):
            self._complete(g)

    def _complete(self, g: Group) -> None:
        if g.state != "PreparingRebalance":
            return
        for mid in [mid for mid, x in g.members.items() if x.join is None or x.join.done()]:
            del g.members[mid]  # did not rejoin in time
        if g.completing is not None and g.completing is not asyncio.current_task():
            g.completing.cancel()
        g.generation += 1
        if not g.members:
            g.state, g.leader, g.protocol = "Empty", None, None
            return
        if g.leader not in g.members:
            g.leader = next(iter(g.members))
        names = [n for n, _ in g.members[g.leader].protocols]
        common = [n for n in names if all(n in dict(x.protocols) for x in g.members.values())]
        g.protocol = common[0] if common else (names[0] if names else None)
        g.state = "CompletingRebalance"
        for x in g.members.values():
            x.assignment = ""
            x.join.set_result(self._response(g, x))
            x.join = None

    async def sync(self, version: int, body) -> dict:
        req = typed(ApiKey.SYNC_GROUP, body)
        g = self.groups.get(req.group_id)
        mid = req.member_id
        if g is None or mid not in g.members:
            return {"ErrorCode": UNKNOWN_MEMBER_ID, "Assignment": ""}
        if req.generation_id != g.generation:
            return {"ErrorCode": ILLEGAL_GENERATION, "Assignment": ""}
        if g.state == "PreparingRebalance":
            return {"ErrorCode": REBALANCE_IN_PROGRESS, "Assignment": ""}
        m = g.members[mid]
        m.last_seen = time.monotonic()
        base = {"ErrorCode": NONE, "ProtocolType": g.protocol_type, "ProtocolName": g.protocol}
        if g.state == "Stable":
            return dict(base, Assignment=m.assignment)
        if mid == g.leader:
            given = {a.member_id: a.assignment for a in req.assignments}
            g.state = "Stable"
            for x in g.members.values():
                x.assignment = given.get(x.member_id, "")
                if x.sync is not None and not x.sync.done():
                    x.sync.set_result(dict(base, Assignment=x.assignment))
            return dict(base, Assignment=m.assignment)
        m.sync = asyncio.get_running_loop().create_future()
        return await m.sync

    def heartbeat(self, version: int, body) -> dict:
        req = typed(ApiKey.HEARTBEAT, body)
        g = self.groups.get(req.group_id)
        mid = req.member_id
        if g is None or mid not in g.members:
            err = UNKNOWN_MEMBER_ID
        elif req.generation_id != g.generation:
            err = ILLEGAL_GENERATION
        elif g.state == "PreparingRebalance":
            err = REBALANCE_IN_PROGRESS
        else:
            err = NONE
        if g is not None and mid in g.members:
            g.members[mid].last_seen = time.monotonic()
        return {"ErrorCode": err}

    def leave(self, version: int, body) -> dict:
        req = typed(ApiKey.LEAVE_GROUP, body)
        g = self.groups.get(req.group_id)
        ids = [m.member_id for m in req.members] if version >= 3 else [req.member_id]
        results = []
        for mid in ids:
            ok = g is not None and mid in g.members
            if ok:
                self._remove(g, mid)
            results.append({"MemberId": mid, "GroupInstanceId": None, "ErrorCode": NONE if ok else UNKNOWN_MEMBER_ID})
        err = NONE if version >= 3 or all(r["ErrorCode"] == NONE for r in results) else UNKNOWN_MEMBER_ID
        return {"ErrorCode": err, "Members": results}

    def _remove(self, g: Group, mid: str) -> None:
        m = g.members.pop(mid)
        for fut in (m.join, m.sync):
            if fut is not None and not fut.done():
                fut.cancel()
        if g.members:
            self._prepare_rebalance(g)
            self._maybe_complete(g)
        else:
            g.state, g.leader, g.protocol = "Empty", None, None
            g.generation += 1

    async def expire_loop(self) -> None:
        while True:
            await asyncio.sleep(0.2)
            now = time.monotonic()
            for g in list(self.groups.values()):
                for mid, m in list(g.members.items()):
                    waiting = m.join is not None and not m.join.done()
                    if not waiting and now - m.last_seen > m.session_ms / 1000:
                        self._remove(g, mid)
