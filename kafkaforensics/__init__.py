"""kafkaforensics: read, verify, write and repair Apache Kafka's on-disk formats.

The formats live as declarative schemas in ``specs``; this package is the library over them, grouped by
pipeline stage: ``records`` (batches and records), ``log`` (a partition's files), ``repair``, ``inspect``,
``spark``, ``broker`` and ``harness`` (fuzzing, the demo's damage); ``cli`` is the ``kfx`` command line.
Each stage imports only the stages before it (tests/test_layout.py).

Modules moved into the stages keep their old flat names: ``kafkaforensics.segment`` is
``kafkaforensics.log.segment`` (the same module object), so scripts and jobs written before still run.
"""
import sys

__version__ = "0.1.0"

#: flat module name -> the stage it lives in now
MOVED = {old: stage for stage, olds in {
    "records": "batch batch_json builder checksums compression header_list header_run internal_topics schema",
    "log": "checkpoint_file dir_lock index_file indexing kraft leader_epochs log_loader logdir offset_index partition producer_state record_arrow record_columns segment tiered time_index txn_index writer",
    "repair": "actions cleaner md5_many offset_map recovery reindex retention salvage",
    "inspect": "analyzer diff dump groups report_html verify",
    "spark": "scan_plan spark_source storage",
    "broker": "dispatch group_coordinator live_log log_validator protocol replay replay_admin server topic_configs txn_coordinator",
    "harness": "damaged_sample fuzz",
}.items() for old in olds.split()}


class _OldNames:
    """Resolves ``kafkaforensics.<old>`` to ``kafkaforensics.<stage>.<old>``; consulted after the normal finders."""

    @staticmethod
    def find_spec(name, path=None, target=None):
        prefix, _, old = name.partition(".")
        if prefix != __name__ or old not in MOVED:
            return None
        import importlib.util
        module = importlib.import_module(f"{__name__}.{MOVED[old]}.{old}")
        return importlib.util.spec_from_loader(name, _Existing(module))


class _Existing:
    def __init__(self, module):
        self.module = module

    def create_module(self, spec):
        return self.module

    def exec_module(self, module):
        pass


sys.meta_path.append(_OldNames)
