"""The sans-IO transaction coordinator (kafkaforensics/broker/txn_coordinator.py) by itself: Kafka's state
machine, the v1 and v2 flows, fencing, retries, epoch exhaustion and timeouts -- no broker, no sockets."""
from kafkaforensics.broker.txn_coordinator import EXHAUSTED_EPOCH, TransactionCoordinator, TxnState
from specs import kafka_errors as E

T0 = ("t", 0)
T1 = ("t", 1)


class Clock:
    def __init__(self):
        self.now = 1_000.0

    def __call__(self):
        return self.now


def coordinator(clock=None):
    ids = iter(range(1000, 2000))
    return TransactionCoordinator(lambda: next(ids), clock=clock or Clock())


def test_v1_commit_writes_one_marker_per_partition_in_the_same_epoch():
    c = coordinator()
    o = c.init_producer_id("a", 60000)
    pid, epoch = o.producer_id, o.producer_epoch
    assert (o.error, pid, epoch) == (E.NONE, 1000, 0)
    assert c.add_partitions("a", pid, epoch, [T0, T1]) == E.NONE
    assert c.verify("a", pid, epoch, T0) == E.NONE and c.verify("a", pid, epoch, ("t", 2)) == E.INVALID_TXN_STATE
    end = c.end_txn("a", pid, epoch, commit=True)
    assert end.error == E.NONE and end.producer_epoch == epoch
    (m,) = end.markers
    assert (m.producer_id, m.producer_epoch, m.commit, m.partitions) == (pid, epoch, True, (T0, T1))
    assert c.txns["a"].state == TxnState.COMPLETE_COMMIT
    assert c.end_txn("a", pid, epoch, commit=True).markers == ()             # a retry: nothing more written
    assert c.end_txn("a", pid, epoch, commit=False).error == E.INVALID_TXN_STATE
    assert c.verify("a", pid, epoch, T0) == E.INVALID_TXN_STATE              # no transaction open now


def test_v2_each_end_bumps_the_epoch_and_markers_carry_it():
    c = coordinator()
    o = c.init_producer_id("b", 60000)
    pid, epoch = o.producer_id, o.producer_epoch
    assert c.add_partitions("b", pid, epoch, [T0], v2=True) == E.NONE       # a Produce v12 starts it
    end = c.end_txn("b", pid, epoch, commit=False, v2=True)
    assert (end.producer_id, end.producer_epoch) == (pid, epoch + 1)
    assert end.markers[0].producer_epoch == epoch + 1 and not end.markers[0].commit
    retry = c.end_txn("b", pid, epoch, commit=False, v2=True)
    assert (retry.error, retry.producer_epoch, retry.markers) == (E.NONE, epoch + 1, ())
    assert c.add_partitions("b", pid, epoch, [T0], v2=True) == E.PRODUCER_FENCED
    assert c.end_txn("b", pid, epoch, commit=True, v2=True).error == E.PRODUCER_FENCED


def test_an_exhausted_epoch_rotates_the_producer_id():
    c = coordinator()
    o = c.init_producer_id("c", 60000)
    t = c.txns["c"]
    t.producer_epoch = EXHAUSTED_EPOCH - 1
    c.add_partitions("c", o.producer_id, t.producer_epoch, [T0], v2=True)
    end = c.end_txn("c", o.producer_id, EXHAUSTED_EPOCH - 1, commit=True, v2=True)
    assert end.markers[0].producer_epoch == EXHAUSTED_EPOCH                  # the markers: the old id, epoch + 1
    assert (end.producer_id, end.producer_epoch) == (1001, 0)                # the producer: a new id
    again = c.init_producer_id("c", 60000)
    assert (again.producer_id, again.producer_epoch) == (1001, 1)


def test_init_fences_an_open_transaction_and_checks_the_expected_producer():
    c = coordinator()
    o = c.init_producer_id("d", 60000)
    c.add_partitions("d", o.producer_id, 0, [T1])
    new = c.init_producer_id("d", 60000)
    assert new.markers[0].producer_epoch == 1 and not new.markers[0].commit   # aborted in the fenced epoch
    assert (new.producer_id, new.producer_epoch) == (o.producer_id, 2)
    assert c.init_producer_id("d", 60000, expected_pid=999, expected_epoch=2).error == E.PRODUCER_FENCED
    assert c.init_producer_id("d", 60000, expected_pid=o.producer_id, expected_epoch=2).error == E.NONE
    assert c.init_producer_id("d", 0).error == E.INVALID_TRANSACTION_TIMEOUT
    assert c.init_producer_id("", 60000).error == E.INVALID_REQUEST
    assert c.add_partitions("nope", 1, 0, [T0]) == E.INVALID_PRODUCER_ID_MAPPING


def test_a_transaction_open_past_its_timeout_is_aborted_and_its_producer_fenced():
    clock = Clock()
    c = coordinator(clock)
    o = c.init_producer_id("e", 5000)
    c.add_partitions("e", o.producer_id, 0, [T0])
    c.add_offsets("e", "g", [("t", 0, 5, -1, "")])
    clock.now += 4
    assert c.expire() == []
    clock.now += 2
    (m,) = c.expire()
    assert (m.commit, m.producer_epoch, m.partitions, m.offsets) == (False, 1, (T0,), {})
    assert c.end_txn("e", o.producer_id, 0, commit=True).error == E.PRODUCER_FENCED
    assert c.describe()["e"].transaction_state == "CompleteAbort"
