"""The PySpark data source over segments, its scan plan and storage (local, s3://)."""
