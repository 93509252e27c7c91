"""The corruption corpus: a valid partition built from a seed, and each kind of damage applied to it."""
import os
import random

from kafkaforensics.batch import Record
from kafkaforensics.builder import build_v2, control_record_key, end_txn_marker_value
from kafkaforensics.segment import iter_batches
from kafkaforensics.writer import write_partition

SEGMENT_BYTES = 4000
INTERVAL = 1024


def batches(seed=1, n=60):
    rnd = random.Random(seed)
    out, off = [], 0
    for i in range(n):
        k = rnd.randint(1, 6)
        recs = [Record(off + j, 1_700_000_000_000 + off + j, f"k{rnd.randint(0, 9)}".encode(),
                       rnd.randbytes(rnd.randint(0, 200)) if rnd.random() < 0.9 else None,
                       [("h", b"v")] if rnd.random() < 0.2 else []) for j in range(k)]
        if i % 9 == 4:  # a transaction that is aborted two batches later
            pid = 500 + i
            out.append(build_v2(recs, base_offset=off, transactional=True, producer_id=pid, producer_epoch=0,
                                base_sequence=0, codec=i % 5, partition_leader_epoch=i // 15))
            off += k
            m = [Record(off, 1_700_000_000_000 + off, control_record_key(0), end_txn_marker_value(3))]
            out.append(build_v2(m, base_offset=off, transactional=True, control=True, producer_id=pid,
                                producer_epoch=0, partition_leader_epoch=i // 15))
            off += 1
        else:
            out.append(build_v2(recs, base_offset=off, codec=i % 5, producer_id=7, producer_epoch=0,
                                base_sequence=off, partition_leader_epoch=i // 15))
            off += k
    return out


def make_partition(path, seed=1, n=60):
    return write_partition(str(path), batches(seed, n), segment_bytes=SEGMENT_BYTES, index_interval_bytes=INTERVAL)


def layout(part_dir):
    """[(segment file, [(position, size, base, last), ...])] of a partition."""
    out = []
    for f in sorted(os.listdir(part_dir)):
        if f.endswith(".log"):
            p = os.path.join(part_dir, f)
            out.append((p, [(b.position, b.size, b.base_offset, b.last_offset) for b in iter_batches(p)]))
    return out


def all_records(part_dir):
    return [(r.offset, r.key, r.value) for f, _ in layout(part_dir) for b in iter_batches(f) for r in b.records()]


def snapshot_files(part_dir):
    """{name: bytes} of every file (dry runs must change none)."""
    out = {}
    for root, _d, files in os.walk(part_dir):
        for f in files:
            p = os.path.join(root, f)
            with open(p, "rb") as fh:
                out[os.path.relpath(p, part_dir)] = fh.read()
    return out
