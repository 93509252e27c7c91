"""`kfx serve LOG_DIR --remote URI` (issue 55 item 5): each partition served from its remote log start, so a
kafka-python consumer from offset 0 reads through the tier boundary, record for record, whatever the
plugin's transform (plain, zstd, encrypted; the tier in moto's S3 server); ListOffsets EARLIEST gives
the remote log start; a damaged chunk is a located log line and an error answer, not a dead broker."""
import logging
import os
import re
import subprocess
import sys
import threading
import time

import pytest

from kafkaforensics.broker.server import BrokerThread
from kafkaforensics.log.remote import RemoteTier
from tests.remote_fixtures import TRANSFORMS, moto_s3
from tests.remote_split import make_split
from tests.test_serve_memory import stop

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture(scope="module")
def moto():
    """moto's S3 server, the environment pointing at it (the served broker inherits it)."""
    with moto_s3(buckets=[f"serve-{t}" for t in TRANSFORMS]) as endpoint:
        yield endpoint


def start_serve(log_dir, *flags):
    """`kfx serve` on 127.0.0.1 and a free port, as a child process (stopped by its pid): (process, port)."""
    p = subprocess.Popen([sys.executable, "-m", "cli.main", "serve", str(log_dir), "--port", "0", *flags],
                         cwd=ROOT, env=dict(os.environ, PYTHONPATH=ROOT), stderr=subprocess.PIPE, text=True)
    deadline, lines = time.monotonic() + 60, []
    while time.monotonic() < deadline:
        line = p.stderr.readline()
        lines.append(line)
        m = re.search(r"on 127\.0\.0\.1:(\d+)", line)
        if m:
            threading.Thread(target=p.stderr.read, daemon=True).start()  # keep draining its log
            return p, int(m.group(1)), "".join(lines)
        if p.poll() is not None:
            break
    p.kill()
    raise RuntimeError(f"kfx serve did not start: {''.join(lines)}")


def consume(port, topic, partition, offset=None, isolation="read_uncommitted"):
    """(offset, key, value) of every record a kafka-python consumer reads from ``offset`` (None: the
    beginning, ListOffsets EARLIEST), and the earliest offset the broker gives."""
    from kafka import KafkaConsumer, TopicPartition
    c = KafkaConsumer(bootstrap_servers=f"127.0.0.1:{port}", enable_auto_commit=False, consumer_timeout_ms=4000,
                      isolation_level=isolation)
    tp = TopicPartition(topic, partition)
    c.assign([tp])
    earliest = c.beginning_offsets([tp])[tp]
    if offset is None:
        c.seek_to_beginning(tp)
    else:
        c.seek(tp, offset)
    got = [(m.offset, m.key, m.value) for m in c]
    c.close()
    return got, earliest


@pytest.mark.parametrize("transform", TRANSFORMS)
def test_a_consumer_from_offset_0_reads_through_the_tier_boundary(moto, tmp_path, transform):
    s = make_split(str(tmp_path), f"s3://serve-{transform}/tiered-cluster", transform)
    p, port, log = start_serve(s.logs, "--remote", s.tier, "--key-file", s.key_arg,
                               "--state-file", str(tmp_path / "state.json"))
    try:
        assert "remote tier: events-0:" in log
        for tp, records in s.records.items():
            got, earliest = consume(port, *tp)
            assert earliest == 0 < s.local_start[tp]
            assert got == records   # every record, remote then local, none twice
            mid = s.local_start[tp] - 3   # from inside the last remote segment
            assert consume(port, *tp, offset=mid)[0] == [r for r in records if r[0] >= mid]
    finally:
        assert stop(p) == 0


def test_without_remote_the_local_log_start_is_the_start(tmp_path):
    """The same log dir served without --remote: earliest is the local log start, as before."""
    s = make_split(str(tmp_path), str(tmp_path / "tier"), "plain", partitions=((("events", 0), 7),))
    with BrokerThread(s.logs) as b:
        got, earliest = consume(b.port, "events", 0)
    assert earliest == s.local_start[("events", 0)]
    assert got == [r for r in s.records[("events", 0)] if r[0] >= earliest]


def test_read_committed_skips_the_remote_tier_s_aborted_transactions(tmp_path):
    """The aborted transactions of the remote segments' transaction indexes go with a read_committed fetch
    below the local log start, so the consumer drops their records there as it does locally."""
    s = make_split(str(tmp_path), str(tmp_path / "tier"), "encrypted", partitions=((("events", 0), 7),))
    b = BrokerThread(s.logs)
    b.remote = RemoteTier.open(s.tier, {"key1": s.key_arg.split("=", 1)[1]})
    with b:
        got, earliest = consume(b.port, "events", 0, isolation="read_committed")
    assert earliest == 0 and got == s.committed[("events", 0)]
    assert len(got) < len(s.records[("events", 0)])
    assert any(o < s.local_start[("events", 0)] for o, _k, _v in got)


def test_a_damaged_chunk_is_logged_located_and_the_broker_serves_on(tmp_path, caplog):
    """A zstd chunk of the first remote segment overwritten: a fetch there is answered with an error
    (logged once, naming the object and chunk), the local tier and other offsets still served."""
    # its own level: an in-process `kfx scan` earlier in this worker quiets the root logger
    caplog.set_level(logging.WARNING, logger="kfx.serve")
    s = make_split(str(tmp_path), str(tmp_path / "tier"), "zstd", partitions=((("events", 0), 7),))
    tier = RemoteTier.open(s.tier)
    first = tier.segments("events", 0)[0]
    path = os.path.join(tier.uri, first.key)
    with open(path, "r+b") as f:
        f.seek(8)
        f.write(b"\xff" * 16)
    b = BrokerThread(s.logs)
    b.remote = RemoteTier.open(s.tier)
    with b:
        with pytest.raises(Exception):
            consume_strict(b.port, 0)
        logged = [r.getMessage() for r in caplog.records if "remote tier failed" in r.getMessage()]
        assert len(logged) == 1 and path in logged[0] and "chunk 0" in logged[0], logged
        second = tier.segments("events", 0)[1].base_offset
        got, earliest = consume(b.port, "events", 0, offset=second)
        assert earliest == 0 and got == [r for r in s.records[("events", 0)] if r[0] >= second]


def consume_strict(port, offset):
    """A raw Fetch of events-0 at ``offset``: raises unless the partition's answer is no error."""
    from kafka import KafkaConsumer, TopicPartition
    from kafka.errors import KafkaError
    c = KafkaConsumer(bootstrap_servers=f"127.0.0.1:{port}", enable_auto_commit=False, consumer_timeout_ms=3000)
    tp = TopicPartition("events", 0)
    c.assign([tp])
    c.seek(tp, offset)
    try:
        got = c.poll(timeout_ms=3000)
        if not got:
            raise KafkaError("no records")
    finally:
        c.close()


def test_serve_remote_that_cannot_be_opened_is_one_line_and_exit_2(tmp_path):
    s = make_split(str(tmp_path), str(tmp_path / "tier"), "encrypted", partitions=((("events", 0), 7),))
    for args, said in ((("--remote", str(tmp_path / "none")), "no such directory"),
                       (("--remote", s.tier, "--key-file", "key1"), "ID=PEM"),
                       (("--key-file", s.key_arg), "--remote")):
        r = subprocess.run([sys.executable, "-m", "cli.main", "serve", s.logs, "--port", "0", *args], cwd=ROOT,
                           env=dict(os.environ, PYTHONPATH=ROOT), capture_output=True, text=True, timeout=60)
        assert r.returncode == 2 and said in r.stderr and "Traceback" not in r.stderr, r.stderr
        assert len(r.stderr.strip().splitlines()) == 1, r.stderr
