"""Defaults the library and the command line share, in a module light enough for ``kfx`` to
import before it knows which command runs. Kafka's own defaults, under Kafka's names."""

#: ``log.segment.bytes``: a segment rolls when the next batch would take it past this size
DEFAULT_SEGMENT_BYTES = 1024 * 1024 * 1024
#: ``log.index.interval.bytes``: an index entry at least every this many bytes of batches
DEFAULT_INDEX_INTERVAL_BYTES = 4096
#: ``delete.retention.ms``: how long the cleaner keeps tombstones and transaction markers
DEFAULT_DELETE_RETENTION_MS = 86_400_000
#: ``producer.id.expiration.ms``: when an idle producer's state expires
DEFAULT_PRODUCER_ID_EXPIRATION_MS = 86_400_000
#: the offline cleaner's offset map (Kafka's ``log.cleaner.dedupe.buffer.size`` is 128 MiB over all
#: cleaner threads; one offline run may take more)
DEFAULT_DEDUPE_BUFFER_BYTES = 1 << 30
#: a Spark scan splits segments larger than this at batch boundaries
DEFAULT_SPLIT_BYTES = 128 << 20
