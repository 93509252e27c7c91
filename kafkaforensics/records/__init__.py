"""Batches and records: the v0/v1/v2 codecs, builders, compression, JSON lines, internal-topic payloads."""
