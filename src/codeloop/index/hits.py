"""What the index answers with: search, symbol and reference hits, and update counts."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ChunkHit:
    path: str
    start_line: int
    end_line: int
    symbol: str
    score: float
    text: str  # the chunk's lines, read from disk after the hash check


@dataclass(frozen=True)
class SymbolHit:
    path: str
    name: str
    kind: str
    start_line: int
    end_line: int
    signature: str
    parent: str | None


@dataclass(frozen=True)
class ReferenceHit:
    path: str
    line: int
    name: str
    text: str


@dataclass
class UpdateStats:
    scanned: int = 0
    added: int = 0
    changed: int = 0
    removed: int = 0
    unchanged: int = 0
    lexical_rebuilt: bool = False
    seconds: float = 0.0

    @property
    def touched(self) -> int:
        return self.added + self.changed + self.removed
