"""The window CRC check (header_run.walk_window): one CRC-32C call over a rewritten copy of a window
judges its batches as one CRC call a batch does -- it passes every window of valid batches, fails
every window with damage in CRC-covered bytes or stored CRCs, ignores the header bytes the CRC
does not cover, and leaves positions and header rows as the batches have them."""
import random

import numpy as np
from crc32c import crc32c
from hypothesis import given, settings, strategies as st

from kafkaforensics.builder import build_v2
from kafkaforensics.header_run import HEADER_DTYPE, crcs_ok, walk_window
from specs import record_batch as R
from tests.corruption import batches as sample_batches
from tests.strategies import batch_kwargs, records


def _per_batch(raw: bytes, positions) -> list:
    """The reference: each batch's stored CRC against crc32c over its covered bytes."""
    out = []
    for p in positions:
        length = int.from_bytes(raw[p + R.BATCH_LENGTH_OFFSET:p + R.BATCH_LENGTH_OFFSET + 4], "big")
        stored = int.from_bytes(raw[p + R.CRC_OFFSET:p + R.CRC_OFFSET + 4], "big")
        out.append(crc32c(raw[p + R.ATTRIBUTES_OFFSET:p + R.LOG_OVERHEAD + length]) == stored)
    return out


def _walk(raw: bytes, max_bytes: int | None = None):
    copy = memoryview(bytearray(len(raw) + 4))
    copy[:len(raw)] = raw
    return walk_window(copy, len(raw), 2**31 - 1, len(raw) if max_bytes is None else max_bytes)


@st.composite
def window(draw):
    """Valid v2 batches of drawn records and codecs, back to back, and where each starts."""
    out, base = [], draw(st.integers(0, 2**40))
    for _ in range(draw(st.integers(1, 7))):
        recs = draw(records(base_offset=base, max_records=4))
        out.append(build_v2(recs, base_offset=base, **draw(batch_kwargs)))
        base = recs[-1].offset + 1
    starts = np.cumsum([0] + [len(b) for b in out[:-1]]).tolist()
    return bytearray(b"".join(out)), starts


@settings(max_examples=300, deadline=None)
@given(w=window(), data=st.data())
def test_window_check_equals_per_batch(w, data):
    raw, starts = w
    # damage: flips in CRC-covered bytes or in stored CRCs (what the check must see), and in the
    # header bytes the CRC does not cover (what it must not see); any number, in any batches
    for _ in range(data.draw(st.integers(0, 4))):
        k = data.draw(st.integers(0, len(starts) - 1))
        end = starts[k + 1] if k + 1 < len(starts) else len(raw)
        where = data.draw(st.sampled_from(["covered", "crc", "outside"]))
        if where == "covered":
            at = data.draw(st.integers(starts[k] + R.ATTRIBUTES_OFFSET, end - 1))
        elif where == "crc":
            at = starts[k] + R.CRC_OFFSET + data.draw(st.integers(0, 3))
        else:  # baseOffset or partitionLeaderEpoch (batchLength and magic would change the walk)
            at = starts[k] + data.draw(st.sampled_from(list(range(0, 8)) + list(range(12, 16))))
        raw[at] ^= data.draw(st.integers(1, 255))
    tail = data.draw(st.binary(max_size=70))  # a partial batch or garbage after the window's last
    buf = bytes(raw) + tail
    stop, declined, at, rows, ok = _walk(buf, len(raw))
    assert at.tolist() == starts and stop == len(raw) and not declined
    assert rows.tobytes() == b"".join(buf[p:p + R.HEADER_SIZE] for p in starts)
    want = _per_batch(buf, starts)
    assert ok == all(want)
    assert crcs_ok(buf, at, rows).tolist() == want


def test_window_of_real_batches_and_two_bad_ones():
    """The corruption corpus's batches (five codecs, transactions, control markers) pass as a
    window; two damaged batches fail it, and the batch-by-batch check names exactly those two."""
    bs = sample_batches(seed=3, n=40)
    raw = bytearray(b"".join(bs))
    starts = np.cumsum([0] + [len(b) for b in bs[:-1]]).tolist()
    _, _, at, rows, ok = _walk(bytes(raw))
    assert ok and at.tolist() == starts
    rnd = random.Random(5)
    for trial in range(200):
        bad = bytearray(raw)
        hit = sorted(rnd.sample(range(len(bs)), 2))
        for k in hit:
            p = starts[k] + rnd.randrange(R.ATTRIBUTES_OFFSET, len(bs[k]))
            bad[p] ^= 1 << rnd.randrange(8)
        _, _, at, rows, ok = _walk(bytes(bad))
        assert not ok
        assert np.flatnonzero(~crcs_ok(bytes(bad), at, rows)).tolist() == hit


def test_window_walk_stops_where_the_batch_walk_does():
    """A batch of another magic, a length out of bounds, a batch cut by the window's end, and
    ``max_bytes``: the walk stops before them (declined for the first two), and the rows it
    returns are the batches' headers as stored."""
    bs = sample_batches(seed=4, n=6)
    raw = b"".join(bs)
    starts = np.cumsum([0] + [len(b) for b in bs[:-1]]).tolist()
    third = starts[2]
    legacy = bytearray(raw)
    legacy[third + R.MAGIC_OFFSET] = 1
    stop, declined, at, _, ok = _walk(bytes(legacy))
    assert (stop, declined, at.tolist(), ok) == (third, True, starts[:2], True)
    short = bytearray(raw)
    short[third + R.BATCH_LENGTH_OFFSET:third + R.BATCH_LENGTH_OFFSET + 4] = (10).to_bytes(4, "big")
    assert _walk(bytes(short))[:2] == (third, True)
    stop, declined, at, _, _ = _walk(raw[:starts[3] + 30])
    assert (stop, declined, at.tolist()) == (starts[3], False, starts[:3])
    stop, declined, at, _, _ = _walk(raw, max_bytes=starts[2])
    assert (stop, declined, at.tolist()) == (starts[2], False, starts[:2])
    stop, declined, at, rows, ok = _walk(raw[:30])
    assert (stop, declined, at, rows, ok) == (0, False, None, None, True)
    rows = _walk(raw)[3]
    assert rows.view(HEADER_DTYPE).ravel()["baseOffset"].tolist() == [
        int.from_bytes(b[:8], "big") for b in bs]
