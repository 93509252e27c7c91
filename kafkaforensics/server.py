"""The asyncio edge of the replay broker: sockets in, :mod:`protocol` and :mod:`replay` do the rest.

``serve_forever`` for ``kfx serve``; :class:`BrokerThread` runs one on a free port in a background
thread for tests (``with BrokerThread(log_dir) as b: ... b.bootstrap``).  A malformed or oversized
request closes that connection with a logged reason; the server goes on.

Caps in the socket layer, as Kafka's broker has them: a request frame larger than
``max_request_bytes`` (``socket.request.max.bytes``, 100 MiB) closes its connection before anything
is buffered; connections beyond ``max_connections`` (``max.connections``) are closed as they are
accepted; bytes buffered in unfinished frames over all connections are capped
(``max_buffered_bytes``, like ``queued.max.request.bytes`` and its memory pool): a connection
reserves the declared size of its unfinished frame before reading on, and waits while the
reservations of the others exceed the cap; a connection that sends nothing for ``idle_ms``
(``connections.max.idle.ms``, 10 minutes) is closed.
"""
from __future__ import annotations

import asyncio
import logging
import threading
from dataclasses import dataclass

from .group_coordinator import GroupCoordinator
from .protocol import (MAX_FRAME_BYTES, Connection, ProtocolViolation, UnsupportedRequest,
                       encode_response, encode_response_parts)
from .replay import UNSUPPORTED_VERSION, ReplayBroker

log = logging.getLogger("kfx.serve")
MAX_WAIT_CAP_MS = 500


MAX_CONNECTIONS = 1000
MAX_BUFFERED_BYTES = 512 * 1024 * 1024
IDLE_MS = 600_000


@dataclass
class Limits:
    """The socket layer's caps (see the module docstring); Kafka's defaults where Kafka has one."""
    max_request_bytes: int = MAX_FRAME_BYTES
    max_connections: int = MAX_CONNECTIONS
    max_buffered_bytes: int = MAX_BUFFERED_BYTES
    idle_ms: int = IDLE_MS


class _Server:
    def __init__(self, broker: ReplayBroker, groups: GroupCoordinator, limits: Limits | None = None):
        self.broker = broker
        self.groups = groups
        self.appended = asyncio.Event()  # set when a produce lands: wakes long-polling fetches
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
        conn = Connection(max_frame=lim.max_request_bytes)
        held = 0
        try:
            while True:
                need = conn.pending()
                if need:  # an unfinished frame: reserve its declared size before reading on
                    waited = 0.0
                    while self.buffered >= lim.max_buffered_bytes and waited * 1000 < lim.idle_ms:
                        await asyncio.sleep(0.01)  # back-pressure: wait until others' frames are done
                        waited += 0.01
                    held, self.buffered = need, self.buffered + need
                try:
                    data = await asyncio.wait_for(reader.read(1 << 16), lim.idle_ms / 1000)
                except asyncio.TimeoutError:
                    log.warning("closing %s: idle for %d ms", peer, lim.idle_ms)
                    return
                if not data:
                    return
                events = conn.receive_data(data)
                self.buffered, held = self.buffered - held, 0
                for ev in events:
                    if isinstance(ev, ProtocolViolation):
                        log.warning("closing %s: %s", peer, ev.reason)
                        return
                    resp = await self.respond(ev)
                    if isinstance(resp, list):
                        await self.send_parts(writer, resp)
                    elif resp:  # acks=0 produce requests get no response
                        writer.write(resp)
                await writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.CancelledError):
            return
        except Exception:  # a bug must cost one connection, never the server
            log.exception("closing %s after an internal error", peer)
        finally:
            self.buffered -= held
            self.connections -= 1
            writer.close()

    async def respond(self, ev) -> bytes:
        b = self.broker
        if isinstance(ev, UnsupportedRequest) or not b.supports(ev.api_key, ev.api_version):
            if ev.api_key == 18:  # ApiVersions: answer at v0 with the versions we do support
                return encode_response(18, 0, ev.correlation_id, b.api_versions(0, {}, error=UNSUPPORTED_VERSION))
            # as Kafka does: an API or version it does not serve closes the connection
            why = f"unsupported {getattr(ev, 'name', ev.api_key)} v{ev.api_version} from {ev.client_id}"
            log.warning("closing the connection: %s", why)
            raise CloseConnection(why)
        g, k, v = self.groups, ev.api_key, ev.api_version
        if k in (8, 9) and v >= 10:  # OffsetCommit/OffsetFetch v10+ name topics by id
            for t in [ev.body] if k == 8 else ev.body.get("Groups", []):
                b.names_for_ids(t.get("Topics"))
        if k == 11:
            body = await g.join(v, ev.body, ev.client_id)
        elif k == 14:
            body = await g.sync(v, ev.body)
        elif k == 12:
            body = g.heartbeat(v, ev.body)
        elif k == 13:
            body = g.leave(v, ev.body)
        elif k == 8:
            body = g.commit(v, ev.body)
        elif k == 9:
            body = g.fetch_offsets(v, ev.body)
        elif k in (68, 69):  # KIP-848
            topics = {t: (ps[0].topic_id, len(ps)) for t, ps in b.topics().items()}
            body = (g.consumer_heartbeat(v, ev.body, ev.client_id, topics) if k == 68
                    else g.consumer_describe(v, ev.body, topics))
        elif k in (15, 16):  # DescribeGroups, ListGroups: live groups and those the log's commits tell of
            body = (g.describe_groups if k == 15 else g.list_groups)(v, ev.body, b.logged_groups())
        else:
            body = b.handle(k, v, ev.body)
        if k in (8, 9) and v >= 10:
            for t in [body] if k == 8 else body.get("Groups", []):
                b.ids_for_names(t.get("Topics"))
        if k in (0, 26):
            self.appended.set()
            self.appended = asyncio.Event()
        if k == 0 and ev.body.get("Acks") == 0:
            return b""
        if k == 1 and not any(p["Records"] for t in body["Responses"] for p in t["Partitions"]):
            wait = ev.body.get("MaxWaitMs", 0)
            if wait > 0:  # long poll: wait for data as the client asked, then look again
                try:
                    await asyncio.wait_for(self.appended.wait(), min(wait, 30_000) / 1000)
                except asyncio.TimeoutError:
                    pass
                body = b.handle(k, v, ev.body)
        if k == 1:
            return encode_response_parts(ev.api_key, ev.api_version, ev.correlation_id, body)
        return encode_response(ev.api_key, ev.api_version, ev.correlation_id, body)

    async def send_parts(self, writer: asyncio.StreamWriter, parts: list) -> None:
        """Bytes through the stream, record regions straight from the segment files (sendfile)."""
        loop = asyncio.get_running_loop()
        for part in parts:
            if isinstance(part, bytes):
                writer.write(part)
                continue
            await writer.drain()
            with open(part.path, "rb") as f:
                await loop.sendfile(writer.transport, f, part.offset, part.length, fallback=True)


class CloseConnection(ConnectionError):
    """Raised by a handler when Kafka would close the connection (an API or version it does not serve)."""


def default_state_path(log_dir: str) -> str:
    """Committed offsets live outside the log dir (it stays read-only): ~/.local/state/kfx/serve/."""
    import hashlib
    import os
    base = os.environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    key = hashlib.sha1(os.path.abspath(log_dir).encode()).hexdigest()[:16]
    return os.path.join(base, "kfx", "serve", key, "group-offsets.json")


async def start(log_dir: str, host: str = "127.0.0.1", port: int = 9092, advertised_host: str | None = None,
                node_id: int = 0, state_path: str | None = None, writable: bool = False, auto_create: bool = True,
                partitions: int = 1, limits: Limits | None = None):
    broker = ReplayBroker(log_dir, node_id=node_id, host=advertised_host or host, port=port, writable=writable,
                          auto_create=auto_create, partitions=partitions)
    groups = GroupCoordinator(state_path or default_state_path(log_dir),
                              offsets_writer=broker.write_offset_commits if writable else None)
    broker.on_txn_offsets = lambda group, commits: groups.store(group, commits, write=False)
    broker.coordinator = groups  # for tests and notebooks: the group state
    srv = _Server(broker, groups, limits)
    asyncio.get_running_loop().create_task(groups.expire_loop())
    server = await asyncio.start_server(srv.client, host, port)
    server.edge = srv  # the socket layer's counters (connections, buffered bytes), for tests
    actual = server.sockets[0].getsockname()[1]
    broker.port = actual
    return server, broker


def serve_forever(log_dir: str, host: str, port: int, advertised_host: str | None, node_id: int,
                  state_path: str | None = None, writable: bool = False, auto_create: bool = True,
                  partitions: int = 1) -> None:
    async def main():
        server, broker = await start(log_dir, host, port, advertised_host, node_id, state_path, writable,
                                     auto_create, partitions)
        log.warning("serving %d partitions of %s on %s:%d", len(broker.partitions), log_dir, host, broker.port)
        async with server:
            await server.serve_forever()
    asyncio.run(main())


class BrokerThread:
    """A replay broker on 127.0.0.1 and a free port, in a background thread (tests, notebooks)."""

    def __init__(self, log_dir: str, node_id: int = 0, state_path: str | None = None, writable: bool = False,
                 auto_create: bool = True, partitions: int = 1, limits: Limits | None = None):
        self.log_dir, self.node_id, self.state_path, self.writable = log_dir, node_id, state_path, writable
        self.auto_create, self.partitions, self.limits = auto_create, partitions, limits
        self.loop = asyncio.new_event_loop()
        self.port = None

    def __enter__(self) -> "BrokerThread":
        ready = threading.Event()

        def run():
            asyncio.set_event_loop(self.loop)
            self.server, self.broker = self.loop.run_until_complete(start(self.log_dir, "127.0.0.1", 0,
                                                                          node_id=self.node_id,
                                                                          state_path=self.state_path,
                                                                          writable=self.writable,
                                                                          auto_create=self.auto_create,
                                                                          partitions=self.partitions,
                                                                          limits=self.limits))
            self.port = self.broker.port
            self.edge = self.server.edge
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
