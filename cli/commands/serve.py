"""``kfx serve``: log dirs served to Kafka clients over the Kafka protocol."""
from __future__ import annotations

import os
import logging
from typing import List, Optional

from cli.common import EXIT_OK, fail
from cli.declare import Argument, Exit, Option
from cli.remote import KEY_FILE, REMOTE, open_remote
from cli.repairs import refuse_live
from kafkaforensics.broker import server as broker_server
from kafkaforensics.log import paths as log_paths


def serve(log_dir: str = Argument(..., help="A log dir: every <topic>-<partition> dir is served"),
          host: str = Option("127.0.0.1", "--host", metavar="HOST", help="Address to listen on"),
          port: int = Option(9092, "--port", min=0, max=65535, metavar="PORT", help="Port to listen on (0: any free one)"),
          advertised_host: Optional[str] = Option(None, "--advertised-host", metavar="HOST",
                                                  help="Host name clients are told to connect to (default: --host)"),
          node_id: Optional[int] = Option(None, "--node-id", min=0, metavar="ID",
                                          help="The broker id clients see (default: the log dir's node.id, else "
                                               "broker.id, in meta.properties; else 0)"),
          writable: bool = Option(False, "--writable", help="Accept Produce, transactions and CreateTopics"),
          auto_create: bool = Option(True, "--auto-create/--no-auto-create",
                                           help="With --writable: create a topic a client names (Kafka's auto.create.topics.enable)"),
          partitions: int = Option(1, "--partitions", min=1, metavar="N", help="Partitions of an auto-created topic (num.partitions)"),
          state_file: Optional[str] = Option(None, "--state-file", metavar="FILE",
                                                   help="Where committed group offsets persist (default ~/.local/state/kfx/serve/...)"),
          transaction_version: int = Option(2, "--transaction-version", min=0, max=2, metavar="N",
                                            help="The transaction.version feature finalized (2: KIP-890 transactions v2)"),
          max_request_bytes: int = Option(104857600, "--socket-request-max-bytes", min=1024, metavar="BYTES",
                                          help="Largest request frame (socket.request.max.bytes)"),
          max_buffered_bytes: int = Option(536870912, "--queued-max-request-bytes", min=1024, metavar="BYTES",
                                           help="Request bytes buffered over all connections (queued.max.request.bytes)"),
          idle_ms: int = Option(600000, "--connections-max-idle-ms", min=1, metavar="MS",
                                help="Close a connection silent this long (connections.max.idle.ms)"),
          max_connections: int = Option(1000, "--max-connections", min=1, metavar="N", help="Open connections at most"),
          remote: Optional[str] = REMOTE, key_file: List[str] = KEY_FILE):
    """Serve log directories to real Kafka clients over the Kafka protocol (read-only unless --writable)."""
    try:
        log_paths.classify_for([log_dir], "serve", accept=(log_paths.LOG_DIR,))
    except log_paths.PathUsageError as e:
        # a writable broker may start on an empty dir (a new broker's log dir); nothing else but a log dir
        if not (writable and os.path.isdir(log_dir) and not os.listdir(log_dir)):
            fail(str(e))
    if writable:
        refuse_live(log_dir)
    tier = open_remote(remote, key_file)
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(name)s %(message)s")
    limits = broker_server.Limits(max_request_bytes=max_request_bytes, max_connections=max_connections,
                    max_buffered_bytes=max_buffered_bytes, idle_ms=idle_ms)
    try:
        broker_server.serve_forever(log_dir, host, port, broker_server.ServeOptions(
            advertised_host=advertised_host, node_id=node_id, state_path=state_file, writable=writable,
            auto_create=auto_create, partitions=partitions, limits=limits, transaction_version=transaction_version,
            remote=tier))
    except KeyboardInterrupt:
        raise Exit(EXIT_OK)
    except OSError as e:
        fail(str(e))
