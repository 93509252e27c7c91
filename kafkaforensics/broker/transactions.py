"""The replay broker's transaction APIs: InitProducerId, AddPartitionsToTxn, AddOffsetsToTxn, EndTxn,
TxnOffsetCommit and Produce's transactional check -- adapters of the state machine
(:class:`~kafkaforensics.broker.txn_coordinator.TransactionCoordinator`, ``b.txn``) that carry its
decisions out: ``__transaction_state`` records, markers on the partitions, offsets in ``__consumer_offsets``."""
from __future__ import annotations

import time

from specs import record_batch as R
from specs.kafka_errors import (INVALID_PRODUCER_EPOCH, NONE, OPERATION_NOT_ATTEMPTED, PRODUCER_FENCED,
                                TRANSACTIONAL_ID_AUTHORIZATION_FAILED, UNKNOWN_TOPIC_OR_PARTITION)
from specs.message_types import typed
from specs.messages import (AddOffsetsToTxnRequest, AddOffsetsToTxnResponse, AddPartitionsToTxnRequest,
                            AddPartitionsToTxnResponse, EndTxnRequest, EndTxnResponse, InitProducerIdRequest,
                            InitProducerIdResponse, TransactionLogKey, TransactionLogValue, TxnOffsetCommitRequest,
                            TxnOffsetCommitResponse)
from specs.protocol_messages import ApiKey

from kafkaforensics.broker.read_path import valid_batches
from kafkaforensics.broker.txn_coordinator import LogEntry, client_error
from kafkaforensics.errors import KafkaFormatError
from kafkaforensics.records.builder import BatchProducer
from kafkaforensics.records.internal_topics import decode_transaction_log, encode_transaction_log

#: one transaction of an AddPartitionsToTxn v4+ (v0-3's fields are made one)
_TXN = AddPartitionsToTxnRequest.AddPartitionsToTxnTransaction
_APT = AddPartitionsToTxnResponse
_TOC = TxnOffsetCommitResponse


class Transactions:
    """The transaction APIs over the broker ``b`` that holds this object (``b.transactions``)."""

    def __init__(self, broker):
        self.b = broker

    def write_markers(self, outcome, restored: bool = False) -> None:
        """Carry out a coordinator decision as Kafka's coordinator does: each Prepare record to
        __transaction_state, the markers on every partition, then the coordinator's other
        transitions (Complete, Empty, Ongoing); ``restored``: prepared before a restart, completed now."""
        now = int(time.time() * 1000)
        prepared = [m.prepare for m in outcome if m.prepare is not None]
        if prepared:
            self.log_transactions(prepared)
        for m in outcome:
            for key in m.partitions:
                s = self.b.partitions.get(key)
                if s is not None:
                    s.append_marker(m.producer_id, m.producer_epoch, m.commit, timestamp=now)
            if m.commit and self.b.on_txn_offsets is not None:
                for group, commits in m.offsets.items():
                    self.b.on_txn_offsets(group, commits)
            if restored:
                self.b.txn.complete(m.transactional_id)
        self.log_transactions(self.b.txn.take_log())

    def expire_transactions(self) -> None:
        """Abort the transactions open longer than their timeout (before each transactional request,
        and every 10 s from the edge, as Kafka's coordinator does)."""
        self.write_markers(self.b.txn.expire())

    def log_transactions(self, entries) -> None:
        """Append coordinator transitions to __transaction_state-N, one batch a partition."""
        by_partition: dict = {}
        for e in entries:
            value = TransactionLogValue(
                producer_id=e.producer_id, producer_epoch=e.producer_epoch, transaction_timeout_ms=e.timeout_ms,
                transaction_status=e.status,
                transaction_partitions=[TransactionLogValue.PartitionsSchema(
                    topic=t, partition_ids=sorted(p for tt, p in e.partitions if tt == t))
                    for t in sorted({t for t, _p in e.partitions})],
                transaction_last_update_timestamp_ms=e.last_update_ms, transaction_start_timestamp_ms=e.start_ms,
                client_transaction_version=2 if e.v2 else 0)
            s = self.b.internal_partition("__transaction_state", e.transactional_id)
            by_partition.setdefault(s, []).append(encode_transaction_log(e.transactional_id, value.to_dict(),
                                                                         value_version=1 if e.v2 else 0))
        now = int(time.time() * 1000)
        for s, records in by_partition.items():
            s.append_records(records, now)

    def logged_transactions(self) -> dict:
        """The newest __transaction_state entry of each transactional id in the log dir (a tombstone
        removes it): transactional id -> :class:`~kafkaforensics.broker.txn_coordinator.LogEntry`."""
        out: dict = {}
        for s in self.b.topics().get("__transaction_state", []):
            for b in valid_batches(s):
                if b.is_control:
                    continue
                for r in b.records():
                    try:
                        k, v = decode_transaction_log(r.key, r.value)
                    except (KafkaFormatError, ValueError, TypeError):
                        continue
                    tid = TransactionLogKey.from_dict(k["data"]).transactional_id
                    if v is None:
                        out.pop(tid, None)
                        continue
                    d = TransactionLogValue.from_dict(v["data"])
                    out[tid] = LogEntry(tid, d.producer_id, d.producer_epoch, d.transaction_timeout_ms,
                                        d.transaction_status,
                                        tuple(sorted((p.topic, i) for p in d.transaction_partitions or []
                                                     for i in p.partition_ids)),
                                        d.transaction_last_update_timestamp_ms, d.transaction_start_timestamp_ms,
                                        d.client_transaction_version >= 2)
        return out

    def restore_transactions(self) -> None:
        """A writable broker takes over the log dir's __transaction_state, as a coordinator loads its
        partitions: prepared transactions are finished now, open ones time out later."""
        logged = self.logged_transactions()
        if logged:
            self.b.next_producer_id = max(self.b.next_producer_id, max(e.producer_id for e in logged.values()) + 1)
        done = self.b.txn.restore(list(logged.values()))
        self.write_markers(done, restored=True)

    def init_producer_id(self, version: int, body) -> InitProducerIdResponse:
        """A producer id: a new one without a transactional id, else the coordinator's (epoch bumped)."""
        req: InitProducerIdRequest = typed(ApiKey.INIT_PRODUCER_ID, body)
        tid = req.transactional_id
        if tid is None:
            return InitProducerIdResponse(error_code=NONE, producer_id=self.b.new_producer_id(), producer_epoch=0)
        self.expire_transactions()
        o = self.b.txn.init_producer_id(tid, req.transaction_timeout_ms, req.producer_id, req.producer_epoch)
        self.write_markers(o.markers)
        return InitProducerIdResponse(error_code=client_error(o.error, 4, version), producer_id=o.producer_id,
                                      producer_epoch=o.producer_epoch)

    def add_partitions_to_txn(self, version: int, body) -> AddPartitionsToTxnResponse:
        """v0-3 (clients): one transaction; v4+ (the batched form): each, VerifyOnly or adding."""
        req: AddPartitionsToTxnRequest = typed(ApiKey.ADD_PARTITIONS_TO_TXN, body)
        self.expire_transactions()
        if version <= 3:
            txns = [_TXN(transactional_id=req.v3_and_below_transactional_id, producer_id=req.v3_and_below_producer_id,
                         producer_epoch=req.v3_and_below_producer_epoch, verify_only=False,
                         topics=req.v3_and_below_topics or [])]
        else:
            txns = req.transactions or []
        results = []
        for tx in txns:
            tid, pid, epoch = tx.transactional_id, tx.producer_id, tx.producer_epoch
            wanted = [(t.name, p) for t in tx.topics for p in t.partitions]
            unknown = {tp for tp in wanted if tp not in self.b.partitions}
            if tx.verify_only:
                errs = {tp: self.b.txn.verify(tid, pid, epoch, tp) for tp in wanted}
            else:  # Kafka adds none when any is unknown: those UNKNOWN_TOPIC_OR_PARTITION, the rest
                # OPERATION_NOT_ATTEMPTED
                err = NONE if unknown else self.b.txn.add_partitions(tid, pid, epoch, wanted)
                err = client_error(err, 2, version)
                errs = {tp: (UNKNOWN_TOPIC_OR_PARTITION if tp in unknown else
                             OPERATION_NOT_ATTEMPTED if unknown else err) for tp in wanted}
            topics = [_APT.AddPartitionsToTxnTopicResult(name=t.name, results_by_partition=[
                _APT.AddPartitionsToTxnPartitionResult(partition_index=p, partition_error_code=errs[(t.name, p)])
                for p in t.partitions]) for t in tx.topics]
            results.append(_APT.AddPartitionsToTxnResult(transactional_id=tid, topic_results=topics))
        self.log_transactions(self.b.txn.take_log())
        if version <= 3:
            return _APT(results_by_topic_v3_and_below=results[0].topic_results if results else [])
        return _APT(error_code=NONE, results_by_transaction=results)

    def end_txn(self, version: int, body) -> EndTxnResponse:
        """EndTxn: v5+ is the v2 flow (the epoch bumped, the new one answered)."""
        req: EndTxnRequest = typed(ApiKey.END_TXN, body)
        self.expire_transactions()
        o = self.b.txn.end_txn(req.transactional_id, req.producer_id, req.producer_epoch, bool(req.committed),
                               v2=version >= 5)
        self.write_markers(o.markers)
        return EndTxnResponse(error_code=client_error(o.error, 2, version), producer_id=o.producer_id,
                              producer_epoch=o.producer_epoch)

    def add_offsets_to_txn(self, version: int, body) -> AddOffsetsToTxnResponse:
        """The group's __consumer_offsets partition joins the transaction."""
        req: AddOffsetsToTxnRequest = typed(ApiKey.ADD_OFFSETS_TO_TXN, body)
        self.expire_transactions()
        s = self.b.offsets_partition(req.group_id)
        err = self.b.txn.add_partitions(req.transactional_id, req.producer_id, req.producer_epoch,
                                        [(s.topic, s.partition)])
        self.log_transactions(self.b.txn.take_log())
        return AddOffsetsToTxnResponse(error_code=client_error(err, 2, version))

    def txn_offset_commit(self, version: int, body) -> TxnOffsetCommitResponse:
        """The commits go to __consumer_offsets-N in a transactional batch of the producer; they
        become the group's offsets when EndTxn commits (an abort drops them).  v1 requires
        AddOffsetsToTxn first; v5+ (transactions v2) adds the offsets partition itself."""
        req: TxnOffsetCommitRequest = typed(ApiKey.TXN_OFFSET_COMMIT, body)
        tid, gid, pid, epoch = req.transactional_id, req.group_id, req.producer_id, req.producer_epoch
        commits = [(t.name, p.partition_index, p.committed_offset, p.committed_leader_epoch, p.committed_metadata or "")
                   for t in req.topics for p in t.partitions]
        s = self.b.offsets_partition(gid)
        key = (s.topic, s.partition)
        err = (self.b.txn.add_partitions(tid, pid, epoch, [key], v2=True) if version >= 5
               else self.b.txn.in_transaction(tid, pid, epoch, key))
        self.log_transactions(self.b.txn.take_log())
        if err == NONE and commits:
            err = self.b.append_offset_commits(gid, commits, transactional=True, producer=BatchProducer(pid, epoch))
            if err == NONE:
                self.b.txn.add_offsets(tid, gid, commits)
        err = client_error(err, 1 << 15, version)  # the log's producer-state check answers it, in every version
        return _TOC(topics=[_TOC.TxnOffsetCommitResponseTopic(name=t.name, partitions=[
            _TOC.TxnOffsetCommitResponsePartition(partition_index=p.partition_index, error_code=err)
            for p in t.partitions]) for t in req.topics])

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
            err = self.b.txn.add_partitions(tid, h["producerId"], h["producerEpoch"], [key], v2=True)
            self.log_transactions(self.b.txn.take_log())  # the partition joins before its records land
        else:
            err = self.b.txn.verify(tid, h["producerId"], h["producerEpoch"], key)
        return INVALID_PRODUCER_EPOCH if err == PRODUCER_FENCED else err
