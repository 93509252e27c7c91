"""Per rule of kafka_rules: files as a given Kafka generation's broker writes them pass verify, and
reindex --dry-run / recover --dry-run accept them (exit 0, nothing planned) under that version;
recovery after damage does what that version's recovery does."""
import json
import os

from kafkaforensics.inspect.analyzer import AnalyzeOptions, analyze
from kafkaforensics.log import offset_index, time_index
from kafkaforensics.log.producer_state import ProducerEntry, ProducerState, snapshot_bytes
from kafkaforensics.records.batch import Record, parse_header, resolve_legacy_wrapper
from kafkaforensics.records.builder import BatchProducer, build_legacy, build_v2
from kafkaforensics.repair.cleaner import CompactOptions, compact
from kafkaforensics.repair.recovery import LoadOptions, recover
from kafkaforensics.log.segment import iter_batches
from tests.conftest import COMPACTED

T0 = 1_700_000_000_000
INTERVAL = 150


def name(off, suf):
    return f"{off:020d}{suf}"


def batches(n, records=5, base=0, codec=0, step=lambda i: i):
    """``n`` batches of ``records`` records; in each, the max timestamp is the second record's; the
    timestamps of batch ``i`` start at ``T0 + 100 * step(i)``."""
    out, off = [], base
    for i in range(n):
        recs = [Record(off + j, T0 + 100 * step(i) + (9, 50, 1, 2, 3)[j % 5], b"k%d" % j, b"v" * 20)
                for j in range(records)]
        out.append(build_v2(recs, base_offset=off, codec=codec))
        off += records
    return out


def broker_files(appends, *, entry="last", time_offset="batch", per="append", interval=INTERVAL, closed=True):
    """.log, .index and .timeindex bytes as a broker's LogSegment.append writes ``appends`` (lists of
    batch bytes): one entry an append before 4.1 (per="append"), one a batch from 4.1; entries hold
    the base offset up to 1.1 (entry="base"); a leader's time entry holds the max-timestamp record's
    offset up to 3.6 (time_offset="record"), the append's last offset in 3.7 ("append"), the last
    offset of the batch holding it from 3.8 ("batch")."""
    log, offs, times, since = b"", [], [], 0
    max_ts, max_off = -1, -1

    def time_append():
        if not times or max_ts > times[-1][0]:
            times.append((max_ts, max_off))

    units = [[b] for app in appends for b in app] if per == "batch" else appends
    for unit in units:
        hs = [parse_header(b, 0) for b in unit]
        for h in hs:
            if h.magic < 2 and h.count is None:
                resolve_legacy_wrapper(h)   # a compressed magic 0/1 wrapper: its first inner offset
        pos = len(log)
        top = max(h.max_timestamp for h in hs)
        k = next(i for i, h in enumerate(hs) if h.max_timestamp == top)
        if time_offset == "record":
            rec = next(r for r in hs[k].records() if r.timestamp == top)
            shallow = rec.offset
        elif time_offset == "append":
            shallow = hs[-1].last_offset
        else:
            shallow = hs[k].last_offset
        if top > max_ts:
            max_ts, max_off = top, shallow
        if since > interval:
            offs.append((hs[0].base_offset if entry == "base" else hs[-1].last_offset, pos))
            time_append()
            since = 0
        for b in unit:
            since += len(b)
            log += b
    if closed:
        time_append()
    first = parse_header(units[0][0], 0)
    if first.magic < 2 and first.count is None:
        resolve_legacy_wrapper(first)
    base = first.base_offset
    return log, offset_index.to_bytes(offs, base), time_index.to_bytes(times, base)


def partition(tmp_path, appends, **kw):
    """A log dir with one partition t-0 of one segment as the broker wrote it, its producer snapshot
    at the log end and no recovery point (everything is recovered)."""
    d = tmp_path / "logs" / "t-0"
    d.mkdir(parents=True)
    log, idx, tidx = broker_files(appends, **kw)
    (d / name(0, ".log")).write_bytes(log)
    (d / name(0, ".index")).write_bytes(idx)
    (d / name(0, ".timeindex")).write_bytes(tidx)
    last = parse_header(appends[-1][-1], 0).last_offset
    (d / name(last + 1, ".snapshot")).write_bytes(ProducerState().to_snapshot())
    return str(d)


def accepted(kfx, part, version):
    """verify, reindex --dry-run and recover --dry-run (after a clean shutdown: after an unclean one
    LogSegment.recover rebuilds a recovered segment's indexes whatever they hold) under ``version``:
    clean, nothing planned."""
    before = {f: open(os.path.join(part, f), "rb").read() for f in os.listdir(part)}
    r = kfx("verify", part, "--kafka-version", version)
    assert r.exit_code == 0, r.output
    marker = os.path.join(os.path.dirname(part), ".kafka_cleanshutdown")
    for cmd in ("reindex", "recover"):
        if cmd == "recover":
            open(marker, "wb").close()
        r = kfx(cmd, part, "--dry-run", "--json", "--kafka-version", version, "--index-interval-bytes", INTERVAL)
        out = json.loads(r.stdout)
        assert r.exit_code == 0 and out["actions"] == [], (cmd, out["actions"])
        assert out["kafkaVersion"]["low"] == version and out["kafkaVersion"]["told"]
    os.remove(marker)
    assert {f: open(os.path.join(part, f), "rb").read() for f in os.listdir(part)} == before


def rewritten(kfx, part, version):
    return rewritten_at(kfx, part, version, INTERVAL)


def rewritten_at(kfx, part, version, interval):
    r = kfx("reindex", part, "--dry-run", "--json", "--kafka-version", version, "--index-interval-bytes", interval)
    assert r.exit_code == 1
    return [os.path.basename(a["file"]) for a in json.loads(r.stdout)["actions"]]


def test_leader_time_index_36_names_the_record_38_the_batch(tmp_path, kfx):
    appends = [[b] for b in batches(8)]
    p36 = partition(tmp_path / "a", appends, time_offset="record")
    p38 = partition(tmp_path / "b", appends, time_offset="batch")
    assert open(os.path.join(p36, name(0, ".timeindex")), "rb").read() != \
        open(os.path.join(p38, name(0, ".timeindex")), "rb").read()
    accepted(kfx, p36, "3.6")
    accepted(kfx, p38, "3.8")
    accepted(kfx, p38, "3.7")   # 3.7: the append's last offset, and a leader's v2 append is one batch
    accepted(kfx, p38, "3.6")   # a 3.6 follower or recovery writes the batch's last offset
    assert rewritten(kfx, p36, "3.8") == [name(0, ".timeindex")]


def test_offset_index_of_base_offsets_as_11_writes_it(tmp_path, kfx):
    appends = [[b] for b in batches(8)]
    p = partition(tmp_path, appends, entry="base", time_offset="record")
    accepted(kfx, p, "1.1")
    assert rewritten(kfx, p, "2.0") == [name(0, ".index")]
    # recovery after damage: 1.1 rebuilds base offsets (its LogSegment.recover), byte for byte
    want = open(os.path.join(p, name(0, ".index")), "rb").read()
    os.remove(os.path.join(p, name(0, ".index")))
    rep = recover(p, kafka_version="1.1", backup=False, index_interval_bytes=INTERVAL)
    assert name(0, ".index") in rep.rebuilt_indexes
    assert open(os.path.join(p, name(0, ".index")), "rb").read() == want


def test_compressed_magic1_wrappers_indexed_by_base_offset_as_010_writes_them(tmp_path, kfx):
    """A 0.10 broker's gzip magic 1 wrappers: the offset index holds each wrapper's first inner
    offset (the wrapper itself carries the last); its recovery writes the same."""
    wrappers = [build_legacy([Record(i * 5 + j, T0 + i, b"k%d" % j, b"v" * 30) for j in range(5)], magic=1, codec=1)
                for i in range(10)]
    p = partition(tmp_path, [[w] for w in wrappers], entry="base", time_offset="batch", interval=60)
    assert offset_index.read_entries(open(os.path.join(p, name(0, ".index")), "rb").read(), 0)[0][0][0] % 5 == 0
    r = kfx("reindex", p, "--dry-run", "--json", "--kafka-version", "0.10", "--index-interval-bytes", 60)
    assert r.exit_code == 0 and json.loads(r.stdout)["actions"] == []
    want = open(os.path.join(p, name(0, ".index")), "rb").read()
    os.remove(os.path.join(p, name(0, ".index")))
    recover(p, kafka_version="0.10", backup=False, index_interval_bytes=60)
    assert open(os.path.join(p, name(0, ".index")), "rb").read() == want
    assert name(0, ".index") in rewritten_at(kfx, p, "2.0", 60)


def test_follower_multi_batch_appends_before_and_after_41(tmp_path, kfx):
    bs = batches(12)
    appends = [bs[i:i + 3] for i in range(0, 12, 3)]
    p40 = partition(tmp_path / "a", appends, per="append")
    p41 = partition(tmp_path / "b", appends, per="batch")
    accepted(kfx, p40, "4.0")
    accepted(kfx, p41, "4.1")
    accepted(kfx, p41, "4.0")   # 4.0's recovery writes what 4.1's appends write
    assert name(0, ".index") in rewritten(kfx, p40, "4.1")


def test_index_damage_is_still_rewritten_under_every_version(tmp_path, kfx):
    appends = [bs for bs in [batches(8)]]
    p = partition(tmp_path, [[b] for b in appends[0]], per="append")
    idx = os.path.join(p, name(0, ".index"))
    data = bytearray(open(idx, "rb").read())
    data[-1] ^= 0x10  # an entry that points at no batch
    open(idx, "wb").write(bytes(data))
    for v in ("1.1", "2.8", "3.6", "4.0", "4.2"):
        assert rewritten(kfx, p, v) == [name(0, ".index")]


def _two_segments(tmp_path, rp_at_second=True):
    """t-0 with segments 0 and 40 (indexes as recovery writes them), the recovery point at 40."""
    logs = tmp_path / "logs"
    d = logs / "t-0"
    d.mkdir(parents=True)
    first, second = batches(8), batches(4, base=40)
    for base, bs in ((0, first), (40, second)):
        log, idx, tidx = broker_files([[b] for b in bs], per="batch")
        for suf, data in ((".log", log), (".index", idx), (".timeindex", tidx)):
            (d / name(base, suf)).write_bytes(data)
    (d / name(40, ".snapshot")).write_bytes(ProducerState().to_snapshot())
    (d / name(60, ".snapshot")).write_bytes(ProducerState().to_snapshot())
    (logs / "recovery-point-offset-checkpoint").write_text("0\n1\nt 0 40\n")
    return str(d)


def test_leftover_swap_recovered_up_to_28_renamed_from_30(tmp_path):
    for version in ("2.8", "3.0"):
        d = _two_segments(tmp_path / version)
        # the cleaner died between .swap and the rename: its swap holds the same batches, and an
        # index .swap of a single entry (what that cleaner's one append made)
        os.rename(os.path.join(d, name(0, ".log")), os.path.join(d, name(0, ".log.swap")))
        stale = offset_index.to_bytes([(39, 0)], 0)
        open(os.path.join(d, name(0, ".index.swap")), "wb").write(stale)
        os.remove(os.path.join(d, name(0, ".index")))
        rep = recover(d, kafka_version=version, backup=False, index_interval_bytes=INTERVAL)
        got = open(os.path.join(d, name(0, ".index")), "rb").read()
        assert os.path.exists(os.path.join(d, name(0, ".log"))) and not any(f.endswith(".swap") for f in os.listdir(d))
        if version == "2.8":   # recovered: the index rebuilt from the batches
            assert got != stale and name(0, ".index") in rep.rebuilt_indexes
        else:                  # renamed as it is
            assert got == stale and rep.rebuilt_indexes == []


def test_corrupt_index_below_recovery_point_rebuilt_up_to_22(tmp_path):
    for version, rebuilt in (("2.2", True), ("2.3", False)):
        d = _two_segments(tmp_path / version)
        tidx = os.path.join(d, name(0, ".timeindex"))
        with open(tidx, "ab") as f:
            f.write(bytes(12))   # a zero entry: its timestamp is below the first (TimeIndex.sanityCheck)
        rep = recover(d, kafka_version=version, dry_run=True, index_interval_bytes=INTERVAL)
        assert (name(0, ".timeindex") in rep.rebuilt_indexes) is rebuilt, (version, rep.rebuilt_indexes)


def test_missing_timeindex_created_empty_in_every_version(tmp_path):
    """From 0.10.1 (KIP-33) on; 0.10.0 has no time index and creates none (issue 51)."""
    for version in ("0.10.1", "2.2", "3.4", "4.2"):
        d = _two_segments(tmp_path / version)
        os.remove(os.path.join(d, name(0, ".timeindex")))
        recover(d, kafka_version=version, backup=False, index_interval_bytes=INTERVAL)
        assert open(os.path.join(d, name(0, ".timeindex")), "rb").read() == b""
    d = _two_segments(tmp_path / "0.10.0")
    os.remove(os.path.join(d, name(0, ".timeindex")))
    recover(d, kafka_version="0.10.0", backup=False, index_interval_bytes=INTERVAL)
    assert not os.path.exists(os.path.join(d, name(0, ".timeindex")))


def test_producers_below_log_start_kept_from_24_and_stray_snapshots_removed_from_28(tmp_path):
    for version in ("2.3", "2.4", "2.7", "2.8"):
        d = _two_segments(tmp_path / version)
        snap = os.path.join(d, name(60, ".snapshot"))
        gone = ProducerEntry(producer_id=7, epoch=0, last_sequence=4, last_offset=-5 + 0, offset_delta=4,
                             timestamp=T0, coordinator_epoch=-1, current_txn_first_offset=-1)
        open(snap, "wb").write(snapshot_bytes([gone]))   # a producer whose batches all lie below the log start
        stray = os.path.join(d, name(20, ".snapshot"))
        open(stray, "wb").write(ProducerState().to_snapshot())
        rep = recover(d, kafka_version=version, dry_run=True, index_interval_bytes=INTERVAL)
        acted = {os.path.basename(a.file): a.action for a in rep.actions}
        assert (name(60, ".snapshot") in acted) is (version == "2.3"), (version, acted)
        assert (acted.get(name(20, ".snapshot")) == "delete") is (version == "2.8"), (version, acted)


def test_cleaner_drops_tombstones_by_segment_mtime_up_to_30(tmp_path):
    """Clean up to offset 3 already (cleaner-offset-checkpoint); segment 0, with a tombstone, was last
    modified long before the last clean segment: up to 3.0 its tombstone goes (the mtime rule), from
    3.1 it stays and gets a delete horizon stamped in its batch (KIP-534)."""
    ret = 1000
    for version, removed in (("3.0", True), ("3.1", False)):
        logs = tmp_path / version
        d = logs / "t-0"
        d.mkdir(parents=True)
        segs = {0: build_v2([Record(0, T0, b"a", b"1"), Record(1, T0, b"b", None)], base_offset=0),
                2: build_v2([Record(2, T0, b"a", b"2")], base_offset=2),
                3: build_v2([Record(3, T0, b"c", b"3")], base_offset=3),
                4: build_v2([Record(4, T0, b"d", b"4")], base_offset=4)}
        for base, b in segs.items():
            log, idx, tidx = broker_files([[b]], per="batch")
            for suf, data in ((".log", log), (".index", idx), (".timeindex", tidx)):
                (d / name(base, suf)).write_bytes(data)
        (logs / "cleaner-offset-checkpoint").write_text("0\n1\nt 0 3\n")
        now = T0 + 10 * ret
        for base, age in ((0, 5 * ret), (2, 0), (3, 0), (4, 0)):
            os.utime(d / name(base, ".log"), ((now - age) / 1000, (now - age) / 1000))
        rep = compact(str(d), CompactOptions(now=now, delete_retention_ms=ret, kafka_version=version))
        assert rep.kafka.low == tuple(int(x) for x in version.split("."))
        assert rep.rounds and (rep.stats.tombstones_removed == 1) is removed, (version, rep.to_json())
        horizons = [b.delete_horizon_ms for f in sorted(os.listdir(d)) if f.endswith(".log")
                    for b in iter_batches(str(d / f)) if b.delete_horizon_ms is not None]
        assert horizons == ([] if removed else [now + ret])


def test_producer_below_a_moved_log_start_evicted_up_to_23(tmp_path):
    """DeleteRecords moved the log start past producer 5's only batch: a 2.3 load evicts it from the
    state (and the snapshot recovery writes), a 2.4 one keeps it until it expires (KAFKA-7190)."""
    from kafkaforensics.log.producer_state import read_snapshot
    for version, kept in (("2.3", False), ("2.4", True)):
        logs = tmp_path / version
        d = logs / "t-0"
        d.mkdir(parents=True)
        bs = [build_v2([Record(i * 5 + j, T0 + i, b"k", b"v") for j in range(5)], base_offset=i * 5,
                       producer=BatchProducer(producer_id=5 if i == 0 else 6, producer_epoch=0, base_sequence=0 if i < 2 else (i - 1) * 5))
              for i in range(4)]
        log, idx, tidx = broker_files([[b] for b in bs], per="batch")
        for suf, data in ((".log", log), (".index", idx), (".timeindex", tidx)):
            (d / name(0, suf)).write_bytes(data)
        (logs / "log-start-offset-checkpoint").write_text("0\n1\nt 0 10\n")
        recover(str(d), kafka_version=version, backup=False, index_interval_bytes=INTERVAL)
        pids = {e.producer_id for e in read_snapshot((d / name(20, ".snapshot")).read_bytes())}
        assert pids == ({5, 6} if kept else {6}), version


def test_producer_below_the_log_start_kept_until_it_expires_from_24(tmp_path):
    """From 2.4 a producer below the log start stays in the snapshot recovery writes until it expires
    at ``now`` (ProducerStateManager.isProducerExpired): after transactional.id.expiration.ms (7 days)
    up to 3.3, producer.id.expiration.ms (1 day) from 3.4 (KIP-854); 2.3 evicts it whatever the clock."""
    from kafkaforensics.log.producer_state import read_snapshot
    day = 86_400_000
    cases = (("2.3", T0 + 1, False), ("2.4", T0 + 2 * day, True), ("2.4", T0 + 8 * day, False),
             ("3.3", T0 + 2 * day, True), ("3.4", T0 + 2 * day, False), ("3.4", T0 + day - 1, True))
    for i, (version, now, kept) in enumerate(cases):
        logs = tmp_path / str(i)
        d = logs / "t-0"
        d.mkdir(parents=True)
        bs = [build_v2([Record(k * 5 + j, T0 + k, b"k", b"v") for j in range(5)], base_offset=k * 5,
                       producer=BatchProducer(producer_id=5 if k == 0 else 6, producer_epoch=0, base_sequence=0 if k < 2 else (k - 1) * 5))
              for k in range(4)]
        log, idx, tidx = broker_files([[b] for b in bs], per="batch")
        for suf, data in ((".log", log), (".index", idx), (".timeindex", tidx)):
            (d / name(0, suf)).write_bytes(data)
        (logs / "log-start-offset-checkpoint").write_text("0\n1\nt 0 10\n")
        recover(str(d), LoadOptions(now=now), kafka_version=version, backup=False, index_interval_bytes=INTERVAL)
        pids = {e.producer_id for e in read_snapshot((d / name(20, ".snapshot")).read_bytes())}
        # producer 6's last batch (offset 19, at T0+3) is above the log start: never expired at load
        assert pids == ({5, 6} if kept else {6}), (version, now)
        # analyze calls neither the kept producer below the log start nor its absence a problem
        rep = analyze([str(d)], AnalyzeOptions(now=now))
        assert not [f for f in rep.findings if f.kind.startswith("snapshot")], (version, now, rep.findings)


def test_snapshot_entries_in_another_order_are_kept(tmp_path, kfx):
    """Kafka writes a snapshot's entries in its map's order: the same entries in any order are the
    same snapshot; a changed entry is not."""
    from kafkaforensics.log.producer_state import read_snapshot
    d = tmp_path / "logs" / "t-0"
    d.mkdir(parents=True)
    bs = [build_v2([Record(i * 5 + j, T0 + i, b"k", b"v") for j in range(5)], base_offset=i * 5,
                   producer=BatchProducer(producer_id=9 - i, producer_epoch=0, base_sequence=0)) for i in range(3)]
    log, idx, tidx = broker_files([[b] for b in bs], per="batch")
    for suf, data in ((".log", log), (".index", idx), (".timeindex", tidx)):
        (d / name(0, suf)).write_bytes(data)
    state = ProducerState()
    for b in bs:
        state.append(parse_header(b, 0))
    entries = read_snapshot(state.to_snapshot())
    assert [e.producer_id for e in entries] == [7, 8, 9]
    (d / name(15, ".snapshot")).write_bytes(snapshot_bytes(entries[::-1]))
    r = kfx("recover", str(d), "--dry-run", "--json", "--index-interval-bytes", INTERVAL)
    assert r.exit_code == 0 and json.loads(r.stdout)["actions"] == []
    entries[0].last_sequence += 1
    (d / name(15, ".snapshot")).write_bytes(snapshot_bytes(entries[::-1]))
    r = kfx("recover", str(d), "--dry-run", "--json", "--index-interval-bytes", INTERVAL)
    assert r.exit_code == 1 and [os.path.basename(a["file"]) for a in json.loads(r.stdout)["actions"]] == [name(15, ".snapshot")]


def test_compact_cli_takes_the_version(tmp_path, kfx):
    d = tmp_path / "logs" / "t-0"
    d.mkdir(parents=True)
    log, idx, tidx = broker_files([[b] for b in batches(3)], per="batch")
    for suf, data in ((".log", log), (".index", idx), (".timeindex", tidx)):
        (d / name(0, suf)).write_bytes(data)
    out = json.loads(kfx("compact", *COMPACTED, str(d), "--dry-run", "--json", "--kafka-version", "3.0").stdout)
    assert out["kafkaVersion"]["rules"]["cleaner-tombstones"] == "segment-mtime"
    assert kfx("compact", *COMPACTED, str(d), "--dry-run", "--kafka-version", "two").exit_code == 2
