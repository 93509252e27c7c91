"""The replay broker's group coordinator: the classic (eager) consumer-group protocol and offsets.

JoinGroup (MEMBER_ID_REQUIRED first for v4+, as KIP-394 asks), a rebalance that completes when
every known member has rejoined or the rebalance timeout passes (a new group waits a short initial
delay so that members starting together land in one generation), SyncGroup (the leader's
assignment handed to each member), Heartbeat (REBALANCE_IN_PROGRESS / ILLEGAL_GENERATION /
UNKNOWN_MEMBER_ID), LeaveGroup, session expiry, and OffsetCommit / OffsetFetch persisted to a JSON
file outside the log dir so that a restarted server resumes them.  Waiting uses asyncio futures:
this module lives at the server's edge; the protocol and the log logic stay I/O-free.  The KIP-848
groups (``group.protocol=consumer``) are :mod:`consumer_groups`', held as ``kip848``.
"""
from __future__ import annotations

import asyncio
import json
import struct
import os
import time
import uuid
from dataclasses import dataclass, field

from specs.kafka_errors import (GROUP_ID_NOT_FOUND, ILLEGAL_GENERATION, INCONSISTENT_GROUP_PROTOCOL, INVALID_GROUP_ID,
                                MEMBER_ID_REQUIRED, NONE, REBALANCE_IN_PROGRESS, UNKNOWN_MEMBER_ID)
from specs.message_types import typed
from specs.messages import (DescribeGroupsRequest, DescribeGroupsResponse, HeartbeatRequest, HeartbeatResponse,
                            JoinGroupRequest, JoinGroupResponse, LeaveGroupRequest, LeaveGroupResponse,
                            ListGroupsRequest, ListGroupsResponse, OffsetCommitRequest, OffsetCommitResponse,
                            OffsetFetchRequest, OffsetFetchResponse, SyncGroupRequest, SyncGroupResponse)
from specs.protocol_messages import ApiKey

from kafkaforensics.broker.consumer_groups import ConsumerGroupCoordinator
from kafkaforensics.fsutil import atomic_write


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
    kip848: bool = False  # a KIP-848 group, as ListGroups and DescribeGroups see it


OFFSETS_TOPIC_PARTITIONS = 50  # offsets.topic.num.partitions' default


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


def _join_failed(error: int, member_id: str) -> JoinGroupResponse:
    """A JoinGroup refused before the member joins (no generation, no leader, no protocol)."""
    return JoinGroupResponse(error_code=error, generation_id=-1, leader="", member_id=member_id, members=[],
                             protocol_name=None)


class GroupCoordinator:
    def __init__(self, state_path: str | None, initial_delay_ms: int = 300, offsets_writer=None):
        self.offsets_writer = offsets_writer  # writable broker: commits also go to __consumer_offsets
        self.groups: dict[str, Group] = {}
        self.kip848 = ConsumerGroupCoordinator()  # the KIP-848 groups (ConsumerGroupHeartbeat, -Describe)
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

    def commit(self, version: int, body) -> OffsetCommitResponse:
        """OffsetCommit: a member of the generation (or a KIP-848 member at its epoch), or no group at all."""
        req: OffsetCommitRequest = typed(ApiKey.OFFSET_COMMIT, body)
        ocr = OffsetCommitResponse
        gid, gen = req.group_id, req.generation_id_or_member_epoch
        g = self.groups.get(gid)
        err = self.kip848.commit_error(gid, req.member_id, gen)  # a KIP-848 member commits with its member epoch
        if err is None:
            err = NONE if gen < 0 else self._member_error(g, req.member_id, gen)
        topics = [ocr.OffsetCommitResponseTopic(name=t.name, partitions=[
            ocr.OffsetCommitResponsePartition(partition_index=p.partition_index, error_code=err) for p in t.partitions])
            for t in req.topics]
        if err == NONE:
            self.store(gid, [(t.name, p.partition_index, p.committed_offset, p.committed_leader_epoch,
                              p.committed_metadata) for t in req.topics for p in t.partitions])
        return ocr(topics=topics)

    @staticmethod
    def _member_error(g: Group | None, member_id: str, generation: int) -> int:
        """A classic member's check (commits and heartbeats): in the group, of its generation, not rebalancing."""
        if g is None or member_id not in g.members:
            return UNKNOWN_MEMBER_ID
        if generation != g.generation:
            return ILLEGAL_GENERATION
        return REBALANCE_IN_PROGRESS if g.state == "PreparingRebalance" else NONE

    def store(self, gid: str, commits: list, write: bool = True) -> None:
        """Keep (topic, partition, offset, leader epoch, metadata) commits of a group; ``write``: also
        append them to __consumer_offsets (a transaction's commits are there already)."""
        for topic, part, offset, epoch, metadata in commits:
            self.offsets.setdefault(gid, {})[f"{topic}:{part}"] = {"offset": offset, "leaderEpoch": epoch,
                                                                   "metadata": metadata}
        self._persist()
        if write and self.offsets_writer is not None:
            self.offsets_writer(gid, [(t, p, o, e, m or "") for t, p, o, e, m in commits])

    def _fetch_group(self, gid: str, topics) -> list[tuple[str, list[dict]]]:
        """The group's committed offsets of the (typed) topics asked; None: of every topic it has any:
        (topic, [the fields of each partition, as OffsetFetch names them in snake_case])."""
        stored = self.offsets.get(gid, {})
        wanted = _all_committed(stored) if topics is None else [(t.name, t.partition_indexes) for t in topics]
        out = []
        for name, indexes in wanted:
            parts = []
            for p in indexes:
                c = stored.get(f"{name}:{p}")
                parts.append(dict(partition_index=p, committed_offset=c["offset"] if c else -1,
                                  committed_leader_epoch=c["leaderEpoch"] if c else -1,
                                  metadata=(c["metadata"] if c else "") or "", error_code=NONE))
            out.append((name, parts))
        return out

    def fetch_offsets(self, version: int, body) -> OffsetFetchResponse:
        req: OffsetFetchRequest = typed(ApiKey.OFFSET_FETCH, body)
        ofr = OffsetFetchResponse
        if version >= 8:
            return ofr(groups=[ofr.OffsetFetchResponseGroup(group_id=g.group_id, error_code=NONE, topics=[
                ofr.OffsetFetchResponseTopics(name=name, partitions=[ofr.OffsetFetchResponsePartitions(**p) for p in ps])
                for name, ps in self._fetch_group(g.group_id, g.topics)]) for g in req.groups])
        return ofr(error_code=NONE, topics=[
            ofr.OffsetFetchResponseTopic(name=name, partitions=[ofr.OffsetFetchResponsePartition(**p) for p in ps])
            for name, ps in self._fetch_group(req.group_id, req.topics)])

    # -- admin: ListGroups, DescribeGroups --------------------------------------------------------
    def known_groups(self, logged=()) -> dict[str, Group]:
        """Live groups, and the groups only their committed offsets tell of (this coordinator's and
        ``logged``, the log's __consumer_offsets): those are Empty consumer groups."""
        out = {gid: Group(gid, protocol_type="consumer") for gid in [*logged, *self.offsets]}
        out.update(self.groups)
        for gid, cg in self.kip848.groups.items():  # KIP-848 groups (GroupType "consumer")
            out[gid] = Group(gid, state="Stable" if cg.members else "Empty", protocol_type="consumer",
                             generation=cg.epoch, kip848=True)
        return out

    def list_groups(self, version: int, body, logged=()) -> ListGroupsResponse:
        req: ListGroupsRequest = typed(ApiKey.LIST_GROUPS, body)
        states = req.states_filter or []
        types = req.types_filter or []
        out = []
        for gid, g in sorted(self.known_groups(logged).items()):
            kind = "consumer" if g.kip848 else "classic"
            if (states and g.state not in states) or (types and kind not in types):
                continue
            out.append(ListGroupsResponse.ListedGroup(group_id=gid, protocol_type=g.protocol_type or "",
                                                      group_state=g.state, group_type=kind))
        return ListGroupsResponse(error_code=NONE, groups=out)

    def describe_groups(self, version: int, body, logged=()) -> DescribeGroupsResponse:
        known = self.known_groups(logged)
        dgr = DescribeGroupsResponse
        req: DescribeGroupsRequest = typed(ApiKey.DESCRIBE_GROUPS, body)
        out = []
        for gid in req.groups:
            g = known.get(gid)
            if g is None:  # Kafka describes an unknown group as Dead, with no error (GROUP_ID_NOT_FOUND from v6)
                out.append(dgr.DescribedGroup(error_code=GROUP_ID_NOT_FOUND if version >= 6 else NONE,
                                              error_message=None, group_id=gid, group_state="Dead", protocol_type="",
                                              protocol_data="", members=[], authorized_operations=-2147483648))
                continue
            stable = g.state == "Stable"
            out.append(dgr.DescribedGroup(
                error_code=NONE, error_message=None, group_id=gid, group_state=g.state,
                protocol_type=g.protocol_type or "", protocol_data=(g.protocol or "") if stable else "",
                authorized_operations=-2147483648,
                members=[dgr.DescribedGroupMember(
                    member_id=m.member_id, group_instance_id=m.instance_id, client_id=m.client_id,
                    client_host="/127.0.0.1",
                    member_metadata=dict(m.protocols).get(g.protocol, b"") if stable else b"",
                    member_assignment=(m.assignment or b"") if stable else b"") for m in g.members.values()]))
        return dgr(groups=out)

    # -- membership ------------------------------------------------------------------------------
    def _response(self, g: Group, m: Member, err=NONE) -> JoinGroupResponse:
        leader = m.member_id == g.leader
        jgr = JoinGroupResponse
        return jgr(error_code=err, generation_id=g.generation, protocol_type=g.protocol_type,
                   protocol_name=g.protocol, leader=g.leader or "", member_id=m.member_id,
                   members=[jgr.JoinGroupResponseMember(member_id=x.member_id, group_instance_id=x.instance_id,
                                                        metadata=dict(x.protocols).get(g.protocol, ""))
                            for x in g.members.values()] if leader else [])

    async def join(self, version: int, body, client_id: str | None) -> JoinGroupResponse:
        r = await self._join(version, body, client_id)
        if version < 7 and r.protocol_name is None:  # null only from v7: older versions carry ""
            r.protocol_name = ""  # (each answer is its member's own object)
        return r

    async def _join(self, version: int, body, client_id: str | None) -> JoinGroupResponse:
        req: JoinGroupRequest = typed(ApiKey.JOIN_GROUP, body)
        gid = req.group_id or ""
        if not gid:
            return _join_failed(INVALID_GROUP_ID, "")
        g = self.groups.setdefault(gid, Group(gid))
        mid = req.member_id or ""
        protocols = [(p.name, p.metadata) for p in req.protocols]
        if g.protocol_type and req.protocol_type != g.protocol_type and g.members:
            return _join_failed(INCONSISTENT_GROUP_PROTOCOL, mid)
        if not mid:
            mid = f"{client_id or 'member'}-{uuid.uuid4()}"
            if version >= 4:
                return _join_failed(MEMBER_ID_REQUIRED, mid)
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
                x.sync.set_result(SyncGroupResponse(error_code=REBALANCE_IN_PROGRESS, assignment=""))
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

    async def sync(self, version: int, body) -> SyncGroupResponse:
        req: SyncGroupRequest = typed(ApiKey.SYNC_GROUP, body)
        g = self.groups.get(req.group_id)
        mid = req.member_id
        if g is None or mid not in g.members:
            return SyncGroupResponse(error_code=UNKNOWN_MEMBER_ID, assignment="")
        if req.generation_id != g.generation:
            return SyncGroupResponse(error_code=ILLEGAL_GENERATION, assignment="")
        if g.state == "PreparingRebalance":
            return SyncGroupResponse(error_code=REBALANCE_IN_PROGRESS, assignment="")
        m = g.members[mid]
        m.last_seen = time.monotonic()

        def synced(x: Member) -> SyncGroupResponse:
            return SyncGroupResponse(error_code=NONE, protocol_type=g.protocol_type, protocol_name=g.protocol,
                                     assignment=x.assignment)
        if g.state == "Stable":
            return synced(m)
        if mid == g.leader:
            given = {a.member_id: a.assignment for a in req.assignments}
            g.state = "Stable"
            for x in g.members.values():
                x.assignment = given.get(x.member_id, "")
                if x.sync is not None and not x.sync.done():
                    x.sync.set_result(synced(x))
            return synced(m)
        m.sync = asyncio.get_running_loop().create_future()
        return await m.sync

    def heartbeat(self, version: int, body) -> HeartbeatResponse:
        req: HeartbeatRequest = typed(ApiKey.HEARTBEAT, body)
        g = self.groups.get(req.group_id)
        mid = req.member_id
        err = self._member_error(g, mid, req.generation_id)
        if g is not None and mid in g.members:
            g.members[mid].last_seen = time.monotonic()
        return HeartbeatResponse(error_code=err)

    def leave(self, version: int, body) -> LeaveGroupResponse:
        req: LeaveGroupRequest = typed(ApiKey.LEAVE_GROUP, body)
        g = self.groups.get(req.group_id)
        ids = [m.member_id for m in req.members] if version >= 3 else [req.member_id]
        results = []
        for mid in ids:
            ok = g is not None and mid in g.members
            if g is not None and ok:
                self._remove(g, mid)
            results.append(LeaveGroupResponse.MemberResponse(member_id=mid, group_instance_id=None,
                                                             error_code=NONE if ok else UNKNOWN_MEMBER_ID))
        err = NONE if version >= 3 or all(r.error_code == NONE for r in results) else UNKNOWN_MEMBER_ID
        return LeaveGroupResponse(error_code=err, members=results)

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
