"""The copies a run walk reads a segment through (``kafkaforensics/log/read_ahead.py``): read ahead on a
second thread or on the walking thread, the same bytes; a read error reaches the walk; a walk ended
early leaves no thread and no descriptor behind; the second thread only when a core is idle."""
import errno
import os
import random
import threading

import pytest

from kafkaforensics.inspect.verify import verify
from kafkaforensics.log import read_ahead, segment
from kafkaforensics.log.read_ahead import ReadAhead, WindowReader
from kafkaforensics.log.segment import BatchScanner, iter_batches, open_buffer
from kafkaforensics.records.batch import Record
from kafkaforensics.records.builder import build_v2


def _log(path, batches=120, value=b"v" * 300):
    with open(path, "wb") as f:
        for b in range(batches):
            f.write(build_v2([Record(b * 3 + i, 1700000000000 + b, b"k", value, []) for i in range(3)],
                             base_offset=b * 3))
    return str(path)


def _readers():
    return [t for t in threading.enumerate() if t.name == "kfx-read-ahead"]


def _fds():
    return set(os.listdir("/proc/self/fd"))


@pytest.mark.parametrize("seed", range(6))
def test_read_ahead_views_hold_the_files_bytes_as_the_walking_threads_do(tmp_path, seed):
    """Whatever positions a walk asks for (forward, to the end of a view, with ``more``, now and then
    back), each view starts at the position asked, holds the file's bytes, is not empty before the
    end, and ``more`` at the end of a view gives bytes past it while the file has them."""
    rng = random.Random(seed)
    data = rng.randbytes(rng.randrange(5000, 40000))
    path = tmp_path / "f"
    path.write_bytes(data)
    window = rng.choice([64, 700, 4096])
    start, end = rng.randrange(0, 200), len(data) - rng.randrange(0, 300)
    fd = os.open(path, os.O_RDONLY)
    readers = [ReadAhead(fd, start, end, window), WindowReader(fd, end, window)]
    try:
        for reader in readers:
            pos, more, steps = start, False, 0
            while pos < end and steps < 10000:
                steps += 1
                view = reader.view(pos, more)
                assert bytes(view) == data[pos:pos + len(view)] and 0 < len(view) <= end - pos
                assert not more or pos + len(view) > last_end or last_end == end or last_end - pos > window
                last_end = pos + len(view)
                move = rng.random()
                if move < 0.5:   # a walk that stopped inside the view: the batch there straddles it
                    pos, more = pos + rng.randrange(len(view)), True
                elif move < 0.8:
                    pos, more = last_end, rng.random() < 0.5
                elif move < 0.95:
                    pos, more = min(end, pos + rng.randrange(1, 3 * window)), False
                else:            # a run that ends early goes back to the batch it declined
                    pos, more = max(start, pos - rng.randrange(1, 2 * window)), False
            assert pos >= end
            assert len(reader.view(end)) == 0
    finally:
        for reader in readers:
            reader.close()
        os.close(fd)
    assert not _readers()


def test_verify_reads_ahead_on_an_idle_machine_and_reports_the_same(tmp_path, monkeypatch):
    """issue 52 (verify's speed): over a file of several windows with a core idle, the run walk's copies
    are read on a second thread (the walking thread makes none), and verify's report, damage included,
    is the walking thread's own."""
    from kafkaforensics.inspect import verify as verify_mod
    log = _log(tmp_path / "00000000000000000000.log")
    positions = [b.position for b in iter_batches(log)]
    with open(log, "r+b") as f:   # a bad CRC in the middle (in a record's value) and a torn tail
        f.seek(positions[60] + 200)
        f.write(b"\xff\xfe")
        f.truncate(os.path.getsize(log) - 50)
    monkeypatch.setattr(verify_mod, "SMALL_SEGMENT_BYTES", -1)
    monkeypatch.setattr(segment, "RUN_WINDOW", 4096)
    walker = threading.get_ident()
    reads: list[int] = []
    real = os.preadv

    def counted(fd, buffers, position):
        reads.append(threading.get_ident())
        return real(fd, buffers, position)

    monkeypatch.setattr(os, "preadv", counted)
    monkeypatch.setattr(read_ahead, "idle_core", lambda: False)
    alone = verify([log]).to_json()
    assert reads and set(reads) == {walker}
    reads.clear()
    monkeypatch.setattr(read_ahead, "idle_core", lambda: True)
    ahead = verify([log]).to_json()
    assert ahead == alone and {p["kind"] for p in ahead["problems"]} >= {"crc-mismatch"}, ahead["problems"]
    assert len(reads) > 10 and walker not in reads
    assert not _readers()


def test_a_read_error_ahead_reaches_the_walk_and_stops_the_thread(tmp_path, monkeypatch):
    """An I/O error met by the second thread (a failing disk) is raised in the walk, at the window that
    needed the bytes, as the walking thread's own read would raise it; nothing is left running or open."""
    log = _log(tmp_path / "00000000000000000000.log")
    real, calls = os.preadv, []

    def failing(fd, buffers, position):
        calls.append(position)
        if len(calls) > 3:
            raise OSError(errno.EIO, "Input/output error")
        return real(fd, buffers, position)

    monkeypatch.setattr(read_ahead, "idle_core", lambda: True)
    before = _fds()
    with open_buffer(log) as buf, open(log, "rb", buffering=0) as f:
        monkeypatch.setattr(os, "preadv", failing)
        walk = BatchScanner(buf, file=log, base_offset=0).iter_runs(f.fileno(), window=2048, lists=True)
        with pytest.raises(OSError) as e:
            list(walk)
        assert e.value.errno == errno.EIO
    assert not _readers() and _fds() == before


def test_a_walk_closed_early_stops_its_read_ahead(tmp_path, monkeypatch):
    """A consumer that stops after the first run (recovery at its first damage, a closed generator)
    leaves no read-ahead thread and no duplicate descriptor behind."""
    log = _log(tmp_path / "00000000000000000000.log", batches=400)
    monkeypatch.setattr(read_ahead, "idle_core", lambda: True)
    monkeypatch.setattr(segment, "RUN_BYTES", 4096)
    before = _fds()
    with open_buffer(log) as buf, open(log, "rb", buffering=0) as f:
        walk = BatchScanner(buf, file=log, base_offset=0).iter_runs(f.fileno(), window=2048, lists=True)
        first = next(walk)
        assert len(first) and len(_readers()) == 1
        walk.close()
        assert not _readers()
    assert _fds() == before


def test_the_second_thread_only_when_a_core_is_idle_and_the_file_is_large(tmp_path, monkeypatch):
    """``window_reader`` reads ahead over four windows or more when ``idle_core`` says so; ``idle_core``
    counts the tasks running now (``/proc/loadavg``), this one included, against the cores this process
    may use, so on one core there is never a second thread."""
    path = tmp_path / "f"
    path.write_bytes(bytes(10000))
    fd = os.open(path, os.O_RDONLY)
    try:
        monkeypatch.setattr(read_ahead, "idle_core", lambda: True)
        small, large = read_ahead.window_reader(fd, 0, 3000, 1000), read_ahead.window_reader(fd, 0, 4000, 1000)
        assert type(small) is WindowReader and type(large) is ReadAhead
        large.close()
        monkeypatch.setattr(read_ahead, "idle_core", lambda: False)
        assert type(read_ahead.window_reader(fd, 0, 10000, 1000)) is WindowReader
    finally:
        os.close(fd)
    monkeypatch.undo()
    if not os.path.exists("/proc/loadavg"):
        assert read_ahead.idle_core() is False
        return
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0})
    assert read_ahead.idle_core() is False   # this process is running: no core is left on one
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(1 << 20)))
    assert read_ahead.idle_core() is True


def test_any_error_of_the_thread_reaches_the_walk_rather_than_hanging_it(tmp_path, monkeypatch):
    """Not only an I/O error: whatever ends the second thread is raised in the walk (a thread that died
    silently would leave the walk waiting for a window for ever)."""
    log = _log(tmp_path / "00000000000000000000.log")
    monkeypatch.setattr(read_ahead, "idle_core", lambda: True)

    def broken(fd, buffers, position):
        raise ValueError("a read that went wrong in an unexpected way")

    with open_buffer(log) as buf, open(log, "rb", buffering=0) as f:
        monkeypatch.setattr(os, "preadv", broken)
        with pytest.raises(ValueError, match="unexpected way"):
            list(BatchScanner(buf, file=log, base_offset=0).iter_runs(f.fileno(), window=2048, lists=True))
    assert not _readers()


def test_no_descriptor_to_spare_and_the_walk_reads_for_itself(tmp_path, monkeypatch):
    """A process at its descriptor limit cannot duplicate the file for a second thread: the walk reads its
    copies itself and reports the same."""
    log = _log(tmp_path / "00000000000000000000.log")
    monkeypatch.setattr(read_ahead, "idle_core", lambda: True)
    with open_buffer(log) as buf, open(log, "rb", buffering=0) as f:
        expected = [(r.position, r.crc_ok) for r in
                    BatchScanner(buf, file=log, base_offset=0).iter_runs(f.fileno(), window=2048, lists=True)]

        def no_more(fd):
            raise OSError(errno.EMFILE, "Too many open files")

        monkeypatch.setattr(os, "dup", no_more)
        assert type(read_ahead.window_reader(f.fileno(), 0, 1 << 20, 2048)) is WindowReader
        got = [(r.position, r.crc_ok) for r in
               BatchScanner(buf, file=log, base_offset=0).iter_runs(f.fileno(), window=2048, lists=True)]
    assert got == expected and not _readers()


def test_a_system_without_affinity_reads_on_the_walking_thread(tmp_path, monkeypatch):
    """Where ``os.sched_getaffinity`` does not exist (macOS, Windows), ``idle_core`` says no, rather than
    the walk failing with an AttributeError: the walk reads for itself."""
    monkeypatch.delattr(os, "sched_getaffinity", raising=False)
    assert read_ahead.idle_core() is False
    path = tmp_path / "f"
    path.write_bytes(bytes(10000))
    fd = os.open(path, os.O_RDONLY)
    try:
        assert type(read_ahead.window_reader(fd, 0, 10000, 1000)) is WindowReader
    finally:
        os.close(fd)
