"""The replay broker's logic, without I/O of the network: a request in, a response body out.

Every live ``<topic>-<partition>`` directory under the log dir is a partition this one-node cluster
leads, served as it is on disk (the versions advertised are Kafka 4.x's, ``specs.protocol_messages.ADVERTISED``).
The APIs are answered by concern, by objects the broker holds over it: the read path (Metadata, FindCoordinator,
ListOffsets, Fetch: :mod:`read_path`, ``read_path``), the transactions (:mod:`transactions`, ``transactions``),
topic creation (:mod:`topic_creation`, ``topic_creation``) and the admin APIs (:mod:`replay_admin`, ``admin``
and ``write_admin``); this class keeps the log dir's partitions, Produce, ApiVersions and the clean shutdown.  Implemented:
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

import logging
import os
import time

from specs import protocol_messages as P
from specs.kafka_errors import INVALID_TOPIC, NAMES, NONE, POLICY_VIOLATION, UNKNOWN_TOPIC_ID, UNKNOWN_TOPIC_OR_PARTITION
from specs.message_types import typed
from specs.messages import ApiVersionsResponse, ProduceRequest, ProduceResponse
from specs.protocol_messages import ApiKey

from kafkaforensics.broker.group_coordinator import offsets_partition_for
from kafkaforensics.broker.log_validator import (MAX_MESSAGE_BYTES, TIMESTAMP_AFTER_MAX_MS, TIMESTAMP_BEFORE_MAX_MS,
                                                 TopicRules, validate)
from kafkaforensics.broker.read_path import ReadPath
from kafkaforensics.broker.replay_admin import AdminAPIs, WriteAdminAPIs
from kafkaforensics.broker.topic_creation import INTERNAL_TOPICS, METADATA_TOPIC, TopicCreation, valid_topic
from kafkaforensics.broker.transactions import Transactions
from kafkaforensics.broker.txn_coordinator import TransactionCoordinator
from kafkaforensics.errors import KafkaFormatError
from kafkaforensics.inspect.groups import committed_offsets
from kafkaforensics.log.live_log import LiveLog
from kafkaforensics.log.kraft import metadata_topics
from kafkaforensics.log.partition import LogDir, derived_topic_id, find_partitions, partition_dir_state
from kafkaforensics.log.segment import offset_from_name
from kafkaforensics.records.internal_topics import encode_offset_commit
from kafkaforensics.log.load_plan import Dropped, count_dropped
from kafkaforensics.repair.recovery import recover

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
        segs = [seg for seg in s.segments if seg.base_offset >= (offset_from_name(p.file or "") or 0)]
        for i, seg in enumerate(segs):
            count_dropped(past, seg.log, (p.position or 0) if i == 0 else 0)
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


WRITE_APIS = {k: P.ADVERTISED[k] for k in WRITE_ONLY}
#: the first version of each API that only transactions v2 (KIP-890 part 2) uses
TV2_FIRST = {ApiKey.PRODUCE: 12, ApiKey.END_TXN: 5, ApiKey.TXN_OFFSET_COMMIT: 5}


class ReplayBroker:
    """One log dir served as a one-node cluster: its partitions (``partitions``), Produce, ApiVersions and
    the clean shutdown; the other APIs by concern in the objects it holds (see the module docstring)."""

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
        #: (topic, partition) -> its remote tier's segments (``kfx serve --remote``: broker/remote_reads.py)
        self.remote: dict = {}
        self.txn = TransactionCoordinator(self.new_producer_id, transaction_version=transaction_version)
        self.creating: set[str] = set()  # topics a CreateTopics is making (their dirs in a worker thread)
        self.config_overrides: dict | None = None  # topic -> its own configs (topic_overrides)
        self.on_txn_offsets = None  # (group, commits) -> None: a committed transaction's offsets
        #: the admin APIs, objects over this broker; the write ones answer only with ``writable``
        self.admin, self.write_admin = AdminAPIs(self), WriteAdminAPIs(self)
        #: the APIs by concern, objects over this broker
        self.read_path, self.transactions = ReadPath(self), Transactions(self)
        self.topic_creation = TopicCreation(self)
        self.next_producer_id = 1000
        self.was_clean, self.broker_epoch = False, -1
        self.reload()
        if writable:  # before anything is written: the dir must not look clean while this broker may change it
            self.take_clean_marker()
            self.transactions.restore_transactions()

    # -- the log dir ---------------------------------------------------------------------------
    def reload(self) -> None:
        for pd in find_partitions(self.log_dir):
            if (pd.topic is None or pd.partition is None or not valid_topic(pd.topic)
                    or partition_dir_state(pd.path) not in ("live", None)):
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
            self.partitions[(pd.topic, pd.partition)] = s
            if s.damage:  # never hidden: every partition whose log fails validation is logged, located
                for line in damage_report(s):
                    _log.warning(line)
        for topic, parts in self.topics().items():  # one id a topic: its partition.metadata's, else derived
            tid = next((s.topic_id for s in parts if s.topic_id), None) or derived_topic_id(topic)
            for s in parts:
                s.topic_id = tid

    # -- clean shutdown (Kafka's LogManager.shutdown) ----------------------------------------------
    def take_clean_marker(self) -> None:
        """A writable broker about to change the dir takes its ``.kafka_cleanshutdown`` away, as
        Kafka's log loading does: were it to crash, the dir must not look cleanly shut down.  The
        marker's broker epoch is kept for the one :meth:`shutdown` writes."""
        ld = LogDir(self.log_dir)
        self.was_clean, self.broker_epoch = os.path.exists(ld.clean_shutdown_file), -1
        if self.was_clean:
            try:
                self.broker_epoch = (ld.clean_shutdown_marker(strict=True) or {}).get("brokerEpoch", -1)
            except (OSError, ValueError, KafkaFormatError):
                pass
            ld.remove_clean_shutdown()

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
            LogDir(self.log_dir).update_checkpoint(LogDir.RECOVERY_POINT, {tp: s.log_end_offset for tp, s in written.items()},
                                                   unreadable="replace")
            done.append(f"closed {len(written)} partitions (time index, producer snapshot, leader epochs, "
                        "recovery point)")
        untouched = [f"{t}-{p}" for (t, p), s in self.partitions.items() if not s.written]
        if untouched and not self.was_clean:
            done.append(f"no {LogDir.CLEAN_SHUTDOWN}: {len(untouched)} partitions were served as found in a dir "
                        "that was not marked clean (Kafka will recover them)")
        else:
            LogDir(self.log_dir).write_clean_shutdown(self.broker_epoch)
            done.append(f"wrote {LogDir.CLEAN_SHUTDOWN}")
        return done

    def _meta_properties(self) -> dict:
        """The log dir's meta.properties (empty when it has none, or one that does not read)."""
        return LogDir(self.log_dir).meta_properties_raw()

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

    def logged_groups(self) -> list[str]:
        """The groups with offsets committed in the log dir's __consumer_offsets."""
        if not any(t == "__consumer_offsets" for t, _p in self.partitions):
            return []
        return sorted({row["group"] for row in committed_offsets(self.log_dir)})

    def topic_ids(self) -> dict[str, str]:
        """Topic id -> topic name."""
        return {s.topic_id: t for (t, _p), s in self.partitions.items()}

    def named_topic(self, version: int, first_id_version: int, topic_id: str | None, name: str | None):
        """The topic a request names: by ``name`` before ``first_id_version``, by ``topic_id`` from it on."""
        if version >= first_id_version:
            return self.topic_ids().get(topic_id) if topic_id is not None else None
        return name

    def fetched_topic(self, version: int, topic) -> str | None:
        """The topic a Fetch request's (typed) topic entry names (by TopicId from v13)."""
        return self.named_topic(version, 13, topic.topic_id, topic.topic)

    def names_for_ids(self, topics: list | None) -> None:
        """Fill in the name from the topic id of a typed request's topics (OffsetCommit v10+, OffsetFetch
        v10+), for the group coordinator."""
        ids = self.topic_ids()
        for t in topics or []:
            if t.topic_id and not t.name:
                t.name = ids.get(t.topic_id, "")

    def ids_for_names(self, topics: list | None) -> None:
        """Fill in the topic id from the name in a group coordinator's (typed) answer."""
        ids = {n: i for i, n in self.topic_ids().items()}
        for t in topics or []:
            t.topic_id = ids.get(t.name, "AAAAAAAAAAAAAAAAAAAAAA")

    def topics(self) -> dict[str, list[LiveLog]]:
        out: dict[str, list[LiveLog]] = {}
        for (t, _p), s in sorted(self.partitions.items()):
            out.setdefault(t, []).append(s)
        return out

    # -- writing (--writable) ----------------------------------------------------------------------
    def produce(self, version: int, body) -> ProduceResponse:
        """Read-only: every partition answers POLICY_VIOLATION; writable: append (see LiveLog).  A topic
        this broker does not have is UNKNOWN_TOPIC_OR_PARTITION: as in Kafka, only Metadata auto-creates."""
        req: ProduceRequest = typed(ApiKey.PRODUCE, body)
        out = []
        for t in req.topic_data:
            parts = []
            name = self.named_topic(version, 13, t.topic_id, t.name)
            for p in t.partition_data:
                r = ProduceResponse.PartitionProduceResponse(index=p.index, error_code=NONE, base_offset=-1,
                                                             log_start_offset=-1, record_errors=[], error_message=None,
                                                             log_append_time_ms=-1)
                s = self.partitions.get((name, p.index))
                if not self.writable:
                    r.error_code = POLICY_VIOLATION
                    r.error_message = "this replay broker is read-only (start it with --writable)"
                elif s is None:
                    r.error_code = UNKNOWN_TOPIC_ID if version >= 13 and name is None else UNKNOWN_TOPIC_OR_PARTITION
                elif name in INTERNAL_TOPICS:  # ReplicaManager: only the coordinators append to them
                    r.error_code, r.error_message = INVALID_TOPIC, f"Cannot append to internal topic {name}"
                else:
                    v = validate(p.records or b"", version, int(time.time() * 1000), self.topic_rules(name))
                    err, base = v.error, -1
                    if err != NONE:
                        _log.warning("produce to %s-%d refused (%s): %s", name, p.index, NAMES.get(err, err),
                                     v.reason)
                        if v.record_errors:  # Kafka answers a message only with per-record errors
                            r.error_message = v.reason
                            r.record_errors = [ProduceResponse.BatchIndexAndErrorMessage(
                                batch_index=i, batch_index_error_message=m) for i, m in v.record_errors]
                    else:
                        err = self.transactions.check_transactional(version, req.transactional_id, v.batch,
                                                                    (name, p.index))
                    if err == NONE:
                        err, base = s.append(v.batch)
                    r.error_code, r.base_offset, r.log_start_offset = err, base, s.log_start_offset
                parts.append(r)
            out.append(ProduceResponse.TopicProduceResponse(name=t.name, topic_id=t.topic_id,
                                                            partition_responses=parts))
        return ProduceResponse(responses=out)

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
            s = self.topic_creation.new_partition(topic, n, tid)
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

    # -- the protocol ------------------------------------------------------------------------------
    def new_producer_id(self) -> int:
        """The next producer id (InitProducerId, the transaction coordinator's epoch exhaustion)."""
        pid, self.next_producer_id = self.next_producer_id, self.next_producer_id + 1
        return pid

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

    def api_versions(self, version: int, body, error: int = NONE) -> ApiVersionsResponse:
        """The versions, and (v3+) the features: ``transaction.version`` supported 0-2 and finalized
        at this broker's level (``kfx serve --transaction-version``)."""
        tv = self.txn.transaction_version
        avr = ApiVersionsResponse
        return avr(error_code=error,
                   api_keys=[avr.ApiVersion(api_key=k, min_version=lo, max_version=hi)
                             for k, (lo, hi) in sorted(self.advertised().items())],
                   supported_features=[avr.SupportedFeatureKey(name="transaction.version", min_version=0,
                                                               max_version=2)],
                   finalized_features_epoch=0,
                   finalized_features=[avr.FinalizedFeatureKey(name="transaction.version", max_version_level=tv,
                                                               min_version_level=tv)] if tv > 0 else [])

    def metadata_names(self, version: int, req) -> list | None:
        """The topics a (typed) Metadata request names (by name, or by TopicId from v10); None: every topic."""
        wanted = req.topics
        if version == 0 and not wanted:  # v0 has no null array: an empty one asks for every topic
            wanted = None
        ids = self.topic_ids()
        return None if wanted is None else [t.name if t.name is not None else ids.get(t.topic_id) for t in wanted]
