"""A partition's files: segments, the three indexes, producer state, partition and log dirs, KRaft metadata, tiered-storage caches, the writer, and the columnar decoders over segments."""
