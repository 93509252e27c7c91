"""The replay broker's logic, without I/O of the network: a request in, a response body out.

Every live ``<topic>-<partition>`` directory under the log dir is a partition this one-node cluster
leads, served as it is on disk (the versions advertised are Kafka 4.x's, ``specs.protocol_messages.ADVERTISED``;
the admin APIs are objects it holds, :mod:`replay_admin`).  Implemented:
ApiVersions (with the ``transaction.version`` feature), Metadata, ListOffsets (earliest, latest, by
timestamp), Fetch (read_uncommitted and read_committed with the aborted-transaction list from the
.txnindex files), FindCoordinator.  Without ``writable`` nothing on disk is written; with it, Produce
(validated as Kafka's LogValidator validates it, :mod:`log_validator`; acks 0/1/all, idempotent
producers), the transaction APIs (the state machine is :mod:`txn_coordinator`'s; markers and
``__transaction_state`` records are appended here) and CreateTopics append through each partition's
one state, :class:`~kafkaforensics.log.live_log.LiveLog`; :meth:`ReplayBroker.shutdown` is Kafka's
clean shutdown.  Which handler answers which API key, and what the protocol decides around them
(acks, long polls, unsupported versions, partition dirs made off the event loop), is :mod:`dispatch`'s.
Topic names are validated as Kafka's Topic.validate and only ever matched against partition
directories this broker knows, so no request can reach outside the log dir.
"""
from __future__ import annotations

import base64
import json
import logging
import os
import re
import time
import uuid

from specs import protocol_messages as P
from specs import record_batch as R
from specs.checkpoints import parse_properties
from specs.kafka_errors import (INVALID_CONFIG, INVALID_PARTITIONS, INVALID_PRODUCER_EPOCH, INVALID_REPLICATION_FACTOR,
                                INVALID_REQUEST,
                                INVALID_TOPIC, KAFKA_STORAGE_ERROR, NAMES, NONE, OFFSET_OUT_OF_RANGE,
                                OPERATION_NOT_ATTEMPTED, POLICY_VIOLATION, PRODUCER_FENCED, TOPIC_ALREADY_EXISTS,
                                TRANSACTIONAL_ID_AUTHORIZATION_FAILED, UNKNOWN_TOPIC_ID, UNKNOWN_TOPIC_OR_PARTITION)
from specs.protocol_messages import ApiKey

from kafkaforensics.errors import KafkaFormatError
from kafkaforensics.fsutil import atomic_write, fsync_dir
from kafkaforensics.records.internal_topics import decode_transaction_log, encode_offset_commit, encode_transaction_log
from kafkaforensics.log import offset_index
from kafkaforensics.log.checkpoint_file import RECOVERY_POINT, checkpoint_path, update_offsets
from kafkaforensics.log.leader_epochs import LeaderEpochCache
from kafkaforensics.log.logdir import CLEAN_SHUTDOWN_FILE, metadata_topics, read_clean_shutdown
from kafkaforensics.log.partition import (derived_topic_id, find_partitions, partition_dir_state,
                                          write_partition_metadata)
from kafkaforensics.log.segment import INDEX, LOG, file_name, offset_for_timestamp, offset_from_name
from kafkaforensics.repair.actions import Dropped
from kafkaforensics.repair.recovery import count_dropped, recover
from kafkaforensics.inspect.groups import committed_offsets
from kafkaforensics.broker.group_coordinator import offsets_partition_for
from kafkaforensics.log.live_log import LiveLog
from kafkaforensics.broker.log_validator import (MAX_MESSAGE_BYTES, TIMESTAMP_AFTER_MAX_MS,
                                                 TIMESTAMP_BEFORE_MAX_MS, TopicRules, validate)
from kafkaforensics.broker.protocol import FileRegion
from kafkaforensics.broker.replay_admin import AdminAPIs, WriteAdminAPIs
from kafkaforensics.broker.topic_configs import invalid
from kafkaforensics.broker.txn_coordinator import LogEntry, TransactionCoordinator, client_error

EARLIEST, LATEST, MAX_TIMESTAMP = -2, -1, -3
_TOPIC_RE = re.compile(r"[a-zA-Z0-9._-]{1,249}")
#: Kafka's controller writes at most this many records for one request (QuorumController's
#: MAX_RECORDS_PER_USER_OP): a topic is one TopicRecord, one PartitionRecord a partition and one
#: ConfigRecord a config; a CreateTopics or CreatePartitions over it is refused whole with POLICY_VIOLATION
MAX_RECORDS_PER_REQUEST = 10_000

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
    try:
        plan = recover(s.path, dry_run=True, backup=False)
    except (OSError, KafkaFormatError, ValueError) as e:
        plan = None
        why = f"kfx recover --dry-run could not plan it ({e})"
    lines = []
    for p in s.damage:
        past = Dropped()
        segs = [seg for seg in s.segments if seg.base_offset >= (offset_from_name(p.file) or 0)]
        for i, seg in enumerate(segs):
            count_dropped(past, seg.log, p.position if i == 0 else 0)
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


class PartitionsNotMade(Exception):
    """Making a plan's partition dirs failed at ``topic``: ``made`` are the LiveLogs made before."""

    def __init__(self, made: list, topic: str, error: OSError):
        super().__init__(f"{topic}: {error}")
        self.made, self.topic, self.error = made, topic, error


def new_topic_id() -> str:
    """A random topic id, as Kafka's controller gives (base64url, never starting with '-')."""
    while True:
        tid = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not tid.startswith("-"):
            return tid


def valid_topic(name) -> bool:
    """Kafka's Topic.validate: 1-249 characters of [a-zA-Z0-9._-], neither "." nor ".." (the whole name:
    a trailing newline is no exception)."""
    return isinstance(name, str) and _TOPIC_RE.fullmatch(name) is not None and name not in (".", "..")


def bad_config(configs: list) -> str | None:
    """The first reason Kafka's controller would refuse one of a CreateTopics topic's configs."""
    return next((why for c in configs if (why := invalid(c.get("Name"), c.get("Value")))), None)


def collision_key(name: str) -> str:
    """Kafka's Topic.unifyCollisionChars: "." and "_" collide in metric names, so a.b and a_b cannot both exist."""
    return name.replace(".", "_")


WRITE_APIS = {k: P.ADVERTISED[k] for k in WRITE_ONLY}
#: the first version of each API that only transactions v2 (KIP-890 part 2) uses
TV2_FIRST = {ApiKey.PRODUCE: 12, ApiKey.END_TXN: 5, ApiKey.TXN_OFFSET_COMMIT: 5}
#: created by their coordinators, never by a client's Metadata or Produce
INTERNAL_TOPICS = {"__consumer_offsets", "__transaction_state", "__share_group_state", "__cluster_metadata"}
#: the KRaft metadata log (Kafka's Topic.CLUSTER_METADATA_TOPIC_NAME): never a topic a client sees
METADATA_TOPIC = "__cluster_metadata"


class ReplayBroker:
    def __init__(self, log_dir: str, *, node_id: int | None = None, host: str = "127.0.0.1", port: int = 9092,
                 writable: bool = False, auto_create: bool = True, partitions: int = 1,
                 transaction_version: int = 2):
        self.log_dir = os.path.abspath(log_dir)
        self.node_id = self.log_dir_node_id() if node_id is None else node_id
        self.host, self.port = host, port
        self.writable = writable
        # auto.create.topics.enable (Kafka's default: true) and num.partitions, with writable only
        self.auto_create, self.default_partitions = auto_create, max(1, partitions)
        self.partitions: dict[tuple[str, int], LiveLog] = {}
        self._index_cache: dict[str, tuple] = {}  # .index path -> (size, mtime, entries)
        self._served_damage: set = set()  # (partition, byte, segment) of damaged batches served and logged
        self.txn = TransactionCoordinator(self._new_producer_id, transaction_version=transaction_version)
        self.creating: set[str] = set()  # topics a CreateTopics is making (their dirs in a worker thread)
        self.config_overrides: dict | None = None  # topic -> its own configs (topic_overrides)
        self.on_txn_offsets = None  # (group, commits) -> None: a committed transaction's offsets
        #: the admin APIs, objects over this broker; the write ones answer only with ``writable``
        self.admin, self.write_admin = AdminAPIs(self), WriteAdminAPIs(self)
        self.next_producer_id = 1000
        self.was_clean, self.broker_epoch = False, -1
        self.reload()
        if writable:  # before anything is written: the dir must not look clean while this broker may change it
            self.take_clean_marker()
            self.restore_transactions()

    # -- the log dir ---------------------------------------------------------------------------
    def reload(self) -> None:
        for pd in find_partitions(self.log_dir):
            if pd.topic is None or not valid_topic(pd.topic) or partition_dir_state(pd.path) not in ("live", None):
                continue  # a -delete, -future or -stray copy never stands in for the partition
            if pd.topic == METADATA_TOPIC:
                continue  # KRaft's own log: no broker's metadata cache holds it (Metadata, Fetch, Produce: unknown)
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

    # -- clean shutdown (Kafka's LogManager.shutdown) ----------------------------------------------
    def take_clean_marker(self) -> None:
        """A writable broker about to change the dir takes its ``.kafka_cleanshutdown`` away, as
        Kafka's log loading does: were it to crash, the dir must not look cleanly shut down.  The
        marker's broker epoch is kept for the one :meth:`shutdown` writes."""
        path = os.path.join(self.log_dir, CLEAN_SHUTDOWN_FILE)
        self.was_clean, self.broker_epoch = os.path.exists(path), -1
        if self.was_clean:
            try:
                self.broker_epoch = read_clean_shutdown(path)["brokerEpoch"]
            except (OSError, ValueError, KafkaFormatError):
                pass
            os.unlink(path)
            fsync_dir(self.log_dir)

    def shutdown(self) -> list[str]:
        """Kafka's clean shutdown of what this broker wrote: each partition it appended to or created
        closes (final time-index entry, producer snapshot, leader-epoch checkpoint), its recovery
        point (the log end) goes to recovery-point-offset-checkpoint, and ``.kafka_cleanshutdown``
        (``{"version":0,"brokerEpoch":N}``) is written -- only when every partition is as a clean
        broker leaves it: written here, or untouched in a dir that was marked clean when this broker
        started (a partition loaded without recovery must not be vouched for).  What was done, one line each."""
        if not self.writable:
            return []
        done = []
        written = {tp: s for tp, s in sorted(self.partitions.items()) if s.written}
        for (topic, p), s in written.items():
            s.close()
        if written:
            update_offsets(checkpoint_path(self.log_dir, RECOVERY_POINT),
                           {tp: s.log_end_offset for tp, s in written.items()}, unreadable="replace")
            done.append(f"closed {len(written)} partitions (time index, producer snapshot, leader epochs, "
                        "recovery point)")
        untouched = [f"{t}-{p}" for (t, p), s in self.partitions.items() if not s.written]
        if untouched and not self.was_clean:
            done.append(f"no {CLEAN_SHUTDOWN_FILE}: {len(untouched)} partitions were served as found in a dir "
                        "that was not marked clean (Kafka will recover them)")
        else:
            body = json.dumps({"version": 0, "brokerEpoch": self.broker_epoch}, separators=(",", ":"))
            atomic_write(os.path.join(self.log_dir, CLEAN_SHUTDOWN_FILE), body.encode())
            done.append(f"wrote {CLEAN_SHUTDOWN_FILE}")
        return done

    def _meta_properties(self) -> dict:
        """The log dir's meta.properties (empty when it has none, or one that does not read)."""
        try:
            with open(os.path.join(self.log_dir, "meta.properties"), encoding="utf-8") as f:
                return parse_properties(f.read())
        except (OSError, ValueError):
            return {}

    def cluster_id(self) -> str:
        """meta.properties' cluster.id (as the broker that wrote the log dir had it), else kfx-replay."""
        return self._meta_properties().get("cluster.id") or "kfx-replay"

    def log_dir_node_id(self) -> int:
        """The id of the broker that wrote the log dir: meta.properties' node.id (KRaft), else its
        broker.id (ZooKeeper), else 0."""
        props = self._meta_properties()
        for key in ("node.id", "broker.id"):
            value = (props.get(key) or "").strip()
            if value.isdigit() and int(value) <= (1 << 31) - 1:
                return int(value)
        return 0

    def topic_overrides(self, topic: str) -> dict[str, str]:
        """The topic's own configs: its ConfigRecords in the log dir's KRaft metadata
        (``__cluster_metadata-0``, read once), then those a CreateTopics here set."""
        if self.config_overrides is None:
            meta = os.path.join(self.log_dir, "__cluster_metadata-0")
            try:
                self.config_overrides = metadata_topics(meta)[1] if os.path.isdir(meta) else {}
            except (OSError, ValueError):
                self.config_overrides = {}
        return self.config_overrides.get(topic, {})

    def handler(self, name: str):
        """The method answering the API ``name`` (list_offsets, describe_configs, delete_records, ...):
        this broker's own, else its admin objects'; None when none answers it."""
        for obj in (self, self.admin, self.write_admin):
            fn = getattr(obj, name, None)
            if fn is not None:
                return fn
        return None

    def logged_groups(self) -> list[str]:
        """The groups with offsets committed in the log dir's __consumer_offsets."""
        if not any(t == "__consumer_offsets" for t, _p in self.partitions):
            return []
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
    def new_partition(self, topic: str, partition: int, topic_id: str) -> LiveLog:
        """A partition dir with its partition.metadata and empty active segment, served from now on."""
        plan = [(topic, partition, 1, topic_id)]
        made = self.make_partitions(plan)
        self.adopt([], made)
        return made[0]

    def produce(self, version: int, body: dict) -> dict:
        """Read-only: every partition answers POLICY_VIOLATION; writable: append (see LiveLog).  A topic
        this broker does not have is UNKNOWN_TOPIC_OR_PARTITION: as in Kafka, only Metadata auto-creates."""
        out = []
        for t in body.get("TopicData", []):
            parts = []
            name = self.named_topic(version, t, 13)
            for p in t.get("PartitionData", []):
                r = {"Index": p["Index"], "ErrorCode": NONE, "BaseOffset": -1, "LogStartOffset": -1,
                     "RecordErrors": [], "ErrorMessage": None, "LogAppendTimeMs": -1}
                s = self.partitions.get((name, p["Index"]))
                if not self.writable:
                    r.update(ErrorCode=POLICY_VIOLATION,
                             ErrorMessage="this replay broker is read-only (start it with --writable)")
                elif s is None:
                    r["ErrorCode"] = UNKNOWN_TOPIC_ID if version >= 13 and name is None else UNKNOWN_TOPIC_OR_PARTITION
                elif name in INTERNAL_TOPICS:  # ReplicaManager: only the coordinators append to them
                    r.update(ErrorCode=INVALID_TOPIC, ErrorMessage=f"Cannot append to internal topic {name}")
                else:
                    v = validate(p.get("Records") or b"", version, int(time.time() * 1000), self.topic_rules(name))
                    err, base = v.error, -1
                    if err != NONE:
                        _log.warning("produce to %s-%d refused (%s): %s", name, p["Index"], NAMES.get(err, err),
                                     v.reason)
                        if v.record_errors:  # Kafka answers a message only with per-record errors
                            r.update(ErrorMessage=v.reason, RecordErrors=[
                                {"BatchIndex": i, "BatchIndexErrorMessage": m} for i, m in v.record_errors])
                    else:
                        err = self.check_transactional(version, body.get("TransactionalId"), v.batch,
                                                       (name, p["Index"]))
                    if err == NONE:
                        err, base = s.append(v.batch)
                    r.update(ErrorCode=err, BaseOffset=base, LogStartOffset=s.log_start_offset)
                parts.append(r)
            out.append({"Name": t.get("Name"), "TopicId": t.get("TopicId"), "PartitionResponses": parts})
        return {"Responses": out}

    def topic_rules(self, name: str) -> TopicRules:
        """The configs Produce validation reads (the topic's own, from the log dir's KRaft metadata, else Kafka's defaults)."""
        c = self.topic_overrides(name)

        def number(key, default):
            try:
                return int(c.get(key, default))
            except ValueError:  # a value Kafka would not have stored: its default
                return default
        return TopicRules(max_message_bytes=number("max.message.bytes", MAX_MESSAGE_BYTES),
                          compacted="compact" in c.get("cleanup.policy", "delete"),
                          log_append_time=c.get("message.timestamp.type") == "LogAppendTime",
                          before_max_ms=number("message.timestamp.before.max.ms", TIMESTAMP_BEFORE_MAX_MS),
                          after_max_ms=number("message.timestamp.after.max.ms", TIMESTAMP_AFTER_MAX_MS))

    def internal_partition(self, topic: str, key: str) -> LiveLog:
        """<topic>-N of a coordinator key (a group, a transactional id), N = Utils.abs(key.hashCode) % 50
        (offsets.topic.num.partitions, transaction.state.log.num.partitions); created on first use."""
        n = offsets_partition_for(key)
        s = self.partitions.get((topic, n))
        if s is None:
            tid = next((x.topic_id for (t, _p), x in self.partitions.items() if t == topic),
                       None) or derived_topic_id(topic)
            s = self.new_partition(topic, n, tid)
        return s

    def offsets_partition(self, group: str) -> LiveLog:
        """__consumer_offsets-N of a group."""
        return self.internal_partition("__consumer_offsets", group)

    def write_offset_commits(self, group: str, commits: list) -> None:
        """Append the commits to __consumer_offsets-N as the group coordinator writes them
        (key v1, value v3), N = abs(group.hashCode) % 50; the partition dir is created on first use."""
        if commits:
            self.append_offset_commits(group, commits)

    def append_offset_commits(self, group: str, commits: list, **batch) -> int:
        """(topic, partition, offset, leader epoch, metadata) commits as one batch of __consumer_offsets-N
        records (``batch``: a transactional producer's fields); the append's error code."""
        now = int(time.time() * 1000)
        records = [encode_offset_commit(group, topic, part, offset, metadata=metadata, commit_ts=now,
                                        leader_epoch=epoch) for topic, part, offset, epoch, metadata in commits]
        return self.offsets_partition(group).append_records(records, now, **batch)[0]

    # -- transactions: adapters of TransactionCoordinator ------------------------------------------
    def _new_producer_id(self) -> int:
        pid, self.next_producer_id = self.next_producer_id, self.next_producer_id + 1
        return pid

    def _write_markers(self, outcome, restored: bool = False) -> None:
        """Carry out a coordinator decision as Kafka's coordinator does: each Prepare record to
        __transaction_state, the markers on every partition, then the coordinator's other
        transitions (Complete, Empty, Ongoing); ``restored``: prepared before a restart, completed now."""
        now = int(time.time() * 1000)
        prepared = [m.prepare for m in outcome if m.prepare is not None]
        if prepared:
            self._log_transactions(prepared)
        for m in outcome:
            for key in m.partitions:
                s = self.partitions.get(key)
                if s is not None:
                    s.append_marker(m.producer_id, m.producer_epoch, m.commit, timestamp=now)
            if m.commit and self.on_txn_offsets is not None:
                for group, commits in m.offsets.items():
                    self.on_txn_offsets(group, commits)
            if restored:
                self.txn.complete(m.transactional_id)
        self._log_transactions(self.txn.take_log())

    def expire_transactions(self) -> None:
        """Abort the transactions open longer than their timeout (before each transactional request,
        and every 10 s from the edge, as Kafka's coordinator does)."""
        self._write_markers(self.txn.expire())

    def _log_transactions(self, entries) -> None:
        """Append coordinator transitions to __transaction_state-N, one batch a partition."""
        by_partition: dict = {}
        for e in entries:
            value = {"ProducerId": e.producer_id, "ProducerEpoch": e.producer_epoch,
                     "TransactionTimeoutMs": e.timeout_ms, "TransactionStatus": e.status,
                     "TransactionPartitions": [{"Topic": t, "PartitionIds": sorted(p for tt, p in e.partitions
                                                                                   if tt == t)}
                                               for t in sorted({t for t, _p in e.partitions})],
                     "TransactionLastUpdateTimestampMs": e.last_update_ms,
                     "TransactionStartTimestampMs": e.start_ms, "ClientTransactionVersion": 2 if e.v2 else 0}
            s = self.internal_partition("__transaction_state", e.transactional_id)
            by_partition.setdefault(s, []).append(encode_transaction_log(e.transactional_id, value,
                                                                         value_version=1 if e.v2 else 0))
        now = int(time.time() * 1000)
        for s, records in by_partition.items():
            s.append_records(records, now)

    def logged_transactions(self) -> dict:
        """The newest __transaction_state entry of each transactional id in the log dir (a tombstone
        removes it): transactional id -> :class:`~kafkaforensics.broker.txn_coordinator.LogEntry`."""
        out: dict = {}
        for s in self.topics().get("__transaction_state", []):
            for b in self._batches(s):
                if b.is_control:
                    continue
                for r in b.records():
                    try:
                        k, v = decode_transaction_log(r.key, r.value)
                    except (KafkaFormatError, ValueError, TypeError):
                        continue
                    tid = k["data"].get("TransactionalId")
                    if v is None:
                        out.pop(tid, None)
                        continue
                    d = v["data"]
                    out[tid] = LogEntry(tid, d["ProducerId"], d["ProducerEpoch"], d["TransactionTimeoutMs"],
                                        d["TransactionStatus"],
                                        tuple(sorted((p["Topic"], i) for p in d.get("TransactionPartitions") or []
                                                     for i in p["PartitionIds"])),
                                        d["TransactionLastUpdateTimestampMs"], d["TransactionStartTimestampMs"],
                                        d.get("ClientTransactionVersion", 0) >= 2)
        return out

    def restore_transactions(self) -> None:
        """A writable broker takes over the log dir's __transaction_state, as a coordinator loads its
        partitions: prepared transactions are finished now, open ones time out later."""
        logged = self.logged_transactions()
        if logged:
            self.next_producer_id = max(self.next_producer_id, max(e.producer_id for e in logged.values()) + 1)
        done = self.txn.restore(list(logged.values()))
        self._write_markers(done, restored=True)

    def init_producer_id(self, version: int, body: dict) -> dict:
        tid = body.get("TransactionalId")
        if tid is None:
            return {"ErrorCode": NONE, "ProducerId": self._new_producer_id(), "ProducerEpoch": 0}
        self.expire_transactions()
        o = self.txn.init_producer_id(tid, body.get("TransactionTimeoutMs", 60000), body.get("ProducerId", -1),
                                      body.get("ProducerEpoch", -1))
        self._write_markers(o.markers)
        return {"ErrorCode": client_error(o.error, 4, version), "ProducerId": o.producer_id,
                "ProducerEpoch": o.producer_epoch}

    def add_partitions_to_txn(self, version: int, body: dict) -> dict:
        """v0-3 (clients): one transaction; v4+ (the batched form): each, VerifyOnly or adding."""
        self.expire_transactions()
        if version <= 3:
            txns = [{"TransactionalId": body.get("V3AndBelowTransactionalId"),
                     "ProducerId": body.get("V3AndBelowProducerId"),
                     "ProducerEpoch": body.get("V3AndBelowProducerEpoch"), "VerifyOnly": False,
                     "Topics": body.get("V3AndBelowTopics") or []}]
        else:
            txns = body.get("Transactions") or []
        results = []
        for tx in txns:
            tid, pid, epoch = tx.get("TransactionalId"), tx.get("ProducerId"), tx.get("ProducerEpoch")
            wanted = [(t.get("Name"), p) for t in tx.get("Topics", []) for p in t.get("Partitions", [])]
            unknown = {tp for tp in wanted if tp not in self.partitions}
            if tx.get("VerifyOnly"):
                errs = {tp: self.txn.verify(tid, pid, epoch, tp) for tp in wanted}
            else:  # Kafka adds none when any is unknown: those UNKNOWN_TOPIC_OR_PARTITION, the rest OPERATION_NOT_ATTEMPTED
                err = NONE if unknown else self.txn.add_partitions(tid, pid, epoch, wanted)
                err = client_error(err, 2, version)
                errs = {tp: (UNKNOWN_TOPIC_OR_PARTITION if tp in unknown else
                             OPERATION_NOT_ATTEMPTED if unknown else err) for tp in wanted}
            topics = []
            for t in tx.get("Topics", []):
                topics.append({"Name": t.get("Name"), "ResultsByPartition": [
                    {"PartitionIndex": p, "PartitionErrorCode": errs[(t.get("Name"), p)]}
                    for p in t.get("Partitions", [])]})
            results.append({"TransactionalId": tid, "TopicResults": topics})
        self._log_transactions(self.txn.take_log())
        if version <= 3:
            return {"ResultsByTopicV3AndBelow": results[0]["TopicResults"] if results else []}
        return {"ErrorCode": NONE, "ResultsByTransaction": results}

    def end_txn(self, version: int, body: dict) -> dict:
        """EndTxn: v5+ is the v2 flow (the epoch bumped, the new one answered)."""
        self.expire_transactions()
        o = self.txn.end_txn(body.get("TransactionalId"), body.get("ProducerId"), body.get("ProducerEpoch"),
                             bool(body.get("Committed")), v2=version >= 5)
        self._write_markers(o.markers)
        return {"ErrorCode": client_error(o.error, 2, version), "ProducerId": o.producer_id,
                "ProducerEpoch": o.producer_epoch}

    def add_offsets_to_txn(self, version: int, body: dict) -> dict:
        self.expire_transactions()
        s = self.offsets_partition(body.get("GroupId", ""))
        err = self.txn.add_partitions(body.get("TransactionalId"), body.get("ProducerId"), body.get("ProducerEpoch"),
                                      [(s.topic, s.partition)])
        self._log_transactions(self.txn.take_log())
        return {"ErrorCode": client_error(err, 2, version)}

    def txn_offset_commit(self, version: int, body: dict) -> dict:
        """The commits go to __consumer_offsets-N in a transactional batch of the producer; they
        become the group's offsets when EndTxn commits (an abort drops them).  v1 requires
        AddOffsetsToTxn first; v5+ (transactions v2) adds the offsets partition itself."""
        tid, gid = body.get("TransactionalId"), body.get("GroupId", "")
        pid, epoch = body.get("ProducerId"), body.get("ProducerEpoch")
        commits = [(t["Name"], p["PartitionIndex"], p["CommittedOffset"], p.get("CommittedLeaderEpoch", -1),
                    p.get("CommittedMetadata") or "") for t in body.get("Topics", []) for p in t.get("Partitions", [])]
        s = self.offsets_partition(gid)
        key = (s.topic, s.partition)
        err = (self.txn.add_partitions(tid, pid, epoch, [key], v2=True) if version >= 5
               else self.txn.in_transaction(tid, pid, epoch, key))
        self._log_transactions(self.txn.take_log())
        if err == NONE and commits:
            err = self.append_offset_commits(gid, commits, transactional=True, producer_id=pid, producer_epoch=epoch)
            if err == NONE:
                self.txn.add_offsets(tid, gid, commits)
        err = client_error(err, 1 << 15, version)  # the log's producer-state check answers it, in every version
        return {"Topics": [
            {"Name": t["Name"], "Partitions": [{"PartitionIndex": p["PartitionIndex"], "ErrorCode": err}
                                               for p in t.get("Partitions", [])]} for t in body.get("Topics", [])]}

    def check_transactional(self, version: int, tid, data: bytes, key) -> int:
        """A Produce's partition data: a transactional batch must belong to its producer's open
        transaction (v3-11: the partition joined through AddPartitionsToTxn; v12+: it joins now)."""
        if len(data) < R.HEADER_SIZE:
            return NONE
        h = dict(zip(R.HEADER_FIELDS, R.HEADER_STRUCT.unpack_from(data, 0)))
        if h["magic"] != 2 or not h["attributes"] & R.TRANSACTIONAL_MASK or h["attributes"] & R.CONTROL_MASK:
            return NONE
        if not tid:  # as KafkaApis refuses transactional records without a transactional id
            return TRANSACTIONAL_ID_AUTHORIZATION_FAILED
        self.expire_transactions()
        if version >= 12:
            err = self.txn.add_partitions(tid, h["producerId"], h["producerEpoch"], [key], v2=True)
            self._log_transactions(self.txn.take_log())  # the partition joins before its records land
        else:
            err = self.txn.verify(tid, h["producerId"], h["producerEpoch"], key)
        return INVALID_PRODUCER_EPOCH if err == PRODUCER_FENCED else err

    def create_topics(self, version: int, body: dict) -> dict:
        """CreateTopics, its partition dirs made here (the edge runs :meth:`plan_topics`' work in a thread)."""
        return self.make_and_adopt(*self.plan_topics(version, body))

    def plan_topics(self, version: int, body: dict) -> tuple[dict, list]:
        """The answer to a CreateTopics and what it creates: [(topic, first partition, count, topic id)].
        The names are reserved until :meth:`adopt` (a second request for one is TOPIC_ALREADY_EXISTS)."""
        out, plan = [], []
        topics = body.get("Topics", [])
        records = sum(1 + (self.default_partitions if t.get("NumPartitions", 1) == -1 else
                           max(t.get("NumPartitions", 1), 0)) + len(t.get("Configs") or []) for t in topics)
        collisions = {collision_key(t) for t in self.topics()} | {collision_key(t) for t in self.creating}
        for t in topics:
            name, n = t.get("Name"), t.get("NumPartitions", 1)
            r = {"Name": name, "ErrorCode": NONE, "ErrorMessage": None, "NumPartitions": n, "ReplicationFactor": 1,
                 "Configs": None, "TopicId": "AAAAAAAAAAAAAAAAAAAAAA"}
            if not valid_topic(name):
                r.update(ErrorCode=INVALID_TOPIC, ErrorMessage=f"Topic name {name!r} is illegal, it contains a "
                                                               "character other than ASCII alphanumerics, '.', '_' "
                                                               "and '-', or is empty, '.', '..' or over 249 characters")
            elif name == METADATA_TOPIC:  # KafkaApis/ControllerApis.createTopics
                r.update(ErrorCode=INVALID_REQUEST, ErrorMessage=f"Creation of internal topic {name} is prohibited.")
            elif any(k[0] == name for k in self.partitions) or name in self.creating:
                r.update(ErrorCode=TOPIC_ALREADY_EXISTS, ErrorMessage=f"Topic '{name}' already exists.")
            elif collision_key(name) in collisions:
                r.update(ErrorCode=INVALID_TOPIC, ErrorMessage=f"Topic '{name}' collides with an existing topic "
                                                               "('.' and '_' collide)")
            elif n == 0 or n < -1:
                r.update(ErrorCode=INVALID_PARTITIONS,
                         ErrorMessage="Number of partitions was set to an invalid non-positive value.")
            elif records > MAX_RECORDS_PER_REQUEST:
                r.update(ErrorCode=POLICY_VIOLATION, ErrorMessage="Unable to perform excessively large batch operation.")
            elif bad_config(t.get("Configs") or []):
                r.update(ErrorCode=INVALID_CONFIG, ErrorMessage=bad_config(t.get("Configs") or []))
            elif t.get("ReplicationFactor", 1) not in (-1, 1):
                r.update(ErrorCode=INVALID_REPLICATION_FACTOR,
                         ErrorMessage=f"Unable to replicate the partition {t.get('ReplicationFactor')} time(s): "
                                      "The target replication factor of "
                                      f"{t.get('ReplicationFactor')} cannot be reached because only 1 broker(s) "
                                      "are registered.")
            if r["ErrorCode"] == NONE:
                n = self.default_partitions if n == -1 else n
                r["NumPartitions"] = n
                collisions.add(collision_key(name))
                if not body.get("validateOnly"):
                    r["TopicId"] = new_topic_id()
                    plan.append((name, 0, n, r["TopicId"]))
                    self.creating.add(name)
                    configs = {c["Name"]: c["Value"] for c in t.get("Configs") or [] if c.get("Value") is not None}
                    if configs:
                        self.topic_overrides(name)  # loaded before one is added
                        self.config_overrides[name] = configs
            out.append(r)
        return {"Topics": out}, plan

    def make_partitions(self, plan: list) -> list:
        """The partition dirs of a plan, each with partition.metadata and an empty active segment
        (file work only: safe in a worker thread); their LiveLogs, for :meth:`adopt`."""
        made = []
        for topic, first, count, tid in plan:
            for p in range(first, first + count):
                d = os.path.join(self.log_dir, f"{topic}-{p}")
                try:
                    os.makedirs(d, exist_ok=topic in INTERNAL_TOPICS)
                    write_partition_metadata(d, tid)
                    s = LiveLog(d, topic, p)
                    s.topic_id, s.epochs = tid, LeaderEpochCache([(0, 0)])
                    s.create_active()
                except OSError as e:
                    raise PartitionsNotMade(made, topic, e) from None
                made.append(s)
        return made

    def make_and_adopt(self, body: dict, plan: list, make=None) -> dict:
        """Make the plan's partitions (``make``: how, e.g. in a thread) and serve them; a topic whose
        dirs could not all be made answers KAFKA_STORAGE_ERROR with the reason (those made are served)."""
        made = []
        try:
            made = (make or self.make_partitions)(plan)
        except PartitionsNotMade as e:
            made = e.made
            _log.warning("creating %s: %s", e.topic, e.error)
            for row in body.get("Topics") or body.get("Results") or []:
                if row.get("Name") == e.topic or row.get("Name") in {t for t, *_r in plan} - {s.topic for s in made}:
                    row.update(ErrorCode=KAFKA_STORAGE_ERROR, ErrorMessage=str(e.error))
        finally:
            self.adopt(plan, made)
        return body

    def adopt(self, plan: list, made: list) -> None:
        """Serve what :meth:`make_partitions` made; the names are no longer reserved."""
        for s in made:
            self.partitions[(s.topic, s.partition)] = s
        for topic, *_rest in plan:
            self.creating.discard(topic)

    def may_auto_create(self, name) -> bool:
        """Whether auto.create.topics.enable may create ``name``: only writable, only a legal name that
        collides with no topic, never an internal topic, never one being created."""
        collisions = {collision_key(t) for t in self.topics() if t != name} | {collision_key(t) for t in self.creating}
        return (self.writable and self.auto_create and valid_topic(name) and name not in INTERNAL_TOPICS
                and name not in self.creating and collision_key(name) not in collisions)

    def advertised(self) -> dict[int, tuple[int, int]]:
        """api key -> (min, max) this broker serves: the write APIs only when writable, and the
        versions of transactions v2 (Produce v12+, EndTxn v5+, TxnOffsetCommit v5+) only while ``transaction.version`` 2 is finalized, as Kafka gates them."""
        out = {**SUPPORTED, **(WRITE_APIS if self.writable else {})}
        if self.txn.transaction_version < 2:
            for key, top in TV2_FIRST.items():
                if key in out:
                    out[key] = (out[key][0], min(out[key][1], top - 1))
        return out

    def supports(self, api_key: int, version: int) -> bool:
        """Advertised and parseable (Produce lists v0-2 but, as in Kafka 4, accepts v3+ only)."""
        lo_hi = self.advertised().get(api_key)
        m = P.REQUESTS.get(api_key)
        return (lo_hi is not None and lo_hi[0] <= version <= lo_hi[1] and m is not None
                and m.valid[0] <= version <= m.valid[1])

    def api_versions(self, version: int, body: dict, error: int = NONE) -> dict:
        """The versions, and (v3+) the features: ``transaction.version`` supported 0-2 and finalized
        at this broker's level (``kfx serve --transaction-version``)."""
        tv = self.txn.transaction_version
        return {"ErrorCode": error,
                "ApiKeys": [{"ApiKey": k, "MinVersion": lo, "MaxVersion": hi} for k, (lo, hi) in
                            sorted(self.advertised().items())],
                "SupportedFeatures": [{"Name": "transaction.version", "MinVersion": 0, "MaxVersion": 2}],
                "FinalizedFeaturesEpoch": 0,
                "FinalizedFeatures": [{"Name": "transaction.version", "MaxVersionLevel": tv, "MinVersionLevel": tv}]
                if tv > 0 else []}

    def _metadata_names(self, version: int, body: dict):
        wanted = body.get("Topics")
        if version == 0 and not wanted:  # v0 has no null array: an empty one asks for every topic
            wanted = None
        ids = self.topic_ids()
        return None if wanted is None else [t.get("Name") if t.get("Name") is not None
                                            else ids.get(t.get("TopicId")) for t in wanted]

    def plan_auto_create(self, version: int, body: dict) -> list:
        """The topics a Metadata request has auto-created (auto.create.topics.enable), as a plan for
        :meth:`make_partitions` (the edge makes them off the event loop, then the answer is given)."""
        names = self._metadata_names(version, body)
        plan = []
        if names and body.get("AllowAutoTopicCreation", True):
            for name in dict.fromkeys(n for n in names if n is not None):
                if self.may_auto_create(name) and not any(k[0] == name for k in self.partitions):
                    plan.append((name, 0, self.default_partitions, new_topic_id()))
                    self.creating.add(name)
        return plan

    def metadata(self, version: int, body: dict) -> dict:
        """Metadata (a topic it names is auto-created first, inline, unless the edge has done it)."""
        plan = self.plan_auto_create(version, body)
        if plan:
            self.make_and_adopt({}, plan)
        names = self._metadata_names(version, body)
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
                fetchable = s.last_stable_offset if committed else s.log_end_offset
                if p["Timestamp"] == EARLIEST:
                    r.update(Offset=s.log_start_offset, LeaderEpoch=s.epoch_at(s.log_start_offset))
                elif p["Timestamp"] == LATEST:
                    r.update(Offset=fetchable, LeaderEpoch=s.leader_epoch)
                else:
                    if p["Timestamp"] == MAX_TIMESTAMP:
                        offset, ts, epoch = self.offset_of_max_timestamp(s)
                    else:
                        offset, ts = self.offset_for_time(s, p["Timestamp"])
                        epoch = s.epoch_at(offset)
                    if 0 <= offset < fetchable:
                        r.update(Offset=offset, Timestamp=ts, LeaderEpoch=epoch)
                parts.append(r)
            topics.append({"Name": t.get("Name"), "Partitions": parts})
        return {"Topics": topics}

    def _batches(self, s: LiveLog):
        for seg in s.segments:
            for b in seg.batches():
                if b.crc_valid():  # a damaged batch's timestamps are not trusted
                    yield b

    def offset_for_time(self, s: LiveLog, ts: int) -> tuple[int, int]:
        """First offset at or after the log start whose record timestamp is >= ts (Kafka's ListOffsets
        by time, UnifiedLog.fetchOffsetByTimestamp): each segment looked up through its time index
        (Segment.find_offset_by_timestamp); a segment whose times all lie below ``ts`` costs the
        batches after its last time-index entry."""
        found = offset_for_timestamp(s.segments, ts, s.log_start_offset)
        return (-1, -1) if found is None else (found.offset, found.timestamp)

    def offset_of_max_timestamp(self, s: LiveLog) -> tuple[int, int, int]:
        """(offset, timestamp, leader epoch) of the first record carrying the partition's largest
        timestamp (ListOffsets -3, KIP-734), as Kafka 3.8+ answers it (UnifiedLog.fetchOffsetByTimestamp,
        KAFKA-16310): the first batch with that max timestamp, its ``offsetOfMaxTimestamp`` (the first
        record whose timestamp is the batch's max; none for magic 0) and the batch's own partition
        leader epoch (-1 when it has none). No such record: (-1, -1, -1)."""
        best = None
        for b in self._batches(s):
            if best is None or b.max_timestamp > best.max_timestamp:
                best = b
        if best is None or best.magic == 0:
            return -1, -1, -1
        for r in best.records():
            if r.timestamp == best.max_timestamp:
                epoch = best.partition_leader_epoch if best.magic >= 2 else -1
                return r.offset, r.timestamp, max(epoch, -1)
        return -1, -1, -1

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
                    r.update(HighWatermark=s.log_end_offset, LastStableOffset=s.last_stable_offset, LogStartOffset=s.log_start_offset)
                    off = p["FetchOffset"]
                    if off < s.log_start_offset or off > s.log_end_offset:
                        r["ErrorCode"] = OFFSET_OUT_OF_RANGE
                    else:
                        limit = s.last_stable_offset if committed else s.log_end_offset
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
        start = s.segment_for(offset) or (s.segments[0] if s.segments else None)
        if start is None or offset >= limit:
            return b"", offset
        for seg in s.segments[s.segments.index(start):]:
            base = seg.base_offset
            entries = self._index(seg.path(INDEX), base)
            pos = offset_index.lookup(entries, offset, base)[1] if entries else 0
            with seg.walk(pos) as walk:  # LogSegment.read's walk from the index's position, whole batches
                begin = end = None
                upper = offset
                for b in walk:
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
                    return FileRegion(seg.log, begin, end - begin), upper
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
        floor = s.segment_for(first)
        for seg in s.segments:
            if (floor is not None and seg.base_offset < floor.base_offset) or seg.base_offset >= upper:
                continue
            found, complete = seg.collect_aborted_txns(first, upper)
            out += [{"ProducerId": e.producer_id, "FirstOffset": e.first_offset} for e in found]
            if complete:
                break
        return out
