"""A small fleet of log dirs built in the test, the way a data engineer finds one: replicas of the
same partition on two brokers, two clusters (each with a ``__cluster_metadata-0``), an empty
partition, stray files, a late record, a compressed batch whose CRC fails and a broken frame."""
from __future__ import annotations

import os
import shutil

from kafkaforensics.log.writer import write_partition
from kafkaforensics.records.batch import Record
from kafkaforensics.records.builder import build_v2

T0 = 1_700_000_000_000
HOUR = 3_600_000
CLUSTER_A, CLUSTER_B = "q1Sh-9_ISia_zwGINzRvyQ", "Zm9vYmFyYmF6cXV4cXV1eA"
#: orders-0 on cluster A: 30 batches of 5 records, one an hour; batch 25 carries a timestamp 6.5 h
#: older than its neighbours (appended late); brokers 1 and 2 hold it, broker 2 lacking the last 3 batches
ORDERS_BATCHES, PER_BATCH, LATE_BATCH = 30, 5, 25
LATE_TS = T0 + 18 * HOUR + HOUR // 2
LAGGING = 3


def _ts(i: int) -> int:
    return LATE_TS if i == LATE_BATCH else T0 + i * HOUR


def _orders(n: int = ORDERS_BATCHES):
    for i in range(n):
        base = i * PER_BATCH
        yield build_v2([Record(base + j, _ts(i), b"key-%d" % (base + j), b"value-%d" % (base + j) + bytes([0xff, 0xfe]), [])
                        for j in range(PER_BATCH)], base_offset=base)


def _payments():
    """20 gzip batches of 4 records; batch 7's compressed payload is damaged (its CRC fails)."""
    out = []
    for i in range(20):
        base = i * 4
        b = bytearray(build_v2([Record(base + j, T0 + base + j, b"p-%d" % (base + j), b"amount=%d;" % j * 20, [])
                                for j in range(4)], base_offset=base, codec=1))
        if i == 7:
            b[len(b) // 2 + 20] ^= 0xFF
        out.append(bytes(b))
    return out


def _meta(log_dir: str, node: int, cluster: str) -> None:
    os.makedirs(log_dir, exist_ok=True)
    with open(os.path.join(log_dir, "meta.properties"), "w") as f:
        f.write(f"#\nversion=1\nnode.id={node}\ncluster.id={cluster}\n")


def _empty_partition(d: str) -> None:
    os.makedirs(d)
    open(os.path.join(d, "00000000000000000000.log"), "wb").close()
    with open(os.path.join(d, "leader-epoch-checkpoint"), "w") as f:
        f.write("0\n0\n")


def broken_frame_position(segment: str) -> int:
    """Where build_fleet zeroes cluster B's orders-0 first segment: its 10th batch."""
    from kafkaforensics.log.segment import iter_batches
    return [b.position for b in iter_batches(segment)][10]


def build_fleet(root: str) -> dict:
    """Build the fleet under ``root``; returns facts the tests check against."""
    a1 = os.path.join(root, "cluster-a", "broker-1", "kafka-logs")
    a2 = os.path.join(root, "cluster-a", "broker-2", "kafka-logs")
    b1 = os.path.join(root, "cluster-b", "broker-1", "kafka-logs")
    for d, node, cluster in ((a1, 1, CLUSTER_A), (a2, 2, CLUSTER_A), (b1, 1, CLUSTER_B)):
        _meta(d, node, cluster)
        write_partition(os.path.join(d, "__cluster_metadata-0"),
                        (build_v2([Record(i, T0 + i, None, b"meta-%d-%s" % (i, cluster.encode()), [])], base_offset=i)
                         for i in range(3)), segment_bytes=1 << 20)
    write_partition(os.path.join(a1, "orders-0"), _orders(), segment_bytes=1500, index_interval_bytes=200)
    write_partition(os.path.join(a2, "orders-0"), _orders(ORDERS_BATCHES - LAGGING), segment_bytes=1500,
                    index_interval_bytes=200)
    _empty_partition(os.path.join(a1, "orders-1"))
    _empty_partition(os.path.join(a2, "orders-1"))
    write_partition(os.path.join(a1, "payments-0"), _payments(), segment_bytes=1 << 20)
    with open(os.path.join(a1, "notes.txt"), "w") as f:
        f.write("moved here by ops\n")
    with open(os.path.join(a1, "orders-0", "00000000000000000000.log.bak"), "wb") as f:
        f.write(b"x" * 100)
    # cluster B's orders-0: another log of the same name; its first segment's framing breaks
    write_partition(os.path.join(b1, "orders-0"),
                    (build_v2([Record(i * 3 + j, T0 + i, b"b", b"v", []) for j in range(3)], base_offset=i * 3)
                     for i in range(40)), segment_bytes=2000)
    first = os.path.join(b1, "orders-0", "00000000000000000000.log")
    pos = broken_frame_position(first)
    size = os.path.getsize(first)
    data = bytearray(open(first, "rb").read())
    data[pos:pos + 12] = bytes(12)
    open(first, "wb").write(bytes(data))
    segs = sorted(f for f in os.listdir(os.path.join(b1, "orders-0")) if f.endswith(".log"))
    next_base = int(segs[1][:-4])
    return {"a1": a1, "a2": a2, "b1": b1, "broken": first, "broken_position": pos, "broken_bytes": size - pos,
            "broken_next_base": next_base}


if __name__ == "__main__":
    import sys
    shutil.rmtree(sys.argv[1], ignore_errors=True)
    print(build_fleet(sys.argv[1]))
