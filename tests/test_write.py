"""`kfx write`: dump | write | dump round trips; byte-identical partitions; Kafka's index placement."""
import base64
import filecmp
import json
import os

from kafkaforensics.records.batch import Record
from kafkaforensics.records.builder import build_v2
from kafkaforensics.log.indexing import index_segment
from kafkaforensics.log.segment import iter_batches
from kafkaforensics.inspect.verify import verify
from kafkaforensics.log.writer import write_partition
from tests.conftest import SAMPLE


def _dump_json(kfx, part_dir, *extra):
    logs = sorted(os.path.join(part_dir, f) for f in os.listdir(part_dir) if f.endswith(".log"))
    r = kfx("dump", *logs, "--deep", "--format", "json", *extra)
    assert r.exit_code == 0, r.stdout
    return r.stdout


def _records(jsonl):
    return [r for line in jsonl.splitlines() for r in json.loads(line)["records"]]


def test_roundtrip_is_byte_identical_for_uncompressed_and_the_whole_partition(kfx, tmp_path):
    src = os.path.join(SAMPLE, "orders-0")
    dump1 = _dump_json(kfx, src)
    out = tmp_path / "orders-0"
    r = kfx("write", "--out", out, "--segment-bytes", 16384, "--index-interval-bytes", 1024, input=dump1)
    assert r.exit_code == 0, r.output
    # the sample was written with these settings: every file comes back identical, indexes included
    names = sorted(n for n in os.listdir(src) if n != "partition.metadata")
    assert sorted(os.listdir(out)) == sorted(names + ["partition.metadata"])  # a topic id derived from the name
    match, mismatch, errors = filecmp.cmpfiles(src, out, names, shallow=False)
    assert mismatch == [] and errors == []
    assert _records(_dump_json(kfx, out)) == _records(dump1)


def test_roundtrip_of_independently_built_batches(kfx, tmp_path):
    for part in ("clients-0", "legacy-0"):
        src = os.path.join(SAMPLE, part)
        dump1 = _dump_json(kfx, src)
        out = tmp_path / part
        assert kfx("write", "--out", out, input=dump1).exit_code == 0
        assert _records(_dump_json(kfx, out)) == _records(dump1)
        assert verify([str(out)]).ok
        # uncompressed batches are byte-identical
        a = [b for line in dump1.splitlines() for b in [json.loads(line)]]
        for b in iter_batches(os.path.join(out, "00000000000000000000.log")):
            src_batch = next(x for x in a if x["baseOffset"] == b.base_offset)
            if src_batch["compression"] == "none":
                assert b.crc == src_batch["crc"]


def test_remove_a_poison_pill_and_write_back(kfx, tmp_path):
    src = os.path.join(SAMPLE, "orders-0")
    lines = _dump_json(kfx, src).splitlines()
    objs = [json.loads(line) for line in lines]
    victim = objs[3]["records"][0]["offset"]
    objs[3]["records"] = objs[3]["records"][1:]
    out = tmp_path / "fixed"
    r = kfx("write", "--out", out, input="\n".join(json.dumps(o) for o in objs) + "\n")
    assert r.exit_code == 0
    assert verify([str(out)]).ok
    offsets = [rec["offset"] for rec in _records(_dump_json(kfx, out))]
    assert victim not in offsets and len(offsets) == sum(len(o["records"]) for o in objs)


def test_utf8_encoded_dump_writes_back(kfx, tmp_path):
    src = os.path.join(SAMPLE, "orders-0")
    d = _dump_json(kfx, src, "--encoding", "utf8")
    out = tmp_path / "u"
    assert kfx("write", "--out", out, "--encoding", "utf8", input=d).exit_code == 0
    assert _records(_dump_json(kfx, out, "--encoding", "utf8")) == _records(d)


def test_write_rejects_bad_input_and_nonempty_out(kfx, tmp_path):
    out = tmp_path / "x"
    r = kfx("write", "--out", out, input='{"baseOffset": 0}\n')
    assert r.exit_code == 2 and "--deep" in r.output
    assert not out.exists()
    r = kfx("write", "--out", out, input="not json\n")
    assert r.exit_code == 2 and "line 1" in r.output
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "f").write_text("x")
    assert kfx("write", "--out", tmp_path / "full", input="").exit_code == 2


def test_segments_roll_at_segment_bytes(tmp_path):
    batches = [build_v2([Record(i * 10 + j, 1000 + i, b"k", b"v" * 100) for j in range(10)], base_offset=i * 10)
               for i in range(50)]
    out = write_partition(str(tmp_path / "p"), batches, segment_bytes=5000, index_interval_bytes=1000)
    logs = sorted(f for f in os.listdir(out) if f.endswith(".log"))
    assert len(logs) > 5
    for f in logs:
        assert os.path.getsize(os.path.join(out, f)) <= 5000
        first = next(iter_batches(os.path.join(out, f)))
        assert int(f[:20]) == first.base_offset
    assert verify([out]).ok


def test_index_placement_follows_log_segment_recover():
    """Entry when bytes since the last entry's position exceed the interval; time entries strictly grow."""
    sizes = []
    batches = []
    for i in range(12):
        data = build_v2([Record(i, 5000 - (i % 3) * 1000 + i, None, b"x" * (100 + 50 * i))], base_offset=i)
        batches.append(data)
        sizes.append(len(data))
    parsed = []
    pos = 0
    for data in batches:
        b = next(iter(__import__("kafkaforensics.log.segment", fromlist=["BatchScanner"]).BatchScanner(data)))
        b.position = pos
        parsed.append(b)
        pos += len(data)
    idx = index_segment(parsed, 0, interval=300)
    # hand-computed expectation with the rule, independent of SegmentIndexes
    expect, last, valid = [], 0, 0
    for i, s in enumerate(sizes):
        if valid - last > 300:
            expect.append((i, valid))
            last = valid
        valid += s
    assert idx.offsets == expect
    assert [t for t, _ in idx.times] == sorted(set(t for t, _ in idx.times))
    assert idx.times[-1][0] == max(p.max_timestamp for p in parsed)


def test_base64_values_roundtrip_binary(kfx, tmp_path):
    payload = bytes(range(256))
    obj = {"baseOffset": 0, "lastOffset": 0, "magic": 2, "compression": "zstd", "timestampType": "CreateTime",
           "isTransactional": False, "isControl": False, "producerId": -1, "producerEpoch": -1, "baseSequence": -1,
           "partitionLeaderEpoch": 0, "firstTimestamp": 10, "maxTimestamp": 10, "deleteHorizonMs": None,
           "records": [{"offset": 0, "timestamp": 10, "key": None, "value": base64.b64encode(payload).decode(),
                        "headers": [{"key": "k", "value": None}]}]}
    out = tmp_path / "b"
    assert kfx("write", "--out", out, input=json.dumps(obj) + "\n").exit_code == 0
    (rec,) = _records(_dump_json(kfx, out))
    assert base64.b64decode(rec["value"]) == payload and rec["headers"] == [{"key": "k", "value": None}]
