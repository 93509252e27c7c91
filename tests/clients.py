"""Helpers shared by the real-client tests."""


def drain(consumer, idle_polls: int = 3, timeout: float = 1.0):
    """Every message a confluent-kafka consumer delivers until ``idle_polls`` polls come back empty."""
    out, idle = [], 0
    while idle < idle_polls:
        m = consumer.poll(timeout)
        if m is None:
            idle += 1
            continue
        assert not m.error(), m.error()
        out.append(m)
    return out
