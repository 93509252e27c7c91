"""The replay broker's sans-IO core: a request event in, what to do about it out.

One dispatch by API key (:class:`specs.protocol_messages.ApiKey`), as Kafka's ``KafkaApis.handle``:
:data:`API_TABLE` names the one handler of each advertised API -- this core's for the group APIs,
which it adapts to :class:`~kafkaforensics.broker.group_coordinator.GroupCoordinator`, and for the
APIs whose file work it moves off the event loop; else the broker's (:mod:`replay`) or one of the
objects it holds by concern (:mod:`read_path`, :mod:`transactions`, :mod:`topic_creation`,
:mod:`replay_admin`).  No handler is looked up by name.  Around the handlers, the protocol's decisions as
Kafka's broker makes them:

- an API or version this broker does not serve closes the connection (:class:`Close`), except
  ApiVersions, answered at v0 with UNSUPPORTED_VERSION and the versions it does serve; so does a
  malformed frame (a :class:`~kafkaforensics.broker.protocol.ProtocolViolation`);
- Produce with acks=0 gets no response (:class:`NoReply`);
- a Fetch for some partitions, with fewer than MinBytes to give and no partition error, waits up
  to MaxWaitMs (at most :data:`MAX_WAIT_MS`): :class:`WaitForData` names the end offset it saw of
  each partition; an append past one of them wakes it (:meth:`BrokerCore.wakeups`), then the edge asks again
  (:meth:`BrokerCore.retry`) or, at the deadline, takes what there is (:meth:`BrokerCore.expire`);
- JoinGroup and SyncGroup answer when the group's rebalance completes: :class:`Deferred` hands the
  edge the coordinator's awaitable, :meth:`BrokerCore.finish` encodes its result;
- CreateTopics and CreatePartitions decide at once (names reserved, caps checked) and leave the
  partition dirs to :attr:`BrokerCore.offload` (the edge runs them in a worker thread, so other
  connections are answered meanwhile) as a :class:`Deferred`; without an offload they are made inline.

The asyncio edge (:mod:`server`) only moves bytes, runs the timers and awaits.
"""
from __future__ import annotations

import inspect
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable

from specs.kafka_errors import NONE, UNSUPPORTED_VERSION
from specs.message_types import Struct
from specs.messages import FetchResponse, MetadataResponse
from specs.protocol_messages import ApiKey

from kafkaforensics.broker.protocol import (FileRegion, ProtocolViolation, Request, UnsupportedRequest, encode_response,
                                            encode_response_parts)
from kafkaforensics.broker.topic_creation import Answer, PartitionsNotMade

#: the longest a Fetch waits for data, whatever its MaxWaitMs asks
MAX_WAIT_MS = 30_000
#: OffsetCommit and OffsetFetch name topics by id from this version on
FIRST_TOPIC_ID_VERSION = 10


@dataclass
class Reply:
    """The framed response: ``bytes`` and :class:`~kafkaforensics.broker.protocol.FileRegion` parts, in order."""
    parts: list

    def to_bytes(self) -> bytes:
        """The response as one byte string (the regions read from their files)."""
        out = bytearray()
        for p in self.parts:
            if isinstance(p, FileRegion):
                out += p.read()
            else:
                out += p
        return bytes(out)


@dataclass
class NoReply:
    """A request answered by silence (Produce with acks=0)."""
    request: Request


@dataclass
class Close:
    """Close the connection (an API or version not served, a malformed frame)."""
    reason: str


@dataclass
class WaitForData:
    """A Fetch that waits: until a partition's end passes the offset it saw, or ``timeout_ms``."""
    id: int
    request: Request
    ends: dict = field(default_factory=dict)   # (topic, partition) -> the end offset the answer saw
    timeout_ms: int = 0


@dataclass
class Deferred:
    """An answer that completes later: await ``awaitable``, then :meth:`BrokerCore.finish` it."""
    request: Request
    awaitable: Awaitable


class BrokerCore:
    def __init__(self, broker, groups):
        self.broker, self.groups = broker, groups
        # a writable broker's commits also go to __consumer_offsets; a committed transaction's offsets
        # become the group's (they are in the log already)
        groups.offsets_writer = broker.write_offset_commits if broker.writable else None
        broker.on_txn_offsets = lambda group, commits: groups.store(group, commits, write=False)
        broker.coordinator = groups  # for tests and notebooks: the group state
        self.waiting: dict[int, WaitForData] = {}
        self._next_wait = 0
        #: fn -> awaitable running fn away from the event loop (the edge sets it); None: run inline
        self.offload: Callable[[Callable], Awaitable] | None = None

    # -- requests in, outcomes out ---------------------------------------------------------------
    def handle(self, event):
        """Reply, NoReply, Close, WaitForData or Deferred for one event of a Connection."""
        b = self.broker
        if isinstance(event, ProtocolViolation):
            return Close(event.reason)
        if isinstance(event, UnsupportedRequest) or not b.supports(event.api_key, event.api_version):
            if event.api_key == ApiKey.API_VERSIONS:  # at v0, with the versions this broker does serve
                return Reply([encode_response(ApiKey.API_VERSIONS, 0, event.correlation_id,
                                              b.api_versions(0, {}, error=UNSUPPORTED_VERSION))])
            name = getattr(event, "name", f"api_key_{event.api_key}")
            return Close(f"unsupported {name} v{event.api_version} from {event.client_id}")
        body = API_TABLE[event.api_key](self, event)
        if inspect.isawaitable(body):
            return Deferred(event, body)
        if event.api_key == ApiKey.PRODUCE and event.typed.acks == 0:
            return NoReply(event)
        if event.api_key == ApiKey.FETCH:
            return self._fetched(event, body)
        return self.finish(event, body)

    def finish(self, request: Request, body: Struct) -> Reply:
        """The framed answer to ``request`` (Fetch's with its record regions left in the files)."""
        encode = encode_response_parts if request.api_key == ApiKey.FETCH else _one_part
        return Reply(encode(request.api_key, request.api_version, request.correlation_id, body))

    # -- long polls ------------------------------------------------------------------------------
    def _fetched(self, request: Request, body: FetchResponse, wait_id: int | None = None):
        """Answer now, as Kafka's ReplicaManager does when no wait is asked, no partition is, MinBytes
        are there or a partition has an error; else wait for an append past the ends this answer saw."""
        parts = [p for t in body.responses for p in t.partitions]
        req = request.typed
        wait = min(req.max_wait_ms, MAX_WAIT_MS)
        if (wait <= 0 or not parts or sum(len(p.records) for p in parts) >= req.min_bytes
                or any(p.error_code != NONE for p in parts)):
            if wait_id is not None:
                self.waiting.pop(wait_id, None)
            return self.finish(request, body)
        if wait_id is None:
            wait_id, self._next_wait = self._next_wait, self._next_wait + 1
        committed = req.isolation_level == 1
        ends = {}
        for key in self._fetched_partitions(request):
            s = self.broker.partitions.get(key)
            if s is not None:
                ends[key] = s.last_stable_offset if committed else s.log_end_offset
        w = self.waiting[wait_id] = WaitForData(wait_id, request, ends, wait)
        return w

    def _fetched_partitions(self, request: Request) -> list:
        return [(self.broker.fetched_topic(request.api_version, t), p.partition)
                for t in request.typed.topics for p in t.partitions]

    def wakeups(self) -> list[WaitForData]:
        """The waiting fetches an append (or a deleted partition) has given something new."""
        out = []
        for w in self.waiting.values():
            committed = w.request.typed.isolation_level == 1
            for key, seen in w.ends.items():
                s = self.broker.partitions.get(key)
                if s is None or (s.last_stable_offset if committed else s.log_end_offset) > seen:
                    out.append(w)
                    break
        return out

    def retry(self, wait: WaitForData):
        """Ask a woken fetch again: a Reply, or the same wait with the ends seen now."""
        return self._fetched(wait.request, self._fetch(wait.request), wait.id)

    def expire(self, wait: WaitForData) -> Reply:
        """The deadline passed: the answer is whatever there is now."""
        self.waiting.pop(wait.id, None)
        return self.finish(wait.request, self._fetch(wait.request))

    def forget(self, wait: WaitForData) -> None:
        """The connection went away while it waited."""
        self.waiting.pop(wait.id, None)

    def _fetch(self, request: Request) -> FetchResponse:
        return self.broker.read_path.fetch(request.api_version, request.typed)

    # -- partition dirs, made away from the event loop ------------------------------------------
    def create_topics(self, r: Request):
        return self._make(*self.broker.topic_creation.plan_topics(r.api_version, r.typed))

    def metadata(self, r: Request):
        """Topics it names are auto-created off the event loop first (the broker answers after)."""
        plan = self.broker.topic_creation.plan_auto_create(r.api_version, r.typed)
        if not plan:
            return self.broker.read_path.metadata(r.api_version, r.typed)
        if self.offload is None:
            self.broker.topic_creation.make_and_adopt(None, plan)
            return self.broker.read_path.metadata(r.api_version, r.typed)
        return self._auto_created(r, plan)

    async def _auto_created(self, r: Request, plan: list) -> MetadataResponse:
        await self._made(None, plan)
        return self.broker.read_path.metadata(r.api_version, r.typed)

    def create_partitions(self, r: Request):
        return self._make(*self.broker.write_admin.plan_partitions(r.api_version, r.typed))

    def _make(self, body: Answer, plan: list):
        if not plan:
            return body
        if self.offload is None:
            return self.broker.topic_creation.make_and_adopt(body, plan)
        return self._made(body, plan)

    async def _made(self, body: Answer, plan: list) -> Answer:
        assert self.offload is not None  # (_make and metadata come here only with one)
        try:
            made = await self.offload(lambda: self.broker.topic_creation.make_partitions(plan))
        except PartitionsNotMade as e:
            return self.broker.topic_creation.make_and_adopt(body, plan, make=lambda _plan: _raise(e))
        except BaseException:
            self.broker.topic_creation.adopt(plan, [])
            raise
        return self.broker.topic_creation.make_and_adopt(body, plan, make=lambda _plan: made)

    # -- the group APIs, adapted to the coordinator ----------------------------------------------
    def join_group(self, r: Request):
        return self.groups.join(r.api_version, r.typed, r.client_id)

    def sync_group(self, r: Request):
        return self.groups.sync(r.api_version, r.typed)

    def heartbeat(self, r: Request) -> dict:
        return self.groups.heartbeat(r.api_version, r.typed)

    def leave_group(self, r: Request) -> dict:
        return self.groups.leave(r.api_version, r.typed)

    def offset_commit(self, r: Request) -> dict:
        by_id = r.api_version >= FIRST_TOPIC_ID_VERSION
        if by_id:
            self.broker.names_for_ids(r.typed.topics)
        body = self.groups.commit(r.api_version, r.typed)
        if by_id:
            self.broker.ids_for_names(body.topics)
        return body

    def offset_fetch(self, r: Request) -> dict:
        by_id = r.api_version >= FIRST_TOPIC_ID_VERSION
        for g in r.typed.groups if by_id else ():
            self.broker.names_for_ids(g.topics)
        body = self.groups.fetch_offsets(r.api_version, r.typed)
        for g in body.groups or [] if by_id else ():
            self.broker.ids_for_names(g.topics)
        return body

    def describe_groups(self, r: Request) -> dict:
        """Live groups and those the log's commits tell of."""
        return self.groups.describe_groups(r.api_version, r.typed, self.broker.logged_groups())

    def list_groups(self, r: Request) -> dict:
        return self.groups.list_groups(r.api_version, r.typed, self.broker.logged_groups())

    def _topic_sizes(self) -> dict:
        return {t: (ps[0].topic_id, len(ps)) for t, ps in self.broker.topics().items()}

    def consumer_group_heartbeat(self, r: Request) -> dict:  # KIP-848
        return self.groups.kip848.heartbeat(r.api_version, r.typed, r.client_id, self._topic_sizes())

    def consumer_group_describe(self, r: Request) -> dict:
        return self.groups.kip848.describe(r.api_version, r.typed, self._topic_sizes())


def _raise(e: BaseException):
    raise e


def _one_part(api_key: int, api_version: int, correlation_id: int, body: Struct) -> list:
    return [encode_response(api_key, api_version, correlation_id, body)]


#: a handler: the core and the request in; a response body, or an awaitable of one, out
Handler = Callable[[BrokerCore, Request], Any]
#: ApiKey -> the one handler answering it (Kafka's KafkaApis.handle): every API ApiVersions may advertise
API_TABLE: dict[int, Handler] = {
    ApiKey.PRODUCE: lambda c, r: c.broker.produce(r.api_version, r.typed),
    ApiKey.FETCH: lambda c, r: c.broker.read_path.fetch(r.api_version, r.typed),
    ApiKey.LIST_OFFSETS: lambda c, r: c.broker.read_path.list_offsets(r.api_version, r.typed),
    ApiKey.METADATA: BrokerCore.metadata,
    ApiKey.OFFSET_COMMIT: BrokerCore.offset_commit,
    ApiKey.OFFSET_FETCH: BrokerCore.offset_fetch,
    ApiKey.FIND_COORDINATOR: lambda c, r: c.broker.read_path.find_coordinator(r.api_version, r.typed),
    ApiKey.JOIN_GROUP: BrokerCore.join_group,
    ApiKey.HEARTBEAT: BrokerCore.heartbeat,
    ApiKey.LEAVE_GROUP: BrokerCore.leave_group,
    ApiKey.SYNC_GROUP: BrokerCore.sync_group,
    ApiKey.DESCRIBE_GROUPS: BrokerCore.describe_groups,
    ApiKey.LIST_GROUPS: BrokerCore.list_groups,
    ApiKey.API_VERSIONS: lambda c, r: c.broker.api_versions(r.api_version, r.typed),
    ApiKey.CREATE_TOPICS: BrokerCore.create_topics,
    ApiKey.DELETE_TOPICS: lambda c, r: c.broker.write_admin.delete_topics(r.api_version, r.typed),
    ApiKey.DELETE_RECORDS: lambda c, r: c.broker.write_admin.delete_records(r.api_version, r.typed),
    ApiKey.INIT_PRODUCER_ID: lambda c, r: c.broker.transactions.init_producer_id(r.api_version, r.typed),
    ApiKey.OFFSET_FOR_LEADER_EPOCH: lambda c, r: c.broker.admin.offset_for_leader_epoch(r.api_version, r.typed),
    ApiKey.ADD_PARTITIONS_TO_TXN: lambda c, r: c.broker.transactions.add_partitions_to_txn(r.api_version, r.typed),
    ApiKey.ADD_OFFSETS_TO_TXN: lambda c, r: c.broker.transactions.add_offsets_to_txn(r.api_version, r.typed),
    ApiKey.END_TXN: lambda c, r: c.broker.transactions.end_txn(r.api_version, r.typed),
    ApiKey.TXN_OFFSET_COMMIT: lambda c, r: c.broker.transactions.txn_offset_commit(r.api_version, r.typed),
    ApiKey.DESCRIBE_CONFIGS: lambda c, r: c.broker.admin.describe_configs(r.api_version, r.typed),
    ApiKey.DESCRIBE_LOG_DIRS: lambda c, r: c.broker.admin.describe_log_dirs(r.api_version, r.typed),
    ApiKey.CREATE_PARTITIONS: BrokerCore.create_partitions,
    ApiKey.DESCRIBE_CLUSTER: lambda c, r: c.broker.admin.describe_cluster(r.api_version, r.typed),
    ApiKey.DESCRIBE_PRODUCERS: lambda c, r: c.broker.admin.describe_producers(r.api_version, r.typed),
    ApiKey.DESCRIBE_TRANSACTIONS: lambda c, r: c.broker.admin.describe_transactions(r.api_version, r.typed),
    ApiKey.LIST_TRANSACTIONS: lambda c, r: c.broker.admin.list_transactions(r.api_version, r.typed),
    ApiKey.CONSUMER_GROUP_HEARTBEAT: BrokerCore.consumer_group_heartbeat,
    ApiKey.CONSUMER_GROUP_DESCRIBE: BrokerCore.consumer_group_describe,
}
