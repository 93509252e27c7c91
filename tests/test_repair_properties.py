"""Properties of the repairs: random damage, and failures injected between every step."""
import os
import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafkaforensics import fsutil
from kafkaforensics.repair.recovery import recover
from kafkaforensics.repair.salvage import salvage
from kafkaforensics.log.segment import iter_batches
from kafkaforensics.inspect.verify import verify
from specs import legacy as L
from specs import record_batch as R
from tests.corruption import INTERVAL, layout, make_partition

SETTINGS = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                           HealthCheck.too_slow])


def _batch_bytes(part):
    out = []
    for s, _ in layout(part):
        data = open(s, "rb").read()
        out += [data[b.position:b.position + b.size] for b in iter_batches(s)]
    return out


def _records(part):
    return [(r.key, r.value, r.timestamp) for s, _ in layout(part) for b in iter_batches(s) for r in b.records()]


@SETTINGS
@given(st.data())
def test_random_damage_recover_keeps_the_longest_valid_prefix(tmp_path_factory, data):
    base = tmp_path_factory.mktemp("prop")
    part = make_partition(base / "p-0", seed=data.draw(st.integers(0, 5)))
    original = _batch_bytes(part)
    original_records = _records(part)
    lay = layout(part)
    # damage: some bytes of one segment changed, maybe cut, maybe junk appended
    si = data.draw(st.integers(0, len(lay) - 1))
    seg = lay[si][0]
    buf = bytearray(open(seg, "rb").read())
    first_damage = len(buf)
    for _ in range(data.draw(st.integers(1, 4))):
        i = data.draw(st.integers(0, len(buf) - 1))
        new = data.draw(st.integers(0, 255))
        if buf[i] != new:
            buf[i] = new
            first_damage = min(first_damage, i)
    if data.draw(st.booleans()):
        cut = data.draw(st.integers(0, len(buf)))
        buf = buf[:cut]
        first_damage = min(first_damage, cut)
    with open(seg, "wb") as f:
        f.write(bytes(buf))
    # the reference: every whole batch of the damaged segment before the first damaged byte,
    # and every batch of the segments before it, must survive unchanged
    must_keep = [b for b in layout_batches(lay[:si])] + \
        [bytes(buf[p:p + n]) for p, n, _b, _l in lay[si][1] if p + n <= first_damage]
    salvaged = base / "salvaged-0"
    salvage([part], str(salvaged))  # from the damaged input, before recovery
    rep = recover(part, index_interval_bytes=INTERVAL)
    v = verify([part])
    assert v.ok, v.problems
    kept = _batch_bytes(part)
    assert kept[: len(must_keep)] == must_keep
    # nothing was invented: every survivor is an original batch, in the original order (a batch whose
    # damage falls outside the CRC, e.g. in partitionLeaderEpoch, may survive with that change). The
    # survivors are a prefix of the original unless the damage emptied a segment: an empty segment
    # has nothing to truncate, so Kafka's recovery (and ours) keeps the segments after it.
    j = 0
    for i, got in enumerate(kept):
        while j < len(original) and not _outside_crc_only(got, original[j]):
            j += 1
        assert j < len(original), f"surviving batch {i} is no original batch after the ones before it"
        j += 1
    if buf:  # the damaged segment kept some bytes: recovery truncates there and drops what follows
        assert all(_outside_crc_only(g, w) for g, w in zip(kept, original)), "the survivors are no prefix"
    assert recover(part, index_interval_bytes=INTERVAL).actions == []
    # salvage never invents a record: everything it found was in the original log
    got = _records(str(salvaged))
    pool = list(original_records)
    for r in got:
        assert r in pool
        pool.remove(r)


def _outside_crc_only(got: bytes, want: bytes) -> bool:
    """``got`` is ``want`` but for bytes its CRC does not cover: the header fields before the CRC of
    a v2 batch (baseOffset, batchLength, partitionLeaderEpoch, magic), the offset and size of a
    legacy entry; from the CRC on, every byte is the original's."""
    crc_from = R.CRC_OFFSET if want[R.MAGIC_OFFSET] >= 2 else L.CRC_OFFSET
    return len(got) == len(want) and got[crc_from:] == want[crc_from:]


def test_outside_crc_only_tells_a_changed_batch():
    v2 = bytes(R.HEADER_SIZE)[:R.MAGIC_OFFSET] + b"\x02" + bytes(R.HEADER_SIZE - R.MAGIC_OFFSET - 1) + b"records"
    epoch_changed = v2[:R.PARTITION_LEADER_EPOCH_OFFSET] + b"\x00\x00\x00\x07" + v2[R.PARTITION_LEADER_EPOCH_OFFSET + 4:]
    assert _outside_crc_only(v2, v2) and _outside_crc_only(epoch_changed, v2)
    assert not _outside_crc_only(v2[:-1] + b"X", v2)          # a covered byte
    assert not _outside_crc_only(v2[:R.CRC_OFFSET] + b"\x01" + v2[R.CRC_OFFSET + 1:], v2)   # the CRC itself
    assert not _outside_crc_only(v2 + b"more", v2)            # another length


def layout_batches(lay):
    out = []
    for s, batches in lay:
        data = open(s, "rb").read()
        out += [data[p:p + n] for p, n, _b, _l in batches]
    return out


class Crash(Exception):
    pass


def _with_crash_after(n):
    calls = {"n": 0}

    def hook(name):
        calls["n"] += 1
        if calls["n"] > n:
            raise Crash(name)
    return hook


def _scenario_truncation(part):
    lay = layout(part)
    with open(lay[2][0], "r+b") as f:
        f.seek(lay[2][1][3][0] + 25)
        f.write(b"\x42\x42")


def _scenario_swap(part):
    lay = layout(part)
    merged = open(lay[0][0], "rb").read() + open(lay[1][0], "rb").read()
    with open(lay[0][0] + ".swap", "wb") as f:
        f.write(merged)
    with open(lay[1][0] + ".deleted", "wb") as f:
        f.write(b"old")
    with open(lay[3][0] + ".cleaned", "wb") as f:
        f.write(b"partial")
    with open(lay[-1][0], "ab") as f:
        f.write(os.urandom(50))


@pytest.mark.parametrize("scenario", [_scenario_truncation, _scenario_swap])
def test_crash_at_every_step_then_recover_is_consistent(tmp_path, scenario):
    ref = make_partition(tmp_path / "ref-0")
    scenario(ref)
    recover(ref, index_interval_bytes=INTERVAL, backup=False)
    expected = {n: open(os.path.join(ref, n), "rb").read() for n in os.listdir(ref) if n.endswith(".log")}
    expected_records = _records(ref)
    steps = 0
    while True:
        part = make_partition(tmp_path / f"run{steps}-0")
        scenario(part)
        fsutil.FAULT_HOOK = _with_crash_after(steps)
        try:
            recover(part, index_interval_bytes=INTERVAL, backup_dir=str(tmp_path / f"bk{steps}"))
            finished = True
        except Crash:
            finished = False
        finally:
            fsutil.FAULT_HOOK = None
        # whatever step it died at, the next run ends in the same consistent state
        recover(part, index_interval_bytes=INTERVAL, backup_dir=str(tmp_path / f"bk{steps}b"))
        assert verify([part]).ok
        got = {n: open(os.path.join(part, n), "rb").read() for n in os.listdir(part) if n.endswith(".log")}
        assert got == expected, f"crash after {steps} steps"
        assert _records(part) == expected_records
        assert not any(n.endswith((".kfx-tmp", ".swap", ".cleaned", ".deleted")) for n in os.listdir(part))
        if finished:
            break
        steps += 1
    assert steps > 5  # the scenario really had several steps to crash between
