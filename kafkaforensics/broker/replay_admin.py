"""The replay broker's admin and forensic APIs, answered from the log dir (no I/O of their own
beyond reading it): what ``kafka-log-dirs.sh``, ``kafka-transactions.sh``, ``kafka-configs.sh``,
``kafka-consumer-groups.sh`` and the clients' admin APIs ask a broker.

DescribeCluster, DescribeConfigs (every topic config, the topic's own from the KRaft metadata), DescribeLogDirs,
OffsetForLeaderEpoch (the leader-epoch cache), DescribeProducers (the producer state the log holds),
ListTransactions/DescribeTransactions (the latest state of each transactional id in
``__transaction_state``, then the live coordinator's).  :class:`AdminAPIs` and :class:`WriteAdminAPIs` are
objects the :class:`~kafkaforensics.broker.replay.ReplayBroker` holds (``admin``, ``write_admin``).
"""
from __future__ import annotations

import os
import re
import shutil
import time
import uuid

from specs.kafka_errors import (INVALID_PARTITIONS, INVALID_REQUEST, INVALID_TOPIC, NONE, OFFSET_OUT_OF_RANGE,
                                POLICY_VIOLATION, TRANSACTIONAL_ID_NOT_FOUND, UNKNOWN_TOPIC_ID, UNKNOWN_TOPIC_OR_PARTITION)
from specs.kafka_messages import TRANSACTION_STATES
from specs.message_types import typed
from specs.messages import (CreatePartitionsRequest, CreatePartitionsResponse, DeleteRecordsRequest,
                            DeleteRecordsResponse, DeleteTopicsRequest, DeleteTopicsResponse, DescribeClusterResponse,
                            DescribeConfigsRequest, DescribeConfigsResponse, DescribeLogDirsRequest,
                            DescribeLogDirsResponse, DescribeProducersRequest, DescribeProducersResponse,
                            DescribeTransactionsRequest, DescribeTransactionsResponse, ListTransactionsRequest,
                            ListTransactionsResponse, OffsetForLeaderEpochRequest, OffsetForLeaderEpochResponse)
from specs.protocol_messages import ApiKey

from kafkaforensics.broker import topic_configs as TC
from kafkaforensics.broker.topic_creation import MAX_RECORDS_PER_REQUEST
from kafkaforensics.broker.txn_coordinator import transaction_state
from kafkaforensics.log.partition import LogDir, find_partitions

#: DescribeConfigs resource types (Kafka's ConfigResource.Type)
TOPIC_RESOURCE, BROKER_RESOURCE = 2, 4


class AdminAPIs:
    """The read APIs, over the :class:`~kafkaforensics.broker.replay.ReplayBroker` ``b`` that holds them."""

    def __init__(self, broker):
        self.b = broker

    # -- the cluster -----------------------------------------------------------------------------
    def describe_cluster(self, version: int, body) -> DescribeClusterResponse:
        """This one-node cluster (the request asks nothing this broker answers by)."""
        dcr = DescribeClusterResponse
        return dcr(error_code=NONE, error_message=None, endpoint_type=1, cluster_id=self.b.cluster_id(),
                   controller_id=self.b.node_id,
                   brokers=[dcr.DescribeClusterBroker(broker_id=self.b.node_id, host=self.b.host, port=self.b.port,
                                                      rack=None, is_fenced=False)],
                   cluster_authorized_operations=-2147483648)

    def broker_configs(self) -> dict:
        return {"broker.id": str(self.b.node_id), "node.id": str(self.b.node_id), "log.dirs": self.b.log_dir,
                "auto.create.topics.enable": str(bool(self.b.writable and self.b.auto_create)).lower(),
                "num.partitions": str(self.b.default_partitions)}

    def describe_configs(self, version: int, body) -> DescribeConfigsResponse:
        """A topic: every Kafka 4.0 topic config with value, source and (IncludeSynonyms) synonyms, the
        topic's own from the log dir's KRaft ConfigRecords (:mod:`topic_configs`); this broker: the
        settings it runs with (read-only, STATIC_BROKER_CONFIG)."""
        req: DescribeConfigsRequest = typed(ApiKey.DESCRIBE_CONFIGS, body)
        dcr = DescribeConfigsResponse
        results = []
        synonyms = bool(req.include_synonyms)
        for r in req.resources:
            rtype, name, keys = r.resource_type, r.resource_name, r.configuration_keys
            res = dcr.DescribeConfigsResult(error_code=NONE, error_message=None, resource_type=rtype,
                                            resource_name=name, configs=[])
            if rtype == TOPIC_RESOURCE:
                if name not in self.b.topics():
                    res.error_code, res.error_message = UNKNOWN_TOPIC_OR_PARTITION, f"unknown topic {name}"
                else:
                    res.configs = TC.describe(self.b.topic_overrides(name), keys, synonyms)
            elif rtype == BROKER_RESOURCE and name in ("", str(self.b.node_id)):
                res.configs = [
                    TC.config_result(k, v, TC.STATIC_BROKER_CONFIG, read_only=True, is_default=False,
                                     synonyms=[TC.synonym(k, v, TC.STATIC_BROKER_CONFIG)] if synonyms else [],
                                     ctype=TC.INT if k in ("num.partitions", "broker.id", "node.id") else
                                     TC.BOOLEAN if k == "auto.create.topics.enable" else TC.STRING)
                    for k, v in sorted(self.broker_configs().items()) if keys is None or k in keys]
            else:
                res.error_code = INVALID_REQUEST
                res.error_message = f"no configs of resource type {rtype} {name!r} here"
            results.append(res)
        return dcr(results=results)

    # -- the log dir -----------------------------------------------------------------------------
    def describe_log_dirs(self, version: int, body) -> DescribeLogDirsResponse:
        """One log dir: every served partition's size, and its -future copies flagged IsFutureKey."""
        dlr = DescribeLogDirsResponse
        req: DescribeLogDirsRequest = typed(ApiKey.DESCRIBE_LOG_DIRS, body)
        wanted = req.topics
        want = None if wanted is None else {(t.topic, p) for t in wanted for p in t.partitions}
        topics: dict[str, list] = {}
        for pd in find_partitions(self.b.log_dir):
            if pd.topic is None or pd.partition is None or pd.dir_state not in ("live", "future"):
                continue
            if want is not None and (pd.topic, pd.partition) not in want:
                continue
            size = sum(os.path.getsize(seg.log) for seg in pd.segments if os.path.exists(seg.log))
            topics.setdefault(pd.topic, []).append(dlr.DescribeLogDirsPartition(
                partition_index=pd.partition, partition_size=size, offset_lag=0,
                is_future_key=pd.dir_state == "future"))
        try:
            du = shutil.disk_usage(self.b.log_dir)
            total, usable = du.total, du.free
        except OSError:
            total = usable = -1
        return dlr(error_code=NONE, results=[dlr.DescribeLogDirsResult(
            error_code=NONE, log_dir=self.b.log_dir, total_bytes=total, usable_bytes=usable, is_cordoned=False,
            topics=[dlr.DescribeLogDirsTopic(name=t, partitions=ps) for t, ps in sorted(topics.items())])])

    def end_offset_for_epoch(self, s, epoch: int) -> tuple[int, int]:
        """Kafka's LeaderEpochFileCache.endOffsetFor: (epoch, end offset) for a requested epoch."""
        return s.epochs.end_offset_for(epoch, s.log_end_offset)

    def offset_for_leader_epoch(self, version: int, body) -> OffsetForLeaderEpochResponse:
        """Each partition's end offset of the epoch asked (the leader-epoch cache)."""
        ofl = OffsetForLeaderEpochResponse
        req: OffsetForLeaderEpochRequest = typed(ApiKey.OFFSET_FOR_LEADER_EPOCH, body)
        topics = []
        for t in req.topics:
            parts = []
            for p in t.partitions:
                s = self.b.partitions.get((t.topic, p.partition))
                r = ofl.EpochEndOffset(error_code=NONE, partition=p.partition, leader_epoch=-1, end_offset=-1)
                if s is None:
                    r.error_code = UNKNOWN_TOPIC_OR_PARTITION
                else:
                    r.leader_epoch, r.end_offset = self.end_offset_for_epoch(s, p.leader_epoch)
                parts.append(r)
            topics.append(ofl.OffsetForLeaderTopicResult(topic=t.topic, partitions=parts))
        return ofl(topics=topics)

    # -- producers and transactions --------------------------------------------------------------
    def describe_producers(self, version: int, body) -> DescribeProducersResponse:
        """Each partition's producer state, as the log holds it."""
        dpr = DescribeProducersResponse
        req: DescribeProducersRequest = typed(ApiKey.DESCRIBE_PRODUCERS, body)
        topics = []
        for t in req.topics:
            parts = []
            for i in t.partition_indexes:
                s = self.b.partitions.get((t.name, i))
                r = dpr.PartitionResponse(partition_index=i, error_code=NONE, error_message=None, active_producers=[])
                if s is None:
                    r.error_code = UNKNOWN_TOPIC_OR_PARTITION
                else:
                    r.active_producers = [
                        dpr.ProducerState(producer_id=e.producer_id, producer_epoch=e.epoch,
                                          last_sequence=e.last_sequence, last_timestamp=e.timestamp,
                                          coordinator_epoch=e.coordinator_epoch,
                                          current_txn_start_offset=e.current_txn_first_offset)
                        for _pid, e in sorted(s.state.producers.items())]
                parts.append(r)
            topics.append(dpr.TopicResponse(name=t.name, partitions=parts))
        return dpr(topics=topics)

    def transactions(self) -> dict[str, DescribeTransactionsResponse.TransactionState]:
        """The newest __transaction_state value of each transactional id (tombstones remove it), then
        the live state of the ids this broker's transaction coordinator has seen."""
        out = {tid: transaction_state(tid, e.producer_id, e.producer_epoch, TRANSACTION_STATES.get(e.status, "Unknown"),
                                      e.timeout_ms, e.start_ms, e.partitions)
               for tid, e in self.b.transactions.logged_transactions().items()}
        out.update(self.b.txn.describe())  # what this broker's own coordinator has seen is newer
        return out

    def list_transactions(self, version: int, body) -> ListTransactionsResponse:
        """The transactions the filters keep (state, producer id, open longer than, id pattern)."""
        ltr = ListTransactionsResponse
        req: ListTransactionsRequest = typed(ApiKey.LIST_TRANSACTIONS, body)
        states = req.state_filters or []
        pids = set(req.producer_id_filters or [])
        duration = req.duration_filter
        pattern = req.transactional_id_pattern
        try:
            rx = re.compile(pattern) if pattern else None
        except re.error:
            return ltr(error_code=INVALID_REQUEST, unknown_state_filters=[], transaction_states=[])
        now = int(time.time() * 1000)
        out = []
        for tid, t in sorted(self.transactions().items()):
            if states and t.transaction_state not in states:
                continue
            if pids and t.producer_id not in pids:
                continue
            if duration is not None and duration >= 0 and now - t.transaction_start_time_ms < duration:
                continue
            if rx is not None and not rx.fullmatch(tid):
                continue
            out.append(ltr.TransactionState(transactional_id=tid, producer_id=t.producer_id,
                                            transaction_state=t.transaction_state))
        return ltr(error_code=NONE, unknown_state_filters=[s for s in states if s not in TRANSACTION_STATES.values()],
                   transaction_states=out)

    def describe_transactions(self, version: int, body) -> DescribeTransactionsResponse:
        """Each transactional id's state (TRANSACTIONAL_ID_NOT_FOUND for one never seen)."""
        known = self.transactions()
        req: DescribeTransactionsRequest = typed(ApiKey.DESCRIBE_TRANSACTIONS, body)
        out = []
        for tid in req.transactional_ids:
            t = known.get(tid)
            if t is None:
                t = transaction_state(tid, -1, -1, "", 0, -1, ())
                t.error_code = TRANSACTIONAL_ID_NOT_FOUND
            out.append(t)
        return DescribeTransactionsResponse(transaction_states=out)


class WriteAdminAPIs:
    """With ``--writable``, over the broker ``b`` that holds them: DeleteRecords (the log start offset moves,
    log-start-offset-checkpoint records it and the leader-epoch cache is truncated to it; no segment
    is removed), DeleteTopics (the partition
    dirs are renamed ``<topic>-<n>.<id>-delete`` as Kafka renames them -- kept, never removed) and
    CreatePartitions."""

    def __init__(self, broker):
        self.b = broker

    def _save_log_starts(self) -> None:
        """log-start-offset-checkpoint gets every served partition's log start; the entries of
        partitions this broker does not serve are kept (temp file, fsync, rename)."""
        LogDir(self.b.log_dir).update_checkpoint(
            LogDir.LOG_START_OFFSET, {tp: s.log_start_offset for tp, s in sorted(self.b.partitions.items())},
            unreadable="replace")

    def _forget_log_starts(self, tps: list) -> None:
        """A deleted partition's log-start-offset-checkpoint entry goes (as Kafka's next checkpoint
        drops a deleted log), so a topic created again under the name does not inherit it."""
        LogDir(self.b.log_dir).update_checkpoint(LogDir.LOG_START_OFFSET, dict.fromkeys(tps), create=False,
                                                 unreadable="replace")

    def delete_records(self, version: int, body) -> DeleteRecordsResponse:
        """Each partition's log start moved up to the offset asked (-1: the log end)."""
        drr = DeleteRecordsResponse
        req: DeleteRecordsRequest = typed(ApiKey.DELETE_RECORDS, body)
        topics, moved = [], False
        for t in req.topics:
            parts = []
            for p in t.partitions:
                s = self.b.partitions.get((t.name, p.partition_index))
                r = drr.DeleteRecordsPartitionResult(partition_index=p.partition_index, low_watermark=-1,
                                                     error_code=NONE)
                if s is None:
                    r.error_code = UNKNOWN_TOPIC_OR_PARTITION
                else:
                    target = s.log_end_offset if p.offset == -1 else p.offset
                    if target < 0 or target > s.log_end_offset:
                        r.error_code = OFFSET_OUT_OF_RANGE
                    else:
                        if target > s.log_start_offset:  # UnifiedLog.maybeIncrementLogStartOffset
                            s.log_start_offset, moved = target, True
                            if s.epochs.truncate_from_start(target):  # and the leader-epoch cache with it
                                s.epochs.write(s.path)
                        r.low_watermark = s.log_start_offset
                parts.append(r)
            topics.append(drr.DeleteRecordsTopicResult(name=t.name, partitions=parts))
        if moved:
            self._save_log_starts()
        return drr(topics=topics)

    def delete_topics(self, version: int, body) -> DeleteTopicsResponse:
        """The topics' partition dirs renamed ``-delete`` (by name, or by TopicId from v6)."""
        req: DeleteTopicsRequest = typed(ApiKey.DELETE_TOPICS, body)
        ids = self.b.topic_ids()
        wanted = ([(t.name or ids.get(t.topic_id), t.topic_id) for t in req.topics]
                  if version >= 6 else [(n, None) for n in req.topic_names])
        out = []
        for name, tid in wanted:
            parts = self.b.topics().get(name) if name else None
            r = DeleteTopicsResponse.DeletableTopicResult(name=name, topic_id=tid or "AAAAAAAAAAAAAAAAAAAAAA",
                                                          error_code=NONE, error_message=None)
            if not parts:
                r.error_code = UNKNOWN_TOPIC_ID if (version >= 6 and not name) else UNKNOWN_TOPIC_OR_PARTITION
            elif name in ("__consumer_offsets", "__transaction_state"):
                r.error_code, r.error_message = INVALID_TOPIC, f"{name} is internal"
            else:
                r.topic_id = parts[0].topic_id
                for s in parts:  # Kafka's rename: <topic>-<n>.<uuid hex>-delete, data kept
                    os.rename(s.path, f"{s.path}.{uuid.uuid4().hex}-delete")
                    del self.b.partitions[(s.topic, s.partition)]
                self._forget_log_starts([(s.topic, s.partition) for s in parts])
            out.append(r)
        return DeleteTopicsResponse(responses=out)

    def create_partitions(self, version: int, body) -> CreatePartitionsResponse:
        """CreatePartitions, the partition dirs made here (the edge runs :meth:`plan_partitions`' work in a thread)."""
        return self.b.topic_creation.make_and_adopt(*self.plan_partitions(version, body))

    def plan_partitions(self, version: int, body) -> tuple[CreatePartitionsResponse, list]:
        """CreatePartitions' answer and what it creates (as :meth:`plan_topics`); more than the
        controller's records per request (one a partition) is POLICY_VIOLATION for the whole request."""
        req: CreatePartitionsRequest = typed(ApiKey.CREATE_PARTITIONS, body)
        out, plan = [], []
        current = {t.name: len(self.b.topics().get(t.name) or []) for t in req.topics}
        records = sum(max(t.count - current[t.name], 0) for t in req.topics)
        for t in req.topics:
            name, count = t.name, t.count
            parts = self.b.topics().get(name)
            r = CreatePartitionsResponse.CreatePartitionsTopicResult(name=name, error_code=NONE, error_message=None)
            if not parts or name in self.b.creating:
                r.error_code = UNKNOWN_TOPIC_OR_PARTITION
            elif count <= len(parts):
                r.error_code = INVALID_PARTITIONS
                r.error_message = (f"Topic currently has {len(parts)} partitions, which is higher than or equal "
                                   f"to the requested {count}.")
            elif records > MAX_RECORDS_PER_REQUEST:
                r.error_code = POLICY_VIOLATION
                r.error_message = "Unable to perform excessively large batch operation."
            elif not req.validate_only:
                plan.append((name, len(parts), count - len(parts), parts[0].topic_id))
                self.b.creating.add(name)
            out.append(r)
        return CreatePartitionsResponse(results=out), plan
