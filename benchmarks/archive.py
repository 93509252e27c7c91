"""The fleet archive of issue 57, for the bench's whole-scan row: three brokers' log dirs of one
cluster holding two replicas of every partition, about 200 MB in some 540 segments, every codec
(none, gzip, snappy, lz4, zstd: one a topic), planted damage (a batch whose CRC fails, a compressed
batch whose payload is damaged, a replica cut short with a torn tail), empty partitions and stray
files (a core file, an operator's note, a ``.log.bak``), with a search key planted four times (in a
key, a value, a header only, a key and a header) in both replicas: 8 hits.

    python benchmarks/archive.py DIR [--scale 1.0]

:func:`build_archive` builds it once (an existing one is kept); the same archive at a small
``scale`` is what ``tests/test_scan_archive.py`` scans both ways (with no Spark and on Spark).
"""
from __future__ import annotations

import os
import random
import shutil
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
if os.path.dirname(HERE) not in sys.path:
    sys.path.insert(0, os.path.dirname(HERE))

from kafkaforensics.log.writer import write_partition  # noqa: E402
from kafkaforensics.records.batch import Record  # noqa: E402
from kafkaforensics.records.builder import build_v2  # noqa: E402

#: what the archive's search looks for, and the week its window is
SEARCH = "ORD-2026-004711"
WEEK_FROM, WEEK_TO = "2026-03-01T00:00:00Z", "2026-03-08T00:00:00Z"
_MARCH_1 = 1_772_323_200_000  # 2026-03-01T00:00:00Z in epoch ms
WEEK_MS = 7 * 86_400_000
#: the records' timestamps: two months from 2026-02-01 on
START_MS, SPAN_MS = _MARCH_1 - 28 * 86_400_000, 59 * 86_400_000
CLUSTER = "ZmxlZXRhcmNoaXZlMjAyNg"
BROKERS = (1, 2, 3)
#: topic -> (partitions, codec): every codec Kafka writes
TOPICS = {"orders": (8, 0), "payments": (6, 1), "events": (6, 2), "clicks": (6, 3), "audit": (4, 4)}
#: the planted hits: (topic, partition, where) -- where the key text sits in a record
HITS = (("orders", 3, "key"), ("events", 2, "value"), ("payments", 1, "header"), ("clicks", 0, "key+header"))
RECORDS_PER_BATCH = 20
SEGMENT_BYTES = 400_000


def _value(rng: random.Random, n: int) -> bytes:
    """A record value of about ``n`` bytes that compresses as logs do (half of it random text)."""
    noise = rng.randbytes(n // 4).hex().encode()
    return b'{"status":"ok","amount":%d,"payload":"' % rng.randrange(10**6) + noise + b'"}'


def _records(topic: str, p: int, n: int, value_size: int):
    """The ``n`` records of ``topic``-``p`` in order (offset, timestamp, key, value, headers), the
    planted hit half way (in the week of March 1st)."""
    rng = random.Random(f"{topic}-{p}")
    where = {(t, q): w for t, q, w in HITS}.get((topic, p))
    for i in range(n):
        key = b"%s-%d-%06d" % (topic.encode(), p, i)
        value, headers = _value(rng, value_size), [("trace", b"t-%08x" % rng.randrange(1 << 32))]
        if where is not None and i == n // 2:
            if "key" in where:
                key = SEARCH.encode()
            if where == "value":
                value = b'{"order":"' + SEARCH.encode() + b'"}'
            if "header" in where:
                headers.append(("order-id", SEARCH.encode()))
        yield Record(i, START_MS + i * SPAN_MS // n, key, value, headers)


def _batches(topic: str, p: int, n: int, value_size: int, codec: int):
    rs = list(_records(topic, p, n, value_size))
    for at in range(0, n, RECORDS_PER_BATCH):
        yield build_v2(rs[at:at + RECORDS_PER_BATCH], base_offset=at, codec=codec)


def _meta(log_dir: str, node: int) -> None:
    os.makedirs(log_dir, exist_ok=True)
    with open(os.path.join(log_dir, "meta.properties"), "w") as f:
        f.write(f"#\nversion=1\nnode.id={node}\ncluster.id={CLUSTER}\n")


def _segments(d: str) -> list[str]:
    return sorted(os.path.join(d, n) for n in os.listdir(d) if n.endswith(".log"))


def _flip_mid_batch(segment: str) -> None:
    """A byte of the middle batch's records flipped: its CRC fails, its frame holds."""
    from kafkaforensics.log.segment import iter_batches
    batches = list(iter_batches(segment))
    b = batches[len(batches) // 2]
    with open(segment, "r+b") as f:
        f.seek(b.position + 61 + (b.size - 61) // 2)
        byte = f.read(1)
        f.seek(-1, 1)
        f.write(bytes([byte[0] ^ 0xFF]))


def _cut_short(d: str) -> None:
    """A replica behind: its last segment gone, the one before it torn in its last batch."""
    segs = _segments(d)
    for n in os.listdir(d):
        if n.startswith(os.path.basename(segs[-1])[:-4]):
            os.unlink(os.path.join(d, n))
    os.truncate(segs[-2], os.path.getsize(segs[-2]) - 100)


def _damage(logs: dict) -> None:
    """The planted damage, each in one replica only: a CRC failure (orders-5), a damaged compressed
    payload (events-4: snappy), a replica cut short with a torn tail (payments-4)."""
    _flip_mid_batch(_segments(logs[("orders", 5)][0])[1])
    _flip_mid_batch(_segments(logs[("events", 4)][1])[0])
    _cut_short(logs[("payments", 4)][1])


def _strays(root: str) -> None:
    """Files Kafka never writes where they lie; empty partitions on every broker."""
    first = os.path.join(root, "broker-1", "kafka-logs")
    with open(os.path.join(first, "core.31337"), "wb") as f:
        f.write(random.Random(7).randbytes(3 << 20))
    with open(os.path.join(first, "NOTES.txt"), "w") as f:
        f.write("disk swapped 2026-03-04, see ticket OPS-118\n")
    shutil.copy(_segments(os.path.join(first, "orders-0"))[0], os.path.join(first, "orders-0", "00000000000000000000.log.bak"))
    for b in BROKERS:
        for p in range(3):
            d = os.path.join(root, f"broker-{b}", "kafka-logs", f"quiet-{p}")
            os.makedirs(d)
            open(os.path.join(d, "00000000000000000000.log"), "wb").close()


def build_archive(root: str, scale: float = 1.0, value_size: int = 980) -> str:
    """The archive under ``root`` (made once: an existing one is kept), ``scale`` times the records of
    the issue's (7,100 a partition, about 200 MB); returns ``root``."""
    if os.path.isdir(root):
        return root
    tmp = root + ".tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    for b in BROKERS:
        _meta(os.path.join(tmp, f"broker-{b}", "kafka-logs"), b)
    n = max(3 * RECORDS_PER_BATCH, int(7100 * scale))
    logs = {}
    for t_i, (topic, (partitions, codec)) in enumerate(TOPICS.items()):
        for p in range(partitions):
            homes = [BROKERS[(t_i + p + k) % len(BROKERS)] for k in range(2)]
            dirs = [os.path.join(tmp, f"broker-{b}", "kafka-logs", f"{topic}-{p}") for b in homes]
            write_partition(dirs[0], _batches(topic, p, n, value_size, codec),
                            segment_bytes=max(16_384, int(SEGMENT_BYTES * min(1.0, scale * 4))))
            shutil.copytree(dirs[0], dirs[1])
            logs[(topic, p)] = dirs
    _damage(logs)
    _strays(tmp)
    os.rename(tmp, root)
    return root


if __name__ == "__main__":
    import argparse
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("root")
    ap.add_argument("--scale", type=float, default=1.0)
    a = ap.parse_args()
    print(build_archive(a.root, a.scale))
