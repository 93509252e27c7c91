"""KIP-848: librdkafka with ``group.protocol=consumer`` joins through ConsumerGroupHeartbeat, gets
its partitions, shares them with a second member, commits, and a restart resumes from the commits."""
import time

from kafkaforensics.broker.server import BrokerThread
from specs import kafka_errors as E
from tests.test_serve import _multi


def _consumer(b, group):
    from confluent_kafka import Consumer
    c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": group, "group.protocol": "consumer",
                  "auto.offset.reset": "earliest", "enable.auto.commit": False})
    c.subscribe(["multi"])
    return c


def _poll_until(consumers, done, limit=30.0):
    got = {id(c): [] for c in consumers}
    end = time.monotonic() + limit
    while time.monotonic() < end and not done(got):
        for c in consumers:
            m = c.poll(0.2)
            if m is not None and not m.error():
                got[id(c)].append((m.partition(), m.offset()))
    return got


def test_consumer_protocol_members_share_commit_and_resume(tmp_path):
    d = _multi(tmp_path, partitions=4, n=10)
    with BrokerThread(d, state_path=str(tmp_path / "state.json")) as b:
        b.broker.coordinator.kip848.heartbeat_ms = 300  # group.consumer.heartbeat.interval.ms, short for the test
        a = _consumer(b, "g848")
        got = _poll_until([a], lambda g: len(g[id(a)]) == 40)
        assert sorted(got[id(a)]) == [(p, o) for p in range(4) for o in range(10)]   # alone: every partition
        second = _consumer(b, "g848")
        end = time.monotonic() + 30
        while time.monotonic() < end:   # the first member gives up half, the second gets it
            for c in (a, second):
                c.poll(0.2)
            if len(a.assignment()) == 2 and len(second.assignment()) == 2:
                break
        parts = sorted(tp.partition for c in (a, second) for tp in c.assignment())
        assert parts == [0, 1, 2, 3]
        from confluent_kafka import TopicPartition
        a.commit(offsets=[TopicPartition("multi", tp.partition, 7) for tp in a.assignment()], asynchronous=False)
        groups = {g.group_id: g.group_type for g in b.broker.coordinator.list_groups(5, {}).groups}
        assert groups["g848"] == "consumer"
        from confluent_kafka.admin import AdminClient
        admin = AdminClient({"bootstrap.servers": b.bootstrap})   # ConsumerGroupDescribe
        desc = admin.describe_consumer_groups(["g848"])["g848"].result(15)
        assert len(desc.members) == 2 and sorted(tp.partition for m in desc.members
                                                 for tp in m.assignment.topic_partitions) == [0, 1, 2, 3]
        committed = sorted(tp.partition for tp in a.assignment())
        a.close()
        second.close()
        c = _consumer(b, "g848")
        got = _poll_until([c], lambda g: len(g[id(c)]) >= 3 * len(committed) + 10 * (4 - len(committed)))
        firsts = {}
        for p, o in got[id(c)]:
            firsts.setdefault(p, o)
        assert all(firsts[p] == 7 for p in committed) and all(firsts[p] == 0 for p in set(range(4)) - set(committed))
        c.close()


def test_heartbeat_errors_sans_io():
    from kafkaforensics.broker.group_coordinator import GroupCoordinator
    g = GroupCoordinator(None)
    topics = {"t": ("AAAAAAAAAAAAAAAAAAAAAQ", 3)}
    r = g.kip848.heartbeat(0, {"GroupId": "g", "MemberId": "m1", "MemberEpoch": 0, "SubscribedTopicNames": ["t"]},
                             "c", topics)
    assert r.error_code == 0 and r.member_id == "m1" and r.assignment.topic_partitions[0].partitions == [0, 1, 2]
    assert g.kip848.heartbeat(0, {"GroupId": "g", "MemberId": "zz", "MemberEpoch": 4}, "c",
                                topics).error_code == E.UNKNOWN_MEMBER_ID
    assert g.kip848.heartbeat(0, {"GroupId": "g", "MemberId": "m1", "MemberEpoch": 99}, "c",
                                topics).error_code == E.FENCED_MEMBER_EPOCH
    # a second member: m1 keeps what it holds until its next heartbeat gives it up
    r2 = g.kip848.heartbeat(0, {"GroupId": "g", "MemberId": "m2", "MemberEpoch": 0, "SubscribedTopicNames": ["t"]},
                              "c", topics)
    assert r2.assignment.topic_partitions == []
    r1 = g.kip848.heartbeat(0, {"GroupId": "g", "MemberId": "m1", "MemberEpoch": r.member_epoch}, "c", topics)
    assert r1.assignment.topic_partitions[0].partitions == [0, 2]
    r2 = g.kip848.heartbeat(0, {"GroupId": "g", "MemberId": "m2", "MemberEpoch": r2.member_epoch}, "c", topics)
    assert r2.assignment.topic_partitions[0].partitions == [1]
    assert g.kip848.heartbeat(0, {"GroupId": "g", "MemberId": "m1", "MemberEpoch": -1}, "c", topics).member_epoch == -1


def test_consumer_protocol_commits_land_in_consumer_offsets_and_read_back(tmp_path, kfx):
    """A KIP-848 member's commits, on a --writable replay, are __consumer_offsets records that
    `kfx groups` and `kfx dump --offsets-decoder` read back (issue 17's real-client round trip)."""
    import json
    import os
    from confluent_kafka import TopicPartition
    from kafkaforensics.broker.group_coordinator import offsets_partition_for
    from kafkaforensics.inspect.groups import committed_offsets
    d = _multi(tmp_path, partitions=2, n=10)
    with BrokerThread(d, state_path=str(tmp_path / "state.json"), writable=True) as b:
        b.broker.coordinator.kip848.heartbeat_ms = 300
        c = _consumer(b, "g848w")
        got = _poll_until([c], lambda g: len(g[id(c)]) == 20)
        assert len(got[id(c)]) == 20
        c.commit(offsets=[TopicPartition("multi", 0, 4), TopicPartition("multi", 1, 9)], asynchronous=False)
        c.close()
    rows = {(r["group"], r["topic"], r["partition"]): r for r in committed_offsets(d)}
    assert rows[("g848w", "multi", 0)]["offset"] == 4 and rows[("g848w", "multi", 1)]["offset"] == 9
    assert rows[("g848w", "multi", 0)]["lag"] == 6
    seg = os.path.join(d, f"__consumer_offsets-{offsets_partition_for('g848w')}", "00000000000000000000.log")
    r = kfx("dump", seg, "--offsets-decoder", "--format", "json")
    decoded = [rec["decoded"] for line in r.stdout.splitlines() for rec in json.loads(line)["records"]]
    commits = {(x["key"]["data"]["topic"], x["key"]["data"]["partition"]): x["value"]["data"]["offset"]
               for x in decoded if x["key"].get("kind") == "offset_commit" and x["key"]["data"]["group"] == "g848w"}
    assert commits == {("multi", 0): 4, ("multi", 1): 9}
