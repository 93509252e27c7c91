"""Tiered storage as the broker's ``__remote_log_metadata`` partitions describe it (Kafka's
TopicBasedRemoteLogMetadataManager): which remote segments of each partition exist, in which state.

Records (specs.kafka_messages, framed as metadata records): RemoteLogSegmentMetadataRecord adds a
segment (state COPY_SEGMENT_STARTED), RemoteLogSegmentMetadataUpdateRecord moves it on
(COPY_SEGMENT_FINISHED, DELETE_SEGMENT_STARTED, DELETE_SEGMENT_FINISHED), and
RemotePartitionDeleteMetadataRecord marks a partition's deletion; a snapshot record carries a segment
whole in the manager's local snapshot files, not in the topic.
"""
from __future__ import annotations

from .errors import KafkaFormatError
from .internal_topics import decode_remote_log_metadata
from .partition import find_partitions
from .segment import BatchScanner, open_buffer

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
        for seg in pd.segments:
            with open_buffer(seg.log) as buf:
                for b in BatchScanner(buf, file=seg.log, base_offset=seg.base_offset):
                    if b.is_control or not b.crc_valid():
                        continue
                    for r in b.records():
                        try:
                            d = decode_remote_log_metadata(r.value)
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
                                                                 str(x["RemoteLogSegmentState"]))}
                            segs[sid["Id"]] = entry
                            part(tip)["segments"].append(entry)
                        elif d["type"] == "RemoteLogSegmentMetadataUpdateRecord":
                            e = segs.get(x["RemoteLogSegmentId"]["Id"])
                            if e is not None:
                                e["state"] = SEGMENT_STATES.get(x["RemoteLogSegmentState"],
                                                                str(x["RemoteLogSegmentState"]))
                        elif d["type"] == "RemotePartitionDeleteMetadataRecord":
                            part(x["TopicIdPartition"])["deleteState"] = PARTITION_STATES.get(
                                x["RemotePartitionDeleteState"], str(x["RemotePartitionDeleteState"]))
    for p in parts.values():
        p["segments"].sort(key=lambda e: (e["startOffset"], e["endOffset"]))
    return parts
