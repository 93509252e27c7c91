"""Topic ids and partition directories as Kafka names them: every served topic has a unique,
stable id; whatever creates a partition dir writes partition.metadata; -delete, -future and -stray
copies never shadow the live partition."""
import os
import shutil

import pytest

from kafkaforensics.inspect.groups import committed_offsets
from kafkaforensics.log.partition import Partition, derived_topic_id, find_partitions, partition_dir_state
from kafkaforensics.broker.replay import ReplayBroker
from kafkaforensics.repair.salvage import salvage
from kafkaforensics.inspect.verify import verify
from tests.conftest import SAMPLE

ZERO = "AAAAAAAAAAAAAAAAAAAAAA"


@pytest.mark.parametrize("name,state", [("orders-0", "live"), ("orders-0.0123abcd-delete", "delete"),
                                        ("orders-0.0123abcd-future", "future"), ("orders-0.0123abcd-stray", "stray"),
                                        ("orders-0-delete", "delete"), ("my-topic-12", "live"), ("orders", None)])
def test_partition_dir_states(name, state):
    assert partition_dir_state(name) == state


def test_derived_ids_are_stable_distinct_and_never_zero():
    import base64
    ids = {derived_topic_id(f"t{i}") for i in range(2000)}
    assert len(ids) == 2000 and ZERO not in ids
    assert derived_topic_id("orders") == derived_topic_id("orders")
    assert not any(i.startswith("-") for i in ids)
    assert all(len(base64.urlsafe_b64decode(i + "==")) == 16 for i in list(ids)[:50])


def test_topics_without_partition_metadata_get_distinct_ids(tmp_path):
    d = tmp_path / "logs"
    shutil.copytree(SAMPLE, d)
    kept = open(d / "orders-0" / "partition.metadata").read()
    for t in ("clients-0", "legacy-0"):
        if os.path.exists(d / t / "partition.metadata"):
            os.remove(d / t / "partition.metadata")
    b = ReplayBroker(str(d))
    ids = {t: parts[0].topic_id for t, parts in b.topics().items()}
    assert len(set(ids.values())) == 3 and ZERO not in ids.values()
    assert kept.split("topic_id: ")[1].strip() == ids["orders"]
    assert ids["clients"] == derived_topic_id("clients") == ReplayBroker(str(d)).topics()["clients"][0].topic_id
    md = b.read_path.metadata(12, {"Topics": None})
    assert {t.name: t.topic_id for t in md.topics} == ids


def _with_deleted_copy(tmp_path):
    d = tmp_path / "logs"
    shutil.copytree(SAMPLE, d)
    for suffix in ("0123456789abcdef0123456789abcdef-delete", "fedcba9876543210fedcba9876543210-future"):
        copy = d / f"orders-0.{suffix}"
        shutil.copytree(d / "orders-0", copy)
        for n in os.listdir(copy):  # the copy holds only the first segment
            if n.startswith("00000000000000000225") or n.startswith("00000000000000000404"):
                os.remove(copy / n)
    return str(d)


def test_deleted_and_future_copies_never_shadow_the_live_partition(tmp_path):
    d = _with_deleted_copy(tmp_path)
    b = ReplayBroker(d)
    assert b.partitions[("orders", 0)].log_end_offset == 404
    assert b.partitions[("orders", 0)].path == os.path.join(d, "orders-0")
    assert sorted(pd.dir_state for pd in find_partitions(d) if pd.topic == "orders") == ["delete", "future", "live"]
    v = verify([d])
    assert sorted(n.kind for n in v.notes if n.kind.endswith("-copy")) == ["delete-copy", "future-copy"]
    assert committed_offsets(d) is not None


def test_write_and_salvage_write_partition_metadata(kfx, tmp_path):
    out = tmp_path / "salvaged-0"
    salvage([os.path.join(SAMPLE, "orders-0")], str(out))
    src = Partition.scan(os.path.join(SAMPLE, "orders-0")).partition_metadata()["topicId"]
    assert Partition.scan(str(out)).partition_metadata()["topicId"] == src  # the source's id is kept
    r = kfx("dump", "--deep", "--format", "json", os.path.join(SAMPLE, "clients-0", "00000000000000000000.log"))
    w = kfx("write", "--out", tmp_path / "fresh-3", input=r.stdout)
    assert w.exit_code == 0, w.output
    assert Partition.scan(str(tmp_path / "fresh-3")).partition_metadata()["topicId"] == derived_topic_id("fresh")
    # written as Kafka's PartitionMetadataFile writes it: "version: 0\ntopic_id: <id>", no newline, 43 bytes
    assert (tmp_path / "fresh-3" / "partition.metadata").read_bytes() == (
        b"version: 0\ntopic_id: " + derived_topic_id("fresh").encode())
