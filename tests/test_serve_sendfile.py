"""kfx serve's Fetch path at the socket (issue 52, item 6): the records a Fetch answers go from the segment
file to the socket with sendfile, never through Python; a region the socket takes whole is one sendfile
call, made at once (not through the event loop's sendfile, which waits for the socket after its last
call); a region larger than the socket takes arrives whole and in order; each connection gets the send
buffer its limits say (by default the system's)."""
import asyncio
import os
import select
import socket
import struct
import threading
import time

import pytest

from kafkaforensics.broker import server
from kafkaforensics.broker.server import BrokerThread, Limits, size_send_buffer
from kafkaforensics.log.file_region import FileRegion
from kafkaforensics.log.segment import iter_batches
from kafkaforensics.log.writer import write_partition
from kafkaforensics.records.batch import Record
from kafkaforensics.records.builder import build_v2
from specs import protocol_messages as P
from specs.protocol_messages import ApiKey

FETCH_VERSION = 11  # what librdkafka (kcat) asks


@pytest.fixture(scope="module")
def log_dir(tmp_path_factory):
    """One partition ``t-0``: 40 batches of 4 records of 2 KB (about 330 KB in one segment)."""
    root = tmp_path_factory.mktemp("sendfile")
    batches = [build_v2([Record(4 * i + j, 1_700_000_000_000 + i, b"k", os.urandom(2000), []) for j in range(4)],
                        base_offset=4 * i) for i in range(40)]
    write_partition(str(root / "t-0"), batches, segment_bytes=1 << 30)
    return str(root)


def _segment(log_dir):
    return os.path.join(log_dir, "t-0", "00000000000000000000.log")


def _fetch_frame(max_bytes: int, partition_max_bytes: int, offset: int = 0) -> bytes:
    body = {"ReplicaId": -1, "MaxWaitMs": 0, "MinBytes": 0, "MaxBytes": max_bytes, "IsolationLevel": 0,
            "SessionId": 0, "SessionEpoch": -1,
            "Topics": [{"Topic": "t", "Partitions": [{"Partition": 0, "CurrentLeaderEpoch": -1, "FetchOffset": offset,
                                                       "LogStartOffset": -1,
                                                       "PartitionMaxBytes": partition_max_bytes}]}],
            "ForgottenTopicsData": [], "RackId": ""}
    head = P.RequestHeader.build({"RequestApiKey": ApiKey.FETCH, "RequestApiVersion": FETCH_VERSION,
                                  "CorrelationId": 3, "ClientId": "t"}, 1)
    payload = head + P.REQUESTS[ApiKey.FETCH].build(body, FETCH_VERSION)
    return struct.pack(">i", len(payload)) + payload


def _fetch(bootstrap: str, max_bytes: int, partition_max_bytes: int, read_delay: float = 0.0) -> bytes:
    """The records of partition t-0 from offset 0 as one Fetch answers them, over a real socket."""
    host, port = bootstrap.split(":")
    with socket.create_connection((host, int(port)), timeout=20) as c:
        c.sendall(_fetch_frame(max_bytes, partition_max_bytes))
        time.sleep(read_delay)  # a client slower than the broker: the socket fills up
        size = struct.unpack(">i", _recv_exactly(c, 4))[0]
        frame = _recv_exactly(c, size)
    header, used = P.ResponseHeader.read_prefix(frame, 0)
    assert header["CorrelationId"] == 3
    body = P.RESPONSES[ApiKey.FETCH].read(frame[used:], FETCH_VERSION)
    (part,) = body["Responses"][0]["Partitions"]
    assert part["ErrorCode"] == 0
    return part["Records"]


def _recv_exactly(c: socket.socket, n: int) -> bytes:
    out = bytearray()
    while len(out) < n:
        got = c.recv(n - len(out))
        assert got, "connection closed mid-response"
        out += got
    return bytes(out)


def _whole_batches_within(path: str, limit: int) -> bytes:
    """The file's bytes of its first whole batches that fit in ``limit`` bytes (at least one)."""
    end = 0
    for b in iter_batches(path):
        if b.position + b.size > limit and end:
            break
        end = b.position + b.size
    with open(path, "rb") as f:
        return f.read(end)


@pytest.fixture
def sends(monkeypatch):
    """Every os.sendfile call's byte count, and the event loop's sendfile calls, while a test runs;
    a FileRegion's bytes read into Python fail the test."""
    seen = {"sendfile": [], "loop_sendfile": 0}
    real_sendfile, real_loop_sendfile = os.sendfile, asyncio.BaseEventLoop.sendfile

    def counting(out_fd, in_fd, offset, count):
        n = real_sendfile(out_fd, in_fd, offset, count)
        seen["sendfile"].append(n)
        return n

    async def loop_sendfile(self, *a, **k):
        seen["loop_sendfile"] += 1
        return await real_loop_sendfile(self, *a, **k)

    def no_copy(region):
        raise AssertionError(f"the bytes of {region!r} were read into Python")
    monkeypatch.setattr(os, "sendfile", counting)
    monkeypatch.setattr(asyncio.BaseEventLoop, "sendfile", loop_sendfile)
    monkeypatch.setattr(FileRegion, "read", no_copy)
    return seen


def test_fetched_records_go_from_the_file_to_the_socket_never_through_python(log_dir, tmp_path, sends, monkeypatch):
    """The whole partition in one Fetch: every record byte went through os.sendfile; the response parts
    the edge wrote from Python are the framing alone (a few hundred bytes)."""
    written = []
    real_send_parts = server._Server.send_parts

    async def send_parts(self, writer, parts):
        written.extend(len(p) for p in parts if isinstance(p, bytes))
        await real_send_parts(self, writer, parts)
    monkeypatch.setattr(server._Server, "send_parts", send_parts)
    want = _whole_batches_within(_segment(log_dir), 1 << 30)
    with BrokerThread(log_dir, state_path=str(tmp_path / "s.json")) as b:
        got = _fetch(b.bootstrap, 1 << 30, 1 << 30)
    assert got == want and len(want) > 300_000
    assert sum(sends["sendfile"]) == len(want)
    assert 0 < sum(written) < 1000


def test_a_region_the_socket_takes_is_one_sendfile_call_made_at_once(log_dir, tmp_path, sends):
    """A 64 KB answer into a 1 MiB send buffer: one os.sendfile call from the handler itself, none
    through the event loop's sendfile (whose wait for the socket after its last call delayed every Fetch)."""
    want = _whole_batches_within(_segment(log_dir), 64 << 10)
    limits = Limits(send_buffer_bytes=1 << 20)
    with BrokerThread(log_dir, state_path=str(tmp_path / "s.json"), limits=limits) as b:
        got = _fetch(b.bootstrap, 1 << 30, 64 << 10)
    assert got == want and 32 << 10 < len(want) <= 64 << 10
    assert sends["sendfile"] == [len(want)]
    assert sends["loop_sendfile"] == 0


def test_a_region_larger_than_the_socket_takes_arrives_whole_and_in_order(log_dir, tmp_path, sends):
    """A 4 KB send buffer and a client that waits before reading: the socket takes part of the region
    at once, the event loop's sendfile the rest as the client reads; the frame is whole."""
    want = _whole_batches_within(_segment(log_dir), 1 << 30)
    limits = Limits(send_buffer_bytes=4096)
    with BrokerThread(log_dir, state_path=str(tmp_path / "s.json"), limits=limits) as b:
        got = _fetch(b.bootstrap, 1 << 30, 1 << 30, read_delay=0.3)
    assert got == want
    assert sum(sends["sendfile"]) == len(want) and len(sends["sendfile"]) > 1
    assert sends["loop_sendfile"] == 1


def test_the_send_buffer_is_the_limits_or_the_systems(monkeypatch):
    assert Limits().send_buffer_bytes == server.SEND_BUFFER_BYTES == -1  # the system's, autotuned
    with socket.socket() as s:
        default = s.getsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF)
        size_send_buffer(s, -1)
        assert s.getsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF) == default
        size_send_buffer(s, 100_000)
        assert s.getsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF) == 200_000  # Linux doubles what it is given


def test_a_file_sendfile_cannot_send_from_is_still_served(log_dir, tmp_path, monkeypatch):
    """A file system or socket without sendfile (EINVAL): the event loop's sendfile copies it instead,
    as it did for every region before the direct call."""
    import errno

    def no_sendfile(*a):
        raise OSError(errno.EINVAL, "sendfile not supported here")
    monkeypatch.setattr(os, "sendfile", no_sendfile)
    want = _whole_batches_within(_segment(log_dir), 1 << 30)
    with BrokerThread(log_dir, state_path=str(tmp_path / "s.json")) as b:
        assert _fetch(b.bootstrap, 1 << 30, 1 << 30) == want


def test_requests_on_a_connection_make_no_task_each(log_dir, tmp_path):
    """A connection's requests are read by its own task, each read under one idle timer: no task a
    request (asyncio.wait_for wrapped every read in a task of its own, two more turns of the event loop
    between a consumer's Fetch arriving and its answer)."""
    made = []

    def counting_factory(loop, coro, **kw):
        made.append(getattr(coro, "__qualname__", repr(coro)))
        return asyncio.Task(coro, loop=loop, **kw)
    with BrokerThread(log_dir, state_path=str(tmp_path / "s.json")) as b:
        with socket.create_connection(("127.0.0.1", b.port), timeout=20) as c:
            c.sendall(_fetch_frame(1 << 20, 1 << 20))  # the connection's task is running
            _recv_exactly(c, struct.unpack(">i", _recv_exactly(c, 4))[0])
            asyncio.run_coroutine_threadsafe(_set_task_factory(counting_factory), b.loop).result(10)
            made.clear()
            for offset in range(0, 160, 8):
                c.sendall(_fetch_frame(1 << 20, 20_000, offset))
                _recv_exactly(c, struct.unpack(">i", _recv_exactly(c, 4))[0])
            assert made == []


async def _set_task_factory(factory) -> None:
    asyncio.get_running_loop().set_task_factory(factory)


def test_an_answers_framing_goes_out_with_its_records_not_ahead_of_them(log_dir, tmp_path, monkeypatch):
    """A Fetch answer is sent corked (TCP_CORK): when the sendfile of its records begins, the client has
    received nothing yet (its framing waits to go out in the records' first packet, not in a small
    packet, and a wake-up of the client, of its own); the whole answer then arrives as before."""
    seen_before_records: list[int] = []
    client: dict = {}
    watched = threading.Event()  # the client reads nothing before the broker's first sendfile was watched
    real_sendfile = os.sendfile

    def watching(out_fd, in_fd, offset, count):
        if not seen_before_records:
            readable, _, _ = select.select([client["sock"]], [], [], 0.05)  # what was sent has arrived
            seen_before_records.append(len(client["sock"].recv(1 << 16, socket.MSG_PEEK)) if readable else 0)
            watched.set()
        return real_sendfile(out_fd, in_fd, offset, count)
    monkeypatch.setattr(os, "sendfile", watching)
    want = _whole_batches_within(_segment(log_dir), 100_000)
    with BrokerThread(log_dir, state_path=str(tmp_path / "s.json")) as b:
        with socket.create_connection(("127.0.0.1", b.port), timeout=20) as c:
            client["sock"] = c
            c.sendall(_fetch_frame(100_000, 100_000))
            assert watched.wait(20)
            frame = _recv_exactly(c, struct.unpack(">i", _recv_exactly(c, 4))[0])
    assert seen_before_records == [0]
    assert frame.endswith(want)
