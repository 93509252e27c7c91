"""OffsetMap.put_many / get_many (numpy, many keys at once) against put / get one key at a time:
the same refusals where the map fills, the same latest offset for every key, the same size."""
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from kafkaforensics.repair import md5_many
from kafkaforensics.repair.offset_map import OffsetMap, digests, span_digests

@settings(max_examples=400, deadline=None)
@given(st.lists(st.integers(0, 10**6), min_size=1, max_size=60, unique=True), st.integers(5, 150),
       st.integers(16, 40), st.randoms(use_true_random=False), st.data())
def test_many_at_once_equals_one_at_a_time(distinct, length, slots, rnd, data):
    ks = [b"k%d" % distinct[i % len(distinct)] for i in range(length)]  # each key, then repeats
    rnd.shuffle(ks)
    one, many = OffsetMap(slots), OffsetMap(slots)
    offsets = list(range(1000, 1000 + len(ks)))
    want = []
    for k, o in zip(ks, offsets):
        if not one.put(k, o):
            break
        want.append(o)
    # the same puts in chunks of drawn sizes, now and then one by one through put()
    i = 0
    while i < len(ks):
        n = data.draw(st.integers(1, 40))
        if data.draw(st.booleans()) and n == 1:
            ok = many.put(ks[i], offsets[i])
            took = 1 if ok else 0
        else:
            chunk = ks[i:i + n]
            took = many.put_many(digests(chunk), np.array(offsets[i:i + n]))
        if took < min(n, len(ks) - i):
            i += took
            break
        i += took
    assert i == len(want)  # refused at the same put (or none refused)
    assert many.size == one.size and many.full == one.full
    probe = sorted(set(ks)) + [b"never-put", b"\x00" * 4]
    assert [many.get(k) for k in probe] == [one.get(k) for k in probe]
    assert many.get_many(digests(probe)).tolist() == [one.get(k) for k in probe]


def test_put_many_refuses_where_put_does():
    """A 16-slot map takes 14 keys: in chunks of any size, the 15th new key is refused, keys
    already in the map are still updated before it, and nothing after it is put."""
    ks = [b"k%d" % i for i in range(14)] + [b"k3", b"k20", b"k5"]
    for chunk in range(1, len(ks) + 1):
        m, i = OffsetMap(16), 0
        while i < len(ks):
            took = m.put_many(digests(ks[i:i + chunk]), np.arange(i, min(i + chunk, len(ks))))
            i += took
            if took < min(chunk, len(ks) - i + took):
                break
        assert i == 15 and m.size == 14 and m.full
        assert m.get(b"k3") == 14 and m.get(b"k20") == -1 and m.get(b"k5") == 5


def test_digests_are_the_md5_put_uses():
    import hashlib
    d = digests([b"a", b"", b"key-1"])
    assert d.tobytes() == b"".join(hashlib.md5(k).digest() for k in (b"a", b"", b"key-1"))
    assert digests([]).shape == (0, 2)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.binary(max_size=80), max_size=60), st.binary(max_size=20), st.sampled_from([1, 7, 1 << 14]),
       st.randoms(use_true_random=False))
def test_span_digests_are_hashlib_md5(keys, gap, chunk, rnd):
    """Keys anywhere in a buffer (gaps between them, in any order), short ones hashed by the
    numpy MD5 (in chunks that split the keys anywhere), long ones by hashlib: the same digests."""
    import hashlib

    md5_many.CHUNK = chunk
    try:
        buf, start = bytearray(), []
        for k in keys:
            buf += gap
            start.append(len(buf))
            buf += k
        order = list(range(len(keys)))
        rnd.shuffle(order)
        got = span_digests(bytes(buf), np.array([start[i] for i in order], dtype=np.int64),
                           np.array([len(keys[i]) for i in order], dtype=np.int64))
        assert got.tobytes() == b"".join(hashlib.md5(keys[i]).digest() for i in order)
    finally:
        md5_many.CHUNK = 1 << 14


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(0, 10**6), min_size=1, max_size=300), st.integers(16, 400), st.data())
def test_growing_map_equals_one_sized_for_it(keys, max_slots, data):
    """A map that starts at 16 slots and doubles up to ``max_slots`` refuses the same key as one made
    with ``max_slots`` from the start, and answers the same for every key (issue 28: the table follows
    the keys put, never a record count a header claims)."""
    ks = [b"k%d" % k for k in keys]
    grown, whole = OffsetMap(16, max_slots), OffsetMap(max_slots)
    i = 0
    while i < len(ks):
        n = data.draw(st.integers(1, 50))
        took = grown.put_many(digests(ks[i:i + n]), np.arange(i, min(i + n, len(ks))))
        i += took
        if took < min(n, len(ks) - i + took):
            break
    j = 0
    for j, k in enumerate(ks):
        if not whole.put(k, j):
            break
    else:
        j = len(ks)
    assert i == j and grown.size == whole.size and grown.full == whole.full
    assert grown.slots <= whole.slots
    probe = sorted(set(ks)) + [b"never-put"]
    assert [grown.get(k) for k in probe] == [whole.get(k) for k in probe]


def test_map_memory_follows_the_keys_put():
    m = OffsetMap(16, 1 << 27)  # a 3 GiB cap: never allocated for three keys
    for k in (b"a", b"b", b"c"):
        assert m.put(k, 1)
    assert m.memory_bytes < 1024
