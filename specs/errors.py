"""The project's one error type and the located problem record every checker and spec reports."""
from __future__ import annotations

from dataclasses import asdict, dataclass, field


@dataclass
class Problem:
    """A located problem: which file, which byte, which offset, what kind, and why; ``caused``: the
    problems it is the root cause of (grouped under it, fixed with it), shown in JSON only when there are."""

    file: str | None
    position: int | None
    offset: int | None
    kind: str
    detail: str
    caused: list = field(default_factory=list)

    def to_json(self) -> dict:
        d = asdict(self)
        if not self.caused:
            del d["caused"]
        return d

    def __str__(self) -> str:
        where = self.file or "<input>"
        if self.position is not None:
            where += f" @ byte {self.position}"
        if self.offset is not None:
            where += f" (offset {self.offset})"
        return f"{where}: {self.kind}: {self.detail}"


class KafkaFormatError(Exception):
    """Bad bytes: always carries a kind and, where known, the file, byte position and offset."""

    def __init__(self, kind: str, detail: str, *, file: str | None = None,
                 position: int | None = None, offset: int | None = None):
        self.problem = Problem(file, position, offset, kind, detail)
        super().__init__(str(self.problem))

    @property
    def kind(self) -> str:
        return self.problem.kind

    @property
    def position(self) -> int | None:
        return self.problem.position

    def located(self, *, file: str | None = None, position: int | None = None,
                offset: int | None = None) -> "KafkaFormatError":
        """Fill in the location fields that are still unknown (outer layers know more)."""
        p = self.problem
        if p.file is None:
            p.file = file
        if p.position is None:
            p.position = position
        if p.offset is None:
            p.offset = offset
        self.args = (str(p),)
        return self


class CompressionError(KafkaFormatError):
    """A compressed block that does not decompress (or would expand past the bound)."""

    def __init__(self, detail: str, **where):
        super().__init__("compression", detail, **where)
