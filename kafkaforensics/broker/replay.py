"""The replay broker's logic, without I/O: a request in, a response body out.

Every live ``<topic>-<partition>`` directory under the log dir is a partition this one-node cluster
leads, served as it is on disk (the versions advertised are Kafka 4.x's, ``specs.protocol_messages.ADVERTISED``;
the admin APIs are in :mod:`replay_admin`).  Implemented:
ApiVersions, Metadata, ListOffsets (earliest, latest, by timestamp), Fetch (read_uncommitted and
read_committed with the aborted-transaction list from the .txnindex files), FindCoordinator.
Without ``writable`` nothing on disk is written; with it, Produce (acks 0/1/all, idempotent
producers), InitProducerId, AddPartitionsToTxn, EndTxn (control batches and .txnindex entries) and
CreateTopics append through each partition's one state, :class:`~kafkaforensics.broker.live_log.LiveLog`.
Which handler answers which API key, and what the protocol decides around them (acks, long polls,
unsupported versions), is :mod:`dispatch`'s.  Topic names are validated
and only ever matched against partition directories this broker knows, so no request can reach
outside the log dir.
"""
from __future__ import annotations

import logging
import os
import re
import time

from kafkaforensics.log import offset_index
from kafkaforensics.errors import KafkaFormatError
from kafkaforensics.log.leader_epochs import LeaderEpochCache
from kafkaforensics.broker.live_log import LiveLog
from kafkaforensics.broker.protocol import FileRegion
from kafkaforensics.log.partition import derived_topic_id, find_partitions, partition_dir_state, write_partition_metadata
from kafkaforensics.broker.replay_admin import AdminAPIs, WriteAdminAPIs
from kafkaforensics.log.segment import INDEX, LOG, BatchScanner, Segment, file_name, offset_from_name, open_buffer
from specs import protocol_messages as P

from specs.kafka_errors import (INVALID_PARTITIONS, INVALID_PRODUCER_EPOCH,
                                INVALID_PRODUCER_ID_MAPPING, INVALID_TOPIC, NONE, OFFSET_OUT_OF_RANGE, POLICY_VIOLATION,
                                TOPIC_ALREADY_EXISTS, UNKNOWN_TOPIC_ID, UNKNOWN_TOPIC_OR_PARTITION)
from specs.protocol_messages import ApiKey
EARLIEST, LATEST, MAX_TIMESTAMP = -2, -1, -3
_TOPIC_RE = re.compile(r"^[a-zA-Z0-9._-]{1,249}$")

#: the APIs that change the log dir: advertised only with ``writable``
WRITE_ONLY = {ApiKey.CREATE_TOPICS, ApiKey.DELETE_TOPICS, ApiKey.DELETE_RECORDS, ApiKey.INIT_PRODUCER_ID,
              ApiKey.ADD_PARTITIONS_TO_TXN, ApiKey.ADD_OFFSETS_TO_TXN, ApiKey.END_TXN, ApiKey.TXN_OFFSET_COMMIT,
              ApiKey.CREATE_PARTITIONS}
#: api key -> (min, max) advertised read-only, as Kafka 4.x lists them (specs.protocol_messages)
#: (Produce is answered -- with POLICY_VIOLATION while read-only -- so that clients see a broker of
#: the v2 message format era and fetch with v4+.)
SUPPORTED = {k: v for k, v in P.ADVERTISED.items() if k not in WRITE_ONLY}


_log = logging.getLogger("kfx.serve")


def damage_report(s: LiveLog) -> list[str]:
    """One line per problem of a served partition whose log fails validation: where (file, byte,
    offset), what is past it and how it is served, and what Kafka's log loading would do with it
    after an unclean shutdown (``kfx recover``'s dry run: the same rules)."""
    from kafkaforensics.repair.actions import Dropped
    from kafkaforensics.repair.recovery import count_dropped, recover
    try:
        plan = recover(s.path, dry_run=True, backup=False)
    except (OSError, KafkaFormatError, ValueError) as e:
        plan = None
        why = f"kfx recover --dry-run could not plan it ({e})"
    lines = []
    for p in s.damage:
        past = Dropped()
        segs = [b for b in s.segments if b >= (offset_from_name(p.file) or 0)]
        for i, base in enumerate(segs):
            count_dropped(past, s.seg_path(base, LOG), p.position if i == 0 else 0)
        if p.kind == "crc-mismatch":
            served = (f"served as stored, as a Kafka broker serves it: a client's CRC check raises "
                      f"CorruptRecordException (kafka-python CorruptRecordError) at offset {p.offset}; "
                      f"{past.batches} valid batches, {past.records} records after it"
                      + (f" (offsets {past.first_offset}..{past.last_offset})" if past.batches else "")
                      + " are served")
        else:
            served = (f"not served from here to the segment's end ({past.bytes} bytes, {past.batches} valid batches, "
                      f"{past.records} records in them): the walk, as Kafka's, stops at bytes that frame no batch")
        if plan is None:
            kafka = why
        elif plan.truncated_at is None:
            kafka = "Kafka's log loading would not recover it (" + ("; ".join(plan.notes) or "flushed") + ")"
        else:
            t = plan.truncated_at
            kafka = (f"Kafka's log loading after an unclean shutdown would truncate {t['segment']} at byte "
                     f"{t['position']} (log end offset {t['offset']}), dropping {plan.dropped.text()}")
        lines.append(f"{s.topic}-{s.partition}: {p}; {served}; {kafka}; see `kfx recover --dry-run {s.path}`")
    return lines


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
        self.partitions: dict[tuple[str, int], LiveLog] = {}
        self._index_cache: dict[str, tuple] = {}  # .index path -> (size, mtime, entries)
        self._served_damage: set = set()  # (partition, byte, segment) of damaged batches served and logged
        self.txns: dict[str, dict] = {}
        self.on_txn_offsets = None  # (group, commits) -> None: a committed transaction's offsets
        self.next_producer_id = 1000
        self.reload()

    # -- the log dir ---------------------------------------------------------------------------
    def reload(self) -> None:
        for pd in find_partitions(self.log_dir):
            if pd.topic is None or not valid_topic(pd.topic) or partition_dir_state(pd.path) not in ("live", None):
                continue  # a -delete, -future or -stray copy never stands in for the partition
            s = LiveLog(pd.path, pd=pd)  # log start and epoch cache from the checkpoints, as Kafka loads them
            if s.state.producers:
                self.next_producer_id = max(self.next_producer_id, max(s.state.producers) + 1)
            try:
                md = pd.partition_metadata()
                if md:
                    s.topic_id = md["topicId"]
            except Exception:  # a damaged partition.metadata: the derived id still serves
                pass
            self.partitions[(s.topic, s.partition)] = s
            if s.damage:  # never hidden: every partition whose log fails validation is logged, located
                for line in damage_report(s):
                    _log.warning(line)
        for parts in self.topics().values():  # one id a topic: its partition.metadata's, else derived
            tid = next((s.topic_id for s in parts if s.topic_id), None) or derived_topic_id(parts[0].topic)
            for s in parts:
                s.topic_id = tid

    def logged_groups(self) -> list[str]:
        """The groups with offsets committed in the log dir's __consumer_offsets."""
        if not any(t == "__consumer_offsets" for t, _p in self.partitions):
            return []
        from kafkaforensics.inspect.groups import committed_offsets
        return sorted({row["group"] for row in committed_offsets(self.log_dir)})

    def topic_ids(self) -> dict[str, str]:
        """Topic id -> topic name."""
        return {s.topic_id: t for (t, _p), s in self.partitions.items()}

    def named_topic(self, version: int, topic: dict, first_id_version: int, name_key: str = "Name"):
        """The topic a request names: by name before ``first_id_version``, by TopicId from it on."""
        if version >= first_id_version:
            return self.topic_ids().get(topic.get("TopicId"))
        return topic.get(name_key)

    def fetched_topic(self, version: int, topic: dict):
        """The topic a Fetch request's topic entry names (by TopicId from v13)."""
        return self.named_topic(version, topic, 13, "Topic")

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

    def topics(self) -> dict[str, list[LiveLog]]:
        out: dict[str, list[LiveLog]] = {}
        for (t, _p), s in sorted(self.partitions.items()):
            out.setdefault(t, []).append(s)
        return out

    # -- writing (--writable) ----------------------------------------------------------------------
    def new_partition(self, topic: str, partition: int, topic_id: str, exist_ok: bool = False) -> LiveLog:
        """A partition dir with its partition.metadata and empty active segment, served from now on."""
        d = os.path.join(self.log_dir, f"{topic}-{partition}")
        os.makedirs(d, exist_ok=exist_ok)
        write_partition_metadata(d, topic_id)
        s = self.partitions[(topic, partition)] = LiveLog(d, topic, partition)
        s.topic_id, s.epochs = topic_id, LeaderEpochCache([(0, 0)])
        s.create_active()
        return s

    def produce(self, version: int, body: dict) -> dict:
        """Read-only: every partition answers POLICY_VIOLATION; writable: append (see LiveLog)."""
        out = []
        for t in body.get("TopicData", []):
            parts = []
            name = self.named_topic(version, t, 13)
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
                    err, base = s.append(p.get("Records") or b"")
                    r.update(ErrorCode=err, BaseOffset=base, LogStartOffset=s.log_start)
                parts.append(r)
            out.append({"Name": t.get("Name"), "TopicId": t.get("TopicId"), "PartitionResponses": parts})
        return {"Responses": out}

    def offsets_partition(self, group: str) -> LiveLog:
        """__consumer_offsets-N of a group, N = abs(group.hashCode) % 50; created on first use."""
        from kafkaforensics.broker.group_coordinator import offsets_partition_for
        n = offsets_partition_for(group)
        key = ("__consumer_offsets", n)
        s = self.partitions.get(key)
        if s is None:
            tid = next((x.topic_id for (t, _p), x in self.partitions.items() if t == "__consumer_offsets"),
                       None) or derived_topic_id("__consumer_offsets")
            s = self.new_partition("__consumer_offsets", n, tid, exist_ok=True)
        return s

    def write_offset_commits(self, group: str, commits: list) -> None:
        """Append the commits to __consumer_offsets-N as the group coordinator writes them
        (key v1, value v3), N = abs(group.hashCode) % 50; the partition dir is created on first use."""
        if commits:
            self.append_offset_commits(group, commits)

    def append_offset_commits(self, group: str, commits: list, **batch) -> int:
        """(topic, partition, offset, leader epoch, metadata) commits as one batch of __consumer_offsets-N
        records (``batch``: a transactional producer's fields); the append's error code."""
        from kafkaforensics.records.internal_topics import encode_offset_commit
        now = int(time.time() * 1000)
        records = [encode_offset_commit(group, topic, part, offset, metadata=metadata, commit_ts=now,
                                        leader_epoch=epoch) for topic, part, offset, epoch, metadata in commits]
        return self.offsets_partition(group).append_records(records, now, **batch)[0]

    def init_producer_id(self, version: int, body: dict) -> dict:
        tid = body.get("TransactionalId")
        if tid is None:
            pid = self.next_producer_id
            self.next_producer_id += 1
            return {"ErrorCode": NONE, "ProducerId": pid, "ProducerEpoch": 0}
        t = self.txns.get(tid)
        if t is None:
            t = self.txns[tid] = {"pid": self.next_producer_id, "epoch": 0, "partitions": set()}
            self.next_producer_id += 1
        else:  # a new session of the same transactional id fences the old one: the epoch is bumped and
            t["epoch"] += 1  # what was open is aborted in the new epoch, so its partitions refuse the old
            if t["partitions"]:
                self._end(t, commit=False)
        return {"ErrorCode": NONE, "ProducerId": t["pid"], "ProducerEpoch": t["epoch"]}

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
        return {"ResultsByTopicV3AndBelow": results}

    def end_txn(self, version: int, body: dict) -> dict:
        t = self.txns.get(body.get("TransactionalId"))
        if t is None or t["pid"] != body.get("ProducerId"):
            return {"ErrorCode": INVALID_PRODUCER_ID_MAPPING}
        if t["epoch"] != body.get("ProducerEpoch"):
            return {"ErrorCode": INVALID_PRODUCER_EPOCH}
        self._end(t, commit=bool(body.get("Committed")))
        return {"ErrorCode": NONE}

    def _end(self, t: dict, commit: bool) -> None:
        for key in sorted(t["partitions"]):
            s = self.partitions.get(key)
            if s is not None:
                s.append_marker(t["pid"], t["epoch"], commit, timestamp=int(time.time() * 1000))
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
        return {"Topics": out}

    def _create_topic(self, name: str, n: int) -> str:
        """Partition dirs 0..n-1 with partition.metadata (a random id, as Kafka's controller gives)."""
        import base64
        import uuid
        tid = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        while tid.startswith("-"):
            tid = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        for p in range(n):
            self.new_partition(name, p, tid)
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
        return {"ErrorCode": error,
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
        return {"Brokers": [{"NodeId": self.node_id, "Host": self.host, "Port": self.port, "Rack": None}],
                "ClusterId": self.cluster_id(), "ControllerId": self.node_id, "Topics": out, "ErrorCode": NONE}

    def find_coordinator(self, version: int, body: dict) -> dict:
        me = {"NodeId": self.node_id, "Host": self.host, "Port": self.port, "ErrorCode": NONE, "ErrorMessage": None}
        if version >= 4:
            return {"Coordinators": [dict(me, Key=k) for k in body.get("CoordinatorKeys", [])]}
        return me

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
        return {"Topics": topics}

    def _batches(self, s: LiveLog):
        for base in s.segments:
            for b in Segment(base, s.path).batches():
                if b.crc_valid():  # a damaged batch's timestamps are not trusted
                    yield b

    def offset_for_time(self, s: LiveLog, ts: int) -> tuple[int, int]:
        """First offset at or after the log start whose record timestamp is >= ts (Kafka's ListOffsets
        by time, UnifiedLog.fetchOffsetByTimestamp): each segment looked up through its time index
        (Segment.find_offset_by_timestamp); a segment whose times all lie below ``ts`` costs the
        batches after its last time-index entry."""
        for base in s.segments:
            found = Segment(base, s.path).find_offset_by_timestamp(ts, s.log_start)
            if found is not None:
                return found.offset, found.timestamp
        return -1, -1

    def offset_of_max_timestamp(self, s: LiveLog) -> tuple[int, int]:
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
            name = self.fetched_topic(version, t)
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
                        data, upper = self.read(s, off, min(p["PartitionMaxBytes"], max(budget, 0)), limit,
                                                first=not any(x["Records"] for tp in responses
                                                              for x in tp["Partitions"]))
                        budget -= len(data)
                        r["Records"] = data
                        if committed:
                            r["AbortedTransactions"] = self.aborted(s, off, upper)
                parts.append(r)
            responses.append({"Topic": t.get("Topic"), "TopicId": t.get("TopicId"), "Partitions": parts})
        return {"ErrorCode": NONE, "SessionId": 0, "Responses": responses}

    def read(self, s: LiveLog, offset: int, max_bytes: int, limit: int, first: bool) -> tuple[bytes, int]:
        """Whole batches from the one that holds ``offset``, at most ``max_bytes`` (but at least one
        batch when ``first``, as KIP-74 says), never past ``limit``; returns them as a FileRegion of
        the segment (sent with sendfile) and the next offset."""
        bases = [b for b in s.segments if b <= offset] or s.segments[:1]
        if not bases or offset >= limit:
            return b"", offset
        start_seg = s.segments.index(bases[-1])
        for base in s.segments[start_seg:]:
            entries = self._index(s.seg_path(base, INDEX), base)
            pos = offset_index.lookup(entries, offset, base)[1] if entries else 0
            with open_buffer(s.seg_path(base, LOG)) as buf:
                begin = end = None
                upper = offset
                for b in BatchScanner(buf, start=pos, base_offset=base):
                    if b.last_offset < offset:
                        continue
                    if b.base_offset >= limit:
                        break
                    # a batch whose CRC fails is served as stored, as Kafka serves it (its fetch path
                    # checks no CRC): the client's CRC check meets it (logged at start and here)
                    if (s.path, b.position, base) not in self._served_damage and not b.crc_valid():
                        self._served_damage.add((s.path, b.position, base))
                        _log.warning("%s-%d: serving the batch at byte %d of %s (offset %d) as stored: its CRC "
                                     "fails; the client's CRC check raises CorruptRecordException",
                                     s.topic, s.partition, b.position, file_name(base, LOG), b.base_offset)
                    if begin is None:
                        begin = b.position
                    elif b.position + b.size - begin > max_bytes:
                        break
                    if b.position + b.size - begin > max_bytes and not first:
                        begin = None
                        break
                    end = b.position + b.size
                    upper = b.next_offset
                if begin is not None and end is not None:
                    return FileRegion(s.seg_path(base, LOG), begin, end - begin), upper
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

    def aborted(self, s: LiveLog, first: int, upper: int) -> list[dict]:
        """The aborted transactions a read_committed fetch of [first, upper) carries
        (UnifiedLog.collectAbortedTransactions: from the segment holding ``first`` on, each segment's
        LogSegment.collectAbortedTxns, until one says the search is complete)."""
        out = []
        floor = max((b for b in s.segments if b <= first), default=None)
        for base in s.segments:
            if (floor is not None and base < floor) or base >= upper:
                continue
            found, complete = Segment(base, s.path).collect_aborted_txns(first, upper)
            out += [{"ProducerId": e.producer_id, "FirstOffset": e.first_offset} for e in found]
            if complete:
                break
        return out
