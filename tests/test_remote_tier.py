"""The remote tier reader (issue 55 items 1 and 6): Aiven's tiered-storage plugin layout and the raw
layout, read from a dir, ``file://`` and ``s3://``; each remote segment a Segment every reader walks."""
import os

import pytest

from kafkaforensics.errors import KafkaFormatError
from kafkaforensics.log.remote import RemoteTier, RemoteTierError
from kafkaforensics.log.segment import LOG, Segment, iter_batches
from tests.corruption import make_partition
from tests.remote_fixtures import rsa_key, upload, upload_raw


@pytest.fixture(scope="module")
def part(tmp_path_factory):
    p = str(tmp_path_factory.mktemp("tier") / "events-0")
    make_partition(p, seed=7, n=80)
    return p


def _logs(part_dir):
    return sorted(os.path.join(part_dir, f) for f in os.listdir(part_dir) if f.endswith(LOG))


def _records(seg: Segment):
    return [(b.position, r.offset, r.key, r.value) for b in seg.batches() for r in b.records()]


def _local_records(path):
    return [(b.position, r.offset, r.key, r.value) for b in iter_batches(path) for r in b.records()]


def _same_as_local(tier, logs, topic="events", partition=0):
    segs = tier.segments(topic, partition)
    assert [s.base_offset for s in segs] == [Segment.of_file(p).base_offset for p in logs]
    for rs, path in zip(segs, logs):
        seg, local = rs.segment(), Segment.of_file(path)
        assert _records(seg) == _local_records(path)
        assert seg.size == os.path.getsize(path)
        assert seg.offset_index() == local.offset_index() and seg.time_index() == local.time_index()
        assert seg.read_next_offset() == local.read_next_offset()
        with open(path, "rb") as f:
            f.seek(100)
            assert seg.read_at(100, 2500) == f.read(2500)   # a range across chunks


@pytest.mark.parametrize("transform", ["plain", "zstd", "encrypted"])
@pytest.mark.parametrize("scheme", ["dir", "file"])
def test_plugin_layout_reads_back_the_segments(part, tmp_path, transform, scheme):
    logs = _logs(part)
    assert len(logs) >= 3
    key, pem = rsa_key(tmp_path)
    bucket = str(tmp_path / "bucket")
    up = upload(logs, bucket, transform, prefix="tiered/", public_key=key.public_key())
    tier = RemoteTier.open(bucket if scheme == "dir" else "file://" + bucket, key_files={"key1": pem})
    assert tier.layout == "aiven" and tier.partitions() == [("events", 0)]
    assert tier.topic_id("events") == up[0]["topic_id"]
    segs = tier.segments("events", 0)
    assert [s.segment_id for s in segs] == [u["segment_id"] for u in up]
    assert segs[0].key == up[0]["keys"]["log"] and segs[0].manifest["compression"] == (transform == "zstd")
    assert len(tier.objects("events", 0)) == 3 * len(logs)
    _same_as_local(tier, logs)


def test_raw_layout_reads_back_the_segments(part, tmp_path):
    logs = _logs(part)
    for style in ("slash", "dash"):
        bucket = str(tmp_path / style)
        upload_raw(logs[:-1], bucket, style=style)
        tier = RemoteTier.open("file://" + bucket)
        assert tier.layout == "raw" and tier.partitions() == [("events", 0)]
        assert tier.watermark("events", 0) == Segment.of_file(logs[-1]).base_offset
        assert tier.topic_id("events") is None and tier.segments("events", 0)[0].manifest is None
        _same_as_local(tier, logs[:-1])


def test_missing_tier_is_one_line(tmp_path):
    for uri in (str(tmp_path / "nope"), "file://" + str(tmp_path / "nope"), "ftp://x/y"):
        with pytest.raises(RemoteTierError) as e:
            RemoteTier.open(uri)
        assert "\n" not in str(e.value) and (uri in str(e.value) or "unsupported" in str(e.value))
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "readme.txt").write_text("nothing")
    with pytest.raises(RemoteTierError, match="no segment objects"):
        RemoteTier.open(str(tmp_path / "empty"))


def test_wrong_key_is_a_located_error(part, tmp_path):
    key, _pem = rsa_key(tmp_path, "key1")
    _other, other_pem = rsa_key(tmp_path / "..", "other")
    bucket = str(tmp_path / "bucket")
    upload(_logs(part)[:1], bucket, "encrypted", public_key=key.public_key())
    tier = RemoteTier.open(bucket, key_files={"key1": other_pem})
    with pytest.raises(KafkaFormatError) as e:
        tier.segments("events", 0)[0].segment()
    assert e.value.kind == "remote-key" and e.value.problem.file.endswith(".rsm-manifest")
    with pytest.raises(RemoteTierError, match="key file"):
        RemoteTier.open(bucket, key_files={"key1": str(tmp_path / "missing.pem")})


def test_readme_lists_the_remote_modules():
    from tests.test_layout import assert_readme_row_lists
    assert_readme_row_lists("kafkaforensics/log/remote")
