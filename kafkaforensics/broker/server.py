"""The asyncio edge of the replay broker: it only moves bytes, runs timers and awaits.

Bytes from a socket go to its :class:`~kafkaforensics.broker.protocol.Connection`, each event to the shared
:class:`~kafkaforensics.broker.dispatch.BrokerCore`, which decides everything (which handler, no reply for
acks=0, closing on an unsupported API, a long poll's wait and wake-ups); this module does what the
outcome says.  ``serve_forever`` for ``kfx serve``; :class:`BrokerThread` runs one on a free port in
a background thread for tests (``with BrokerThread(log_dir) as b: ... b.bootstrap``).  A malformed
or oversized request closes that connection with a logged reason; the server goes on.

Caps in the socket layer, as Kafka's broker has them: a request frame larger than
``max_request_bytes`` (``socket.request.max.bytes``, 100 MiB) closes its connection before anything
is buffered; connections beyond ``max_connections`` (``max.connections``) are closed as they are
accepted; bytes buffered in unfinished frames over all connections are capped
(``max_buffered_bytes``, 512 MiB, like ``queued.max.request.bytes`` and its memory pool): once a
frame's size prefix is read the connection reserves that size, holds it until the frame is
complete and handled, and is not read while the reservation would take the total over the cap (a
frame larger than the whole cap is let in alone); a connection that sends nothing for ``idle_ms``
(``connections.max.idle.ms``, 10 minutes) -- or waits that long for the budget -- is closed.
Each connection's send buffer is ``send_buffer_bytes`` (``socket.send.buffer.bytes``; -1, the
default: the system's); a Fetch's record regions go out with sendfile (:func:`send_region`).
"""
from __future__ import annotations

import hashlib
import os
import signal
import socket
import asyncio
import logging
import threading
import weakref
from dataclasses import dataclass

from kafkaforensics.broker import remote_reads
from kafkaforensics.broker.dispatch import BrokerCore, Close, Deferred, Reply, WaitForData
from kafkaforensics.broker.group_coordinator import GroupCoordinator
from kafkaforensics.broker.protocol import MAX_FRAME_BYTES, Connection
from kafkaforensics.broker.replay import ReplayBroker
from kafkaforensics.log.file_region import FileRegion, SourceRegion
from kafkaforensics.log.remote import RemoteTier

log = logging.getLogger("kfx.serve")


MAX_CONNECTIONS = 1000
MAX_BUFFERED_BYTES = 512 * 1024 * 1024
IDLE_MS = 600_000
#: each connection's SO_SNDBUF (Kafka's socket.send.buffer.bytes, whose default is 100 KiB): -1, the
#: system's, autotuned.  A fixed 4 MiB (8 MiB once Linux doubles it) took an 8 MiB Fetch answer in one
#: sendfile call and halved the broker's CPU, but kcat's sessions were slower in wall-clock time
#: (interleaved runs, benchmarks/README.md), so it is a limit one may set, not the default
SEND_BUFFER_BYTES = -1


@dataclass
class Limits:
    """The socket layer's caps (see the module docstring); Kafka's defaults where Kafka has one, but
    for the send buffer (:data:`SEND_BUFFER_BYTES`: the system's)."""
    max_request_bytes: int = MAX_FRAME_BYTES
    max_connections: int = MAX_CONNECTIONS
    max_buffered_bytes: int = MAX_BUFFERED_BYTES
    idle_ms: int = IDLE_MS
    send_buffer_bytes: int = SEND_BUFFER_BYTES


class _Server:
    def __init__(self, core: BrokerCore, limits: Limits | None = None):
        self.core = core
        self.woken: dict[int, asyncio.Event] = {}  # a waiting fetch's id -> its wake-up
        self.limits = limits or Limits()
        self.connections = 0
        self.buffered = 0  # bytes held in unfinished frames, all connections together

    async def client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        peer = writer.get_extra_info("peername")
        lim = self.limits
        if self.connections >= lim.max_connections:
            log.warning("closing %s: %d connections open (max_connections)", peer, self.connections)
            writer.close()
            return
        self.connections += 1
        size_send_buffer(writer.get_extra_info("socket"), lim.send_buffer_bytes)
        conn = Connection(max_frame=lim.max_request_bytes)
        held = 0  # bytes of the budget this connection holds: its unfinished frame's declared size
        try:
            while True:
                need = conn.pending()
                if need > held:  # a frame begun: reserve its declared size before reading the rest of it
                    if not await self.reserve(need - held, peer):
                        return
                    held = need
                data = await read_within(reader, writer, lim.idle_ms / 1000, peer)
                if not data:
                    return
                events = conn.receive_data(data)
                if events:  # the frame it held is complete: what is left begins the next one
                    self.buffered, held = self.buffered - held, 0
                for ev in events:
                    reply = await self.outcome(self.core.handle(ev))
                    if isinstance(reply, Close):
                        log.warning("closing %s: %s", peer, reply.reason)
                        return
                    if isinstance(reply, Reply):
                        await self.send_parts(writer, reply.parts)
                await writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.CancelledError):
            return
        except Exception:  # a bug must cost one connection, never the server
            log.exception("closing %s after an internal error", peer)
        finally:
            self.buffered -= held
            self.connections -= 1
            writer.close()

    async def expire_transactions_loop(self, interval_s: float = 10.0) -> None:
        """Every 10 s, abort the transactions open past their timeout (Kafka's
        transaction.abort.timed.out.transaction.cleanup.interval.ms) and wake the fetches waiting on them."""
        while True:
            await asyncio.sleep(interval_s)
            self.core.broker.expire_transactions()
            self.wake()

    async def reserve(self, size: int, peer) -> bool:
        """Take ``size`` bytes of the budget, waiting (the socket not read) while the other connections'
        frames hold it, as Kafka mutes a channel its memory pool cannot serve; a frame is let in alone
        when it is larger than the whole budget.  False (close it) after waiting ``idle_ms``."""
        lim = self.limits
        loop = asyncio.get_running_loop()
        deadline = loop.time() + lim.idle_ms / 1000
        while self.buffered > 0 and self.buffered + size > lim.max_buffered_bytes:
            if loop.time() >= deadline:
                log.warning("closing %s: waited %d ms for %d bytes of the request budget", peer, lim.idle_ms, size)
                return False
            await asyncio.sleep(0.01)
        self.buffered += size
        return True

    async def outcome(self, out):
        """Carry out what the core decided until there is a Reply, a NoReply or a Close."""
        self.wake()
        if isinstance(out, Deferred):
            out = self.core.finish(out.request, await out.awaitable)
            self.wake()
        if not isinstance(out, WaitForData):
            return out
        loop = asyncio.get_running_loop()
        deadline, wait = loop.time() + out.timeout_ms / 1000, out
        try:
            while isinstance(out, WaitForData):
                wait, woken = out, asyncio.Event()
                self.woken[wait.id] = woken
                try:
                    await asyncio.wait_for(woken.wait(), max(0.0, deadline - loop.time()))
                except asyncio.TimeoutError:
                    return self.core.expire(wait)
                out = self.core.retry(wait)
            return out
        finally:
            self.woken.pop(wait.id, None)
            if isinstance(out, WaitForData):  # the connection went away while it waited
                self.core.forget(out)

    def wake(self) -> None:
        """Set the events of the fetches the core says an append has woken."""
        for w in self.core.wakeups():
            event = self.woken.pop(w.id, None)
            if event is not None:
                event.set()

    async def send_parts(self, writer: asyncio.StreamWriter, parts: list) -> None:
        """Bytes through the stream, record regions straight from the segment files (sendfile).  An
        answer with a region is sent corked (TCP_CORK, as a server sends a header then a file): its
        framing goes out in the region's first packet, not in a small packet of its own."""
        corked = any(type(p) is FileRegion for p in parts) and cork(writer, True)
        try:
            for part in parts:
                if isinstance(part, bytes):
                    writer.write(part)
                else:
                    await send_region(writer, part)
        finally:
            if corked:
                cork(writer, False)  # what is left goes out now


async def read_within(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, seconds: float, peer) -> bytes:
    """What the client sends next (b"": it closed); a client silent for ``seconds`` is closed (logged),
    which ends the read with b"".  One timer a read, not a task (``asyncio.wait_for`` wraps each read
    in a task of its own: two more turns of the event loop for every request)."""
    def idle() -> None:
        log.warning("closing %s: idle for %d ms", peer, seconds * 1000)
        writer.close()
    timer = asyncio.get_running_loop().call_later(seconds, idle)
    try:
        return await reader.read(1 << 16)
    finally:
        timer.cancel()


async def send_region(writer: asyncio.StreamWriter, region: FileRegion) -> None:
    """``region`` sent from its file with sendfile (its bytes never enter Python): at once, as much as
    the socket takes (no await when it takes it whole), the rest through the event loop's sendfile as
    the socket drains.
    A region of no local file (a remote segment's :class:`~kafkaforensics.log.file_region.SourceRegion`)
    goes as its bytes."""
    if isinstance(region, SourceRegion):
        writer.write(region.read())
        return
    with region.open() as f:
        await writer.drain()
        transport = writer.transport
        sent = 0
        if transport.get_write_buffer_size() == 0 and not transport.is_closing():  # nothing queued ahead of it
            sent = _sendfile_now(transport.get_extra_info("socket").fileno(), f.fileno(), region)
        if sent < region.size:
            await asyncio.get_running_loop().sendfile(transport, f, region.position + sent, region.size - sent,
                                                      fallback=True)


def cork(writer: asyncio.StreamWriter, on: bool) -> bool:
    """TCP_CORK set (``on``) or cleared on the writer's socket (cleared: held bytes go out at once);
    False where there is none (not Linux, not TCP, a socket gone)."""
    sock = writer.get_extra_info("socket")
    if sock is None or not hasattr(socket, "TCP_CORK") or sock.family not in (socket.AF_INET, socket.AF_INET6):
        return False
    try:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_CORK, 1 if on else 0)
    except OSError:
        return False
    return True


def size_send_buffer(sock, size: int) -> None:
    """The socket's send buffer set to ``size`` bytes (-1: the system's, autotuned)."""
    if size > 0 and sock is not None:
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, size)
        except OSError:
            pass  # not settable here: the system's buffer serves


def _sendfile_now(sock_fd: int, file_fd: int, region: FileRegion) -> int:
    """How many bytes of ``region`` the (non-blocking) socket took now, os.sendfile until it would block."""
    sent = 0
    while sent < region.size:
        try:
            n = os.sendfile(sock_fd, file_fd, region.position + sent, region.size - sent)
        except (BlockingIOError, InterruptedError):
            break
        except OSError as e:
            if sent or isinstance(e, ConnectionError):
                raise
            break  # no sendfile for this file or socket: the event loop's sendfile falls back to copying
        if n == 0:  # the file ends before the region: the event loop's sendfile meets it too
            break
        sent += n
    return sent


def default_state_path(log_dir: str) -> str:
    """Committed offsets live outside the log dir (it stays read-only): ~/.local/state/kfx/serve/."""
    base = os.environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    key = hashlib.sha1(os.path.abspath(log_dir).encode()).hexdigest()[:16]
    return os.path.join(base, "kfx", "serve", key, "group-offsets.json")


@dataclass(frozen=True)
class ServeOptions:
    """What ``kfx serve`` is told besides where: the broker's identity (``node_id``, ``advertised_host``:
    the host clients are told, default the one bound), where committed offsets live (``state_path``,
    default :func:`default_state_path`), whether it takes writes (``writable``, ``auto_create``,
    ``partitions`` of a topic it creates, ``transaction_version``), the socket layer's ``limits``, and
    the ``remote`` tier (an opened :class:`~kafkaforensics.log.remote.RemoteTier`) each partition is
    also served from, from its remote log start (:mod:`~kafkaforensics.broker.remote_reads`)."""
    advertised_host: str | None = None
    node_id: int | None = None
    state_path: str | None = None
    writable: bool = False
    auto_create: bool = True
    partitions: int = 1
    limits: Limits | None = None
    transaction_version: int = 2
    remote: RemoteTier | None = None


#: each listening server's socket layer (its counters: connections, buffered bytes), for tests
_EDGES: weakref.WeakKeyDictionary[asyncio.Server, _Server] = weakref.WeakKeyDictionary()


def edge_of(server: asyncio.Server) -> _Server:
    """The socket layer of a server :func:`start` made (its counters: connections, buffered bytes)."""
    return _EDGES[server]


async def start(log_dir: str, host: str = "127.0.0.1", port: int = 9092, options: ServeOptions | None = None):
    """The replay broker of ``log_dir`` listening on ``host:port`` (0: a free port): (server, broker)."""
    o = options or ServeOptions()
    broker = ReplayBroker(log_dir, node_id=o.node_id, host=o.advertised_host or host, port=port, writable=o.writable,
                          auto_create=o.auto_create, partitions=o.partitions, transaction_version=o.transaction_version)
    if o.remote is not None:
        for line in remote_reads.attach(broker, o.remote):
            log.warning("remote tier: %s", line)
    groups = GroupCoordinator(o.state_path or default_state_path(log_dir))
    core = BrokerCore(broker, groups)
    loop = asyncio.get_running_loop()
    core.offload = lambda fn: loop.run_in_executor(None, fn)  # file work off the event loop
    srv = _Server(core, o.limits)
    asyncio.get_running_loop().create_task(groups.expire_loop())
    if o.writable:
        loop.create_task(srv.expire_transactions_loop())
    server = await asyncio.start_server(srv.client, host, port)
    _EDGES[server] = srv
    actual = server.sockets[0].getsockname()[1]
    broker.port = actual
    return server, broker


def serve_forever(log_dir: str, host: str, port: int, options: ServeOptions | None = None) -> None:
    """Serve until SIGTERM or SIGINT, then shut down as Kafka's broker does (:meth:`ReplayBroker.shutdown`)."""

    async def main():
        server, broker = await start(log_dir, host, port, options)
        stopping = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):  # before the line that says it is up
            loop.add_signal_handler(sig, stopping.set)
        log.warning("serving %d partitions of %s on %s:%d", len(broker.partitions), log_dir, host, broker.port)
        async with server:
            await stopping.wait()
            server.close()
            tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for t in tasks:  # open connections end; nothing is appended after this
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
        for line in broker.shutdown():
            log.warning("shutdown: %s", line)
    asyncio.run(main())


class BrokerThread:
    """A replay broker on 127.0.0.1 and a free port, in a background thread (tests, notebooks)."""

    def __init__(self, log_dir: str, node_id: int | None = None, state_path: str | None = None, writable: bool = False,
                 auto_create: bool = True, partitions: int = 1, limits: Limits | None = None,
                 transaction_version: int = 2):
        self.log_dir, self.node_id, self.state_path, self.writable = log_dir, node_id, state_path, writable
        self.remote = None  # an opened RemoteTier, served below each partition's local log start (set before start)
        self.auto_create, self.partitions, self.limits = auto_create, partitions, limits
        self.transaction_version = transaction_version
        self.loop = asyncio.new_event_loop()
        self.port = None

    def __enter__(self) -> "BrokerThread":
        ready = threading.Event()

        def run():
            asyncio.set_event_loop(self.loop)
            options = ServeOptions(node_id=self.node_id, state_path=self.state_path, writable=self.writable,
                                   auto_create=self.auto_create, partitions=self.partitions, limits=self.limits,
                                   transaction_version=self.transaction_version, remote=self.remote)
            self.server, self.broker = self.loop.run_until_complete(start(self.log_dir, "127.0.0.1", 0, options))
            self.port = self.broker.port
            self.edge = edge_of(self.server)
            ready.set()
            self.loop.run_forever()
        self.thread = threading.Thread(target=run, daemon=True)
        self.thread.start()
        if not ready.wait(30):
            raise RuntimeError("replay broker did not start")
        return self

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def __exit__(self, *exc) -> None:
        async def stop():
            self.server.close()
            tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for t in tasks:  # open client connections end with the broker
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            await self.server.wait_closed()
        asyncio.run_coroutine_threadsafe(stop(), self.loop).result(10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)
        self.loop.close()
        self.shutdown_report = self.broker.shutdown()  # as kfx serve does on SIGTERM
