"""What changes a log: recovery, reindex, salvage, compaction (cleaner, offset map) and retention."""
