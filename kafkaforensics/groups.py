"""``kfx groups``: committed offsets reconstructed from __consumer_offsets segments, with lag.

Records are replayed in offset order per __consumer_offsets partition; the latest commit of a
(group, topic, partition) wins and a tombstone (null value) removes it, as the group coordinator's
loading does.  Lag is measured against the log end offset of the matching ``<topic>-<partition>``
directory in the same log dir, when there is one.
"""
from __future__ import annotations

import os

from .errors import KafkaFormatError
from .internal_topics import decode_offsets
from .partition import find_partitions
from .segment import BatchScanner, open_buffer


def _log_end_offset(pd) -> int | None:
    leo = None
    for seg in pd.segments:
        with open_buffer(seg.log) as buf:
            for b in BatchScanner(buf, file=seg.log, base_offset=seg.base_offset):
                leo = b.last_offset + 1
        leo = seg.base_offset if leo is None else leo
    return leo


def committed_offsets(log_dir: str) -> list[dict]:
    parts = find_partitions(log_dir)
    latest: dict[tuple, dict] = {}
    for pd in parts:
        if pd.topic != "__consumer_offsets" or pd.state != "live":
            continue
        for seg in pd.segments:
            with open_buffer(seg.log) as buf:
                for b in BatchScanner(buf, file=seg.log, base_offset=seg.base_offset):
                    if b.is_control or not b.crc_valid():
                        continue
                    for r in b.records():
                        try:
                            k, v = decode_offsets(r.key, r.value)
                        except KafkaFormatError:
                            continue
                        if k.get("kind") != "offset_commit":
                            continue
                        d = k["data"]
                        key = (d["group"], d["topic"], d["partition"])
                        if v is None:
                            latest.pop(key, None)
                        else:
                            latest[key] = {"offset": v["data"]["offset"], "metadata": v["data"]["metadata"],
                                           "commitTimestamp": v["data"]["commitTimestamp"],
                                           "leaderEpoch": v["data"]["leaderEpoch"], "recordOffset": r.offset}
    leos = {(pd.topic, pd.partition): _log_end_offset(pd) for pd in parts
            if pd.topic != "__consumer_offsets" and pd.state == "live"}  # a -delete copy never stands in
    rows = []
    for (group, topic, part), c in sorted(latest.items()):
        leo = leos.get((topic, part))
        rows.append({"group": group, "topic": topic, "partition": part, "offset": c["offset"],
                     "metadata": c["metadata"], "commitTimestamp": c["commitTimestamp"],
                     "leaderEpoch": c["leaderEpoch"], "logEndOffset": leo,
                     "lag": None if leo is None else max(0, leo - c["offset"])})
    return rows
