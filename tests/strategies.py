"""Hypothesis strategies for records and batches shared by the property tests."""
from hypothesis import strategies as st

from kafkaforensics.records.batch import Record

small_bytes = st.one_of(st.none(), st.binary(max_size=64))
#: sometimes a value over 8 KiB, so that record and value lengths take three-byte varints
values = st.one_of(small_bytes, st.tuples(st.binary(min_size=1, max_size=8), st.integers(8200, 8300)).map(
    lambda t: (t[0] * t[1])[:t[1]]))
header = st.tuples(st.text(max_size=8), st.one_of(st.none(), st.binary(max_size=16)))


@st.composite
def records(draw, base_offset=0, max_records=12):
    n = draw(st.integers(1, max_records))
    ts0 = draw(st.integers(0, 2**41))
    offs = sorted(draw(st.sets(st.integers(0, 3 * n), min_size=n, max_size=n)))
    out = []
    for o in offs:
        out.append(Record(base_offset + o, ts0 + draw(st.integers(-10**6, 10**6)), draw(small_bytes),
                          draw(values), draw(st.lists(header, max_size=3))))
    return out


batch_kwargs = st.fixed_dictionaries({
    "codec": st.integers(0, 4),
    "partition_leader_epoch": st.integers(-1, 2**31 - 1),
    "producer_id": st.integers(-1, 2**62),
    "producer_epoch": st.integers(-1, 2**15 - 1),
    "base_sequence": st.integers(-1, 2**31 - 1),
    "transactional": st.booleans(),
})
