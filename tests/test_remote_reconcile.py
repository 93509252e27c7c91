"""One partition over both tiers (issue 55 item 2: analyze, explain and groups with ``--remote``) and
the tiers reconciled (item 3): a log dir whose older segments were tiered to a bucket in the plugin's
layout (tests/remote_fixtures.py) with their ``__remote_log_metadata`` records, read as the unsplit
log dir reads; each reconciliation finding planted and found."""
import json
import os
import shutil

import pytest

from kafkaforensics.inspect.explain import explain
from kafkaforensics.inspect.groups import committed_offsets, explain_lag, group_members, replay_offsets
from kafkaforensics.log.partition import Partition
from kafkaforensics.log.remote import RemoteTier
from kafkaforensics.log.segment import LOG, file_name
from kafkaforensics.log.tier_reconcile import reconcile
from kafkaforensics.log.unified_log import LOCAL, REMOTE, unify
from kafkaforensics.log.writer import write_partition
from kafkaforensics.records.batch import Record
from kafkaforensics.records.builder import build_v2
from kafkaforensics.records.internal_topics import encode_offset_commit
from tests import corruption
from tests.realdirs import tarballs, unpack
from tests.corruption import make_partition
from tests.remote_fixtures import kafka_uuid, moto_s3, rsa_key, upload, upload_raw, write_remote_log_metadata

T0 = 1_700_000_000_000
DELETE_FINISHED = 3


def _logs(part):
    return sorted(os.path.join(part, f) for f in os.listdir(part) if f.endswith(LOG))


def _topic_id(part):
    return Partition.scan(part).partition_metadata()["topicId"]


def write_metadata(log_dir, uploads, states=None):
    """The log dir's __remote_log_metadata-0 (replaced) holding ``uploads``' records, each segment's
    state ``states`` gives (segment id -> state; default COPY_SEGMENT_FINISHED; None: a failed copy)."""
    shutil.rmtree(os.path.join(log_dir, "__remote_log_metadata-0"), ignore_errors=True)
    write_remote_log_metadata(log_dir, uploads, states)


class Split:
    """A log dir ``full`` and its copy ``split`` whose first ``n`` segments of events-0 live in ``bucket``."""

    def __init__(self, root, n=3, transform="plain", topic_id=None, states=None, public_key=None, bucket=None):
        """``states``: {index of the uploaded segment: its last metadata state (None: a failed copy)}."""
        self.full, self.split = str(root / "full"), str(root / "split")
        self.bucket = bucket or str(root / "bucket")
        self.part = os.path.join(self.full, "events-0")
        make_partition(self.part, seed=7, n=80)
        self.spart = os.path.join(self.split, "events-0")
        shutil.copytree(self.full, self.split)
        logs = _logs(self.part)
        self.up = upload(logs[:n], self.bucket, transform, topic_id=topic_id or _topic_id(self.part),
                         public_key=public_key)
        self.states = {self.up[i]["segment_id"]: st for i, st in (states or {}).items()}
        for log in logs[:n - 1]:   # the last copied segment is still local too (the tiers overlap)
            base = os.path.basename(log)[:20]
            for f in os.listdir(self.spart):
                if f.startswith(base):
                    os.unlink(os.path.join(self.spart, f))
        write_metadata(self.split, self.up, self.states)

    def tier(self):
        return RemoteTier.open(self.bucket)

    def unified(self):
        return unify(Partition.scan(self.spart), self.tier())


@pytest.fixture
def split(tmp_path):
    return Split(tmp_path)


def _records(pd):
    return [(r.offset, r.key, r.value) for _s, b, _d in pd.batches() for r in b.records()]


# -- item 2: one partition over both tiers ---------------------------------------------------------------

def test_unified_partition_reads_the_remote_segments_below_the_local_log_start(split):
    ul = split.unified()
    tiers = list(zip(ul.tiers, [seg.base_offset for seg in ul.segments]))
    assert [t for t, _ in tiers[:2]] == [REMOTE, REMOTE] and tiers[2][0] == LOCAL
    assert ul.remote_log_start == 0 and ul.local_log_start == split.up[1]["end_offset"] + 1
    assert _records(ul.partition()) == _records(Partition.scan(split.part))


def test_a_remote_segment_past_the_local_log_start_is_read_up_to_it(tmp_path):
    """A local log whose segments have other boundaries (another leader rolled them) starting inside
    a remote segment: the remote one is read only below the local log start, then the local log."""
    s = Split(tmp_path, n=3)
    shutil.rmtree(s.spart)
    write_partition(s.spart, corruption.batches(7, 80), segment_bytes=corruption.SEGMENT_BYTES // 3,
                    index_interval_bytes=corruption.INTERVAL)
    inside = [b for b in (Partition.scan(s.spart).segments) if 28 < b.base_offset <= 53]
    assert inside, "a local segment boundary inside the second remote segment"
    for seg in Partition.scan(s.spart).segments:
        if seg.base_offset < inside[0].base_offset:
            for f in os.listdir(s.spart):
                if f.startswith(os.path.basename(seg.log)[:20]):
                    os.unlink(os.path.join(s.spart, f))
    ul = unify(Partition.scan(s.spart), s.tier())
    remote = ul.remote_reads()
    assert len(remote) == 2 and remote[-1][0].end_offset >= ul.local_log_start   # the second one runs past it
    assert remote[-1][1].size < os.path.getsize(os.path.join(s.part, file_name(28, LOG)))
    assert _records(ul.partition()) == _records(Partition.scan(s.part))


@pytest.mark.parametrize("transform", ["plain", "zstd", "encrypted"])
def test_analyze_across_the_boundary_matches_the_unsplit_log_dir(tmp_path, kfx, transform):
    key, pem = rsa_key(tmp_path)
    s = Split(tmp_path, transform=transform, public_key=key.public_key())
    full = json.loads(kfx("analyze", "--json", "--now", T0, s.part).output)
    r = kfx("analyze", "--json", "--now", T0, s.spart, "--remote", s.bucket, "--key-file", f"key1={pem}")
    got = json.loads(r.output)
    keys = ("batches", "records", "logStartOffset", "logEndOffset", "producers", "transactions",
            "lastStableOffset", "firstTimestamp", "lastTimestamp", "codecs")
    assert {k: got["partitions"][0][k] for k in keys} == {k: full["partitions"][0][k] for k in keys}
    assert got["partitions"][0]["tiers"] == {"remoteLogStartOffset": 0, "localLogStartOffset": s.up[1]["end_offset"] + 1,
                                             "remoteSegments": 2}
    kinds = lambda rep: sorted((f["kind"], f["offsetRange"][0]) for f in rep["findings"])  # noqa: E731
    assert kinds(got) == kinds(full) and r.exit_code == (1 if any(
        f["severity"] != "info" for f in full["findings"]) else 0)
    # without the tier the local part alone: fewer records
    alone = json.loads(kfx("analyze", "--json", "--now", T0, s.spart).output)
    assert alone["partitions"][0]["records"] < full["partitions"][0]["records"]


def test_explain_an_offset_in_the_remote_part(split, kfx):
    off = split.up[0]["end_offset"]   # in the first, remote-only segment
    whole = explain(split.part, offset=off, now=T0)
    local = explain(split.spart, offset=off, now=T0)
    tiered = explain(split.spart, offset=off, now=T0, remote=split.tier())
    assert local["results"][0]["fate"] != "present"
    assert tiered["results"][0]["fate"] == whole["results"][0]["fate"] == "present"
    assert tiered["logStartOffset"] == whole["logStartOffset"] == 0
    for q in ({"at": str(T0 + 5)}, {"key": "k7"}):   # ListOffsets by time and a key's records, through the boundary
        got, want = explain(split.spart, now=T0, remote=split.tier(), **q), explain(split.part, now=T0, **q)
        assert [(r["offset"], r["fate"]) for r in got["results"]] == [(r["offset"], r["fate"]) for r in want["results"]]
        assert got["results"][0]["offset"] < split.up[1]["end_offset"]   # answered from the remote tier
    r = kfx("explain", split.spart, "--offset", off, "--remote", split.bucket, "--json")
    assert r.exit_code == 0 and json.loads(r.output)["results"][0]["fate"] == "present"


def _offsets_dir(log_dir, commits_per_segment=4, segments=4):
    """A __consumer_offsets-0 of ``segments`` segments, each committing group g's offset of events-0."""
    batches, off = [], 0
    for i in range(segments * commits_per_segment):
        k, v = encode_offset_commit("g", "events", 0, 10 + i * 7, commit_ts=T0 + i)
        batches.append(build_v2([Record(off, T0 + i, k, v, [])], base_offset=off))
        off += 1
    return write_partition(os.path.join(log_dir, "__consumer_offsets-0"), batches, segment_bytes=400)


def test_groups_read_tiered_consumer_offsets_segments(tmp_path, kfx):
    s = Split(tmp_path)
    cpart = _offsets_dir(s.full)
    copy = shutil.copytree(cpart, os.path.join(s.split, "__consumer_offsets-0"))
    logs = _logs(copy)
    assert len(logs) >= 3
    up = upload(_logs(cpart)[:2], s.bucket, "plain", topic_id=_topic_id(cpart))
    for log in logs[:2]:
        base = os.path.basename(log)[:20]
        for f in os.listdir(copy):
            if f.startswith(base):
                os.unlink(os.path.join(copy, f))
    write_metadata(s.split, s.up + up)
    # the newest commits are local; a group whose last commit was tiered shows only through the tier
    whole = committed_offsets(s.full)
    assert committed_offsets(s.split, s.tier()) == whole
    assert explain_lag(s.split, "g", s.tier()) == explain_lag(s.full, "g")
    r = kfx("groups", s.split, "--remote", s.bucket, "--json")
    assert json.loads(r.output)["offsets"] == json.loads(kfx("groups", s.full, "--json").output)["offsets"]


def test_groups_see_a_commit_only_the_tier_holds(tmp_path):
    s = Split(tmp_path)
    cpart = _offsets_dir(s.full, segments=3)
    # one more group committed only in the first (tiered) segment
    k, v = encode_offset_commit("early", "events", 0, 3, commit_ts=T0)
    shutil.rmtree(cpart)
    batches = [build_v2([Record(0, T0, k, v, [])], base_offset=0)]
    for i in range(1, 12):
        k2, v2 = encode_offset_commit("g", "events", 0, 10 + i, commit_ts=T0 + i)
        batches.append(build_v2([Record(i, T0 + i, k2, v2, [])], base_offset=i))
    write_partition(cpart, batches, segment_bytes=400)
    copy = shutil.copytree(cpart, os.path.join(s.split, "__consumer_offsets-0"))
    up = upload(_logs(cpart)[:1], s.bucket, "plain", topic_id=_topic_id(cpart))
    for f in os.listdir(copy):
        if f.startswith(os.path.basename(_logs(cpart)[0])[:20]):
            os.unlink(os.path.join(copy, f))
    write_metadata(s.split, s.up + up)
    assert "early" not in {r["group"] for r in committed_offsets(s.split)}
    assert "early" in {r["group"] for r in committed_offsets(s.split, s.tier())}


# -- item 3: the tiers reconciled ------------------------------------------------------------------------

def _kinds(problems):
    return sorted(p.kind for p in problems)


def _check(s, retention_ms=-1, retention_bytes=-1, now=T0):
    return reconcile(s.unified(), retention_ms, retention_bytes, now)


def test_a_clean_split_partition_has_no_findings(split, kfx):
    assert _check(split, 7 * 86_400_000, -1) == []
    r = kfx("verify", split.split, "--remote", split.bucket)
    assert r.exit_code == 0, r.output
    got = json.loads(kfx("analyze", "--json", "--now", T0, split.split, "--remote", split.bucket).output)
    assert not [f for f in got["findings"] if f["kind"].startswith("tier")]


def test_orphan_objects_of_a_failed_copy(tmp_path, kfx):
    s = Split(tmp_path, states={2: None})   # the third copy never finished
    probs = _check(s)
    assert _kinds(probs) == ["tier-orphan-object"]
    assert s.up[2]["segment_id"] in probs[0].detail and "COPY_SEGMENT_STARTED" in probs[0].detail
    assert probs[0].file.endswith(s.up[2]["keys"]["log"]) or s.up[2]["keys"]["log"] in probs[0].detail
    r = kfx("verify", s.split, "--remote", s.bucket)
    assert r.exit_code == 1 and "tier-orphan-object" in r.output
    assert "remedy: Kafka never reads these objects" in r.output   # the reconciliation's remedy, not a damaged copy's


def test_objects_no_metadata_names_are_orphans(tmp_path):
    s = Split(tmp_path)
    write_metadata(s.split, s.up[:2])
    probs = _check(s)
    assert _kinds(probs) == ["tier-orphan-object"] and "no __remote_log_metadata record" in probs[0].detail


def test_metadata_whose_objects_are_missing(split, kfx):
    os.unlink(os.path.join(split.bucket, split.up[1]["keys"]["log"]))
    probs = _check(split)
    assert "tier-missing-object" in _kinds(probs)
    miss = next(p for p in probs if p.kind == "tier-missing-object")
    assert split.up[1]["segment_id"] in miss.detail and ".log" in miss.detail
    assert "__remote_log_metadata-0" in miss.file
    r = kfx("analyze", "--json", "--now", T0, split.split, "--remote", split.bucket)
    assert r.exit_code == 1
    f = next(f for f in json.loads(r.output)["findings"] if f["kind"] == "tier-missing-object")
    assert f["remedy"].startswith("the metadata says")


def test_gap_between_the_remote_segments_and_the_local_log_start(split):
    write_metadata(split.split, split.up[:1])   # the second copy's metadata gone: offsets in neither tier
    for k in split.up[1]["keys"].values():
        os.unlink(os.path.join(split.bucket, k))
    for k in split.up[2]["keys"].values():
        os.unlink(os.path.join(split.bucket, k))
    probs = _check(split)
    assert _kinds(probs) == ["tier-gap"]
    assert probs[0].offset == split.up[0]["end_offset"] + 1 and "neither tier" in probs[0].detail


def test_overlapping_remote_segments(split):
    other = dict(split.up[1], segment_id=kafka_uuid(), base_offset=split.up[1]["base_offset"] - 3)
    write_metadata(split.split, split.up + [other])
    assert "tier-overlap" in _kinds(_check(split))


def test_remote_segments_past_retention_still_present(split, kfx):
    now = split.up[1]["max_timestamp"] + 1000
    probs = _check(split, retention_ms=1000, now=now)
    assert _kinds(probs) == ["tier-retention-expired", "tier-retention-expired"]
    assert {p.offset for p in probs} == {0, split.up[1]["base_offset"]}
    # retention.bytes: the partition's size over the limit by the first segment's size
    total = sum(e["size"] for e in split.up) + sum(
        os.path.getsize(p) for p in _logs(split.spart) if int(os.path.basename(p)[:20]) > split.up[2]["end_offset"])
    probs = _check(split, retention_bytes=total - split.up[0]["size"])
    assert [p.offset for p in probs if p.kind == "tier-retention-expired"] == [0]
    r = kfx("analyze", "--now", now + 86_400_000 * 30, split.split, "--remote", split.bucket)
    assert r.exit_code == 1 and "tier-retention-expired" in r.output


def test_deleted_inside_retention_is_the_signature_of_kafka_20732(tmp_path):
    s = Split(tmp_path, states={0: DELETE_FINISHED})
    for k in s.up[0]["keys"].values():
        os.unlink(os.path.join(s.bucket, k))
    ul = s.unified()
    only_local = sum(seg.size for seg in ul.local.segments if seg.base_offset >= s.up[2]["end_offset"])
    limit = sum(e["size"] for e in s.up) + only_local   # exactly the partition's size: no breach
    probs = reconcile(ul, -1, limit, T0)
    assert _kinds(probs) == ["tier-deleted-in-retention"]
    assert "KAFKA-20732" in probs[0].detail and s.up[0]["segment_id"] in probs[0].detail
    # a retention.ms breach explains the deletion (and the next segment is inside it): nothing to report
    assert reconcile(ul, 1000, -1, s.up[0]["max_timestamp"] + 1000) == []
    # without a size limit nothing explains it, and it is not KAFKA-20732's
    plain = reconcile(ul, -1, -1, T0)
    assert _kinds(plain) == ["tier-deleted-in-retention"] and "KAFKA-20732" not in plain[0].detail


def test_remote_epochs_that_disagree_with_the_local_checkpoint(split, kfx):
    bad = [dict(e) for e in split.up]
    bad[1]["epochs"] = [(99, bad[1]["base_offset"])]
    write_metadata(split.split, bad)
    probs = _check(split)
    assert _kinds(probs) == ["tier-epoch-mismatch"] and "epoch 99" in probs[0].detail
    r = kfx("verify", split.split, "--remote", split.bucket)
    assert r.exit_code == 1 and "tier-epoch-mismatch" in r.output


def test_a_bucket_of_another_topic_id(tmp_path, kfx):
    s = Split(tmp_path, topic_id=kafka_uuid())
    ul = s.unified()
    assert ul.foreign_topic_id is not None and all(t == LOCAL for t in ul.tiers)
    probs = reconcile(ul, -1, -1, T0)
    assert _kinds(probs) == ["tier-topic-id-mismatch"] and _topic_id(s.spart) in probs[0].detail
    r = kfx("verify", s.split, "--remote", s.bucket)
    assert r.exit_code == 1 and "tier-topic-id-mismatch" in r.output


def test_a_wrong_remote_uri_is_one_line_and_exit_2(split, kfx):
    r = kfx("analyze", split.split, "--remote", str(split.bucket) + "-nope")
    assert r.exit_code == 2 and len(r.output.strip().splitlines()) == 1
    r = kfx("explain", split.spart, "--offset", 1, "--remote", "ftp://x/y")
    assert r.exit_code == 2 and "Traceback" not in r.output


def test_a_damaged_remote_chunk_is_one_line_or_a_located_problem(split, kfx):
    key = os.path.join(split.bucket, split.up[0]["keys"]["log"])
    with open(key, "r+b") as f:
        f.seek(0)
        f.write(b"\xff" * 64)   # plain chunks are the segment's bytes: the first batch's header broken
    r = kfx("analyze", split.split, "--remote", split.bucket, "--json")
    f = [f for f in json.loads(r.output)["findings"] if f["kind"] == "valid-after-damage"]
    assert r.exit_code == 1 and f and f[0]["file"] == key   # located in the remote object
    assert "restore the object" in f[0]["remedy"] and "kfx salvage" not in f[0]["remedy"]   # not a local repair
    man = os.path.join(split.bucket, split.up[1]["keys"]["rsm-manifest"])
    with open(man, "wb") as f:
        f.write(b"{not json")
    ul = split.unified()
    assert [p.kind for p in ul.unreadable] == ["remote-manifest"]
    probs = reconcile(ul, -1, -1, T0)
    assert probs[0].kind == "remote-manifest" and split.up[1]["keys"]["rsm-manifest"] in probs[0].file
    r = kfx("verify", split.split, "--remote", split.bucket)
    assert r.exit_code == 1 and "remote-manifest" in r.output and "Traceback" not in r.output


def test_a_chunk_that_does_not_decompress_is_one_line_and_exit_2(tmp_path, kfx):
    s = Split(tmp_path, transform="zstd")
    key = os.path.join(s.bucket, s.up[0]["keys"]["log"])
    with open(key, "r+b") as f:
        f.seek(4)
        f.write(b"\x00" * 32)
    r = kfx("analyze", s.split, "--remote", s.bucket)
    assert r.exit_code == 2 and len(r.output.strip().splitlines()) == 1 and "remote-chunk" in r.output


def test_a_raw_layout_tier_is_read_beside_the_metadata_topic(tmp_path, kfx):
    """Raw copies (no segment ids): every copied segment below the local log start is read."""
    s = Split(tmp_path)
    raw = str(tmp_path / "raw")
    upload_raw(_logs(s.part)[:3], raw)
    ul = unify(Partition.scan(s.spart), RemoteTier.open(raw))
    assert ul.tiers.count(REMOTE) == 2
    assert _records(ul.partition()) == _records(Partition.scan(s.part))
    assert reconcile(ul, -1, -1, T0) == []


def test_explain_names_the_remote_object_holding_the_offset(split):
    got = explain(split.spart, offset=3, now=T0, remote=split.tier())
    ev = got["results"][0]["evidence"][0]
    assert got["results"][0]["fate"] == "present" and ev["file"].endswith(split.up[0]["keys"]["log"])


def test_both_tiers_from_an_s3_bucket(tmp_path, kfx):
    """The tier in a bucket (moto on 127.0.0.1): analyze, explain and verify read through the boundary."""
    with moto_s3(("tier",)):
        s = Split(tmp_path, transform="zstd", bucket="s3://tier/prefix")
        full = json.loads(kfx("analyze", "--json", "--now", T0, s.part).output)["partitions"][0]
        r = kfx("analyze", "--json", "--now", T0, s.spart, "--remote", s.bucket)
        got = json.loads(r.output)["partitions"][0]
        assert (got["records"], got["logStartOffset"], got["tiers"]["remoteSegments"]) == (full["records"], 0, 2)
        r = kfx("explain", s.spart, "--offset", 5, "--remote", s.bucket, "--json")
        assert r.exit_code == 0 and json.loads(r.output)["results"][0]["fate"] == "present"
        assert kfx("verify", s.split, "--remote", s.bucket).exit_code == 0


def test_another_incarnation_beside_the_partitions_own(split):
    """Objects of an earlier incarnation of the topic beside the current one's: those are read, the
    others reported."""
    old = upload(_logs(split.part)[:1], split.bucket, "plain", topic_id=kafka_uuid())
    ul = split.unified()
    assert [rc.topic_id for rc in ul.remote] == [_topic_id(split.part)] * 2
    assert _records(ul.partition()) == _records(Partition.scan(split.part))
    probs = reconcile(ul, -1, -1, T0)
    assert _kinds(probs) == ["tier-topic-id-mismatch"] and old[0]["topic_id"] in probs[0].detail


@pytest.mark.skipif(not tarballs(), reason="the real brokers' log dirs (../shared/real-logdirs) are not on this machine")
def test_groups_over_a_real_brokers_tiered_consumer_offsets(tmp_path, kfx):
    """A Kafka 2.7 broker's __consumer_offsets (compacted, two segments a partition): each partition's
    first segment moved to a tier, groups reads the same commits as from the whole log dir."""
    real = unpack("kafka27-zk-compacted-offsets", str(tmp_path / "real"))
    split, bucket = str(tmp_path / "split"), str(tmp_path / "bucket")
    shutil.copytree(real.log_dir, split)
    for n in ("__consumer_offsets-17", "__consumer_offsets-28", "__consumer_offsets-39"):
        first = _logs(real.path(n))[0]
        upload([first], bucket, "zstd")
        for f in os.listdir(os.path.join(split, n)):
            if f.startswith(os.path.basename(first)[:20]) and not f.endswith(".snapshot"):
                os.unlink(os.path.join(split, n, f))
    tier = RemoteTier.open(bucket)
    for n in ("__consumer_offsets-17", "__consumer_offsets-28", "__consumer_offsets-39"):
        whole = replay_offsets(real.path(n))   # the records the coordinator applies, in order
        assert replay_offsets(os.path.join(split, n)) != whole   # the local part alone misses some
        assert replay_offsets(unify(Partition.scan(os.path.join(split, n)), tier).partition()) == whole
    assert committed_offsets(split, tier) == committed_offsets(real.log_dir)
    assert group_members(split, tier) == group_members(real.log_dir)
    r = kfx("groups", split, "--remote", bucket, "--json")
    assert r.exit_code == 0 and r.output == kfx("groups", real.log_dir, "--json").output


def test_every_object_of_a_partition_gone_while_the_tier_holds_its_topic(split):
    """All of events-0's objects deleted, events-1's still there: each finished segment is missing;
    a tier holding none of the topic (another topic's prefix) reports nothing of it."""
    other = os.path.join(split.full, "events-1")
    make_partition(other, seed=8, n=20)
    upload(_logs(other)[:1], split.bucket, "plain", topic_id=_topic_id(split.part))
    for u in split.up:
        for k in u["keys"].values():
            os.unlink(os.path.join(split.bucket, k))
    probs = _check(split)
    assert [p.kind for p in probs if p.kind == "tier-missing-object"] == ["tier-missing-object"] * 3
    elsewhere, orders = str(split.bucket) + "-other", os.path.join(split.full, "orders-1")
    make_partition(orders, seed=9, n=20)
    upload(_logs(orders)[:1], elsewhere, "plain")
    ul = unify(Partition.scan(split.spart), RemoteTier.open(elsewhere))
    assert not ul.holds_topic and reconcile(ul, -1, -1, T0) == []
