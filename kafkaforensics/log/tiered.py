"""Tiered storage as the broker's ``__remote_log_metadata`` partitions describe it (Kafka's
TopicBasedRemoteLogMetadataManager): which remote segments of each partition exist, in which state.

Records (specs.kafka_messages, framed as metadata records): RemoteLogSegmentMetadataRecord adds a
segment (state COPY_SEGMENT_STARTED), RemoteLogSegmentMetadataUpdateRecord moves it on
(COPY_SEGMENT_FINISHED, DELETE_SEGMENT_STARTED, DELETE_SEGMENT_FINISHED), and
RemotePartitionDeleteMetadataRecord marks a partition's deletion; a snapshot record carries a segment
whole in the manager's local snapshot files, not in the topic.
"""
from __future__ import annotations

import os
import re

from kafkaforensics.errors import KafkaFormatError, Problem
from kafkaforensics.log.segment import INDEX, INDEX_BY_SUFFIX, INDEX_SUFFIXES
from kafkaforensics.log.partition import find_partitions
from kafkaforensics.records import internal_topics


# remote-log-index-cache/<start offset>_<remote segment uuid>.{index,timeindex,txnindex} (RemoteIndexCache)
REMOTE_INDEX_RE = re.compile(r"^(\d+)_[A-Za-z0-9_-]{22}(%s)$" % "|".join(re.escape(s) for s in INDEX_SUFFIXES))

SEGMENT_STATES = {0: "COPY_SEGMENT_STARTED", 1: "COPY_SEGMENT_FINISHED", 2: "DELETE_SEGMENT_STARTED",
                  3: "DELETE_SEGMENT_FINISHED"}
PARTITION_STATES = {0: "DELETE_PARTITION_MARKED", 1: "DELETE_PARTITION_STARTED", 2: "DELETE_PARTITION_FINISHED"}


def remote_segments(log_dir: str) -> dict[tuple[str, int], dict]:
    """(topic, partition) -> {"segments": [...by start offset], "deleteState": str | None}, replayed
    from every ``__remote_log_metadata-N`` partition of ``log_dir``."""
    segs: dict[str, dict] = {}
    parts: dict[tuple[str, int], dict] = {}

    def part(tip):
        return parts.setdefault((tip["Name"], tip["Partition"]), {"segments": [], "deleteState": None})

    for pd in find_partitions(log_dir):
        if pd.topic != "__remote_log_metadata":
            continue
        for seg, b, _done in pd.batches(damage="skip", producers=False):
            if b.is_control:
                continue
            for r in b.records():
                try:
                    d = internal_topics.decode_remote_log_metadata(r.value)
                except KafkaFormatError:
                    continue
                if d is None or "data" not in d:
                    continue
                x = d["data"]
                if d["type"] == "RemoteLogSegmentMetadataRecord":
                    sid = x["RemoteLogSegmentId"]
                    tip = sid["TopicIdPartition"]
                    entry = {"segmentId": sid["Id"], "startOffset": x["StartOffset"],
                             "endOffset": x["EndOffset"], "brokerId": x["BrokerId"],
                             "maxTimestampMs": x["MaxTimestampMs"], "sizeInBytes": x["SegmentSizeInBytes"],
                             "leaderEpochs": [[e["LeaderEpoch"], e["Offset"]] for e in x["SegmentLeaderEpochs"]],
                             "state": SEGMENT_STATES.get(x["RemoteLogSegmentState"],
                                                         str(x["RemoteLogSegmentState"])),
                             "topicId": tip["Id"], "record": {"file": seg.path, "offset": r.offset}}
                    segs[sid["Id"]] = entry
                    part(tip)["segments"].append(entry)
                elif d["type"] == "RemoteLogSegmentMetadataUpdateRecord":
                    e = segs.get(x["RemoteLogSegmentId"]["Id"])
                    if e is not None:
                        e["stateRecord"] = {"file": seg.path, "offset": r.offset}
                        e["state"] = SEGMENT_STATES.get(x["RemoteLogSegmentState"],
                                                        str(x["RemoteLogSegmentState"]))
                elif d["type"] == "RemotePartitionDeleteMetadataRecord":
                    part(x["TopicIdPartition"])["deleteState"] = PARTITION_STATES.get(
                        x["RemotePartitionDeleteState"], str(x["RemotePartitionDeleteState"]))
    for p in parts.values():
        p["segments"].sort(key=lambda e: (e["startOffset"], e["endOffset"]))
    return parts


def check_remote_index(path: str) -> list:
    """A tiered-storage cache index (offset or time index) read at the base offset its name gives:
    whole entries, offsets not below the base and not decreasing."""
    m = REMOTE_INDEX_RE.match(os.path.basename(path))
    if m is None or not INDEX_BY_SUFFIX[m.group(2)].preallocated:
        return []
    base, mod = int(m.group(1)), INDEX_BY_SUFFIX[m.group(2)].module
    with open(path, "rb") as f:
        data = f.read()
    if len(data) % mod.ENTRY_SIZE:
        return [Problem(path, len(data) - len(data) % mod.ENTRY_SIZE, None, "index-size",
                        f"size {len(data)} is not a multiple of {mod.ENTRY_SIZE}")]
    entries, _ = mod.read_entries(data, base)
    offs = [e[0] if m.group(2) == INDEX else e[1] for e in entries]
    out = []
    for i, o in enumerate(offs):
        if o < base or (i and o < offs[i - 1]):
            out.append(Problem(path, i * mod.ENTRY_SIZE, o, "index-order",
                               f"entry {i}: offset {o} is below the base {base} or the previous entry"))
            break
    return out
