"""The replay broker's logic, without I/O: a request in, a response body out.

Every ``<topic>-<partition>`` directory under the log dir is a partition this one-node cluster
leads, served as it is on disk.  Implemented (and advertised, with the versions below):
ApiVersions, Metadata, ListOffsets (earliest, latest, by timestamp), Fetch (read_uncommitted and
read_committed with the aborted-transaction list from the .txnindex files), FindCoordinator.
Without ``writable`` nothing on disk is written; with it, Produce (acks 0/1/all, idempotent
producers), InitProducerId, AddPartitionsToTxn, EndTxn (control batches and .txnindex entries) and
CreateTopics append through :class:`~kafkaforensics.live_log.LiveLog`.  Topic names are validated
and only ever matched against partition directories this broker knows, so no request can reach
outside the log dir.
"""
from __future__ import annotations

import logging
import os
import re
from dataclasses import dataclass, field

from . import offset_index
from .errors import Problem
from .partition import find_partitions
from .producer_state import ProducerState
from .segment import BatchScanner, open_buffer
from .txn_index import read_entries as read_txn_entries
from specs.message_schema import FileRegion

NONE, OFFSET_OUT_OF_RANGE, CORRUPT_MESSAGE, UNKNOWN_TOPIC_OR_PARTITION = 0, 1, 2, 3
INVALID_TOPIC, UNSUPPORTED_VERSION, POLICY_VIOLATION = 17, 35, 44
EARLIEST, LATEST, MAX_TIMESTAMP = -2, -1, -3
_TOPIC_RE = re.compile(r"^[a-zA-Z0-9._-]{1,249}$")

#: api key -> (min, max) versions implemented
#: (Produce is answered -- with POLICY_VIOLATION while read-only -- so that clients see a broker of
#: the v2 message format era and fetch with v4+.)
SUPPORTED = {18: (0, 3), 3: (1, 12), 2: (1, 7), 1: (4, 12), 10: (0, 4), 0: (3, 9),
             # the group coordinator (kafkaforensics.group_coordinator)
             11: (0, 9), 14: (0, 5), 12: (0, 4), 13: (0, 5), 8: (0, 8), 9: (0, 8)}


_log = logging.getLogger("kfx.serve")


class CorruptBatch(Exception):
    """The batch a fetch would start with fails its CRC: Fetch answers CORRUPT_MESSAGE for that
    partition (Kafka's consumers raise it to the application) instead of handing the bytes out."""

    def __init__(self, file: str, position: int, offset: int):
        self.problem = Problem(file, position, offset, "crc-mismatch", "batch CRC does not match its bytes")
        super().__init__(str(self.problem))


@dataclass
class Served:
    topic: str
    partition: int
    path: str
    segments: list = field(default_factory=list)   # base offsets
    log_start: int = 0
    log_end: int = 0
    last_stable: int = 0
    leader_epoch: int = 0
    topic_id: str = "AAAAAAAAAAAAAAAAAAAAAA"

    def seg_path(self, base: int, suffix: str) -> str:
        return os.path.join(self.path, f"{base:020d}{suffix}")


def valid_topic(name) -> bool:
    return isinstance(name, str) and bool(_TOPIC_RE.match(name)) and name not in (".", "..")


WRITE_APIS = {22: (0, 4), 24: (0, 3), 26: (0, 3), 19: (0, 7)}
TOPIC_ALREADY_EXISTS, INVALID_PRODUCER_ID_MAPPING, INVALID_PARTITIONS = 36, 49, 37
INVALID_TXN_STATE = 48


class ReplayBroker:
    def __init__(self, log_dir: str, *, node_id: int = 0, host: str = "127.0.0.1", port: int = 9092,
                 writable: bool = False):
        self.log_dir = os.path.abspath(log_dir)
        self.node_id, self.host, self.port = node_id, host, port
        self.writable = writable
        self.partitions: dict[tuple[str, int], Served] = {}
        self.live: dict = {}
        self._index_cache: dict[str, tuple] = {}  # .index path -> (size, mtime, entries)
        self.txns: dict[str, dict] = {}
        self.next_producer_id = 1000
        self.reload()

    # -- the log dir ---------------------------------------------------------------------------
    def reload(self) -> None:
        for pd in find_partitions(self.log_dir):
            if pd.topic is None or not valid_topic(pd.topic):
                continue
            s = Served(pd.topic, pd.partition, pd.path, [seg.base_offset for seg in pd.segments])
            state = ProducerState()
            leo = s.segments[0] if s.segments else 0
            for seg in pd.segments:
                with open_buffer(seg.log) as buf:
                    for b in BatchScanner(buf, file=seg.log, base_offset=seg.base_offset):
                        if not b.crc_valid():
                            break
                        state.append(b)
                        leo = b.last_offset + 1
                        if b.magic >= 2 and b.partition_leader_epoch > s.leader_epoch:
                            s.leader_epoch = b.partition_leader_epoch
            if state.producers:
                self.next_producer_id = max(self.next_producer_id, max(state.producers) + 1)
            s.log_start = s.segments[0] if s.segments else 0
            s.log_end = leo
            s.last_stable = state.first_unstable_offset() if state.first_unstable_offset() is not None else leo
            try:
                md = pd.partition_metadata()
                if md:
                    s.topic_id = md["topicId"]
            except Exception:
                pass
            self.partitions[(s.topic, s.partition)] = s

    def topics(self) -> dict[str, list[Served]]:
        out: dict[str, list[Served]] = {}
        for (t, _p), s in sorted(self.partitions.items()):
            out.setdefault(t, []).append(s)
        return out

    # -- dispatch --------------------------------------------------------------------------------
    def handle(self, api_key: int, version: int, body: dict) -> dict:
        return {18: self.api_versions, 3: self.metadata, 2: self.list_offsets, 1: self.fetch,
                10: self.find_coordinator, 0: self.produce, 22: self.init_producer_id,
                24: self.add_partitions_to_txn, 26: self.end_txn, 19: self.create_topics}[api_key](version, body)

    # -- writing (--writable) ----------------------------------------------------------------------
    def _live(self, s: Served):
        from .live_log import LiveLog
        key = (s.topic, s.partition)
        if key not in self.live:
            self.live[key] = LiveLog(s.path)
        return self.live[key]

    def _refresh(self, s: Served, log) -> None:
        s.log_end, s.last_stable = log.next_offset, log.last_stable_offset
        if log.active not in s.segments:
            s.segments.append(log.active)

    def produce(self, version: int, body: dict) -> dict:
        """Read-only: every partition answers POLICY_VIOLATION; writable: append (see LiveLog)."""
        out = []
        for t in body.get("TopicData", []):
            parts = []
            for p in t.get("PartitionData", []):
                r = {"Index": p["Index"], "ErrorCode": NONE, "BaseOffset": -1, "LogStartOffset": -1,
                     "RecordErrors": [], "ErrorMessage": None, "LogAppendTimeMs": -1}
                s = self.partitions.get((t.get("Name"), p["Index"]))
                if not self.writable:
                    r.update(ErrorCode=POLICY_VIOLATION,
                             ErrorMessage="this replay broker is read-only (start it with --writable)")
                elif s is None:
                    r["ErrorCode"] = UNKNOWN_TOPIC_OR_PARTITION
                else:
                    log = self._live(s)
                    err, base = log.append(p.get("Records") or b"", s.leader_epoch)
                    self._refresh(s, log)
                    r.update(ErrorCode=err, BaseOffset=base, LogStartOffset=s.log_start)
                parts.append(r)
            out.append({"Name": t.get("Name"), "PartitionResponses": parts})
        return {"ThrottleTimeMs": 0, "Responses": out}

    def write_offset_commits(self, group: str, commits: list) -> None:
        """Append the commits to __consumer_offsets-N as the group coordinator writes them
        (key v1, value v3), N = abs(group.hashCode) % 50; the partition dir is created on first use."""
        import time as _t
        from .batch import Record
        from .builder import build_v2
        from .group_coordinator import offsets_partition_for
        from .internal_topics import encode_offset_commit
        n = offsets_partition_for(group)
        key = ("__consumer_offsets", n)
        s = self.partitions.get(key)
        if s is None:
            d = os.path.join(self.log_dir, f"__consumer_offsets-{n}")
            os.makedirs(d, exist_ok=True)
            s = self.partitions[key] = Served("__consumer_offsets", n, d, [0])
        log = self._live(s)
        now = int(_t.time() * 1000)
        recs = []
        for i, (topic, part, offset, epoch, metadata) in enumerate(commits):
            k, v = encode_offset_commit(group, topic, part, offset, metadata=metadata, commit_ts=now,
                                        leader_epoch=epoch)
            recs.append(Record(log.next_offset + i, now, k, v, []))
        if recs:
            log.append(build_v2(recs, base_offset=log.next_offset), s.leader_epoch)
            self._refresh(s, log)

    def init_producer_id(self, version: int, body: dict) -> dict:
        tid = body.get("TransactionalId")
        if tid is None:
            pid = self.next_producer_id
            self.next_producer_id += 1
            return {"ThrottleTimeMs": 0, "ErrorCode": NONE, "ProducerId": pid, "ProducerEpoch": 0}
        t = self.txns.get(tid)
        if t is None:
            t = self.txns[tid] = {"pid": self.next_producer_id, "epoch": 0, "partitions": set()}
            self.next_producer_id += 1
        else:
            if t["partitions"]:  # a new session of the same transactional id aborts what was open
                self._end(t, commit=False)
            t["epoch"] += 1
        return {"ThrottleTimeMs": 0, "ErrorCode": NONE, "ProducerId": t["pid"], "ProducerEpoch": t["epoch"]}

    def add_partitions_to_txn(self, version: int, body: dict) -> dict:
        tid, pid, epoch = (body.get("V3AndBelowTransactionalId"), body.get("V3AndBelowProducerId"),
                           body.get("V3AndBelowProducerEpoch"))
        t = self.txns.get(tid)
        err = NONE
        if t is None or t["pid"] != pid:
            err = INVALID_PRODUCER_ID_MAPPING
        elif t["epoch"] != epoch:
            err = INVALID_PRODUCER_EPOCH
        results = []
        for topic in body.get("V3AndBelowTopics", []):
            rs = []
            for p in topic.get("Partitions", []):
                e = err
                if e == NONE and (topic["Name"], p) not in self.partitions:
                    e = UNKNOWN_TOPIC_OR_PARTITION
                if e == NONE:
                    t["partitions"].add((topic["Name"], p))
                rs.append({"PartitionIndex": p, "PartitionErrorCode": e})
            results.append({"Name": topic["Name"], "ResultsByPartition": rs})
        return {"ThrottleTimeMs": 0, "ResultsByTopicV3AndBelow": results}

    def end_txn(self, version: int, body: dict) -> dict:
        t = self.txns.get(body.get("TransactionalId"))
        if t is None or t["pid"] != body.get("ProducerId"):
            return {"ThrottleTimeMs": 0, "ErrorCode": INVALID_PRODUCER_ID_MAPPING}
        if t["epoch"] != body.get("ProducerEpoch"):
            return {"ThrottleTimeMs": 0, "ErrorCode": INVALID_PRODUCER_EPOCH}
        self._end(t, commit=bool(body.get("Committed")))
        return {"ThrottleTimeMs": 0, "ErrorCode": NONE}

    def _end(self, t: dict, commit: bool) -> None:
        import time as _t
        for key in sorted(t["partitions"]):
            s = self.partitions.get(key)
            if s is None:
                continue
            log = self._live(s)
            log.append_marker(t["pid"], t["epoch"], commit, s.leader_epoch, timestamp=int(_t.time() * 1000))
            self._refresh(s, log)
        t["partitions"] = set()

    def create_topics(self, version: int, body: dict) -> dict:
        import base64
        import uuid
        from specs import checkpoints as C
        out = []
        for t in body.get("Topics", []):
            name, n = t.get("Name"), t.get("NumPartitions", 1)
            r = {"Name": name, "ErrorCode": NONE, "ErrorMessage": None, "NumPartitions": n, "ReplicationFactor": 1,
                 "Configs": None, "TopicId": "AAAAAAAAAAAAAAAAAAAAAA"}
            if not valid_topic(name):
                r.update(ErrorCode=INVALID_TOPIC, ErrorMessage=f"illegal topic name {name!r}")
            elif any(k[0] == name for k in self.partitions):
                r.update(ErrorCode=TOPIC_ALREADY_EXISTS, ErrorMessage=f"topic {name} already exists")
            elif n == -1 or n < 1:
                n = 1 if n == -1 else n
                if n < 1:
                    r.update(ErrorCode=INVALID_PARTITIONS, ErrorMessage="partitions must be at least 1")
            if r["ErrorCode"] == NONE and not body.get("validateOnly"):
                tid = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
                r.update(TopicId=tid, NumPartitions=n)
                for p in range(n):
                    d = os.path.join(self.log_dir, f"{name}-{p}")
                    os.makedirs(d, exist_ok=False)
                    with open(os.path.join(d, C.PARTITION_METADATA_FILE), "w") as f:
                        f.write(C.build_partition_metadata(tid))
                    s = Served(name, p, d, [0], topic_id=tid)
                    self.partitions[(name, p)] = s
                    self._live(s)
            out.append(r)
        return {"ThrottleTimeMs": 0, "Topics": out}

    def supports(self, api_key: int, version: int) -> bool:
        lo_hi = SUPPORTED.get(api_key) or (WRITE_APIS.get(api_key) if self.writable else None)
        return lo_hi is not None and lo_hi[0] <= version <= lo_hi[1]

    def api_versions(self, version: int, body: dict, error: int = NONE) -> dict:
        return {"ErrorCode": error, "ThrottleTimeMs": 0,
                "ApiKeys": [{"ApiKey": k, "MinVersion": lo, "MaxVersion": hi} for k, (lo, hi) in
                            sorted({**SUPPORTED, **(WRITE_APIS if self.writable else {})}.items())]}

    def metadata(self, version: int, body: dict) -> dict:
        topics = self.topics()
        wanted = body.get("Topics")
        names = sorted(topics) if wanted is None else [t.get("Name") for t in wanted]
        out = []
        for name in names:
            if not valid_topic(name):
                out.append({"ErrorCode": INVALID_TOPIC, "Name": name, "Partitions": []})
            elif name not in topics:
                out.append({"ErrorCode": UNKNOWN_TOPIC_OR_PARTITION, "Name": name, "Partitions": []})
            else:
                parts = topics[name]
                out.append({"ErrorCode": NONE, "Name": name, "TopicId": parts[0].topic_id,
                            "IsInternal": name.startswith("__"),
                            "Partitions": [{"ErrorCode": NONE, "PartitionIndex": s.partition, "LeaderId": self.node_id,
                                            "LeaderEpoch": s.leader_epoch, "ReplicaNodes": [self.node_id],
                                            "IsrNodes": [self.node_id], "OfflineReplicas": []} for s in parts]})
        return {"ThrottleTimeMs": 0, "Brokers": [{"NodeId": self.node_id, "Host": self.host, "Port": self.port,
                                                   "Rack": None}],
                "ClusterId": "kfx-replay", "ControllerId": self.node_id, "Topics": out}

    def find_coordinator(self, version: int, body: dict) -> dict:
        me = {"NodeId": self.node_id, "Host": self.host, "Port": self.port, "ErrorCode": NONE, "ErrorMessage": None}
        if version >= 4:
            return {"ThrottleTimeMs": 0, "Coordinators": [dict(me, Key=k) for k in body.get("CoordinatorKeys", [])]}
        return dict(me, ThrottleTimeMs=0)

    # -- offsets ---------------------------------------------------------------------------------
    def list_offsets(self, version: int, body: dict) -> dict:
        committed = body.get("IsolationLevel", 0) == 1
        topics = []
        for t in body.get("Topics", []):
            parts = []
            for p in t.get("Partitions", []):
                s = self.partitions.get((t.get("Name"), p["PartitionIndex"]))
                r = {"PartitionIndex": p["PartitionIndex"], "ErrorCode": NONE, "Timestamp": -1, "Offset": -1,
                     "LeaderEpoch": s.leader_epoch if s else -1}
                if s is None:
                    r["ErrorCode"] = UNKNOWN_TOPIC_OR_PARTITION
                elif p["Timestamp"] == EARLIEST:
                    r["Offset"] = s.log_start
                elif p["Timestamp"] == LATEST:
                    r["Offset"] = s.last_stable if committed else s.log_end
                else:
                    r["Offset"], r["Timestamp"] = self.offset_for_time(s, p["Timestamp"])
                parts.append(r)
            topics.append({"Name": t.get("Name"), "Partitions": parts})
        return {"ThrottleTimeMs": 0, "Topics": topics}

    def offset_for_time(self, s: Served, ts: int) -> tuple[int, int]:
        """First offset whose record timestamp is >= ts (Kafka's ListOffsets by time)."""
        for base in s.segments:
            with open_buffer(s.seg_path(base, ".log")) as buf:
                for b in BatchScanner(buf, base_offset=base):
                    if b.max_timestamp < ts:
                        continue
                    for r in b.records():
                        if r.timestamp >= ts:
                            return r.offset, r.timestamp
        return -1, -1

    # -- fetch -----------------------------------------------------------------------------------
    def fetch(self, version: int, body: dict) -> dict:
        committed = body.get("IsolationLevel", 0) == 1
        budget = body.get("MaxBytes", 0x7FFFFFFF)
        responses = []
        for t in body.get("Topics", []):
            parts = []
            for p in t.get("Partitions", []):
                s = self.partitions.get((t.get("Topic"), p["Partition"]))
                r = {"PartitionIndex": p["Partition"], "ErrorCode": NONE, "HighWatermark": -1,
                     "LastStableOffset": -1, "LogStartOffset": -1, "AbortedTransactions": None,
                     "PreferredReadReplica": -1, "Records": b""}
                if s is None:
                    r["ErrorCode"] = UNKNOWN_TOPIC_OR_PARTITION
                else:
                    r.update(HighWatermark=s.log_end, LastStableOffset=s.last_stable, LogStartOffset=s.log_start)
                    off = p["FetchOffset"]
                    if off < s.log_start or off > s.log_end:
                        r["ErrorCode"] = OFFSET_OUT_OF_RANGE
                    else:
                        limit = s.last_stable if committed else s.log_end
                        try:
                            data, upper = self.read(s, off, min(p["PartitionMaxBytes"], max(budget, 0)), limit,
                                                    first=not any(x["Records"] for tp in responses
                                                                  for x in tp["Partitions"]))
                        except CorruptBatch as e:
                            _log.warning("fetch of %s-%d at offset %d: %s", s.topic, s.partition, off, e)
                            r["ErrorCode"] = CORRUPT_MESSAGE
                            data, upper = b"", off
                        budget -= len(data)
                        r["Records"] = data
                        if committed:
                            r["AbortedTransactions"] = self.aborted(s, off, upper)
                parts.append(r)
            responses.append({"Topic": t.get("Topic"), "Partitions": parts})
        return {"ThrottleTimeMs": 0, "ErrorCode": NONE, "SessionId": 0, "Responses": responses}

    def read(self, s: Served, offset: int, max_bytes: int, limit: int, first: bool) -> tuple[bytes, int]:
        """Whole batches from the one that holds ``offset``, at most ``max_bytes`` (but at least one
        batch when ``first``, as KIP-74 says), never past ``limit``; returns them as a FileRegion of
        the segment (sent with sendfile) and the next offset."""
        bases = [b for b in s.segments if b <= offset] or s.segments[:1]
        if not bases or offset >= limit:
            return b"", offset
        start_seg = s.segments.index(bases[-1])
        for base in s.segments[start_seg:]:
            entries = self._index(s.seg_path(base, ".index"), base)
            pos = offset_index.lookup(entries, offset, base)[1] if entries else 0
            with open_buffer(s.seg_path(base, ".log")) as buf:
                begin = end = None
                upper = offset
                for b in BatchScanner(buf, start=pos, base_offset=base):
                    if b.last_offset < offset:
                        continue
                    if b.base_offset >= limit:
                        break
                    if not b.crc_valid():  # never handed out: served up to it, then reported
                        if begin is None:
                            raise CorruptBatch(s.seg_path(base, ".log"), b.position, b.base_offset)
                        break
                    if begin is None:
                        begin = b.position
                    elif b.position + b.size - begin > max_bytes:
                        break
                    if b.position + b.size - begin > max_bytes and not first:
                        begin = None
                        break
                    end = b.position + b.size
                    upper = b.last_offset + 1
                if begin is not None and end is not None:
                    return FileRegion(s.seg_path(base, ".log"), begin, end - begin), upper
        return b"", offset

    def _index(self, path: str, base: int) -> list:
        """A segment's offset index entries, parsed once and re-read only when the file changes."""
        try:
            st = os.stat(path)
        except OSError:
            return []
        hit = self._index_cache.get(path)
        if hit is not None and hit[0] == st.st_size and hit[1] == st.st_mtime_ns:
            return hit[2]
        with open(path, "rb") as f:
            entries, _ = offset_index.read_entries(f.read(), base)
        self._index_cache[path] = (st.st_size, st.st_mtime_ns, entries)
        return entries

    def aborted(self, s: Served, first: int, upper: int) -> list[dict]:
        out = []
        for base in s.segments:
            p = s.seg_path(base, ".txnindex")
            if base >= upper or not os.path.exists(p):
                continue
            with open(p, "rb") as f:
                for e in read_txn_entries(f.read(), file=p):
                    if e.last_offset >= first and e.first_offset < upper:
                        out.append({"ProducerId": e.producer_id, "FirstOffset": e.first_offset})
        return out
