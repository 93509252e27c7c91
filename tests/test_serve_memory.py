"""The request budget (`kfx serve --queued-max-request-bytes`, Kafka's queued.max.request.bytes): many
connections each holding most of a large frame keep `kfx serve`'s resident memory under the budget plus
the process's base, other connections are still answered within a second; an idle connection holding a
partial frame is closed after `--connections-max-idle-ms` and gives its reservation back."""
import os
import re
import signal
import socket
import struct
import subprocess
import sys
import threading
import time

from kafkaforensics.broker.server import BrokerThread, Limits
from tests.test_serve_transactions import Raw

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MiB = 1 << 20


def _rss(pid) -> int:
    with open(f"/proc/{pid}/status") as f:
        return int(re.search(r"VmRSS:\s+(\d+) kB", f.read()).group(1)) * 1024


def start_serve(log_dir, *flags):
    """`kfx serve` on 127.0.0.1 and a free port, as a child process: (process, port)."""
    p = subprocess.Popen([sys.executable, "-m", "cli.main", "serve", str(log_dir), "--port", "0", *flags],
                         cwd=ROOT, env=dict(os.environ, PYTHONPATH=ROOT), stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    line = ""
    while time.monotonic() < deadline:
        line = p.stderr.readline()
        m = re.search(r"on 127\.0\.0\.1:(\d+)", line)
        if m:
            threading.Thread(target=p.stderr.read, daemon=True).start()  # keep draining its log
            return p, int(m.group(1))
        if p.poll() is not None:
            break
    p.kill()
    raise RuntimeError(f"kfx serve did not start: {line}")


def stop(p):
    p.send_signal(signal.SIGTERM)
    try:
        return p.wait(30)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait(10)
        raise


def _hog(port, frame_size, fraction, out):
    """Connect, send the size prefix and ``fraction`` of a ``frame_size`` frame, keep the socket open."""
    s = socket.create_connection(("127.0.0.1", port), timeout=2)
    out.append(s)
    payload = struct.pack(">i", frame_size) + struct.pack(">hhi", 18, 3, 1) + b"\x00" * (int(frame_size * fraction) - 8)
    try:
        s.sendall(payload)
    except (socket.timeout, OSError):
        pass  # not read: the broker holds this connection back


def test_many_large_partial_frames_stay_within_the_budget(tmp_path):
    budget, frame, n = 64 * MiB, 30 * MiB, 12
    d = tmp_path / "logs"
    d.mkdir()
    # an empty dir is served only as a new writable broker's log dir (read-only, it is a usage error)
    p, port = start_serve(d, "--writable", "--state-file", str(tmp_path / "state.json"),
                          "--queued-max-request-bytes", str(budget), "--socket-request-max-bytes", str(32 * MiB),
                          "--connections-max-idle-ms", "60000")
    socks = []
    try:
        probe = Raw(port)
        probe.call(18, 3, {"ClientSoftwareName": "p", "ClientSoftwareVersion": "1"})
        base = _rss(p.pid)
        threads = [threading.Thread(target=_hog, args=(port, frame, 0.95, socks)) for _ in range(n)]
        for t in threads:
            t.start()
        peak, deadline = 0, time.monotonic() + 8
        while time.monotonic() < deadline:
            peak = max(peak, _rss(p.pid))
            start = time.monotonic()
            assert probe.call(18, 3, {"ClientSoftwareName": "p", "ClientSoftwareVersion": "1"})["ErrorCode"] == 0
            assert time.monotonic() - start < 1.0
            time.sleep(0.2)
        for t in threads:
            t.join(10)
        # n x 95 % of 30 MiB would be 342 MiB; the budget lets two frames in at a time
        assert peak - base < budget + 16 * MiB, (base // MiB, peak // MiB)
        probe.s.close()
    finally:
        for s in socks:
            s.close()
        stop(p)


def test_an_idle_connection_with_a_partial_frame_is_closed_and_releases_its_reservation(tmp_path):
    from tests.conftest import SAMPLE
    import shutil
    logs = tmp_path / "logs"
    shutil.copytree(SAMPLE, logs)
    lim = Limits(max_request_bytes=4 * MiB, max_buffered_bytes=4 * MiB, idle_ms=500)
    with BrokerThread(str(logs), state_path=str(tmp_path / "s.json"), limits=lim) as b:
        s = socket.create_connection(("127.0.0.1", b.port), timeout=10)
        s.sendall(struct.pack(">i", 3 * MiB) + b"\x00\x12\x00\x03" + b"\x00" * 1000)  # 3 MiB declared, 1 KB sent
        time.sleep(0.2)
        assert b.edge.buffered >= 3 * MiB                 # the frame's size is reserved
        start = time.monotonic()
        assert s.recv(1) == b""                            # closed for idleness
        assert time.monotonic() - start < 5
        s.close()
        deadline = time.monotonic() + 5
        while b.edge.buffered and time.monotonic() < deadline:
            time.sleep(0.05)
        assert b.edge.buffered == 0
        r = Raw(b.port)  # the budget is whole again: a 3 MiB request goes through
        big = r.call(18, 3, {"ClientSoftwareName": "x" * (3 * MiB - 100), "ClientSoftwareVersion": "1"})
        assert big["ErrorCode"] == 0
        r.s.close()
