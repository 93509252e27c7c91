"""Read the first records of a partition from `kfx serve` with kafka-python, a real Kafka client.

usage: python demo/consume.py HOST:PORT TOPIC [N]
"""
import sys
import time


def consume(bootstrap: str, topic: str, n: int = 5, timeout_s: float = 15.0) -> list:
    from kafka import KafkaConsumer, TopicPartition
    from kafka.errors import KafkaError

    deadline = time.monotonic() + timeout_s
    while True:  # the server may still be starting: bounded retries
        try:
            c = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, consumer_timeout_ms=3000)
            break
        except KafkaError:  # NoBrokersAvailable (its name differs between kafka-python versions)
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)
    try:
        tp = TopicPartition(topic, 0)
        c.assign([tp])
        c.seek_to_beginning(tp)
        end = c.end_offsets([tp])[tp]
        out = []
        for m in c:
            out.append(m)
            if len(out) >= n:
                break
        return out, end
    finally:
        c.close()


if __name__ == "__main__":
    bootstrap, topic = sys.argv[1], sys.argv[2]
    msgs, end = consume(bootstrap, topic, int(sys.argv[3]) if len(sys.argv) > 3 else 5)
    for m in msgs:
        v = None if m.value is None else m.value[:48]
        more = "..." if m.value is not None and len(m.value) > 48 else ""
        print(f"  {topic}-{m.partition} offset {m.offset}: key={m.key!r} value={v!r}{more}")
    print(f"  ({len(msgs)} records read by kafka-python; the served log ends at offset {end})")
    sys.exit(0 if msgs else 1)
