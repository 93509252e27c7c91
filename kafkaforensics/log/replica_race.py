"""The compaction--replication race (Kafka 3.9--4.2) judged on per-replica summaries: one rule for
``kfx diff`` of a fleet (:mod:`kafkaforensics.inspect.fleet`, a partition walked) and for the replica
view of ``kfx scan`` (the scan's batch and record rows, no walk).

A replica is summarised as a :class:`ReplicaLog`: its batches as :class:`BatchFact`, each
transaction's end marker and each open one -- both from :class:`~.producer_state.ProducerState`,
Kafka's producer state rules (KIP-890's epoch bump per marker included), fed batch by batch -- its
keyed records, its log start, log end and last stable offset.  :func:`race_outcomes` compares two
replicas of one partition and returns the four outcomes, each with its evidence:

- ``deleted-key-resurrected``: a key deleted on one replica (its tombstone, or every record gone below
  that replica's cleaner checkpoint) whose older value another replica still serves;
- ``aborted-served-as-committed``: an ABORT marker missing on one replica, whose later COMMIT then
  commits the aborted records;
- ``committed-hidden``: a COMMIT marker missing: the records aborted or held there;
- ``lso-frozen``: a marker on one replica only: the other's transaction stays open past it, its last
  stable offset frozen.
"""
from __future__ import annotations

import bisect
import os
from dataclasses import dataclass, field

from kafkaforensics.errors import KafkaFormatError
from kafkaforensics.log.producer_state import ProducerState
from kafkaforensics.records.batch import Record

KEY_RESURRECTED, ABORTED_SERVED, COMMITTED_HIDDEN, LSO_FROZEN = (
    "deleted-key-resurrected", "aborted-served-as-committed", "committed-hidden", "lso-frozen")
#: the four outcomes of the race, in the order they are reported
RACE_CLASSES = (KEY_RESURRECTED, ABORTED_SERVED, COMMITTED_HIDDEN, LSO_FROZEN)


@dataclass
class BatchFact:
    """What explaining needs of one batch (the walk's buffers are gone once a segment is walked)."""
    file: str
    position: int
    size: int
    base: int
    last: int
    magic: int
    leader_epoch: int
    producer_id: int
    producer_epoch: int
    max_timestamp: int
    control: bool
    transactional: bool
    crc_ok: bool
    #: the record offsets when they are not base..last (a batch the cleaner thinned; a legacy wrapper)
    offsets: tuple | None = None
    #: a transactional data batch's transaction (its first offset); a marker's type (COMMIT, ABORT)
    txn_first: int | None = None
    marker: str | None = None

    def holds(self, offset: int) -> bool:
        return self.base <= offset <= self.last and (self.offsets is None or offset in self.offsets)

    def count_in(self, lo: int, hi: int) -> int:
        """How many of its records have an offset in [lo, hi)."""
        if self.offsets is not None:
            return sum(1 for o in self.offsets if lo <= o < hi)
        return max(0, min(hi, self.last + 1) - max(lo, self.base))

    def where(self) -> dict:
        """The batch as evidence: file, byte, offsets."""
        return {"file": self.file, "position": self.position, "baseOffset": self.base, "lastOffset": self.last}

    def text(self) -> str:
        return f"batch {self.base}..{self.last} at byte {self.position} of {os.path.basename(self.file)}"


def _record_offsets(b) -> tuple | None:
    """The record offsets of a batch that does not hold every offset of base..last, else None."""
    if b.base_offset == b.last_offset or (b.magic >= 2 and b.count == b.last_offset - b.base_offset + 1):
        return None
    try:
        offsets = tuple(r.offset for r in b.records())
    except KafkaFormatError:
        return None
    return None if offsets == tuple(range(b.base_offset, b.last_offset + 1)) else offsets


def _marker_type(b) -> str | None:
    try:
        recs = b.records()
        ctl = recs[0].control() if recs else None
    except KafkaFormatError:
        return None
    return ctl["type"] if ctl else None


def fact_of(b, state) -> BatchFact:
    """A batch (as read, or as a scan's rows give it: :class:`RowBatch`) as a :class:`BatchFact`,
    its transaction from the producer ``state`` it was just applied to."""
    f = BatchFact(b.file, b.position, b.size, b.base_offset, b.last_offset, b.magic,
                  b.partition_leader_epoch if b.magic >= 2 else -1, b.producer_id if b.magic >= 2 else -1,
                  b.producer_epoch if b.magic >= 2 else -1, b.max_timestamp, b.is_control, b.is_transactional,
                  b.crc_valid(), _record_offsets(b))
    if b.is_control:
        f.marker = _marker_type(b)
    elif b.is_transactional and state is not None and b.producer_id in state.producers:
        first = state.producers[b.producer_id].current_txn_first_offset
        f.txn_first = first if first >= 0 else None
    return f


@dataclass
class ReplicaLog:
    """A replica as one pass over its batches leaves it: what :func:`race_outcomes` judges."""
    batches: list = field(default_factory=list)
    #: first offset of a transaction -> its end marker (offset, type, file, position)
    txns: dict = field(default_factory=dict)
    #: first offset of an open transaction -> producer id
    open_txns: dict = field(default_factory=dict)
    #: offset -> the record (key, timestamp, tombstone) of the offsets asked for and of their keys
    records: dict = field(default_factory=dict)
    #: key -> the offsets of the records with that key (the keys watched)
    by_key: dict = field(default_factory=dict)
    log_start: int = 0
    log_end: int = 0
    last_stable: int = 0

    def __post_init__(self):
        self._lasts = []

    def batch_at(self, offset: int) -> int:
        """Index of the first batch whose last offset is at least ``offset`` (len(batches): none)."""
        return bisect.bisect_left(self._lasts, offset)

    def batch_holding(self, offset: int) -> BatchFact | None:
        """The batch holding ``offset``, or None."""
        i = self.batch_at(offset)
        if i < len(self.batches) and self.batches[i].holds(offset):
            return self.batches[i]
        return None

    def add(self, b, state, done) -> BatchFact:
        """Append batch ``b`` (just applied to the producer ``state``; ``done``: the transaction its
        marker completed)."""
        f = fact_of(b, state)
        self.batches.append(f)
        self._lasts.append(f.last)
        if done is not None:
            self.txns[done.first_offset] = {"offset": done.last_offset, "type": "ABORT" if done.aborted else "COMMIT",
                                            "file": b.file, "position": b.position}
        return f

    def watch(self, b, offsets: set, keys: set, every_key: bool = False) -> None:
        """Keep the records of ``b`` asked for: those at ``offsets`` (their keys then watched) and those
        of the ``keys`` watched (``every_key``: every keyed record)."""
        if b.is_control or (not keys and not every_key and not any(b.base_offset <= o <= b.last_offset for o in offsets)):
            return
        try:
            recs = b.records()
        except KafkaFormatError:
            return
        for r in recs:
            if r.offset in offsets or r.key in keys or (every_key and r.key is not None):
                self.records[r.offset] = {"key": r.key, "timestamp": r.timestamp, "tombstone": r.value is None}
                if r.key is not None:
                    keys.add(r.key)
                    self.by_key.setdefault(r.key, []).append(r.offset)

    def txn_state(self, b: BatchFact) -> str | None:
        """``committed``, ``aborted`` or ``open`` for a transactional data batch, else None."""
        if b.txn_first is None:
            return None
        end = self.txns.get(b.txn_first)
        if end is None:
            return "open"
        return "aborted" if end["type"] == "ABORT" else "committed"


@dataclass
class Replica:
    """One replica of a partition: its name (dir, or log dir), its summary, its cleaner checkpoint
    (offset, line; None: none, or not known)."""
    path: str
    view: ReplicaLog
    cleaner: tuple | None = None

    @property
    def cleaned_to(self) -> int:
        """The cleaner checkpoint's offset (0: the cleaner never ran on it)."""
        return self.cleaner[0] if self.cleaner else 0

    @property
    def latest_epoch(self) -> int:
        """The newest leader epoch its batches carry (-1: none)."""
        return max((b.leader_epoch for b in self.view.batches), default=-1)


class RowBatch:
    """A batch as a scan's rows give it (a ``batch`` row, and its ``record`` rows: offset, key,
    tombstone), with the attributes :class:`ProducerState` and :func:`fact_of` read of a batch."""

    def __init__(self, row: dict, records: list):
        self.file, self.position, self.size = row["file"], row["position"], row["size"]
        self.base_offset, self.last_offset, self.magic = row["baseOffset"], row["lastOffset"], row["magic"]
        self.next_offset, self.count = self.last_offset + 1, row["count"]
        self.partition_leader_epoch, self.producer_id = row["partitionLeaderEpoch"], row["producerId"]
        self.producer_epoch, self.last_sequence = row["producerEpoch"], row["lastSequence"]
        self.max_timestamp, self.is_control = row["maxTimestamp"], bool(row["isControl"])
        self.is_transactional, self._crc = bool(row["isTransactional"]), bool(row["crcValid"])
        self.has_delete_horizon = row.get("deleteHorizonMs") is not None
        self._records = [Record(r["offset"], r.get("timestamp", -1), r["key"], None if r["tombstone"] else b"")
                         for r in records]

    def crc_valid(self) -> bool:
        return self._crc

    def records(self) -> list:
        return self._records


def replica_of_rows(name: str, batches: list, records: list) -> Replica:
    """A replica summarised from a scan's rows of one copy of a partition: its ``batches`` (dicts of
    batch rows, good CRCs) and ``records`` (dicts: offset, batchBaseOffset, key, tombstone), in the
    one pass :class:`ReplicaLog` makes of a walk.  A scan reads no checkpoint: its log start is
    taken as 0 (not its first batch, which compaction may have removed) and its cleaner checkpoint
    is unknown, so a deleted key is told by its tombstone alone."""
    by_batch: dict = {}
    for r in records:
        by_batch.setdefault(r["batchBaseOffset"], []).append(r)
    view, state = ReplicaLog(), ProducerState()
    for row in sorted(batches, key=lambda r: r["baseOffset"]):
        b = RowBatch(row, sorted(by_batch.get(row["baseOffset"], ()), key=lambda r: r["offset"]))
        view.add(b, state, state.append(b))
        view.watch(b, set(), set(), every_key=True)
    view.open_txns = dict(state.ongoing)
    if view.batches:
        view.log_end = view.batches[-1].last + 1
    view.last_stable = min(view.open_txns, default=view.log_end)
    return Replica(name, view)


def entry(cls: str, replica: str, other: str, text: str, evidence: list, **more) -> dict:
    """One divergence: its class, the replica it is about, the replica it was compared with."""
    return {"class": cls, "replica": replica, "other": other, "text": text, "evidence": evidence, **more}


def batch_ev(r: Replica, b: BatchFact, what: str) -> dict:
    """A batch of ``r`` as evidence."""
    return {"text": f"{what}: {b.text()} in {r.path} (epoch {b.leader_epoch})", "replica": r.path, **b.where(),
            "epoch": b.leader_epoch}


def _txn_firsts(view: ReplicaLog) -> dict:
    """First offset of each transaction -> its first data batch."""
    out: dict[int, BatchFact] = {}
    for b in view.batches:
        if b.txn_first is not None and not b.control:
            out.setdefault(b.txn_first, b)
    return out


def _marker_ev(r: Replica, m: dict, what: str) -> dict:
    """A transaction's end marker in ``r`` (as :attr:`ReplicaLog.txns` holds it) as evidence."""
    return {"text": f"{what}: {m['type']} marker at offset {m['offset']}, byte {m['position']} of "
                    f"{os.path.basename(m['file'])} in {r.path}", "replica": r.path, "file": m["file"],
            "position": m["position"], "markerOffset": m["offset"], "marker": m["type"]}


def _open_outcomes(x: Replica, y: Replica, mx: dict, bx: BatchFact, ev: list, where: dict) -> list:
    """``x``'s marker ``mx`` missing on ``y``, whose transaction stays open: the data hidden (a COMMIT)
    and the last stable offset frozen."""
    lost = f"{y.path} has no batch at offset {mx['offset']} ({x.path}'s {mx['type']} marker)"
    first, out = where["transactionFirstOffset"], []
    if mx["type"] == "COMMIT":
        out.append(entry(COMMITTED_HIDDEN, y.path, x.path, f"{lost}: producer {bx.producer_id}'s committed "
                         f"transaction from offset {first} is held there, hidden from read_committed", ev, **where))
    ev_lso = ev + [{"text": f"{y.path}: last stable offset {y.view.last_stable}, log end {y.view.log_end}",
                    "replica": y.path, "lastStableOffset": y.view.last_stable}]
    out.append(entry(LSO_FROZEN, y.path, x.path, f"{lost}: producer {bx.producer_id}'s transaction from "
                     f"offset {first} stays open there, its last stable offset frozen at "
                     f"{y.view.last_stable}", ev_lso, lastStableOffset=y.view.last_stable, **where))
    return out


def txn_outcomes(x: Replica, y: Replica) -> list:
    """Transactions ``x`` ended with a marker ``y`` lacks though its log reaches past it."""
    out = []
    for first, bx in sorted(_txn_firsts(x.view).items()):
        mx = x.view.txns.get(first)
        by = y.view.batch_holding(bx.base)
        if mx is None or by is None or by.txn_first is None or y.view.log_end <= mx["offset"]:
            continue
        held = y.view.batch_holding(mx["offset"])
        if held is not None and held.control:
            continue
        sy = y.view.txn_state(by)
        ev = [_marker_ev(x, mx, "the marker"), batch_ev(y, by, "the transaction's batch on the other replica")]
        where = {"transactionFirstOffset": first, "producerId": bx.producer_id, "markerOffset": mx["offset"]}
        if sy == "open":
            out += _open_outcomes(x, y, mx, bx, ev, where)
            continue
        my = y.view.txns.get(by.txn_first)
        if my is not None:
            ev.append(_marker_ev(y, my, "the marker ending it on the other replica"))
        lost = f"{y.path} has no batch at offset {mx['offset']} ({x.path}'s {mx['type']} marker)"
        if mx["type"] == "ABORT" and sy == "committed":
            out.append(entry(ABORTED_SERVED, y.path, x.path, f"{lost}: producer {bx.producer_id}'s aborted "
                             f"transaction from offset {first} is served as committed there", ev, **where))
        elif mx["type"] == "COMMIT" and sy == "aborted":
            out.append(entry(COMMITTED_HIDDEN, y.path, x.path, f"{lost}: producer {bx.producer_id}'s committed "
                             f"transaction from offset {first} is aborted there", ev, **where))
    return out


def _last_of_keys(view: ReplicaLog) -> dict:
    """key -> (offset, tombstone) of its last record."""
    return {k: (offs[-1], view.records[offs[-1]]["tombstone"]) for k, offs in view.by_key.items() if offs}


def resurrected(x: Replica, y: Replica) -> list:
    """Keys ``x`` deleted (a tombstone, or every record gone below its cleaner checkpoint) whose older
    value ``y`` still serves, though ``x`` compacted that value away."""
    out, last_x = [], _last_of_keys(x.view)
    for key, (v, tomb) in sorted(_last_of_keys(y.view).items()):
        if tomb or v in x.view.records or v < x.view.log_start:
            continue
        t = last_x.get(key)
        if t is not None and (not t[1] or t[0] < v or y.view.log_end <= t[0]):
            continue
        if t is None and v >= x.cleaned_to:
            continue
        served = y.view.batch_holding(v)
        assert served is not None  # v is one of y's records
        ev = [batch_ev(y, served, f"the value still served (offset {v})")]
        if y.cleaner:
            ev.append({"text": f"{y.path}: {y.cleaner[1]}", "replica": y.path, "cleanerCheckpoint": y.cleaner[0]})
        if t is not None:
            tombstone = x.view.batch_holding(t[0])
            assert tombstone is not None  # t[0] is x's last record of the key
            ev.append(batch_ev(x, tombstone, f"the tombstone (offset {t[0]})"))
            why = f"a tombstone at offset {t[0]}"
        else:
            assert x.cleaner is not None  # v is below x's cleaner checkpoint (cleaned_to is 0 without one)
            ev.append({"text": f"{x.path}: {x.cleaner[1]}", "replica": x.path, "cleanerCheckpoint": x.cleaner[0]})
            why = f"no record left below its cleaner checkpoint {x.cleaned_to}"
        kt = key.decode("utf-8", "replace")
        out.append(entry(KEY_RESURRECTED, y.path, x.path, f"key {kt!r}: deleted on {x.path} ({why}), its value at "
                         f"offset {v} still served by {y.path}", ev, key=kt, offset=v))
    return out


def reference(reps: list) -> Replica:
    """The reference replica: the newest leader epoch its batches carry, then the longest log."""
    return max(reps, key=lambda r: (r.latest_epoch, r.view.log_end))


def race_outcomes(reps: list, ref: Replica | None = None) -> list:
    """The race's outcomes among the replicas ``reps`` of one partition: the transactions of each
    against the reference ``ref`` (default :func:`reference`), both ways, then every key of each pair."""
    ref = reference(reps) if ref is None else ref
    out = []
    for f in reps:
        if f is not ref:
            out += txn_outcomes(ref, f) + txn_outcomes(f, ref)
    for x in reps:
        for y in reps:
            if x is not y:
                out += resurrected(x, y)
    return out
