"""Producer state: what Kafka rebuilds from batches and stores in ``<offset>.snapshot`` files.

:class:`ProducerState` replays batches with Kafka's replication-origin rules (ProducerAppendInfo:
no validation, just state): per producer the epoch, the last batch's sequence range, offset and
timestamp, the coordinator epoch of the last marker and the first offset of its open transaction.
Completed transactions come back from :meth:`append` with the last stable offset Kafka puts in
the ``.txnindex`` entry of an aborted one.
"""
from __future__ import annotations

from dataclasses import dataclass

from kafkaforensics.records.checksums import crc32c

from specs import producer_snapshot as S
from specs import record_batch as R
from specs.lazy import lazy

from kafkaforensics.errors import KafkaFormatError
from kafkaforensics.log.txn_index import AbortedTxn
from kafkaforensics.records import header_list, int64

#: numpy columns of runs of headers: a plain read of a snapshot never loads it
np = lazy("numpy", globals())



@dataclass
class ProducerEntry:
    producer_id: int
    epoch: int = -1
    last_sequence: int = -1
    last_offset: int = -1
    offset_delta: int = 0
    timestamp: int = -1
    coordinator_epoch: int = -1
    current_txn_first_offset: int = -1

    @property
    def first_sequence(self) -> int:
        return -1 if self.last_sequence < 0 else self.last_sequence - self.offset_delta

    def to_json(self) -> dict:
        return {"producerId": self.producer_id, "producerEpoch": self.epoch,
                "lastSequence": self.last_sequence, "firstSequence": self.first_sequence,
                "lastOffset": self.last_offset, "offsetDelta": self.offset_delta,
                "lastTimestamp": self.timestamp, "coordinatorEpoch": self.coordinator_epoch,
                "currentTxnFirstOffset": self.current_txn_first_offset}


@dataclass(frozen=True)
class CompletedTxn:
    producer_id: int
    first_offset: int
    last_offset: int
    aborted: bool
    last_stable_offset: int

    def aborted_entry(self) -> AbortedTxn:
        return AbortedTxn(self.producer_id, self.first_offset, self.last_offset, self.last_stable_offset)


class ProducerState:
    def __init__(self):
        self.producers: dict[int, ProducerEntry] = {}
        self.ongoing: dict[int, int] = {}  # first offset -> producer id (Kafka keeps them ordered)

    def append(self, batch) -> CompletedTxn | None:
        """Apply one batch; returns the transaction its marker completes, if any."""
        done = None
        # a batch whose offsets leave int64 is damage (records.int64): never a producer entry
        if batch.magic >= 2 and batch.producer_id >= 0 and int64.fits(batch.last_offset):
            pid = batch.producer_id
            e = self.producers.get(pid)
            if e is None:
                e = self.producers[pid] = ProducerEntry(pid)
            if batch.producer_epoch != e.epoch and (not batch.is_control or e.epoch >= 0):
                # a new epoch resets the sequence state (Kafka: a fresh entry for the epoch); an end
                # marker bumping it (transactions v2, KIP-890) does too
                e.last_sequence, e.last_offset, e.offset_delta = -1, -1, 0
            if batch.is_control:
                marker = _marker(batch)
                if marker is not None:
                    aborted, coord_epoch = marker
                    first = e.current_txn_first_offset
                    if first >= 0:
                        self.ongoing.pop(first, None)
                        lso = self._next_incomplete_other(pid, batch.next_offset)
                        done = CompletedTxn(pid, first, batch.last_offset, aborted, lso)
                    e.coordinator_epoch = coord_epoch
                e.epoch = batch.producer_epoch
                e.current_txn_first_offset = -1
                e.timestamp = batch.max_timestamp
            else:
                e.epoch = batch.producer_epoch
                e.last_sequence = batch.last_sequence
                e.last_offset = batch.last_offset
                e.offset_delta = batch.last_offset - batch.base_offset
                e.timestamp = batch.max_timestamp
                if batch.is_transactional and e.current_txn_first_offset < 0:
                    e.current_txn_first_offset = batch.base_offset
                    self.ongoing[batch.base_offset] = pid
        return done

    def append_run(self, run, lo: int, hi: int) -> None:
        """Apply batches ``lo:hi`` of a :class:`~.header_run.HeaderRun`, none of them a control
        batch: the state :meth:`append` leaves after each in turn, touching one batch per producer
        (the last; and the first transactional one, which opens its transaction)."""
        if hi <= lo:
            return
        if isinstance(run.position, list):  # a ListRun (header_list): the same, without numpy
            self._append_rows(run, lo, hi)
            return
        pid = run.header["producerId"][lo:hi]
        has = np.flatnonzero(pid >= 0)
        if len(has):
            p = pid[has]
            producers, first = np.unique(p, return_index=True)
            _, last_rev = np.unique(p[::-1], return_index=True)
            last = len(p) - 1 - last_rev
            for u in producers[np.argsort(first)].tolist():  # entries are made in log order
                if u not in self.producers:
                    self.producers[u] = ProducerEntry(u)
            tx = has[(run.header["attributes"][lo:hi][has] & R.TRANSACTIONAL_MASK) != 0]
            if len(tx):
                _, tx_first = np.unique(pid[tx], return_index=True)
                for i in np.sort(tx[tx_first]).tolist():
                    if self.producers[int(pid[i])].current_txn_first_offset < 0:
                        self.append(run.batch(lo + i))
            for i in has[last].tolist():
                self.append(run.batch(lo + i))

    def _append_rows(self, run, lo: int, hi: int) -> None:
        """:meth:`append_run` over a :class:`~.header_list.ListRun`: entries made in log order,
        each producer's first transactional batch applied in log order, then each one's last batch
        by producer id (as the numpy way does)."""
        at = header_list.FIELD
        pids, attrs = run.columns[at["producerId"]], run.columns[at["attributes"]]
        last, first_tx = {}, {}
        if max(pids[lo:hi]) >= 0:  # else no batch of the run has a producer
            for i in range(lo, hi):
                pid = pids[i]
                if pid < 0:
                    continue
                if pid not in last and pid not in self.producers:
                    self.producers[pid] = ProducerEntry(pid)
                last[pid] = i
                if attrs[i] & R.TRANSACTIONAL_MASK and pid not in first_tx:
                    first_tx[pid] = i
        for i in sorted(first_tx.values()):
            if self.producers[pids[i]].current_txn_first_offset < 0:
                self.append(run.batch(i))
        for pid in sorted(last):
            self.append(run.batch(last[pid]))
        self.map_end_offset = run.last_offset[hi - 1] + 1

    def _next_incomplete_other(self, pid: int, default: int) -> int:
        """Kafka's lastStableOffset(completedTxn): first offset of another producer's open txn."""
        for first in sorted(self.ongoing):
            if self.ongoing[first] != pid:
                return first
        return default

    def first_unstable_offset(self) -> int | None:
        return min(self.ongoing) if self.ongoing else None

    # -- snapshot files ------------------------------------------------------------------------
    def to_snapshot(self) -> bytes:
        return snapshot_bytes(sorted(self.producers.values(), key=lambda e: e.producer_id))


def _marker(batch):
    """(aborted, coordinator epoch) of an end-transaction marker; None for any other control
    record, and for one that cannot be read (whoever walks the log reports that problem)."""
    try:
        recs = batch.records()
    except KafkaFormatError:
        return None
    if not recs:
        return None
    ctype = recs[0].control_type
    if ctype not in (R.ABORT, R.COMMIT):
        return None
    epoch = recs[0].control()["coordinatorEpoch"]
    return ctype == R.ABORT, -1 if epoch is None else epoch


def snapshot_bytes(entries: list[ProducerEntry]) -> bytes:
    header = bytearray(S.HEADER_STRUCT.pack(S.VERSION, 0, len(entries)))
    body = b"".join(
        S.ENTRY_STRUCT.pack(e.producer_id, e.epoch, e.last_sequence, e.last_offset, e.offset_delta,
                            e.timestamp, e.coordinator_epoch, e.current_txn_first_offset) for e in entries)
    crc = crc32c(body, crc32c(memoryview(header)[S.COUNT_OFFSET:]))
    return S.HEADER_STRUCT.pack(S.VERSION, crc, len(entries)) + body


def read_snapshot(data: bytes, *, file: str | None = None) -> list[ProducerEntry]:
    """Parse a producer snapshot, checking version, CRC and the entry count against the size."""
    if len(data) < S.HEADER_STRUCT.size:
        raise KafkaFormatError("snapshot", f"file of {len(data)} bytes is too short", file=file, position=0)
    version, crc, count = S.HEADER_STRUCT.unpack_from(data, 0)
    if version != S.VERSION:
        raise KafkaFormatError("snapshot", f"unknown snapshot version {version}", file=file, position=0)
    computed = crc32c(data[S.COUNT_OFFSET:])
    if computed != crc:
        raise KafkaFormatError("snapshot", f"CRC mismatch (stored {crc}, computed {computed})",
                               file=file, position=S.CRC_OFFSET)
    size = S.ENTRY_STRUCT.size
    if count < 0 or S.ENTRIES_OFFSET + count * size != len(data):
        raise KafkaFormatError("snapshot", f"entry count {count} does not match the file size {len(data)}",
                               file=file, position=S.COUNT_OFFSET)
    return [ProducerEntry(*S.ENTRY_STRUCT.unpack_from(data, S.ENTRIES_OFFSET + i * size)) for i in range(count)]
