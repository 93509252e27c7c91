"""`kfx salvage` recovers batches Kafka would throw away; `kfx reindex` rebuilds Kafka's indexes."""
import json
import os
import shutil

from kafkaforensics.repair.reindex import reindex
from kafkaforensics.repair.salvage import salvage
from kafkaforensics.log.segment import iter_batches
from kafkaforensics.inspect.verify import verify
from tests.corruption import INTERVAL, all_records, layout, make_partition, snapshot_files


def _batches(part):
    return [(b.base_offset, b.last_offset, b.crc) for s, _ in layout(part) for b in iter_batches(s)]


def test_salvage_finds_batches_after_damage_garbage_and_zeros(tmp_path, kfx):
    part = make_partition(tmp_path / "src-0")
    original = _batches(part)
    lay = layout(part)
    seg, bl = lay[2]
    # damage: flip bytes in batch 3, a run of zeros over batch 5, garbage inserted before batch 7
    data = bytearray(open(seg, "rb").read())
    data[bl[3][0] + 30] ^= 0xFF
    data[bl[5][0]: bl[5][0] + bl[5][1]] = b"\0" * bl[5][1]
    data = data[: bl[7][0]] + os.urandom(777) + data[bl[7][0]:]
    with open(seg, "wb") as f:
        f.write(bytes(data))
    before = snapshot_files(part)
    out = tmp_path / "salvaged-0"
    rep = salvage([part], str(out), index_interval_bytes=INTERVAL)
    assert snapshot_files(part) == before, "salvage must never write into its input"
    got = _batches(str(out))
    lost = {original_index for original_index, b in enumerate(original)
            if b[0] in (bl[3][2], bl[5][2])}
    assert got == [b for i, b in enumerate(original) if i not in lost]
    assert len(rep.skipped) == 3 and rep.conflicts == []
    assert sum(s["bytes"] for s in rep.skipped) == bl[3][1] + bl[5][1] + 777
    assert verify([str(out)]).ok
    # more than Kafka's recovery keeps: Kafka stops at batch 3 of segment 2
    kafka_keeps = [b for b in original if b[1] < bl[3][2]]
    assert len(got) > len(kafka_keeps)
    assert [r["first"] for r in rep.recovered][0] == 0


def test_salvage_dedupes_copies_and_orders_inputs(tmp_path):
    part = make_partition(tmp_path / "a-0")
    lay = layout(part)
    image = tmp_path / "disk.img"
    with open(image, "wb") as f:  # a "raw disk image": segments out of order, a copy, junk between
        for s, _ in reversed(lay):
            f.write(os.urandom(100) + open(s, "rb").read())
        f.write(open(lay[0][0], "rb").read())
        f.write(b"\0" * 4096)
    rep = salvage([str(image)], str(tmp_path / "out-0"))
    assert _batches(str(tmp_path / "out-0")) == _batches(part)
    assert rep.duplicates == len(lay[0][1])
    assert rep.recovered == [{"first": 0, "last": _batches(part)[-1][1]}]


def test_salvage_conflict_prefers_higher_leader_epoch(tmp_path):
    from kafkaforensics.records.batch import Record
    from kafkaforensics.records.builder import build_v2
    a = build_v2([Record(0, 1, b"k", b"old")], base_offset=0, partition_leader_epoch=1)
    b = build_v2([Record(0, 1, b"k", b"new")], base_offset=0, partition_leader_epoch=2)
    (tmp_path / "x.log").write_bytes(a)
    (tmp_path / "y.log").write_bytes(b)
    rep = salvage([str(tmp_path / "x.log"), str(tmp_path / "y.log")], str(tmp_path / "o-0"))
    assert len(rep.conflicts) == 1
    (kept,) = list(iter_batches(str(tmp_path / "o-0" / "00000000000000000000.log")))
    assert kept.records()[0].value == b"new"


def test_salvage_cli_refuses_to_write_into_input(tmp_path, kfx):
    part = make_partition(tmp_path / "p-0")
    r = kfx("salvage", part, "--out", os.path.join(part, "inner"))
    assert r.exit_code == 2
    r = kfx("salvage", part, "--out", tmp_path / "ok-0", "--json")
    assert r.exit_code == 0
    out = json.loads(r.stdout)
    assert out["skipped"] == [] and out["batches"] == len(_batches(part))


def test_reindex_rebuilds_byte_identical_indexes(tmp_path, kfx):
    part = make_partition(tmp_path / "r-0")
    originals = {f: open(os.path.join(part, f), "rb").read() for f in os.listdir(part)
                 if f.endswith((".index", ".timeindex", ".txnindex"))}
    assert any(f.endswith(".txnindex") for f in originals)
    for f in originals:
        os.unlink(os.path.join(part, f))
    rep = reindex(part, index_interval_bytes=INTERVAL)
    assert sorted(rep.rebuilt) == sorted(originals)
    for f, data in originals.items():
        assert open(os.path.join(part, f), "rb").read() == data, f
    again = reindex(part, index_interval_bytes=INTERVAL)
    assert again.actions == [] and sorted(again.unchanged) == sorted(originals)
    # a single segment, a dry run, and the CLI
    seg = layout(part)[2][0]
    idx = seg.replace(".log", ".index")
    with open(idx, "wb") as f:
        f.write(b"\1" * 16)
    files = snapshot_files(part)
    r = kfx("reindex", seg, "--dry-run", "--json", "--index-interval-bytes", INTERVAL)
    assert r.exit_code == 1 and json.loads(r.stdout)["rebuiltIndexes"] == [os.path.basename(idx)]
    assert snapshot_files(part) == files
    r = kfx("reindex", seg, "--index-interval-bytes", INTERVAL, "--json")
    assert r.exit_code == 1
    assert open(idx, "rb").read() == originals[os.path.basename(idx)]
    backup = json.loads(r.stdout)["backup"]  # the replaced file is kept, as every repair keeps it
    assert open(os.path.join(backup, os.path.basename(idx)), "rb").read() == b"\1" * 16
    assert verify([part]).ok


def test_reindex_of_a_damaged_segment_indexes_its_valid_prefix(tmp_path):
    part = make_partition(tmp_path / "d-0")
    seg, bl = layout(part)[1]
    with open(seg, "ab") as f:
        f.write(os.urandom(64))
    rep = reindex(part, index_interval_bytes=INTERVAL)
    assert any("recover" in n for n in rep.notes)
    shutil.rmtree(part)
