"""``.txnindex`` files: one 34-byte entry per aborted transaction (Kafka's TransactionIndex)."""
from __future__ import annotations

from dataclasses import asdict, dataclass

from specs.indexes import TXN_ENTRY, TXN_INDEX_VERSION

from kafkaforensics.errors import KafkaFormatError

ENTRY_SIZE = TXN_ENTRY.size


@dataclass(frozen=True)
class AbortedTxn:
    producer_id: int
    first_offset: int
    last_offset: int
    last_stable_offset: int
    version: int = TXN_INDEX_VERSION

    def to_json(self) -> dict:
        d = asdict(self)
        return {"version": d["version"], "producerId": d["producer_id"], "firstOffset": d["first_offset"],
                "lastOffset": d["last_offset"], "lastStableOffset": d["last_stable_offset"]}


def read_entries(data: bytes, *, file: str | None = None) -> list[AbortedTxn]:
    if len(data) % ENTRY_SIZE:
        raise KafkaFormatError("txn-index", f"size {len(data)} is not a multiple of {ENTRY_SIZE}",
                               file=file, position=len(data) - len(data) % ENTRY_SIZE)
    out = []
    for i, (version, pid, first, last, lso) in enumerate(TXN_ENTRY.iter_unpack(data)):
        if version != TXN_INDEX_VERSION:
            raise KafkaFormatError("txn-index", f"unknown entry version {version}", file=file,
                                   position=i * ENTRY_SIZE)
        out.append(AbortedTxn(pid, first, last, lso, version))
    return out


def to_bytes(entries) -> bytes:
    return b"".join(TXN_ENTRY.pack(e.version, e.producer_id, e.first_offset, e.last_offset,
                                   e.last_stable_offset) for e in entries)
