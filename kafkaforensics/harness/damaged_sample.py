"""A damaged copy of a log dir, for ``make demo`` and the tests: what a broker that will not start leaves.

:func:`make_damaged_logdir` copies a healthy log dir (the bundled sample by default), adds a
``payments-0`` partition written through the library's writer, and plants five realistic kinds of
damage, each where a crash or a misbehaving client would leave it:

* ``orders-0``   -- a torn tail: the active segment ends in the first part of a batch (the crash hit
                    mid-append), and the recovery point checkpoint lags, as after an unclean shutdown;
                    plus a leftover ``.swap`` of its first segment (the cleaner crashed between
                    writing the cleaned segment and swapping it in);
* ``clients-0``  -- a corrupt offset index: an entry of the active segment's ``.index`` points into
                    the middle of a batch;
* ``payments-0`` -- a producer sequence gap (an idempotent producer's batches 5..9 are missing) and a
                    hanging transaction (a transactional producer's batches with no marker, pinning the
                    last stable offset while later records keep arriving).

The first three are storage damage (``kfx verify`` finds them, ``kfx recover`` repairs them); the
last two are in the data itself (``kfx analyze`` finds them; only the cluster can abort a transaction).
Returns a dict describing what was planted, for tests to check against.
"""
from __future__ import annotations

import os
import shutil

from kafkaforensics.records.batch import Record
from kafkaforensics.records.builder import BatchProducer, build_v2
from kafkaforensics.log.checkpoint_file import LOG_START_OFFSET, RECOVERY_POINT, REPLICATION_OFFSET, read_offsets, write_offsets
from kafkaforensics.log.partition import find_partitions
from kafkaforensics.log.segment import INDEX, LOG, NEW_SEGMENT_SUFFIXES, SWAP, Segment, iter_batches, offset_from_name, sibling
from kafkaforensics.log.writer import write_partition

T0 = 1_700_000_000_000
SAMPLE = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "tests", "fixtures", "sample-logdir")
SEQ_PID, TXN_PID = 3001, 4001


def payments_batches():
    """Idempotent payments with a sequence gap, then a transaction that never ends while others write on."""
    out, off, seq = [], 0, 0
    for i in range(12):
        n = 3
        if i == 6:
            seq += 5  # the producer's sequences 18..22 never reached this replica
        recs = [Record(off + j, T0 + (off + j) * 250, f"acct-{(off + j) % 7}".encode(),
                       f'{{"payment": {off + j}, "amount": {((off + j) * 37) % 1000}}}'.encode(), [])
                for j in range(n)]
        out.append(build_v2(recs, base_offset=off, codec=i % 3,
                            producer=BatchProducer(producer_id=SEQ_PID, producer_epoch=0, base_sequence=seq),
                            partition_leader_epoch=0))
        off, seq = off + n, seq + n
        if i == 8:  # a transactional producer starts a transaction and dies before committing
            for k in range(2):
                recs = [Record(off + j, T0 + (off + j) * 250, b"refund", b'{"refund": %d}' % (off + j), [])
                        for j in range(2)]
                out.append(build_v2(recs, base_offset=off, transactional=True,
                                    producer=BatchProducer(producer_id=TXN_PID, producer_epoch=0, base_sequence=2 * k),
                                    partition_leader_epoch=0))
                off += 2
    return out


def make_damaged_logdir(target: str, sample: str = SAMPLE) -> dict:
    """Copy ``sample`` to ``target`` (which must not exist) and plant the damage; returns what was planted."""
    shutil.copytree(sample, target)
    pay = write_partition(os.path.join(target, "payments-0"), payments_batches(), segment_bytes=1 << 20,
                          index_interval_bytes=256)
    planted = {}

    # orders-0: a torn tail -- the crash cut the last append after 40 bytes of the batch
    orders = os.path.join(target, "orders-0")
    logs = sorted(f for f in os.listdir(orders) if f.endswith(LOG))
    active = os.path.join(orders, logs[-1])
    last = list(iter_batches(active))[-1]
    seg = Segment.of_file(active)
    size = seg.size
    torn = bytearray(seg.read_at(last.position, last.size))
    torn[0:8] = last.next_offset.to_bytes(8, "big", signed=True)
    with open(active, "ab") as f:
        f.write(bytes(torn[:40]))
    planted["torn-tail"] = {"file": active, "position": size, "offset": last.next_offset}

    # orders-0: the cleaner's swap of the first segment, written but not yet renamed
    first = os.path.join(orders, logs[0])
    for suffix in NEW_SEGMENT_SUFFIXES:
        src = sibling(first, suffix)
        if os.path.exists(src):
            shutil.copyfile(src, src + SWAP)
    planted["leftover-swap"] = {"file": first + SWAP}

    # clients-0: one offset index entry of the active segment points into the middle of a batch
    clients = os.path.join(target, "clients-0")
    clogs = sorted(f for f in os.listdir(clients) if f.endswith(LOG))
    active = os.path.join(clients, clogs[-1])
    idx = sibling(active, INDEX)
    base, index = offset_from_name(active), Segment.of_file(active).file_bytes(INDEX)
    if base is None or index is None:
        raise ValueError(f"{active}: the sample's active segment has no base offset or no offset index")
    entries = bytearray(index)
    rel = int.from_bytes(entries[0:4], "big")
    pos = int.from_bytes(entries[4:8], "big")
    entries[4:8] = (pos + 7).to_bytes(4, "big")
    with open(idx, "wb") as f:
        f.write(bytes(entries))
    planted["corrupt-index"] = {"file": idx, "offset": base + rel, "position": pos + 7}

    planted["sequence-gap"] = {"partition": "payments-0", "producerId": SEQ_PID}
    txn_first = next(b.base_offset for f in sorted(os.listdir(pay)) if f.endswith(LOG)
                     for b in iter_batches(os.path.join(pay, f)) if b.producer_id == TXN_PID)
    planted["hanging-transaction"] = {"partition": "payments-0", "producerId": TXN_PID, "firstOffset": txn_first}

    # checkpoints as the broker last flushed them: the recovery point lags behind the crash
    leo: dict[tuple[str, int], int] = {}  # (topic, partition) -> its log end offset
    for pd in find_partitions(target):
        if pd.topic is None or pd.partition is None:
            raise ValueError(f"{pd.path}: not a topic-partition's dir")  # the sample makes only those
        leo[(pd.topic, pd.partition)] = max(
            (b.next_offset for s in pd.segments[-1:] for b in _valid_batches(s.log)), default=0)
    old = read_offsets(os.path.join(target, RECOVERY_POINT)) or {}
    write_offsets(os.path.join(target, RECOVERY_POINT),
                  {tp: min(old.get(tp, 0), _segment_base(target, *tp)) for tp in sorted(leo)})
    write_offsets(os.path.join(target, REPLICATION_OFFSET), {tp: leo[tp] for tp in sorted(leo)})
    write_offsets(os.path.join(target, LOG_START_OFFSET), {tp: 0 for tp in sorted(leo)})
    return planted


def _valid_batches(log: str):
    for b in iter_batches(log):
        if not b.crc_valid():
            return
        yield b


def _segment_base(target: str, topic: str, partition: int) -> int:
    """The base offset of the partition's active segment: a checkpoint flushed before it was written."""
    d = os.path.join(target, f"{topic}-{partition}")
    return max(base for f in os.listdir(d) if f.endswith(LOG) and (base := offset_from_name(f)) is not None)


if __name__ == "__main__":  # python -m kafkaforensics.harness.damaged_sample TARGET
    import sys

    if len(sys.argv) != 2:
        sys.exit("usage: python -m kafkaforensics.harness.damaged_sample NEW_DIR")
    if os.path.exists(sys.argv[1]):
        print(f"error: {sys.argv[1]} exists (the damaged copy is made in a new directory)", file=sys.stderr)
        sys.exit(2)
    for kind, where in make_damaged_logdir(sys.argv[1]).items():
        print(f"planted {kind}: " + ", ".join(f"{k} {v}" for k, v in where.items()))
