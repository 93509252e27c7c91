"""`kfx dump`: kafka-dump-log.sh's line formats, the JSON contract, every file kind."""
import base64
import json
import os
import re

from kafkaforensics.inspect.dump import DumpOptions, dump
from tests.conftest import SAMPLE

ORDERS = os.path.join(SAMPLE, "orders-0")
SEG0 = os.path.join(ORDERS, "00000000000000000000.log")
SEG1 = os.path.join(ORDERS, "00000000000000000225.log")
BATCH_KEYS = ["baseOffset", "lastOffset", "count", "position", "size", "magic", "crc", "crcValid", "compression",
              "timestampType", "isTransactional", "isControl", "producerId", "producerEpoch", "baseSequence",
              "lastSequence", "partitionLeaderEpoch", "firstTimestamp", "maxTimestamp", "deleteHorizonMs"]

# kafka-dump-log.sh's batch line for magic 2 (DumpLogSegments.printBatchLevel)
V2_LINE = re.compile(
    r"^baseOffset: \d+ lastOffset: \d+ count: \d+ baseSequence: -?\d+ lastSequence: -?\d+ producerId: -?\d+ "
    r"producerEpoch: -?\d+ partitionLeaderEpoch: -?\d+ isTransactional: (true|false) isControl: (true|false) "
    r"deleteHorizonMs: OptionalLong(\.empty|\[\d+\]) position: \d+ (CreateTime|LogAppendTime): -?\d+ size: \d+ "
    r"magic: 2 compresscodec: (none|gzip|snappy|lz4|zstd) crc: \d+ isvalid: (true|false)$")
RECORD_LINE = re.compile(r"^\| offset: \d+ (CreateTime|LogAppendTime|NoTimestampType): -?\d+ keySize: -?\d+ "
                         r"valueSize: -?\d+( sequence: -?\d+ headerKeys: \[[^\]]*\])?")


def run(paths, **kw):
    import io
    out, err = io.StringIO(), io.StringIO()
    res = dump(paths, DumpOptions(**kw), out=out, err=err)
    return res, out.getvalue(), err.getvalue()


def test_text_batch_lines_follow_kafka_dump_log():
    res, out, _ = run([SEG0])
    lines = out.splitlines()
    assert lines[0] == f"Dumping {SEG0}"
    assert lines[1] == "Log starting offset: 0"
    assert all(V2_LINE.match(line) for line in lines[2:]), [line for line in lines[2:] if not V2_LINE.match(line)][:2]
    assert not res.problems


def test_deep_text_lines_and_control_records():
    _, out, _ = run([SEG1], deep=True)
    recs = [line for line in out.splitlines() if line.startswith("|")]
    assert recs and all(RECORD_LINE.match(line) for line in recs)
    assert any("endTxnMarker: ABORT coordinatorEpoch: 7" in line for line in recs)
    _, out0, _ = run([SEG0], deep=True)
    assert any("endTxnMarker: COMMIT coordinatorEpoch: 7" in line for line in out0.splitlines())


def test_print_data_shows_key_and_payload_utf8():
    _, out, _ = run([SEG0], print_data=True)
    first = next(line for line in out.splitlines() if line.startswith("| offset: 0 "))
    assert " key: order-" in first or "keySize: -1" in first
    assert " payload: value-0-" in first


def test_json_contract_keys_and_values():
    _, out, _ = run([SEG0, SEG1], fmt="json", deep=True)
    objs = [json.loads(line) for line in out.splitlines()]
    assert objs and all(list(o.keys())[:len(BATCH_KEYS)] == BATCH_KEYS for o in objs)
    assert all(set(o) == set(BATCH_KEYS) | {"records"} for o in objs)
    assert {o["compression"] for o in objs} == {"none", "gzip", "snappy", "lz4", "zstd"}
    assert {o["timestampType"] for o in objs} == {"CreateTime", "LogAppendTime"}
    assert all(o["crcValid"] for o in objs)
    ctl = [r for o in objs if o["isControl"] for r in o["records"]]
    assert {c["control"]["type"] for c in ctl} == {"COMMIT", "ABORT"}
    assert all(c["control"]["coordinatorEpoch"] == 7 and c["control"]["version"] == 0 for c in ctl)
    rec = objs[0]["records"][0]
    assert set(rec) >= {"offset", "timestamp", "key", "value", "headers"}
    # JSON default encoding is base64
    assert base64.b64decode(rec["value"]).startswith(b"value-0-")
    nulls = [r for o in objs for r in o["records"] if r["key"] is None]
    assert nulls, "null keys must be JSON null"
    hdrs = [h for o in objs for r in o["records"] for h in r["headers"]]
    assert {"key": "empty", "value": None} in hdrs


def test_json_shallow_has_exactly_the_contract_keys():
    _, out, _ = run([SEG0], fmt="json")
    for line in out.splitlines():
        assert list(json.loads(line)) == BATCH_KEYS


def test_encodings():
    for enc, check in (("hex", lambda s: bytes.fromhex(s)), ("utf8", lambda s: s.encode()),
                       ("base64", base64.b64decode)):
        _, out, _ = run([SEG0], fmt="json", deep=True, encoding=enc)
        rec = json.loads(out.splitlines()[0])["records"][0]
        assert check(rec["value"]).startswith(b"value-0-")


def test_legacy_batches_report_magic_and_inner_messages():
    log = os.path.join(SAMPLE, "legacy-0", "00000000000000000000.log")
    _, out, _ = run([log], fmt="json", deep=True)
    objs = [json.loads(line) for line in out.splitlines()]
    assert {o["magic"] for o in objs} == {0, 1}
    wrappers = [o for o in objs if o["compression"] != "none"]
    assert wrappers and all(o["count"] == 8 and len(o["records"]) == 8 for o in wrappers)
    assert all(o["lastOffset"] - o["baseOffset"] == 7 for o in wrappers)
    offsets = [r["offset"] for o in objs for r in o["records"]]
    assert offsets == list(range(64))
    _, text, _ = run([log])
    assert "offset: 7 position:" in text and "magic: 0 compresscodec: lz4" in text


def test_max_bytes_limits_batches():
    _, out, _ = run([SEG0], fmt="json", max_bytes=3000)
    objs = [json.loads(line) for line in out.splitlines()]
    assert objs and all(o["position"] + o["size"] <= 3000 for o in objs)
    sizes = [o["size"] for o in objs]
    assert sum(sizes) <= 3000 and len(objs) >= 2


def test_index_and_timeindex_dump_and_verification(tmp_path):
    idx = os.path.join(ORDERS, "00000000000000000000.index")
    res, out, err = run([idx])
    lines = out.splitlines()[1:]
    assert lines and all(re.match(r"^offset: \d+ position: \d+$", line) for line in lines)
    assert not res.problems and not err
    _, out, _ = run([idx], verify_index_only=True)
    assert out.splitlines() == [f"Dumping {idx}"]
    _, out, _ = run([idx], index_sanity_check=True)
    assert out.splitlines()[-1] == f"{idx} passed sanity check."
    tidx = os.path.join(ORDERS, "00000000000000000000.timeindex")
    res, out, err = run([tidx])
    assert all(re.match(r"^timestamp: \d+ offset: \d+$", line) for line in out.splitlines()[1:])
    assert not res.problems
    # a tampered index entry is reported like kafka-dump-log.sh reports it
    import shutil
    d = tmp_path / "p"
    shutil.copytree(ORDERS, d)
    data = bytearray((d / "00000000000000000000.index").read_bytes())
    data[0:4] = (int.from_bytes(data[0:4], "big") + 1).to_bytes(4, "big")
    (d / "00000000000000000000.index").write_bytes(bytes(data))
    res, _, err = run([str(d / "00000000000000000000.index")])
    assert "Mismatches in :" in err and "Index offset:" in err and res.problems


def test_txnindex_snapshot_and_checkpoints():
    _, out, _ = run([os.path.join(ORDERS, "00000000000000000225.txnindex")])
    assert "version: 0 producerId: 2040 firstOffset: 262 lastOffset: 268 lastStableOffset: 269" in out
    _, out, _ = run([os.path.join(ORDERS, "00000000000000000404.snapshot")])
    assert re.search(r"producerId: 1000 producerEpoch: 0 coordinatorEpoch: -1 currentTxnFirstOffset: "
                     r"OptionalLong.empty lastTimestamp: \d+ firstSequence: \d+ lastSequence: \d+", out)
    _, out, _ = run([os.path.join(ORDERS, "leader-epoch-checkpoint")], fmt="json")
    _, batches, _ = run([SEG0, SEG1], fmt="json")
    first_epoch1 = next(json.loads(b)["baseOffset"] for b in batches.splitlines()
                        if json.loads(b)["partitionLeaderEpoch"] == 1)
    assert [json.loads(line) for line in out.splitlines()] == [{"epoch": 0, "startOffset": 0},
                                                                {"epoch": 1, "startOffset": first_epoch1}]
    _, out, _ = run([os.path.join(SAMPLE, "recovery-point-offset-checkpoint")])
    assert "topic: orders partition: 0 offset: 404" in out
    _, out, _ = run([os.path.join(ORDERS, "partition.metadata")])
    assert "topicId: q3Bq1nEAR5uD4qPQ0Kh0bw" in out


def test_damaged_log_reports_trailing_bytes_and_located_problem(tmp_path):
    p = tmp_path / "00000000000000000000.log"
    data = open(SEG0, "rb").read()
    p.write_bytes(data[:-10])
    res, out, err = run([str(p)])
    assert re.search(r"Found \d+ invalid bytes at the end of 00000000000000000000.log", out)
    (prob,) = res.problems
    assert prob.kind == "truncated-batch" and prob.position is not None and prob.offset is not None
    assert str(p) in err


def test_cli_dump_exit_codes(kfx, tmp_path):
    r = kfx("dump", SEG0, "--format", "json")
    assert r.exit_code == 0 and r.stdout.count("\n") > 10
    p = tmp_path / "00000000000000000000.log"
    p.write_bytes(open(SEG0, "rb").read()[:-3])
    assert kfx("dump", str(p)).exit_code == 1
    assert kfx("dump", str(tmp_path / "missing.log")).exit_code == 2
    assert kfx("dump", SEG0, "--format", "yaml").exit_code == 2


def test_python_dash_m_is_kfx():
    import subprocess
    import sys
    r = subprocess.run([sys.executable, "-m", "kafkaforensics", "dump", SEG0, "--format", "json"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and [json.loads(x)["baseOffset"] for x in r.stdout.splitlines()][0] == 0
    r = subprocess.run([sys.executable, "-m", "kafkaforensics", "verify", "/nonexistent"], capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 2
