"""The remote tier reader (issue 55 items 1 and 6): Aiven's tiered-storage plugin layout and the raw
layout, read from a dir, ``file://`` and ``s3://``; each remote segment a Segment every reader walks."""
import base64
import json
import os
import pickle
import shutil
import struct

import pytest
import zstandard
from cryptography.hazmat.primitives import serialization

from kafkaforensics.errors import KafkaFormatError
from kafkaforensics.log.remote import RemoteTier, RemoteTierError, aiven, keys, source
from kafkaforensics.log.remote.store import Store
from kafkaforensics.log.segment import LOG, Segment, iter_batches
from tests.corruption import make_partition
from kafkaforensics.log.partition import Partition
from kafkaforensics.log.tiered import remote_segments
from tests.realdirs import tarballs, unpack
from tests.remote_fixtures import moto_s3, rsa_key, split_partition, upload, upload_raw, write_remote_log_metadata


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
    assert aiven.decode_chunk_sizes(aiven._zstd_decompress(packed, 100)) == v["encoded_chunks_values"]
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


# -- kfx dump --remote: one partition over both tiers (issue 55 item 2) ----------------------------------
def _tiered(part, tmp_path, transform, bucket=None):
    """(log dir, remote .log files, bucket, PEM) of the partition split over a log dir and a tier: its
    first two segments in the tier only."""
    key, pem = rsa_key(tmp_path)
    bucket = bucket or str(tmp_path / "bucket")
    split_partition(part, tmp_path / "logdir", 2, bucket, transform, public_key=key.public_key())
    return str(tmp_path / "logdir"), _logs(part)[:2], bucket, pem


def _dumped_records(lines):
    """(tier, offset, key, value) of a JSON dump's records, each under its file line's tier."""
    out, tier = [], None
    for line in lines:
        obj = json.loads(line)
        if "file" in obj:
            tier = obj.get("tier")
        for r in obj.get("records", []):
            out.append((tier, r["offset"], r.get("key"), r.get("value")))
    return out


def _original(part):
    return [(r.offset, r.key, r.value) for p in _logs(part) for b in iter_batches(p) for r in b.records()]


@pytest.mark.parametrize("transform", ["plain", "zstd", "encrypted"])
@pytest.mark.parametrize("where", ["dir", "s3"])
def test_dump_remote_reads_the_partition_over_both_tiers(kfx, part, tmp_path, request, transform, where):
    """The partition split over a log dir and a tier (a dir, a moto bucket) in each transform: dump
    --remote reads it back record for record, each record under its tier."""
    bucket = f"s3://tier/dump-{transform}" if where == "s3" else None
    if bucket:
        request.getfixturevalue("s3")
    log_dir, remote_logs, bucket, pem = _tiered(part, tmp_path, transform, bucket)
    r = kfx("dump", log_dir, "--remote", bucket, "--key-file", f"key1={pem}", "--deep", "--print-data",
            "--format", "json")
    assert r.exit_code == 0, r.output
    got = _dumped_records(r.stdout.splitlines())
    want = _original(part)
    b64 = lambda x: None if x is None else base64.b64encode(x).decode()  # noqa: E731
    assert [(o, b64(k), b64(v)) for o, k, v in want] == [g[1:] for g in got] and len(want) > 50
    n_remote = sum(1 for p in remote_logs for b in iter_batches(p) for _ in b.records())
    assert {g[0] for g in got[:n_remote]} == {"remote"} and {g[0] for g in got[n_remote:]} == {"local"}
    text = kfx("dump", "--remote", bucket, "--key-file", f"key1={pem}")   # the tier alone
    assert text.exit_code == 0 and text.stdout.count("(remote tier)") == 2 and "Log starting offset: 0" in text.stdout


def test_dump_remote_usage_errors(kfx, part, tmp_path):
    key, pem = rsa_key(tmp_path)
    bucket = str(tmp_path / "bucket")
    upload(_logs(part)[:1], bucket, "encrypted", public_key=key.public_key())
    for args, says in ((["--remote", str(tmp_path / "nope")], "no such directory"),
                       (["--remote", bucket, "--key-file", f"key1={tmp_path / 'missing.pem'}"], "missing.pem"),
                       (["--remote", bucket, "--key-file", "key1"], "expected ID=PEM"),
                       ([], "give a PATH")):
        r = kfx("dump", *args)
        assert r.exit_code == 2 and says in r.output and "Traceback" not in r.output, (args, r.output)
        assert len(r.output.strip().splitlines()) == 1


# -- kfx verify --remote ------------------------------------------------------------------------------
def _verify_json(kfx, *args):
    r = kfx("verify", *args, "--json")
    assert "Traceback" not in r.output
    return r.exit_code, json.loads(r.stdout)


@pytest.mark.parametrize("transform", ["plain", "zstd", "encrypted"])
@pytest.mark.parametrize("where", ["dir", "s3"])
def test_verify_remote_is_clean_over_both_tiers(kfx, part, tmp_path, request, transform, where):
    bucket = f"s3://tier/verify-{transform}" if where == "s3" else None
    if bucket:
        request.getfixturevalue("s3")
    log_dir, remote_logs, bucket, pem = _tiered(part, tmp_path, transform, bucket)
    code, rep = _verify_json(kfx, log_dir, "--remote", bucket, "--key-file", f"key1={pem}")
    assert code == 0 and rep["ok"], rep["problems"]
    rows = {(p["partition"], p["tier"]): p for p in rep["partitions"]}
    remote, local = rows[("events-0", "remote")], rows[("events-0", "local")]
    assert remote["segments"] == 2 and remote["logStartOffset"] == 0 and remote["logEndOffset"] == local["logStartOffset"]
    assert remote["batches"] == sum(1 for p in remote_logs for _ in iter_batches(p))
    text = kfx("verify", "--remote", bucket, "--key-file", f"key1={pem}")   # the tier alone, as a table
    assert text.exit_code == 0 and "events-0 (remote)" in text.stdout and "OK" in text.stdout


def _damaged_tier(tmp_path, part, transform="zstd"):
    key, pem = rsa_key(tmp_path)
    bucket = str(tmp_path / "bucket")
    up = upload(_logs(part)[:3], bucket, transform, public_key=key.public_key())
    return bucket, pem, up


def test_verify_remote_damaged_manifest_is_one_located_problem(kfx, part, tmp_path):
    bucket, pem, up = _damaged_tier(tmp_path, part)
    with open(os.path.join(bucket, up[1]["keys"]["rsm-manifest"]), "r+b") as f:
        f.write(b"{not json")
    code, rep = _verify_json(kfx, "--remote", bucket, "--key-file", f"key1={pem}")
    assert code == 1 and len(rep["problems"]) == 1, rep["problems"]
    p = rep["problems"][0]
    assert p["kind"] == "remote-manifest" and p["file"].endswith(up[1]["keys"]["rsm-manifest"])


def test_verify_remote_damaged_chunk_is_one_located_problem(kfx, part, tmp_path):
    bucket, pem, up = _damaged_tier(tmp_path, part)
    manifest = json.load(open(os.path.join(bucket, up[0]["keys"]["rsm-manifest"])))
    index = aiven.parse_chunk_index(manifest["chunkIndex"])
    chunk = index.chunks[1]
    with open(os.path.join(bucket, up[0]["keys"]["log"]), "r+b") as f:
        f.seek(chunk.transformed_position + 5)
        f.write(b"\xff\xff\xff\xff")
    code, rep = _verify_json(kfx, "--remote", bucket, "--key-file", f"key1={pem}")
    assert code == 1 and len(rep["problems"]) == 1, rep["problems"]
    p = rep["problems"][0]
    assert p["kind"] == "remote-chunk" and p["file"].endswith(up[0]["keys"]["log"])
    assert p["position"] == chunk.transformed_position and "chunk 1" in p["detail"]
    assert p["remedy"].startswith("restore the .log object")


def test_verify_remote_wrong_key_is_one_problem(kfx, part, tmp_path):
    bucket, _pem, up = _damaged_tier(tmp_path, part, "encrypted")
    _other, other_pem = rsa_key(tmp_path / "..", "other-key")
    code, rep = _verify_json(kfx, "--remote", bucket, "--key-file", f"key1={other_pem}")
    assert code == 1 and len(rep["problems"]) == 1, rep["problems"]
    p = rep["problems"][0]
    assert p["kind"] == "remote-key" and "(3 segments)" in p["detail"] and p["file"].endswith(".rsm-manifest")
    assert "--key-file ID=PEM" in p["remedy"]
    code, rep = _verify_json(kfx, "--remote", bucket)   # no key file at all
    assert code == 1 and len(rep["problems"]) == 1 and "no --key-file" in rep["problems"][0]["detail"]


def test_verify_remote_usage_errors(kfx, tmp_path):
    for args, says in ((["--remote", "s3x://b/p"], "unsupported scheme"),
                       (["--remote", str(tmp_path / "nope")], "no such directory"),
                       (["--remote", str(tmp_path), "--key-file", "k=" + str(tmp_path / "none.pem")], "none.pem"),
                       (["--key-file", "k=x.pem", str(tmp_path)], "--key-file needs --remote")):
        r = kfx("verify", *args)
        assert r.exit_code == 2 and says in r.output and len(r.output.strip().splitlines()) == 1, (args, r.output)


def test_java_jce_wrapped_key_and_chunk(tmp_path):
    """A data key wrapped and a chunk encrypted by Java's JCE with the plugin's parameters open here."""
    with open(os.path.join(PLUGIN, "jce-vectors.json")) as f:
        v = json.load(f)
    pem = tmp_path / "k1.pem"
    der = serialization.load_der_private_key(base64.b64decode(v["privateKeyPkcs8"]), None)
    pem.write_bytes(der.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                      serialization.NoEncryption()))
    key_id, _, wrapped = v["dataKey"].partition(":")
    data_key = keys.unwrap(keys.load_keys({key_id: str(pem)}), key_id, base64.b64decode(wrapped))
    assert data_key == base64.b64decode(v["plainDataKey"])
    assert aiven.decrypt(base64.b64decode(v["chunk"]), data_key, base64.b64decode(v["aad"])) == base64.b64decode(v["plain"])
    with pytest.raises(KafkaFormatError, match="authentication failed"):
        aiven.decrypt(base64.b64decode(v["chunk"]), data_key, b"another aad")


def test_a_walk_fetches_only_the_chunks_it_reaches(part, tmp_path, monkeypatch):
    """Memory and requests bounded by the chunks a read needs: a walk that stops early fetched only the
    chunks holding its batches; a whole walk fetched each chunk once."""
    monkeypatch.setattr(source, "READ_AHEAD", 0)
    bucket = str(tmp_path / "bucket")
    up = upload(_logs(part)[:1], bucket, "zstd", chunk_size=500)
    fetched = []
    real = Store.read

    def counting(self, key, start=0, end=None):
        data = real(self, key, start, end)
        if key.endswith(".log"):
            fetched.append(len(data))
        return data
    monkeypatch.setattr(Store, "read", counting)
    rs = RemoteTier.open(bucket).segments("events", 0)[0]
    seg = rs.segment()
    whole = os.path.getsize(os.path.join(bucket, up[0]["keys"]["log"]))
    with seg.walk() as w:
        first = [b.base_offset for b, _ in zip(w, range(2))]
    assert len(first) == 2 and 0 < sum(fetched) < whole / 2, (fetched, whole)
    fetched.clear()
    local = _local_records(_logs(part)[0])
    assert _records(seg) == local and sum(fetched) == whole


def test_the_writer_records_the_uploads_in_remote_log_metadata(part, tmp_path):
    """The test writer's ``__remote_log_metadata`` records replay (log/tiered.py) to the segments it
    uploaded, each in the state it was given; its manifests carry the segment's metadata as the plugin's do."""
    bucket = str(tmp_path / "bucket")
    up = upload(_logs(part)[:3], bucket, "plain")
    write_remote_log_metadata(tmp_path / "logdir", up, {up[2]["segment_id"]: None})
    replayed = remote_segments(str(tmp_path / "logdir"))[("events", 0)]["segments"]
    assert [(s["segmentId"], s["startOffset"], s["endOffset"], s["state"]) for s in replayed] == [
        (u["segment_id"], u["base_offset"], u["end_offset"], "COPY_SEGMENT_FINISHED" if i < 2 else "COPY_SEGMENT_STARTED")
        for i, u in enumerate(up)]
    seg = RemoteTier.open(bucket).segments("events", 0)[1]
    meta = seg.manifest["remoteLogSegmentMetadata"]
    assert meta["startOffset"] == seg.base_offset and meta["endOffset"] == seg.segment().read_next_offset() - 1
    assert meta["remoteLogSegmentId"]["id"] == seg.segment_id


def test_verify_remote_damaged_index_object_or_missing_manifest_is_one_located_problem(kfx, part, tmp_path):
    bucket, pem, up = _damaged_tier(tmp_path, part, "encrypted")
    manifest = json.load(open(os.path.join(bucket, up[0]["keys"]["rsm-manifest"])))
    at = manifest["segmentIndexes"]["timestamp"]["position"]
    with open(os.path.join(bucket, up[0]["keys"]["indexes"]), "r+b") as f:
        f.seek(at + 20)
        f.write(b"\x00\x01\x02")
    os.remove(os.path.join(bucket, up[2]["keys"]["rsm-manifest"]))
    code, rep = _verify_json(kfx, "--remote", bucket, "--key-file", f"key1={pem}")
    assert code == 1 and len(rep["problems"]) == 2, rep["problems"]
    index, missing = sorted(rep["problems"], key=lambda p: p["kind"])
    assert index["kind"] == "remote-index" and index["file"].endswith(up[0]["keys"]["indexes"])
    assert index["position"] == at and "time index" in index["detail"]
    assert missing["kind"] == "remote-tier" and missing["file"].endswith(up[2]["keys"]["rsm-manifest"])


def test_the_local_topic_id_picks_its_incarnation_in_the_tier(kfx, part, tmp_path):
    """A tier holding two incarnations of the topic (deleted and made again): beside a log dir, the
    partition reads the one its partition.metadata names; the tier alone shows both."""
    log_dir = tmp_path / "logdir"
    bucket = str(tmp_path / "bucket")
    up = split_partition(part, log_dir, 2, bucket, "plain")
    local_id = Partition.scan(str(log_dir / "events-0")).partition_metadata()["topicId"]
    assert up[0]["topic_id"] != local_id
    mine = upload(_logs(part)[:2], bucket, "plain", topic_id=local_id)
    tier = RemoteTier.open(bucket)
    assert tier.topic_ids("events") == sorted({local_id, up[0]["topic_id"]}) and len(tier.segments("events", 0)) == 4
    assert [s.segment_id for s in tier.segments("events", 0, local_id)] == [u["segment_id"] for u in mine]
    r = kfx("dump", str(log_dir), "--remote", bucket, "--format", "json")
    remote = [json.loads(line) for line in r.stdout.splitlines() if '"tier": "remote"' in line]
    assert r.exit_code == 0 and [x["segmentId"] for x in remote] == [u["segment_id"] for u in mine]
    code, rep = _verify_json(kfx, "--remote", bucket)
    assert [p["segments"] for p in rep["partitions"]] == [4]


def test_a_damaged_frame_or_key_is_a_problem_not_an_allocation_or_a_traceback():
    """A zstd frame claiming more than its chunk holds is refused before it is decompressed; a data key
    that is no AES-256 key is a remote-key problem."""
    bomb = zstandard.ZstdCompressor(write_content_size=True).compress(b"\0" * (10 << 20))
    plain = aiven.Manifest(aiven.ChunkIndex(1000, 1000, (len(bomb),)), {}, True, None, None, None, {})
    with pytest.raises(KafkaFormatError, match="zstd frame says 10485760 bytes, more than the 1000"):
        aiven.detransform(bomb, plain, None, 1000)
    with pytest.raises(KafkaFormatError, match="not an AES-256 key") as e:
        aiven.decrypt(b"\0" * 40, b"short", b"aad")
    assert e.value.kind == "remote-key"


def test_a_remote_segment_pickles(part, tmp_path):
    """A remote segment travels to a Spark task (pickled) and reads there as here."""
    key, pem = rsa_key(tmp_path)
    bucket = str(tmp_path / "bucket")
    upload(_logs(part)[:1], bucket, "encrypted", public_key=key.public_key())
    seg = RemoteTier.open(bucket, key_files={"key1": pem}).segments("events", 0)[0].segment()
    copy = pickle.loads(pickle.dumps(seg))
    assert _records(copy) == _records(seg) == _local_records(_logs(part)[0])
    assert copy.offset_index() == seg.offset_index()


# -- real brokers' segments (../shared/real-logdirs) through the tier -----------------------------------
REAL_PARTITIONS = (("kafka3x-zk-bitnami-gzip-cleanshutdown", "makeup-0"),
                   ("ksqldb-txn-kafka34-kraft-bitnami", "_confluent-ksql-default__command_topic-0"))


@pytest.mark.skipif(not tarballs(), reason="the real brokers' log dirs (../shared/real-logdirs) are not on this machine")
@pytest.mark.parametrize("transform", ["zstd", "encrypted"])
def test_real_segments_read_back_through_the_tier(kfx, tmp_path, transform):
    """Segments real brokers wrote (gzip batches, a ksqlDB command topic) uploaded as the plugin does
    read back record for record through the tier alone, and verify clean."""
    key, pem = rsa_key(tmp_path)
    for name, partition in REAL_PARTITIONS:
        real = unpack(name, str(tmp_path / "real"))
        local = real.path(partition)
        bucket = str(tmp_path / f"bucket-{name}")
        upload(_logs(local), bucket, transform, public_key=key.public_key())
        want = kfx("dump", local, "--deep", "--print-data", "--format", "json")
        got = kfx("dump", "--remote", bucket, "--key-file", f"key1={pem}", "--deep", "--print-data", "--format", "json")
        assert got.exit_code == want.exit_code == 0, got.output
        records = lambda out: [r for line in out.splitlines() for r in json.loads(line).get("records", [])]  # noqa: E731
        assert records(got.stdout) == records(want.stdout) and records(want.stdout), name
        code, rep = _verify_json(kfx, "--remote", bucket, "--key-file", f"key1={pem}")
        assert code == 0 and rep["ok"], rep["problems"]


def test_raw_layout_of_pinterests_uploader(part, tmp_path):
    """pinterest/tiered-storage's uploader: ``<base prefix>/[<hash>/]<cluster>/<topic>-<partition>/`` holding
    the segment files, ``offset.wm`` (its first line the committed offset) and a ``_metadata`` object."""
    root = tmp_path / "bucket"
    where = root / "base-prefix" / "10110" / "test-cluster"
    logs = _logs(part)
    upload_raw(logs[:2], str(where), style="dash")
    (where / "events-0" / "_metadata").write_text('{"topicPartition": "events-0"}')
    tier = RemoteTier.open(str(root))
    assert tier.layout == "raw" and tier.partitions() == [("events", 0)]
    assert tier.watermark("events", 0) == Segment.of_file(logs[2]).base_offset
    _same_as_local(tier, logs[:2])


@pytest.mark.parametrize("transform", ["plain", "encrypted"])
def test_leader_epochs_and_producer_snapshot_from_the_indexes_object(part, tmp_path, transform):
    """The leader-epoch index and the producer snapshot the plugin keeps in ``.indexes``: the epochs
    the broker's cache held below the segment's end, and the snapshot at the next segment's base."""
    key, pem = rsa_key(tmp_path)
    bucket = str(tmp_path / "bucket")
    logs = _logs(part)
    upload(logs[:3], bucket, transform, public_key=key.public_key())
    epochs = [tuple(map(int, line.split())) for line in open(os.path.join(part, "leader-epoch-checkpoint")).read().splitlines()[2:]]
    segs = RemoteTier.open(bucket, key_files={"key1": pem}).segments("events", 0)
    for rs, nxt in zip(segs, logs[1:4]):
        end = Segment.of_file(nxt).base_offset
        assert rs.leader_epochs() == [e for e in epochs if e[1] < end] and rs.leader_epochs()
        with open(os.path.join(part, f"{end:020d}.snapshot"), "rb") as f:
            assert rs.producer_snapshot() == f.read()
        assert rs.uri == os.path.join(bucket, rs.key)


def test_a_chunked_walk_judges_a_torn_tail_as_a_local_walk(part, tmp_path, monkeypatch):
    """A segment whose last batch runs past its end (a torn copy) walks through the tier, reading
    chunk by chunk, to the same stop and valid bytes as the local file's walk."""
    monkeypatch.setattr(source, "READ_AHEAD", 0)
    torn = tmp_path / "events-0"
    torn.mkdir()
    log = _logs(part)[1]
    with open(log, "rb") as f:
        data = f.read()
    (torn / os.path.basename(log)).write_bytes(data[:-30])
    bucket = str(tmp_path / "bucket")
    upload([str(torn / os.path.basename(log))], bucket, "zstd", chunk_size=300)
    seg, local = RemoteTier.open(bucket).segments("events", 0)[0].segment(), Segment.of_file(str(torn / os.path.basename(log)))
    with seg.walk() as w, local.walk() as lw:
        assert [b.position for b in w] == [b.position for b in lw]
        assert (w.stop.kind, w.stop.position, w.valid_bytes) == (lw.stop.kind, lw.stop.position, lw.valid_bytes)


def test_segment_read_of_a_remote_segment(part, tmp_path):
    """LogSegment.read over a remote segment: the same region as the local segment's, its bytes read
    through the chunks (a fetch from the tier)."""
    logs = _logs(part)
    bucket = str(tmp_path / "bucket")
    upload(logs[:1], bucket, "zstd")
    seg, local = RemoteTier.open(bucket).segments("events", 0)[0].segment(), Segment.of_file(logs[0])
    for offset in (0, 5, local.read_next_offset() - 1):
        got, want = seg.read(offset, 3000), local.read(offset, 3000)
        assert (got.offset, got.position, got.records.size) == (want.offset, want.position, want.records.size)
        assert got.records.read() == want.records.read() and len(got.records.read()) > 0
    assert seg.read(local.read_next_offset(), 100) is None
    with pytest.raises(OSError, match="not a local file"):
        seg.read(0, 100).records.open()


def test_index_sanity_and_an_empty_index_of_a_remote_segment(kfx, part, tmp_path):
    """Kafka's index sanity check (Segment.index_problem) reads a remote segment's indexes through the
    tier as a local one's; an empty offset index uploaded (a segment smaller than an index interval)
    is an empty index, not a missing one."""
    logs = _logs(part)
    bucket = str(tmp_path / "bucket")
    upload(logs[:2], bucket, "encrypted", public_key=rsa_key(tmp_path)[0].public_key())
    small = tmp_path / "events-0"
    shutil.copytree(part, small)
    (small / os.path.basename(logs[0]).replace(".log", ".index")).write_bytes(b"")
    (small / os.path.basename(logs[1]).replace(".log", ".timeindex")).write_bytes(b"\0" * 13)
    key, pem = rsa_key(tmp_path / "..", "key9")
    upload(_logs(str(small))[:2], str(tmp_path / "small"), "encrypted", public_key=key.public_key(), key_id="key9")
    plain = RemoteTier.open(bucket, key_files={"key1": str(tmp_path / "key1.pem")}).segments("events", 0)
    assert [s.segment().index_problem() for s in plain] == [Segment.of_file(p).index_problem() for p in logs[:2]] == [None, None]
    first, second = RemoteTier.open(str(tmp_path / "small"), key_files={"key9": pem}).segments("events", 0)
    assert first.segment().existing(".index") and first.segment().offset_index() == [] and first.segment().index_problem() is None
    assert second.segment().index_problem() == Segment.of_file(str(small / os.path.basename(logs[1]))).index_problem()
    assert "is not a multiple of 12" in second.segment().index_problem()
    code, rep = _verify_json(kfx, "--remote", str(tmp_path / "small"), "--key-file", f"key9={pem}")
    assert not [w for w in rep["warnings"] if w["kind"] == "missing-index"]
