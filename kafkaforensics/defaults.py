"""Defaults the library and the command line share, in a module light enough for ``kfx`` to
import before it knows which command runs (Kafka's own defaults, where Kafka has one)."""

#: ``log.segment.bytes``: a segment rolls when the next batch would take it past this size
DEFAULT_SEGMENT_BYTES = 1024 * 1024 * 1024
