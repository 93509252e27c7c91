"""The replay broker's transaction coordinator, without I/O: Kafka's transaction state machine.

One :class:`TransactionMetadata` a transactional id (Kafka's TransactionMetadata): producer id and
epoch, state (:class:`TxnState`: Empty, Ongoing, PrepareCommit/PrepareAbort, CompleteCommit/
CompleteAbort), the partitions of the open transaction and the offsets it commits.  The coordinator
decides; what it decides to write comes back as :class:`EndMarkers` (one marker a partition, with
the producer id and epoch the markers carry), which the broker appends before calling
:meth:`TransactionCoordinator.complete`.

Both flows Kafka 4.x runs, chosen per request as Kafka's coordinator chooses them:

- transactions v1 (EndTxn v0-4, Produce v3-11): partitions join through AddPartitionsToTxn (v0-3
  from clients, the batched v4+ form too); a transactional Produce to a partition that has not
  joined is refused with INVALID_TXN_STATE (KIP-890 part 1's verification); markers carry the
  producer's epoch, which stays the same from one transaction to the next;
- transactions v2 (KIP-890 part 2, offered when ``transaction.version`` 2 is finalized: EndTxn v5+,
  Produce v12+): a transactional Produce adds its partition (and starts the transaction); every
  EndTxn bumps the epoch, the markers carry the bumped epoch and the response hands it back; an
  EndTxn retried with the epoch before the bump is answered as the first one was; when the epoch
  is exhausted (32766) the producer gets a new id with epoch 0.

Each transition is a :class:`LogEntry` for ``__transaction_state`` (:meth:`TransactionCoordinator.take_log`;
the Prepare one travels with its markers, to be written before them), and :meth:`TransactionCoordinator.restore`
loads them back, so a restarted broker finishes what was prepared and times out what was left open.

InitProducerId bumps the epoch (a new id when exhausted); an ongoing transaction is fenced (epoch
+1) and aborted with the fenced epoch, and the epoch is bumped once more for the new session -- the
net effect of Kafka's CONCURRENT_TRANSACTIONS answer and the client's retry.  Epoch mismatches are
PRODUCER_FENCED (INVALID_PRODUCER_EPOCH for the request versions that predate it, as KafkaApis
maps them), an unknown id INVALID_PRODUCER_ID_MAPPING.  A transaction open longer than its timeout
is aborted with a fenced epoch at the coordinator's next request (:meth:`expire`), as Kafka's
abort-timed-out-transactions task does.
"""
from __future__ import annotations

import enum
import time
from dataclasses import dataclass, field
from typing import Callable

from specs.kafka_errors import (CONCURRENT_TRANSACTIONS, INVALID_PRODUCER_EPOCH, INVALID_PRODUCER_ID_MAPPING,
                                INVALID_REQUEST, INVALID_TRANSACTION_TIMEOUT, INVALID_TXN_STATE, NONE,
                                PRODUCER_FENCED)
from specs.messages import DescribeTransactionsResponse

#: Kafka's transaction.max.timeout.ms default (15 minutes)
MAX_TIMEOUT_MS = 900_000
#: an epoch at or above this is exhausted (Short.MaxValue - 1): the next bump rotates the producer id
EXHAUSTED_EPOCH = 32766

Partition = tuple  # (topic, partition)


class TxnState(enum.Enum):
    EMPTY = "Empty"
    ONGOING = "Ongoing"
    PREPARE_COMMIT = "PrepareCommit"
    PREPARE_ABORT = "PrepareAbort"
    COMPLETE_COMMIT = "CompleteCommit"
    COMPLETE_ABORT = "CompleteAbort"


@dataclass
class TransactionMetadata:
    transactional_id: str
    producer_id: int
    producer_epoch: int
    timeout_ms: int
    state: TxnState = TxnState.EMPTY
    last_producer_epoch: int = -1          # the epoch before a v2 bump (EndTxn retries)
    partitions: set = field(default_factory=set)
    offsets: dict = field(default_factory=dict)   # group -> [(topic, partition, offset, epoch, metadata)]
    start_ms: int = -1
    last_update_ms: int = -1
    v2: bool = False                       # the open (or last) transaction runs the v2 flow


#: TransactionLogValue.TransactionStatus of each state (specs.kafka_messages.TRANSACTION_STATES)
STATUS = {TxnState.EMPTY: 0, TxnState.ONGOING: 1, TxnState.PREPARE_COMMIT: 2, TxnState.PREPARE_ABORT: 3,
          TxnState.COMPLETE_COMMIT: 4, TxnState.COMPLETE_ABORT: 5}


@dataclass(frozen=True)
class LogEntry:
    """One ``__transaction_state`` record: a transactional id's metadata after a transition."""
    transactional_id: str
    producer_id: int
    producer_epoch: int
    timeout_ms: int
    status: int
    partitions: tuple           # sorted (topic, partition)
    last_update_ms: int
    start_ms: int
    v2: bool


@dataclass(frozen=True)
class EndMarkers:
    """What ending a transaction writes: a COMMIT or ABORT marker on each partition, with this
    producer id and epoch, then (commit) the offsets become the groups'."""
    transactional_id: str
    producer_id: int
    producer_epoch: int
    commit: bool
    partitions: tuple
    offsets: dict
    prepare: LogEntry | None = None   # the PrepareCommit/PrepareAbort record, logged before the markers


@dataclass(frozen=True)
class Outcome:
    error: int
    producer_id: int = -1
    producer_epoch: int = -1
    markers: tuple = ()                    # EndMarkers to write, in order, before complete()


class TransactionCoordinator:
    """``next_producer_id()``: a fresh producer id (the broker's counter, shared with idempotent producers)."""

    def __init__(self, next_producer_id: Callable[[], int], *, transaction_version: int = 2,
                 clock: Callable[[], float] = time.time):
        self.next_producer_id = next_producer_id
        self.transaction_version = transaction_version
        self.clock = clock
        self.txns: dict[str, TransactionMetadata] = {}
        self.log: list[LogEntry] = []   # transitions not yet written to __transaction_state (take_log)

    def _now(self) -> int:
        return int(self.clock() * 1000)

    def _entry(self, t: TransactionMetadata) -> LogEntry:
        return LogEntry(t.transactional_id, t.producer_id, t.producer_epoch, t.timeout_ms, STATUS[t.state],
                        tuple(sorted(t.partitions)), t.last_update_ms, t.start_ms, t.v2)

    def _record(self, t: TransactionMetadata) -> None:
        t.last_update_ms = self._now()
        self.log.append(self._entry(t))

    def take_log(self) -> list[LogEntry]:
        """The transitions to append to ``__transaction_state`` (after the markers of this call)."""
        out, self.log = self.log, []
        return out

    def restore(self, entries: list[LogEntry]) -> list[EndMarkers]:
        """Load the newest entry of each transactional id (a broker's ``__transaction_state``), as
        Kafka's coordinator loads its partitions: a transaction caught in PrepareCommit/PrepareAbort
        is finished (the markers returned, then :meth:`complete`); an Ongoing one stays open until
        its timeout."""
        out = []
        by_status = {v: k for k, v in STATUS.items()}
        for e in entries:
            state = by_status.get(e.status)
            if state is None:  # Dead, PrepareEpochFence: nothing to carry on
                self.txns.pop(e.transactional_id, None)
                continue
            t = self.txns[e.transactional_id] = TransactionMetadata(
                e.transactional_id, e.producer_id, e.producer_epoch, e.timeout_ms, state,
                partitions=set(e.partitions), start_ms=e.start_ms, last_update_ms=e.last_update_ms, v2=e.v2)
            if state in (TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT):
                out.append(EndMarkers(t.transactional_id, t.producer_id, t.producer_epoch,
                                      state == TxnState.PREPARE_COMMIT, tuple(sorted(t.partitions)), {}))
        return out

    # -- InitProducerId ------------------------------------------------------------------------
    def init_producer_id(self, tid: str, timeout_ms: int, expected_pid: int = -1, expected_epoch: int = -1) -> Outcome:
        if not tid:
            return Outcome(INVALID_REQUEST)
        if not 0 < timeout_ms <= MAX_TIMEOUT_MS:
            return Outcome(INVALID_TRANSACTION_TIMEOUT)
        t = self.txns.get(tid)
        if t is None:
            t = self.txns[tid] = TransactionMetadata(tid, self.next_producer_id(), 0, timeout_ms)
            self._record(t)
            return Outcome(NONE, t.producer_id, t.producer_epoch)
        if expected_pid >= 0 and expected_pid != t.producer_id:
            return Outcome(PRODUCER_FENCED)
        if expected_pid >= 0 and expected_epoch >= 0 and expected_epoch not in (t.producer_epoch, t.last_producer_epoch):
            return Outcome(PRODUCER_FENCED)
        markers: tuple[EndMarkers, ...] = ()
        if t.state == TxnState.ONGOING:  # fence and abort what is open, in the fenced epoch
            markers = (self._prepare(t, commit=False, bump=True),)
            self.complete(tid)
        t.timeout_ms = timeout_ms
        self._bump(t)
        t.state, t.partitions, t.start_ms = TxnState.EMPTY, set(), -1
        self._record(t)
        return Outcome(NONE, t.producer_id, t.producer_epoch, markers)

    def _bump(self, t: TransactionMetadata) -> None:
        """The next epoch, or a new producer id at epoch 0 once the epoch is exhausted."""
        t.last_producer_epoch = t.producer_epoch
        if t.producer_epoch >= EXHAUSTED_EPOCH:
            t.producer_id, t.producer_epoch, t.last_producer_epoch = self.next_producer_id(), 0, -1
        else:
            t.producer_epoch += 1

    # -- partitions join -----------------------------------------------------------------------
    def _check(self, tid, pid, epoch) -> tuple[int, TransactionMetadata | None]:
        t = self.txns.get(tid) if tid else None
        if t is None or t.producer_id != pid:
            return INVALID_PRODUCER_ID_MAPPING, None
        if t.producer_epoch != epoch:
            return PRODUCER_FENCED, None
        if t.state in (TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT):
            return CONCURRENT_TRANSACTIONS, None
        return NONE, t

    def add_partitions(self, tid, pid, epoch, partitions, *, v2: bool = False) -> int:
        """AddPartitionsToTxn (v1), AddOffsetsToTxn's offsets partition, or a v2 transactional Produce."""
        err, t = self._check(tid, pid, epoch)
        if t is None:  # (with an error, always)
            return err
        if t.state != TxnState.ONGOING:  # a new transaction begins
            t.state, t.start_ms, t.partitions, t.offsets, t.v2 = TxnState.ONGOING, self._now(), set(), {}, v2
        elif set(partitions) <= t.partitions:
            return NONE  # Kafka's shortcut: nothing new, nothing logged
        t.partitions.update(partitions)
        self._record(t)
        return NONE

    def verify(self, tid, pid, epoch, partition) -> int:
        """A v1 transactional Produce: its partition must have joined the producer's open transaction."""
        err, t = self._check(tid, pid, epoch)
        if t is None:  # (with an error, always)
            return err
        if t.state != TxnState.ONGOING or partition not in t.partitions:
            return INVALID_TXN_STATE
        return NONE

    def in_transaction(self, tid, pid, epoch, partition) -> int:
        """TxnOffsetCommit: the offsets partition joined (v1 through AddOffsetsToTxn)."""
        return self.verify(tid, pid, epoch, partition)

    def add_offsets(self, tid: str, group: str, commits: list) -> None:
        self.txns[tid].offsets.setdefault(group, []).extend(commits)

    # -- EndTxn --------------------------------------------------------------------------------
    def end_txn(self, tid, pid, epoch, commit: bool, *, v2: bool = False) -> Outcome:
        if not tid:
            return Outcome(INVALID_REQUEST)
        t = self.txns.get(tid)
        if t is None or t.producer_id != pid and not (v2 and t.state in (TxnState.COMPLETE_COMMIT,
                                                                          TxnState.COMPLETE_ABORT)):
            return Outcome(INVALID_PRODUCER_ID_MAPPING)
        done = TxnState.COMPLETE_COMMIT if commit else TxnState.COMPLETE_ABORT
        if v2 and t.state == done and epoch == t.last_producer_epoch:  # a retry of the EndTxn that bumped it
            return Outcome(NONE, t.producer_id, t.producer_epoch)
        if t.producer_id != pid:
            return Outcome(INVALID_PRODUCER_ID_MAPPING)
        if epoch != t.producer_epoch:
            return Outcome(PRODUCER_FENCED)
        if t.state == TxnState.ONGOING:
            m = self._prepare(t, commit, bump=v2)
            self.complete(tid)
            return Outcome(NONE, t.producer_id, t.producer_epoch, (m,))
        if t.state in (TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT):
            return Outcome(CONCURRENT_TRANSACTIONS)
        if t.state == done and not v2:
            return Outcome(NONE, t.producer_id, t.producer_epoch)
        if v2 and not commit and t.state != TxnState.ONGOING:
            # v2: aborting with nothing open still bumps the epoch (no partition, no marker)
            self._bump(t)
            t.state, t.v2 = TxnState.COMPLETE_ABORT, True
            self._record(t)
            return Outcome(NONE, t.producer_id, t.producer_epoch)
        return Outcome(INVALID_TXN_STATE)

    def _prepare(self, t: TransactionMetadata, commit: bool, bump: bool) -> EndMarkers:
        """Ongoing -> Prepare*: the markers, in the bumped epoch when ``bump`` (v2, or a fence)."""
        marker_epoch = t.producer_epoch + 1 if bump else t.producer_epoch
        pid = t.producer_id
        t.state = TxnState.PREPARE_COMMIT if commit else TxnState.PREPARE_ABORT
        if bump:
            t.last_producer_epoch, t.producer_epoch = t.producer_epoch, marker_epoch
        t.last_update_ms = self._now()
        return EndMarkers(t.transactional_id, pid, marker_epoch, commit, tuple(sorted(t.partitions)),
                          dict(t.offsets) if commit else {}, self._entry(t))

    def complete(self, tid: str) -> None:
        """The markers are written: Prepare* -> Complete*; an exhausted epoch rotates the producer id."""
        t = self.txns[tid]
        t.state = TxnState.COMPLETE_COMMIT if t.state == TxnState.PREPARE_COMMIT else TxnState.COMPLETE_ABORT
        t.partitions, t.offsets = set(), {}
        if t.producer_epoch >= EXHAUSTED_EPOCH:
            t.producer_id, t.producer_epoch, t.last_producer_epoch = self.next_producer_id(), 0, -1
        self._record(t)

    # -- timeouts ------------------------------------------------------------------------------
    def expire(self) -> list[EndMarkers]:
        """Abort every transaction open longer than its timeout, in a fenced epoch (the producer's
        next request gets PRODUCER_FENCED)."""
        now, out = self._now(), []
        for tid, t in self.txns.items():
            if t.state == TxnState.ONGOING and now - t.start_ms > t.timeout_ms:
                out.append(self._prepare(t, commit=False, bump=True))
                self.complete(tid)
        return out

    def describe(self) -> dict[str, DescribeTransactionsResponse.TransactionState]:
        """Each transactional id as DescribeTransactions / ListTransactions answer it."""
        return {tid: transaction_state(tid, t.producer_id, t.producer_epoch, t.state.value, t.timeout_ms, t.start_ms,
                                       t.partitions)
                for tid, t in self.txns.items()}


def client_error(error: int, fenced_from: int, version: int) -> int:
    """PRODUCER_FENCED as the request version knows it: INVALID_PRODUCER_EPOCH below ``fenced_from``
    (KafkaApis maps it so for clients that predate PRODUCER_FENCED)."""
    return INVALID_PRODUCER_EPOCH if error == PRODUCER_FENCED and version < fenced_from else error


def transaction_state(tid: str, producer_id: int, epoch: int, state: str, timeout_ms: int, start_ms: int,
                      partitions) -> DescribeTransactionsResponse.TransactionState:
    """One transactional id as DescribeTransactions answers it (ListTransactions reads it too)."""
    dtr = DescribeTransactionsResponse
    return dtr.TransactionState(
        error_code=NONE, transactional_id=tid, producer_id=producer_id, producer_epoch=epoch,
        transaction_state=state, transaction_timeout_ms=timeout_ms, transaction_start_time_ms=start_ms,
        topics=[dtr.TopicData(topic=topic, partitions=sorted(p for tt, p in partitions if tt == topic))
                for topic in sorted({tt for tt, _p in partitions})])
