"""The replay broker's logic, without I/O: a request in, a response body out.

Every live ``<topic>-<partition>`` directory under the log dir is a partition this one-node cluster
leads, served as it is on disk (the versions advertised are Kafka 4.x's, ``specs.protocol_messages.ADVERTISED``;
the admin APIs are in :mod:`replay_admin`).  Implemented:
ApiVersions, Metadata, ListOffsets (earliest, latest, by timestamp), Fetch (read_uncommitted and
read_committed with the aborted-transaction list from the .txnindex files), FindCoordinator.
Without ``writable`` nothing on disk is written; with it, Produce (acks 0/1/all, idempotent
producers), InitProducerId, AddPartitionsToTxn, EndTxn (control batches and .txnindex entries) and
CreateTopics append through :class:`~kafkaforensics.live_log.LiveLog`.  Topic names are validated
and only ever matched against partition directories this broker knows, so no request can reach
outside the log dir.
"""
from __future__ import annotations

import logging
import os
import re
from dataclasses import dataclass, field

from . import offset_index
from .errors import Problem
from .partition import derived_topic_id, find_partitions, partition_dir_state, write_partition_metadata
from .producer_state import ProducerState
from .replay_admin import AdminAPIs, WriteAdminAPIs
from .segment import BatchScanner, file_name, open_buffer
from .txn_index import read_entries as read_txn_entries
from specs import protocol_messages as P
from specs.message_schema import FileRegion

from specs.kafka_errors import (CORRUPT_MESSAGE, INVALID_PARTITIONS, INVALID_PRODUCER_EPOCH,
                                INVALID_PRODUCER_ID_MAPPING, INVALID_TOPIC, NONE, OFFSET_OUT_OF_RANGE, POLICY_VIOLATION,
                                TOPIC_ALREADY_EXISTS, UNKNOWN_TOPIC_ID, UNKNOWN_TOPIC_OR_PARTITION, UNSUPPORTED_VERSION)
EARLIEST, LATEST, MAX_TIMESTAMP = -2, -1, -3
_TOPIC_RE = re.compile(r"^[a-zA-Z0-9._-]{1,249}$")

#: the APIs that change the log dir: advertised only with ``writable``
WRITE_ONLY = {19, 20, 21, 22, 24, 25, 26, 28, 37}
#: api key -> (min, max) advertised read-only, as Kafka 4.x lists them (specs.protocol_messages)
#: (Produce is answered -- with POLICY_VIOLATION while read-only -- so that clients see a broker of
#: the v2 message format era and fetch with v4+.)
SUPPORTED = {k: v for k, v in P.ADVERTISED.items() if k not in WRITE_ONLY}


_log = logging.getLogger("kfx.serve")


class CorruptBatch(Exception):
    """The batch a fetch would start with fails its CRC: Fetch answers CORRUPT_MESSAGE for that
    partition (Kafka's consumers raise it to the application) instead of handing the bytes out."""

    def __init__(self, file: str, position: int, offset: int):
        self.problem = Problem(file, position, offset, "crc-mismatch", "batch CRC does not match its bytes")
        super().__init__(str(self.problem))


@dataclass
class Served:
    topic: str
    partition: int
    path: str
    segments: list = field(default_factory=list)   # base offsets
    log_start: int = 0
    log_end: int = 0
    last_stable: int = 0
    leader_epoch: int = 0
    topic_id: str = ""
    epochs: list = field(default_factory=list)     # the leader-epoch cache: [(epoch, start offset)]
    producers: object = None                       # the ProducerState the log holds (DescribeProducers)

    def epoch_at(self, offset: int) -> int:
        """The leader epoch an offset was written in (the last cache entry starting at or before it)."""
        found = -1
        for epoch, start in self.epochs:
            if start <= offset:
                found = epoch
        return found

    def seg_path(self, base: int, suffix: str) -> str:
        return os.path.join(self.path, file_name(base, suffix))


def valid_topic(name) -> bool:
    return isinstance(name, str) and bool(_TOPIC_RE.match(name)) and name not in (".", "..")


WRITE_APIS = {k: P.ADVERTISED[k] for k in WRITE_ONLY}
#: created by their coordinators, never by a client's Metadata or Produce
INTERNAL_TOPICS = {"__consumer_offsets", "__transaction_state", "__share_group_state"}


class ReplayBroker(AdminAPIs, WriteAdminAPIs):
    def __init__(self, log_dir: str, *, node_id: int = 0, host: str = "127.0.0.1", port: int = 9092,
                 writable: bool = False, auto_create: bool = True, partitions: int = 1):
        self.log_dir = os.path.abspath(log_dir)
        self.node_id, self.host, self.port = node_id, host, port
        self.writable = writable
        # auto.create.topics.enable (Kafka's default: true) and num.partitions, with writable only
        self.auto_create, self.default_partitions = auto_create, max(1, partitions)
        self.partitions: dict[tuple[str, int], Served] = {}
        self.live: dict = {}
        self._index_cache: dict[str, tuple] = {}  # .index path -> (size, mtime, entries)
        self.txns: dict[str, dict] = {}
        self.on_txn_offsets = None  # (group, commits) -> None: a committed transaction's offsets
        self.next_producer_id = 1000
        self.reload()

    # -- the log dir ---------------------------------------------------------------------------
    def reload(self) -> None:
        from .partition import read_offset_checkpoints
        try:
            starts = read_offset_checkpoints(self.log_dir).get("log-start-offset-checkpoint", {})
        except Exception:  # a damaged checkpoint: the first segment's base serves
            starts = {}
        for pd in find_partitions(self.log_dir):
            if pd.topic is None or not valid_topic(pd.topic) or partition_dir_state(pd.path) not in ("live", None):
                continue  # a -delete, -future or -stray copy never stands in for the partition
            s = Served(pd.topic, pd.partition, pd.path, [seg.base_offset for seg in pd.segments])
            state = ProducerState()
            batch_epochs: list = []
            leo = s.segments[0] if s.segments else 0
            for seg in pd.segments:
                with open_buffer(seg.log) as buf:
                    for b in BatchScanner(buf, file=seg.log, base_offset=seg.base_offset):
                        if not b.crc_valid():
                            break
                        state.append(b)
                        leo = b.last_offset + 1
                        if b.magic >= 2 and b.partition_leader_epoch > s.leader_epoch:
                            s.leader_epoch = b.partition_leader_epoch
                        if b.magic >= 2 and b.partition_leader_epoch >= 0 and (
                                not batch_epochs or b.partition_leader_epoch > batch_epochs[-1][0]):
                            batch_epochs.append((b.partition_leader_epoch, b.base_offset))
            if state.producers:
                self.next_producer_id = max(self.next_producer_id, max(state.producers) + 1)
            s.log_start = s.segments[0] if s.segments else 0
            if s.log_start < starts.get((s.topic, s.partition), -1) <= leo:  # DeleteRecords moved it
                s.log_start = starts[(s.topic, s.partition)]
            s.producers = state
            s.log_end = leo
            s.last_stable = state.first_unstable_offset() if state.first_unstable_offset() is not None else leo
            try:  # Kafka's leader-epoch cache when the checkpoint is there, else the batches' epochs
                cache = pd.leader_epochs()
                s.epochs = [(e["epoch"], e["startOffset"]) for e in cache] if cache else batch_epochs
            except Exception:
                s.epochs = batch_epochs
            try:
                md = pd.partition_metadata()
                if md:
                    s.topic_id = md["topicId"]
            except Exception:  # a damaged partition.metadata: the derived id still serves
                pass
            self.partitions[(s.topic, s.partition)] = s
        for parts in self.topics().values():  # one id a topic: its partition.metadata's, else derived
            tid = next((s.topic_id for s in parts if s.topic_id), None) or derived_topic_id(parts[0].topic)
            for s in parts:
                s.topic_id = tid

    def logged_groups(self) -> list[str]:
        """The groups with offsets committed in the log dir's __consumer_offsets."""
        if not any(t == "__consumer_offsets" for t, _p in self.partitions):
            return []
        from .groups import committed_offsets
        return sorted({row["group"] for row in committed_offsets(self.log_dir)})

    def topic_ids(self) -> dict[str, str]:
        """Topic id -> topic name."""
        return {s.topic_id: t for (t, _p), s in self.partitions.items()}

    def _name(self, version: int, topic: dict, first_id_version: int, name_key: str = "Name"):
        """The topic a request names: by name before ``first_id_version``, by TopicId from it on."""
        if version >= first_id_version:
            return self.topic_ids().get(topic.get("TopicId"))
        return topic.get(name_key)

    def names_for_ids(self, topics: list | None) -> None:
        """Fill in Name from TopicId (OffsetCommit v10+, OffsetFetch v10+), for the group coordinator."""
        ids = self.topic_ids()
        for t in topics or []:
            if t.get("TopicId") and not t.get("Name"):
                t["Name"] = ids.get(t["TopicId"], "")

    def ids_for_names(self, topics: list | None) -> None:
        """Fill in TopicId from Name in a group coordinator's answer."""
        ids = {n: i for i, n in self.topic_ids().items()}
        for t in topics or []:
            t["TopicId"] = ids.get(t.get("Name"), "AAAAAAAAAAAAAAAAAAAAAA")

    def topics(self) -> dict[str, list[Served]]:
        out: dict[str, list[Served]] = {}
        for (t, _p), s in sorted(self.partitions.items()):
            out.setdefault(t, []).append(s)
        return out

    # -- dispatch --------------------------------------------------------------------------------
    def handle(self, api_key: int, version: int, body: dict) -> dict:
        return {18: self.api_versions, 3: self.metadata, 2: self.list_offsets, 1: self.fetch,
                10: self.find_coordinator, 0: self.produce, 22: self.init_producer_id,
                24: self.add_partitions_to_txn, 26: self.end_txn, 19: self.create_topics,
                60: self.describe_cluster, 32: self.describe_configs, 35: self.describe_log_dirs,
                23: self.offset_for_leader_epoch, 61: self.describe_producers, 66: self.list_transactions,
                65: self.describe_transactions, 25: self.add_offsets_to_txn, 28: self.txn_offset_commit,
                21: self.delete_records, 20: self.delete_topics, 37: self.create_partitions}[api_key](version, body)

    # -- writing (--writable) ----------------------------------------------------------------------
    def _live(self, s: Served):
        from .live_log import LiveLog
        key = (s.topic, s.partition)
        if key not in self.live:
            self.live[key] = LiveLog(s.path)
        return self.live[key]

    def _refresh(self, s: Served, log) -> None:
        s.log_end, s.last_stable = log.next_offset, log.last_stable_offset
        if log.active not in s.segments:
            s.segments.append(log.active)

    def produce(self, version: int, body: dict) -> dict:
        """Read-only: every partition answers POLICY_VIOLATION; writable: append (see LiveLog)."""
        out = []
        for t in body.get("TopicData", []):
            parts = []
            name = self._name(version, t, 13)
            for p in t.get("PartitionData", []):
                r = {"Index": p["Index"], "ErrorCode": NONE, "BaseOffset": -1, "LogStartOffset": -1,
                     "RecordErrors": [], "ErrorMessage": None, "LogAppendTimeMs": -1}
                if name is not None and version < 13 and not any(k[0] == name for k in self.partitions):
                    self.maybe_auto_create(name)
                s = self.partitions.get((name, p["Index"]))
                if not self.writable:
                    r.update(ErrorCode=POLICY_VIOLATION,
                             ErrorMessage="this replay broker is read-only (start it with --writable)")
                elif s is None:
                    r["ErrorCode"] = UNKNOWN_TOPIC_ID if version >= 13 and name is None else UNKNOWN_TOPIC_OR_PARTITION
                else:
                    log = self._live(s)
                    err, base = log.append(p.get("Records") or b"", s.leader_epoch)
                    self._refresh(s, log)
                    r.update(ErrorCode=err, BaseOffset=base, LogStartOffset=s.log_start)
                parts.append(r)
            out.append({"Name": t.get("Name"), "TopicId": t.get("TopicId"), "PartitionResponses": parts})
        return {"ThrottleTimeMs": 0, "Responses": out}

    def offsets_partition(self, group: str) -> Served:
        """__consumer_offsets-N of a group, N = abs(group.hashCode) % 50; created on first use."""
        from .group_coordinator import offsets_partition_for
        n = offsets_partition_for(group)
        key = ("__consumer_offsets", n)
        s = self.partitions.get(key)
        if s is None:
            d = os.path.join(self.log_dir, f"__consumer_offsets-{n}")
            os.makedirs(d, exist_ok=True)
            tid = next((x.topic_id for (t, _p), x in self.partitions.items() if t == "__consumer_offsets"),
                       None) or derived_topic_id("__consumer_offsets")
            write_partition_metadata(d, tid)
            s = self.partitions[key] = Served("__consumer_offsets", n, d, [0], topic_id=tid, epochs=[(0, 0)])
        return s

    def write_offset_commits(self, group: str, commits: list) -> None:
        """Append the commits to __consumer_offsets-N as the group coordinator writes them
        (key v1, value v3), N = abs(group.hashCode) % 50; the partition dir is created on first use."""
        import time as _t
        from .batch import Record
        from .builder import build_v2
        from .internal_topics import encode_offset_commit
        s = self.offsets_partition(group)
        log = self._live(s)
        now = int(_t.time() * 1000)
        recs = []
        for i, (topic, part, offset, epoch, metadata) in enumerate(commits):
            k, v = encode_offset_commit(group, topic, part, offset, metadata=metadata, commit_ts=now,
                                        leader_epoch=epoch)
            recs.append(Record(log.next_offset + i, now, k, v, []))
        if recs:
            log.append(build_v2(recs, base_offset=log.next_offset), s.leader_epoch)
            self._refresh(s, log)

    def init_producer_id(self, version: int, body: dict) -> dict:
        tid = body.get("TransactionalId")
        if tid is None:
            pid = self.next_producer_id
            self.next_producer_id += 1
            return {"ThrottleTimeMs": 0, "ErrorCode": NONE, "ProducerId": pid, "ProducerEpoch": 0}
        t = self.txns.get(tid)
        if t is None:
            t = self.txns[tid] = {"pid": self.next_producer_id, "epoch": 0, "partitions": set()}
            self.next_producer_id += 1
        else:
            if t["partitions"]:  # a new session of the same transactional id aborts what was open
                self._end(t, commit=False)
            t["epoch"] += 1
        return {"ThrottleTimeMs": 0, "ErrorCode": NONE, "ProducerId": t["pid"], "ProducerEpoch": t["epoch"]}

    def add_partitions_to_txn(self, version: int, body: dict) -> dict:
        tid, pid, epoch = (body.get("V3AndBelowTransactionalId"), body.get("V3AndBelowProducerId"),
                           body.get("V3AndBelowProducerEpoch"))
        t = self.txns.get(tid)
        err = NONE
        if t is None or t["pid"] != pid:
            err = INVALID_PRODUCER_ID_MAPPING
        elif t["epoch"] != epoch:
            err = INVALID_PRODUCER_EPOCH
        results = []
        for topic in body.get("V3AndBelowTopics", []):
            rs = []
            for p in topic.get("Partitions", []):
                e = err
                if e == NONE and (topic["Name"], p) not in self.partitions:
                    e = UNKNOWN_TOPIC_OR_PARTITION
                if e == NONE:
                    t["partitions"].add((topic["Name"], p))
                rs.append({"PartitionIndex": p, "PartitionErrorCode": e})
            results.append({"Name": topic["Name"], "ResultsByPartition": rs})
        return {"ThrottleTimeMs": 0, "ResultsByTopicV3AndBelow": results}

    def end_txn(self, version: int, body: dict) -> dict:
        t = self.txns.get(body.get("TransactionalId"))
        if t is None or t["pid"] != body.get("ProducerId"):
            return {"ThrottleTimeMs": 0, "ErrorCode": INVALID_PRODUCER_ID_MAPPING}
        if t["epoch"] != body.get("ProducerEpoch"):
            return {"ThrottleTimeMs": 0, "ErrorCode": INVALID_PRODUCER_EPOCH}
        self._end(t, commit=bool(body.get("Committed")))
        return {"ThrottleTimeMs": 0, "ErrorCode": NONE}

    def _end(self, t: dict, commit: bool) -> None:
        import time as _t
        for key in sorted(t["partitions"]):
            s = self.partitions.get(key)
            if s is None:
                continue
            log = self._live(s)
            log.append_marker(t["pid"], t["epoch"], commit, s.leader_epoch, timestamp=int(_t.time() * 1000))
            self._refresh(s, log)
        t["partitions"] = set()
        offsets, t["offsets"] = t.get("offsets") or {}, {}
        if commit and self.on_txn_offsets is not None:
            for group, commits in offsets.items():
                self.on_txn_offsets(group, commits)

    def create_topics(self, version: int, body: dict) -> dict:
        out = []
        for t in body.get("Topics", []):
            name, n = t.get("Name"), t.get("NumPartitions", 1)
            r = {"Name": name, "ErrorCode": NONE, "ErrorMessage": None, "NumPartitions": n, "ReplicationFactor": 1,
                 "Configs": None, "TopicId": "AAAAAAAAAAAAAAAAAAAAAA"}
            if not valid_topic(name):
                r.update(ErrorCode=INVALID_TOPIC, ErrorMessage=f"illegal topic name {name!r}")
            elif any(k[0] == name for k in self.partitions):
                r.update(ErrorCode=TOPIC_ALREADY_EXISTS, ErrorMessage=f"topic {name} already exists")
            elif n == -1 or n < 1:
                n = 1 if n == -1 else n
                if n < 1:
                    r.update(ErrorCode=INVALID_PARTITIONS, ErrorMessage="partitions must be at least 1")
            if r["ErrorCode"] == NONE and not body.get("validateOnly"):
                r.update(TopicId=self._create_topic(name, n), NumPartitions=n)
            out.append(r)
        return {"ThrottleTimeMs": 0, "Topics": out}

    def _create_topic(self, name: str, n: int) -> str:
        """Partition dirs 0..n-1 with partition.metadata (a random id, as Kafka's controller gives)."""
        import base64
        import uuid
        tid = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        while tid.startswith("-"):
            tid = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        for p in range(n):
            d = os.path.join(self.log_dir, f"{name}-{p}")
            os.makedirs(d, exist_ok=False)
            write_partition_metadata(d, tid)
            s = Served(name, p, d, [0], topic_id=tid, epochs=[(0, 0)])
            self.partitions[(name, p)] = s
            self._live(s)
        return tid

    def maybe_auto_create(self, name) -> bool:
        """Create a topic a Metadata or Produce request names, as Kafka does with
        auto.create.topics.enable: only writable, only a legal name, never an internal topic."""
        if not (self.writable and self.auto_create) or not valid_topic(name) or name in INTERNAL_TOPICS:
            return False
        if any(k[0] == name for k in self.partitions):
            return True
        self._create_topic(name, self.default_partitions)
        return True

    def supports(self, api_key: int, version: int) -> bool:
        """Advertised and parseable (Produce lists v0-2 but, as in Kafka 4, accepts v3+ only)."""
        lo_hi = SUPPORTED.get(api_key) or (WRITE_APIS.get(api_key) if self.writable else None)
        m = P.REQUESTS.get(api_key)
        return (lo_hi is not None and lo_hi[0] <= version <= lo_hi[1] and m is not None
                and m.valid[0] <= version <= m.valid[1])

    def api_versions(self, version: int, body: dict, error: int = NONE) -> dict:
        return {"ErrorCode": error, "ThrottleTimeMs": 0,
                "ApiKeys": [{"ApiKey": k, "MinVersion": lo, "MaxVersion": hi} for k, (lo, hi) in
                            sorted({**SUPPORTED, **(WRITE_APIS if self.writable else {})}.items())]}

    def metadata(self, version: int, body: dict) -> dict:
        wanted = body.get("Topics")
        if version == 0 and not wanted:  # v0 has no null array: an empty one asks for every topic
            wanted = None
        ids = self.topic_ids()
        names = None if wanted is None else [t.get("Name") if t.get("Name") is not None
                                             else ids.get(t.get("TopicId")) for t in wanted]
        if names and body.get("AllowAutoTopicCreation", True):
            for name in names:
                if name is not None and name not in ids.values():
                    self.maybe_auto_create(name)
        topics = self.topics()
        names = sorted(topics) if names is None else names
        out = []
        for name in names:
            if not valid_topic(name):
                out.append({"ErrorCode": INVALID_TOPIC, "Name": name, "Partitions": []})
            elif name not in topics:
                out.append({"ErrorCode": UNKNOWN_TOPIC_OR_PARTITION, "Name": name, "Partitions": []})
            else:
                parts = topics[name]
                out.append({"ErrorCode": NONE, "Name": name, "TopicId": parts[0].topic_id,
                            "IsInternal": name.startswith("__"),
                            "Partitions": [{"ErrorCode": NONE, "PartitionIndex": s.partition, "LeaderId": self.node_id,
                                            "LeaderEpoch": s.leader_epoch, "ReplicaNodes": [self.node_id],
                                            "IsrNodes": [self.node_id], "OfflineReplicas": []} for s in parts]})
        return {"ThrottleTimeMs": 0, "Brokers": [{"NodeId": self.node_id, "Host": self.host, "Port": self.port,
                                                   "Rack": None}],
                "ClusterId": self.cluster_id(), "ControllerId": self.node_id, "Topics": out, "ErrorCode": NONE}

    def find_coordinator(self, version: int, body: dict) -> dict:
        me = {"NodeId": self.node_id, "Host": self.host, "Port": self.port, "ErrorCode": NONE, "ErrorMessage": None}
        if version >= 4:
            return {"ThrottleTimeMs": 0, "Coordinators": [dict(me, Key=k) for k in body.get("CoordinatorKeys", [])]}
        return dict(me, ThrottleTimeMs=0)

    # -- offsets ---------------------------------------------------------------------------------
    def list_offsets(self, version: int, body: dict) -> dict:
        """As Kafka's ReplicaManager answers a client: earliest (-2), latest (-1, the last stable
        offset for read_committed), max timestamp (-3, the first record with the largest timestamp)
        or by timestamp; a found offset is kept only below the last fetchable offset (the LSO for
        read_committed, the high watermark otherwise), else -1.  Each with its leader epoch."""
        committed = body.get("IsolationLevel", 0) == 1
        topics = []
        for t in body.get("Topics", []):
            parts = []
            for p in t.get("Partitions", []):
                s = self.partitions.get((t.get("Name"), p["PartitionIndex"]))
                r = {"PartitionIndex": p["PartitionIndex"], "ErrorCode": NONE, "Timestamp": -1, "Offset": -1,
                     "LeaderEpoch": -1}
                if s is None:
                    r["ErrorCode"] = UNKNOWN_TOPIC_OR_PARTITION
                    parts.append(r)
                    continue
                fetchable = s.last_stable if committed else s.log_end
                if p["Timestamp"] == EARLIEST:
                    r.update(Offset=s.log_start, LeaderEpoch=s.epoch_at(s.log_start))
                elif p["Timestamp"] == LATEST:
                    r.update(Offset=fetchable, LeaderEpoch=s.leader_epoch)
                else:
                    found = (self.offset_of_max_timestamp(s) if p["Timestamp"] == MAX_TIMESTAMP
                             else self.offset_for_time(s, p["Timestamp"]))
                    if found[0] >= 0 and found[0] < fetchable:
                        r.update(Offset=found[0], Timestamp=found[1], LeaderEpoch=s.epoch_at(found[0]))
                parts.append(r)
            topics.append({"Name": t.get("Name"), "Partitions": parts})
        return {"ThrottleTimeMs": 0, "Topics": topics}

    def _batches(self, s: Served):
        for base in s.segments:
            with open_buffer(s.seg_path(base, ".log")) as buf:
                for b in BatchScanner(buf, base_offset=base):
                    if not b.crc_valid():
                        return
                    yield b

    def offset_for_time(self, s: Served, ts: int) -> tuple[int, int]:
        """First offset whose record timestamp is >= ts (Kafka's ListOffsets by time)."""
        for b in self._batches(s):
            if b.max_timestamp < ts:
                continue
            for r in b.records():
                if r.timestamp >= ts:
                    return r.offset, r.timestamp
        return -1, -1

    def offset_of_max_timestamp(self, s: Served) -> tuple[int, int]:
        """The first record carrying the partition's largest timestamp (ListOffsets -3, KIP-734)."""
        best = None
        for b in self._batches(s):
            if best is None or b.max_timestamp > best.max_timestamp:
                best = b
        if best is None:
            return -1, -1
        for r in best.records():
            if r.timestamp == best.max_timestamp:
                return r.offset, r.timestamp
        return best.last_offset, best.max_timestamp

    # -- fetch -----------------------------------------------------------------------------------
    def fetch(self, version: int, body: dict) -> dict:
        committed = body.get("IsolationLevel", 0) == 1
        budget = body.get("MaxBytes", 0x7FFFFFFF)
        responses = []
        for t in body.get("Topics", []):
            parts = []
            name = self._name(version, t, 13, "Topic")
            for p in t.get("Partitions", []):
                s = self.partitions.get((name, p["Partition"]))
                r = {"PartitionIndex": p["Partition"], "ErrorCode": NONE, "HighWatermark": -1,
                     "LastStableOffset": -1, "LogStartOffset": -1, "AbortedTransactions": None,
                     "PreferredReadReplica": -1, "Records": b""}
                if s is None:
                    r["ErrorCode"] = UNKNOWN_TOPIC_ID if version >= 13 and name is None else UNKNOWN_TOPIC_OR_PARTITION
                else:
                    r.update(HighWatermark=s.log_end, LastStableOffset=s.last_stable, LogStartOffset=s.log_start)
                    off = p["FetchOffset"]
                    if off < s.log_start or off > s.log_end:
                        r["ErrorCode"] = OFFSET_OUT_OF_RANGE
                    else:
                        limit = s.last_stable if committed else s.log_end
                        try:
                            data, upper = self.read(s, off, min(p["PartitionMaxBytes"], max(budget, 0)), limit,
                                                    first=not any(x["Records"] for tp in responses
                                                                  for x in tp["Partitions"]))
                        except CorruptBatch as e:
                            _log.warning("fetch of %s-%d at offset %d: %s", s.topic, s.partition, off, e)
                            r["ErrorCode"] = CORRUPT_MESSAGE
                            data, upper = b"", off
                        budget -= len(data)
                        r["Records"] = data
                        if committed:
                            r["AbortedTransactions"] = self.aborted(s, off, upper)
                parts.append(r)
            responses.append({"Topic": t.get("Topic"), "TopicId": t.get("TopicId"), "Partitions": parts})
        return {"ThrottleTimeMs": 0, "ErrorCode": NONE, "SessionId": 0, "Responses": responses}

    def read(self, s: Served, offset: int, max_bytes: int, limit: int, first: bool) -> tuple[bytes, int]:
        """Whole batches from the one that holds ``offset``, at most ``max_bytes`` (but at least one
        batch when ``first``, as KIP-74 says), never past ``limit``; returns them as a FileRegion of
        the segment (sent with sendfile) and the next offset."""
        bases = [b for b in s.segments if b <= offset] or s.segments[:1]
        if not bases or offset >= limit:
            return b"", offset
        start_seg = s.segments.index(bases[-1])
        for base in s.segments[start_seg:]:
            entries = self._index(s.seg_path(base, ".index"), base)
            pos = offset_index.lookup(entries, offset, base)[1] if entries else 0
            with open_buffer(s.seg_path(base, ".log")) as buf:
                begin = end = None
                upper = offset
                for b in BatchScanner(buf, start=pos, base_offset=base):
                    if b.last_offset < offset:
                        continue
                    if b.base_offset >= limit:
                        break
                    if not b.crc_valid():  # never handed out: served up to it, then reported
                        if begin is None:
                            raise CorruptBatch(s.seg_path(base, ".log"), b.position, b.base_offset)
                        break
                    if begin is None:
                        begin = b.position
                    elif b.position + b.size - begin > max_bytes:
                        break
                    if b.position + b.size - begin > max_bytes and not first:
                        begin = None
                        break
                    end = b.position + b.size
                    upper = b.last_offset + 1
                if begin is not None and end is not None:
                    return FileRegion(s.seg_path(base, ".log"), begin, end - begin), upper
        return b"", offset

    def _index(self, path: str, base: int) -> list:
        """A segment's offset index entries, parsed once and re-read only when the file changes."""
        try:
            st = os.stat(path)
        except OSError:
            return []
        hit = self._index_cache.get(path)
        if hit is not None and hit[0] == st.st_size and hit[1] == st.st_mtime_ns:
            return hit[2]
        with open(path, "rb") as f:
            entries, _ = offset_index.read_entries(f.read(), base)
        self._index_cache[path] = (st.st_size, st.st_mtime_ns, entries)
        return entries

    def aborted(self, s: Served, first: int, upper: int) -> list[dict]:
        out = []
        for base in s.segments:
            p = s.seg_path(base, ".txnindex")
            if base >= upper or not os.path.exists(p):
                continue
            with open(p, "rb") as f:
                for e in read_txn_entries(f.read(), file=p):
                    if e.last_offset >= first and e.first_offset < upper:
                        out.append({"ProducerId": e.producer_id, "FirstOffset": e.first_offset})
        return out
