"""The Kafka-protocol broker: sans-IO protocol, request handlers, writable partitions, group coordinator, the asyncio edge."""
