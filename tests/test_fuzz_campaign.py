"""The fuzzing campaign's quick pass (``make fuzz`` runs the long one): every parser entry point
fed structure-aware mutations gives a clean parse or a located problem, never another exception or
a hang; kept crashers stay fixed; decompression bombs stay inside a capped address space; mutated
files through the CLI exit 0/1/2 without a traceback."""
import os
import subprocess
import sys

import pytest

from kafkaforensics.harness import fuzz
from kafkaforensics.log.segment import BatchScanner

QUICK = 3000  # inputs a target (seeded: the same inputs every run)


@pytest.fixture(scope="module")
def targets():
    return fuzz.targets()


@pytest.mark.parametrize("name", ["segment", "columns", "decoders", "offset-index", "time-index", "txn-index", "snapshot",
                                  "checkpoint", "internal-topics", "request"])
def test_quick_pass(targets, name, monkeypatch):
    from specs import codecs
    monkeypatch.setattr(codecs, "MAX_DECOMPRESSED", 4 << 20)  # bombs built past this bound
    t = targets[name]
    assert t.seeds, "a target without seeds fuzzes nothing"
    stats, crashers = fuzz.Stats(), []
    fuzz.run_target(t, 0, QUICK, stats, corpus=None, crashers=crashers)
    assert stats.inputs == QUICK
    assert not crashers, crashers[0][2]
    if name not in ("offset-index", "time-index"):  # those readers are total: any bytes are entries
        assert stats.located > 0  # the mutations reach the checks (not only clean parses)


@pytest.mark.parametrize("name", ["compact", "compact-dry-run", "recover", "reindex", "retention", "analyze",
                                  "verify", "salvage", "spark-records"])
def test_quick_pass_of_the_commands(targets, name, monkeypatch):
    """Each repair and analyze on a partition made of the mutated segment (CRCs recomputed half the
    time), and the Spark records level's Arrow path: a report with located problems, never an
    exception (not even a KafkaFormatError: a command reports), a hang or a leftover temp file."""
    from specs import codecs
    from kafkaforensics import fsutil
    monkeypatch.setattr(codecs, "MAX_DECOMPRESSED", 4 << 20)
    stats, crashers = fuzz.Stats(), []
    fuzz.run_target(targets[name], 0, 200, stats, corpus=None, crashers=crashers)
    assert stats.inputs == 200 and not crashers, crashers[0][2]
    if name.startswith("compact") or name == "analyze":
        assert stats.located > 0
    logs = os.path.join(fuzz.WORK, "logs")
    assert not fsutil.temp_artefacts(logs) and not fsutil.temp_artefacts(os.path.join(logs, "t-0"))


def test_mutations_are_structure_aware(targets):
    """Boundaries are the fields of every batch; fixed CRCs let damage reach the record decoders."""
    t = targets["segment"]
    data, bounds = t.seeds[0]
    b = next(iter(BatchScanner(data)))
    assert {b.position + f for f in (0, 8, 12, 16, 17, 21, 57, 61)} <= set(bounds)
    assert len(bounds) > 4 * sum(1 for _ in BatchScanner(data))
    reached_records = 0
    for i in range(len(t.seeds), len(t.seeds) + 400):
        d = fuzz.input_for(t, i)
        assert d == fuzz.input_for(t, i)  # a pure function of the index: campaigns resume
        for bt in BatchScanner(d):
            if bt.crc_valid() and bt.size != len(d):
                reached_records += 1
    assert reached_records > 100


def test_kept_crashers_stay_fixed():
    assert fuzz.replay_corpus() == []


def test_negative_index_position_is_a_located_problem(tmp_path):
    """Found by the CLI campaign: an .index entry with a negative position made `kfx dump` walk
    from byte -1 (struct.error and a traceback). The walk now stops with a located problem."""
    sc = BatchScanner(b"\x00" * 100, start=-1, file="x.log")
    assert list(sc) == [] and sc.stop.kind == "bad-position" and sc.stop.position == -1
    assert list(BatchScanner(b"\x00" * 100, start=-5).iter_runs()) == []
    src = os.path.join(fuzz.SAMPLE, "orders-0", "00000000000000000000.log")
    (tmp_path / "00000000000000000000.log").write_bytes(open(src, "rb").read())
    (tmp_path / "00000000000000000000.index").write_bytes(b"\x00\x00\x00\x01\xff\xff\xff\xff")
    r = subprocess.run([sys.executable, "-m", "kafkaforensics", "dump", str(tmp_path / "00000000000000000000.index")],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 1 and "Traceback" not in r.stderr, r.stderr
    assert "Index offset: 1, log offset: -1" in r.stderr


def test_decompression_bombs_in_a_capped_address_space(tmp_path):
    """A batch of each codec whose payload expands past the default 256 MiB bound, decoded in a
    child whose address space is capped at 1.5 GiB: a located compression problem, no MemoryError."""
    code = r"""
import resource, struct, sys
from kafkaforensics.harness import fuzz
from kafkaforensics.records import builder, compression
from kafkaforensics.records.batch import Record
from kafkaforensics.errors import KafkaFormatError
from kafkaforensics.log.segment import BatchScanner
bombs = fuzz.bombs()
resource.setrlimit(resource.RLIMIT_AS, (1536 << 20, 1536 << 20))
for codec, payload in bombs.items():
    batch = bytearray(builder.build_v2([Record(0, 1, b"k", b"v", [])], base_offset=0, codec=codec)[:61]) + payload
    struct.pack_into(">i", batch, 8, len(batch) - 12)
    fuzz.fix_crcs(batch)
    b = next(iter(BatchScanner(bytes(batch), file="bomb.log")))
    try:
        b.records()
        sys.exit(f"codec {codec}: no error")
    except KafkaFormatError as e:
        assert e.problem.position == 0 and "bound" in str(e), e
print("ok", len(bombs))
"""
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0 and r.stdout.strip() == "ok 4", r.stderr[-2000:]


def test_mutated_files_through_the_cli(tmp_path):
    res = fuzz.cli_campaign(48, str(tmp_path), seed=11, per_process=24)
    # dump x4, verify, analyze; recover and compact dry runs and salvage x8
    assert res["files"] == 48 and res["processes"] == 30
    assert res["bad"] == [], res["bad"][0]


def test_request_decode_defects_found_by_fuzzing_are_protocol_violations():
    """Found by the request campaign: (1) an ApiVersions request whose header failed both as v2 and
    as the v1 fallback raised out of Connection.receive_data (the sans-IO layer must only return
    events); (2) a null (-1) array where Kafka's schema says non-nullable (Produce's TopicData,
    FindCoordinator v4's CoordinatorKeys) was decoded as None and crashed the handler iterating it."""
    import struct as S

    from kafkaforensics.broker.protocol import Connection, ProtocolViolation
    payload = S.pack(">hhih", 18, 3, 1, 36) + b"x" * 14
    ev = Connection().receive_data(S.pack(">i", len(payload)) + payload)
    assert len(ev) == 1 and isinstance(ev[0], ProtocolViolation)
    from specs import protocol_messages as P
    hdr = P.RequestHeader.build({"RequestApiKey": 0, "RequestApiVersion": 3, "CorrelationId": 2, "ClientId": "c"}, 1)
    body = S.pack(">h", -1) + S.pack(">hi", 1, 1000) + S.pack(">i", -1)  # TransactionalId null, TopicData null
    ev = Connection().receive_data(S.pack(">i", len(hdr + body)) + hdr + body)
    assert len(ev) == 1 and isinstance(ev[0], ProtocolViolation) and "TopicData" in ev[0].reason
