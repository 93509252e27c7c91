"""`kfx serve --writable` stops on SIGTERM as Kafka's broker shuts down cleanly: every partition it wrote gets
the active segment's final time-index entry, a producer snapshot at the log end and its leader-epoch
checkpoint, recovery-point-offset-checkpoint gets the log ends, and `.kafka_cleanshutdown` is written
(`{"version":0,"brokerEpoch":N}`, as Kafka's CleanShutdownFileHandler writes it) -- so `kfx verify` exits 0
and `kfx recover --dry-run` (even `--full`) has nothing to do.  A writable broker takes the marker away while
it runs, and never vouches for partitions it served as found in a dir that was not marked clean."""
import json
import os
import shutil

from kafkaforensics.broker.server import BrokerThread
from kafkaforensics.log import time_index
from kafkaforensics.log.checkpoint_file import RECOVERY_POINT, checkpoint_path, read_offsets
from kafkaforensics.log.segment import iter_batches
from tests.conftest import SAMPLE
from tests.test_serve_memory import start_serve, stop


def _workload(port):
    from kafka import KafkaProducer
    from kafka.admin import KafkaAdminClient, NewTopic
    boot = f"127.0.0.1:{port}"
    a = KafkaAdminClient(bootstrap_servers=boot)
    a.create_topics([NewTopic("w", 2, 1)])
    a.close()
    p = KafkaProducer(bootstrap_servers=boot, enable_idempotence=True, linger_ms=5)
    for i in range(400):
        p.send("w", key=b"k", value=b"x" * 100, partition=i % 2)
    p.flush()
    p.close()
    t = KafkaProducer(bootstrap_servers=boot, transactional_id="sd-tx")
    t.init_transactions()
    for end in (t.commit_transaction, t.abort_transaction):
        t.begin_transaction()
        t.send("w", value=b"tx", partition=0)
        t.flush()
        end()
    t.close()


def test_sigterm_after_produce_is_a_clean_shutdown(tmp_path, kfx):
    d = tmp_path / "logs"
    d.mkdir()
    p, port = start_serve(d, "--writable")
    try:
        _workload(port)
    finally:
        assert stop(p) == 0
    marker = json.loads((d / ".kafka_cleanshutdown").read_text())
    assert marker == {"version": 0, "brokerEpoch": -1}
    rp = read_offsets(checkpoint_path(str(d), RECOVERY_POINT))
    for part in ("w-0", "w-1"):
        pdir = d / part
        batches = [b for f in sorted(os.listdir(pdir)) if f.endswith(".log") for b in iter_batches(str(pdir / f))]
        end = batches[-1].last_offset + 1
        assert rp[("w", int(part[-1]))] == end
        assert (pdir / f"{end:020d}.snapshot").exists()
        assert (pdir / "leader-epoch-checkpoint").read_text().splitlines()[:3] == ["0", "1", "0 0"]
        times, _ = time_index.read_entries((pdir / "00000000000000000000.timeindex").read_bytes(), 0)
        top = max(b.max_timestamp for b in batches)
        assert times[-1][0] == top  # the final entry: the segment's largest timestamp
    r = kfx("verify", str(d))
    assert r.exit_code == 0, r.output
    for part in sorted(x for x in os.listdir(d) if os.path.isdir(d / x)):
        for extra in ([], ["--full"]):
            r = kfx("recover", "--dry-run", "--json", str(d / part), *extra)
            rep = json.loads(r.stdout)
            assert r.exit_code == 0 and rep["actions"] == [] and rep["truncatedAt"] is None, (part, extra, rep)


def test_marker_taken_while_writable_and_kept_out_of_a_dir_not_marked_clean(tmp_path):
    d = tmp_path / "logs"
    shutil.copytree(SAMPLE, d)
    assert not (d / ".kafka_cleanshutdown").exists()
    with BrokerThread(str(d), writable=True, state_path=str(tmp_path / "s.json")) as b:
        b.broker.topic_creation.create_topics(5, {"Topics": [{"Name": "new", "NumPartitions": 1, "ReplicationFactor": 1}]})
    # the sample's partitions were served as found, in a dir not marked clean: Kafka must recover them
    assert not (d / ".kafka_cleanshutdown").exists()
    assert any("no .kafka_cleanshutdown" in line for line in b.shutdown_report)

    (d / ".kafka_cleanshutdown").write_text('{"version":0,"brokerEpoch":42}')
    with BrokerThread(str(d), writable=True, state_path=str(tmp_path / "s.json")) as b:
        assert not (d / ".kafka_cleanshutdown").exists()  # taken away while the broker may write
    assert json.loads((d / ".kafka_cleanshutdown").read_text()) == {"version": 0, "brokerEpoch": 42}


def test_read_only_serve_leaves_the_marker_and_every_file(tmp_path):
    from tests.corruption import snapshot_files
    d = tmp_path / "logs"
    shutil.copytree(SAMPLE, d)
    (d / ".kafka_cleanshutdown").write_text('{"version":0,"brokerEpoch":7}')
    before = snapshot_files(str(d))
    p, _port = start_serve(d)
    assert stop(p) == 0
    assert snapshot_files(str(d)) == before
