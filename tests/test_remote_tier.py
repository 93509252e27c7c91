"""The remote tier reader (issue 55 items 1 and 6): Aiven's tiered-storage plugin layout and the raw
layout, read from a dir, ``file://`` and ``s3://``; each remote segment a Segment every reader walks."""
import base64
import json
import os
import struct

import pytest

from kafkaforensics.errors import KafkaFormatError
from kafkaforensics.log.remote import RemoteTier, RemoteTierError, aiven
from kafkaforensics.log.segment import LOG, Segment, iter_batches
from tests.corruption import make_partition
from tests.remote_fixtures import moto_s3, rsa_key, upload, upload_raw


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


# -- the plugin's own test vectors (tests/fixtures/aiven-tiered-storage/NOTICE) -----------------------
PLUGIN = os.path.join(os.path.dirname(__file__), "fixtures", "aiven-tiered-storage")


def _vectors():
    with open(os.path.join(PLUGIN, "vectors.json")) as f:
        return json.load(f)


def test_plugin_chunk_sizes_codec_vectors():
    v = _vectors()["chunk_sizes_codec"]
    for values in v["round_trip"]:
        assert aiven.decode_chunk_sizes(aiven.encode_chunk_sizes(values)) == values
    for case in v["multiple_values"]:
        values = list(range(*case["range"])) if "range" in case else case["values"]
        values = values[::-1] if case.get("reversed") else values
        encoded = aiven.encode_chunk_sizes(values)
        assert len(encoded) == 4 + 4 + 1 + (len(values) - 1) * case["bytes_per_value"] + 4
        assert struct.unpack_from(">i", encoded)[0] == len(values) and encoded[8] == case["bytes_per_value"]
        assert aiven.decode_chunk_sizes(encoded) == values
    for values in v["negative"]:
        with pytest.raises(ValueError, match="Values cannot be negative"):
            aiven.encode_chunk_sizes(values)


def test_plugin_chunk_index_vectors():
    v = _vectors()["chunk_index"]
    packed = base64.b64decode(v["encoded_chunks"])   # zstd-jni's frame of the plugin's codec bytes
    assert aiven.decode_chunk_sizes(aiven._zstd_decompress(packed)) == v["encoded_chunks_values"]
    for kind in ("fixed", "variable"):
        index = aiven.parse_chunk_index(v[kind])
        assert [list(c) for c in index.chunks] == v[f"{kind}_chunks"]
        assert aiven.chunk_index_json(index, variable=kind == "variable") == v[kind]   # our writer writes it back
    fixed = aiven.parse_chunk_index(v["fixed"])
    assert [c.id for c in fixed.chunks_for_range(99, 201)] == [0, 1, 2] and fixed.chunks_for_range(250, 300) == []


def test_plugin_object_key_vectors():
    v = _vectors()["object_keys"]
    for key, suffix in zip(v["keys"], ("log", "indexes", "rsm-manifest")):
        k = aiven.parse_key(key)
        assert (k.prefix, k.topic, k.topic_id, k.partition, k.base_offset, k.segment_id, k.suffix) == (
            v["prefix"], v["topic"], v["topic_id"], v["partition"], v["base_offset"], v["segment_id"], suffix)
        assert aiven.object_key(v["prefix"], v["topic"], v["topic_id"], v["partition"], v["base_offset"],
                                v["segment_id"], suffix) == key
    assert aiven.parse_key(v["integration_test_key"]).base_offset == 23
    assert aiven.parse_key("prefix/topic-AAAAAAAAAAAAAAAAAAAAAQ/7/1234-AAAAAAAAAAAAAAAAAAAAAA.log") is None


def test_plugin_manifest_vectors():
    for name in ("manifest-without-encryption.json", "manifest-without-txn-index.json", "manifest-cache-test.json"):
        with open(os.path.join(PLUGIN, name), "rb") as f:
            m = aiven.parse_manifest(f.read())
        assert m.chunk_index.chunks[-1] == (9, 900, 100, 990, 110) and not m.compression and m.aad is None
        expected = {"offset": (0, 1), "time": (1, 1), "producer-snapshot": (2, 1), "leader-epoch": (3, 1)}
        if name != "manifest-without-txn-index.json":
            expected["transaction"] = (4, 1)
        assert m.indexes == expected
    with open(os.path.join(PLUGIN, "manifest-encryption-without-data-key.json"), "rb") as f:
        with pytest.raises(KafkaFormatError, match="dataKey"):   # the plugin requires it (required = true)
            aiven.parse_manifest(f.read())


# -- s3:// (moto) ----------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def s3():
    with moto_s3(("tier",)) as endpoint:
        yield endpoint


@pytest.mark.parametrize("transform", ["plain", "zstd", "encrypted"])
def test_plugin_layout_in_a_bucket(part, tmp_path, s3, transform):
    key, pem = rsa_key(tmp_path)
    logs = _logs(part)
    upload(logs, f"s3://tier/{transform}", transform, public_key=key.public_key())
    tier = RemoteTier.open(f"s3://tier/{transform}", key_files={"key1": pem})
    assert tier.layout == "aiven" and tier.segments("events", 0)[0].key.startswith(f"events-")
    assert tier.segments("events", 0)[0].segment().log.startswith(f"s3://tier/{transform}/events-")
    _same_as_local(tier, logs)


def test_raw_layout_in_a_bucket(part, s3):
    logs = _logs(part)
    upload_raw(logs, "s3://tier/raw")
    tier = RemoteTier.open("s3://tier/raw")
    assert tier.layout == "raw"
    _same_as_local(tier, logs)


def test_missing_bucket_or_prefix_is_one_line(s3):
    with pytest.raises(RemoteTierError, match="no such bucket: nobucket"):
        RemoteTier.open("s3://nobucket/x")
    with pytest.raises(RemoteTierError, match="bucket tier has no prefix nothing-here"):
        RemoteTier.open("s3://tier/nothing-here")
