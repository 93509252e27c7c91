"""The corruption corpus: a valid partition built from a seed, and each kind of damage applied to it."""
import os
import random

from kafkaforensics.records.batch import Record
from kafkaforensics.records.builder import BatchProducer, build_v2, control_record_key, end_txn_marker_value
from kafkaforensics.log.segment import iter_batches
from kafkaforensics.log.writer import write_partition

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
            out.append(build_v2(recs, base_offset=off, transactional=True,
                                producer=BatchProducer(producer_id=pid, producer_epoch=0, base_sequence=0),
                                codec=i % 5, partition_leader_epoch=i // 15))
            off += k
            m = [Record(off, 1_700_000_000_000 + off, control_record_key(0), end_txn_marker_value(3))]
            out.append(build_v2(m, base_offset=off, transactional=True, control=True,
                                producer=BatchProducer(producer_id=pid, producer_epoch=0),
                                partition_leader_epoch=i // 15))
            off += 1
        else:
            out.append(build_v2(recs, base_offset=off, codec=i % 5,
                                producer=BatchProducer(producer_id=7, producer_epoch=0, base_sequence=off),
                                partition_leader_epoch=i // 15))
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


def mixed_batches(seed):
    """The corruption corpus's batches (transactions, markers, five codecs) plus legacy entries,
    batches without a producer, an open transaction and a second epoch."""
    import random as _random

    from kafkaforensics.records.batch import Record
    from kafkaforensics.records.builder import build_legacy, build_v2
    from kafkaforensics.log.segment import BatchScanner

    rnd = _random.Random(seed)
    out = list(batches(seed, n=40))
    off = max(b.last_offset for d in out for b in BatchScanner(d)) + 1
    ts = 1_700_000_100_000
    for i in range(24):
        # timestamps that sometimes repeat or go back; partition leader epochs that go up and down
        ts = rnd.choice((ts, ts + rnd.randint(1, 50), ts - rnd.randint(1, 50)))
        recs = [Record(off + j, ts, b"k%d" % j, rnd.randbytes(rnd.randint(0, 90))) for j in range(rnd.randint(1, 4))]
        leader = {"partition_leader_epoch": rnd.choice((0, 1, 1, 2, 4))}
        kind = i % 4
        if kind == 0:
            out += [bytes(b.data) for b in BatchScanner(build_legacy(recs, magic=1, codec=rnd.choice((0, 1))))]
        elif kind == 1:
            out.append(build_v2(recs, base_offset=off, codec=rnd.randint(0, 4), **leader))
        elif kind == 2:
            out.append(build_v2(recs, base_offset=off, transactional=True,
                                producer=BatchProducer(producer_id=900, producer_epoch=1, base_sequence=i), **leader))
        else:
            out.append(build_v2(recs, base_offset=off,
                                producer=BatchProducer(producer_id=7, producer_epoch=2, base_sequence=i), **leader))
        off += len(recs)
    return out


def damaged_partition(part, data):
    """A partition of :func:`mixed_batches` in small segments, then damaged as hypothesis's
    ``data`` draws: bytes of logs and indexes flipped, header fields set, a batch's base offset set
    back to its predecessor's (outside the CRC: offsets that do not advance), files cut."""
    import os
    import struct as _struct

    from hypothesis import strategies as st

    from kafkaforensics.log import segment as seg_mod
    from kafkaforensics.log.writer import write_partition

    write_partition(part, mixed_batches(data.draw(st.integers(0, 9))), segment_bytes=3000,
                    index_interval_bytes=INTERVAL // 4)
    files = sorted(os.path.join(part, f) for f in os.listdir(part) if f.endswith((".log", ".index", ".timeindex")))
    logs = [f for f in files if f.endswith(".log")]
    header = {"baseOffset": (0, ">q"), "batchLength": (8, ">i"), "magic": (16, ">b"), "attributes": (21, ">h"),
              "lastOffsetDelta": (23, ">i"), "maxTimestamp": (35, ">q"), "producerId": (43, ">q")}
    for _ in range(data.draw(st.integers(0, 4))):
        how = data.draw(st.sampled_from(["byte", "field", "cut", "index", "order"]))
        path = data.draw(st.sampled_from(files if how == "index" else logs))
        buf = bytearray(open(path, "rb").read())
        if not buf:
            continue
        at = data.draw(st.integers(0, 2**32)) % (len(buf) + 1)  # spread over the file, not near 0
        if how in ("byte", "index"):
            buf[min(at, len(buf) - 1)] ^= data.draw(st.integers(1, 255))
        elif how == "cut":
            del buf[at:]
        elif how == "order":
            starts = [b.position for b in seg_mod.BatchScanner(bytes(buf))]
            if len(starts) > 1:
                i = 1 + at % (len(starts) - 1)
                buf[starts[i]:starts[i] + 8] = buf[starts[i - 1]:starts[i - 1] + 8]
        else:
            starts = [b.position for b in seg_mod.BatchScanner(bytes(buf))] or [0]
            at, fmt = header[data.draw(st.sampled_from(sorted(header)))]
            pos = data.draw(st.sampled_from(starts)) + at
            width = _struct.calcsize(fmt)
            if pos + width <= len(buf):
                lo, hi = -(1 << (8 * width - 1)), (1 << (8 * width - 1)) - 1
                value = data.draw(st.one_of(st.integers(-3, 3), st.integers(lo, hi),
                                            st.just(_struct.unpack_from(fmt, buf, pos)[0] + 1)))
                _struct.pack_into(fmt, buf, pos, max(lo, min(hi, value)))
        with open(path, "wb") as f:
            f.write(bytes(buf))
