"""PySpark jobs over fleets of segment dumps (see issue #7; runnable with spark-submit)."""
