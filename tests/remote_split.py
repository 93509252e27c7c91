"""A partition split across a local log dir and a remote tier, as a tiered broker leaves it: its older
segments uploaded as Aiven's plugin uploads them (``tests/remote_fixtures.py``: plain, zstd or
encrypted) and deleted from the partition dir (local retention), its newer ones still local."""
from __future__ import annotations

import os
from dataclasses import dataclass

from kafkaforensics.log.segment import LOG, iter_batches, offset_from_name
from tests.corruption import make_partition
from tests.remote_fixtures import rsa_key, upload

#: segments of each partition left local (the rest are uploaded and deleted)
LOCAL_SEGMENTS = 2


@dataclass
class Split:
    """A log dir (``logs``) whose partitions' older segments live in the tier ``tier`` (a dir or
    ``s3://`` URI), with the key file an encrypted tier needs (``key_arg``: ``key1=PEM``) and each
    partition's records as written ((offset, key, value) by (topic, partition)) and its local log start."""
    logs: str
    tier: str
    key_arg: str
    records: dict
    local_start: dict
    #: what read_committed reads ((offset, key, value) by partition): the writer's transactions all abort
    committed: dict


def _records(part_dir: str, committed: bool = False) -> list:
    logs = sorted(f for f in os.listdir(part_dir) if f.endswith(LOG))
    return [(r.offset, r.key, r.value) for f in logs for b in iter_batches(os.path.join(part_dir, f))
            if not b.is_control and not (committed and b.is_transactional) for r in b.records()]


def make_split(root: str, tier: str, transform: str, partitions=((("events", 0), 7), (("events", 1), 8))) -> Split:
    """``root/logs`` with each of ``partitions`` ((topic, partition), seed) written, all but its last
    :data:`LOCAL_SEGMENTS` segments uploaded to ``tier`` with ``transform`` and removed locally."""
    logs = os.path.join(root, "logs")
    key, pem = rsa_key(root)
    records, local_start, committed = {}, {}, {}
    for (topic, partition), seed in partitions:
        d = os.path.join(logs, f"{topic}-{partition}")
        make_partition(d, seed=seed, n=80)
        records[(topic, partition)] = _records(d)
        committed[(topic, partition)] = _records(d, committed=True)
        segs = sorted(os.path.join(d, f) for f in os.listdir(d) if f.endswith(LOG))
        assert len(segs) > LOCAL_SEGMENTS + 1
        upload(segs[:-LOCAL_SEGMENTS], tier, transform, prefix="tiered/", public_key=key.public_key())
        local_start[(topic, partition)] = offset_from_name(segs[-LOCAL_SEGMENTS])
        for path in segs[:-LOCAL_SEGMENTS]:  # local retention: the segment and its family go
            stem = path[:-len(LOG)]
            for f in os.listdir(d):
                if os.path.join(d, f).startswith(stem):
                    os.unlink(os.path.join(d, f))
    return Split(logs, tier, f"key1={pem}", records, local_start, committed)
