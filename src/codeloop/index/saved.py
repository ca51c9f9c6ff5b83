"""Structures derived from the index's rows, saved in its store so that a warm open does
not rebuild them (the file graph, the commit search: ~1 s of CPU on sympy at every open).

Each is one row of the `saved` table: the key of what it was made from, a checksum, and a
blob of numeric arrays and JSON. The store is data the repository influenced (names,
paths), so a blob is read back as plain data only: no pickle, a fixed set of dtypes, every
length checked. A blob whose checksum or layout is off reads as nothing saved, and the
caller builds the structure again.
"""

from __future__ import annotations

import json
import sqlite3
import zlib
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

FORMAT = 1
# Little-endian, fixed width: what a blob may hold (never "O", which would need pickle).
_DTYPES: dict[str, np.dtype[Any]] = {"i4": np.dtype("<i4"), "i8": np.dtype("<i8"), "f4": np.dtype("<f4"),
           "f8": np.dtype("<f8")}
_HEADER_BYTES = 8


class CorruptSaved(ValueError):
    """A saved blob that does not parse as one this module wrote."""


@dataclass
class Saved:
    """A saved structure: its key, named arrays (copies, writable) and JSON data."""

    key: str
    arrays: dict[str, NDArray[Any]]
    data: dict[str, Any]


def _parts(arrays: dict[str, tuple[str, NDArray[Any]]], data: dict[str, Any]
           ) -> list[memoryview]:
    """The blob of arrays (each stored as the dtype code given) and JSON data, in parts:
    the header's length, the header, each array's bytes."""
    layout = [[name, code, len(values)] for name, (code, values) in arrays.items()]
    header = json.dumps({"format": FORMAT, "arrays": layout, "data": data},
                        separators=(",", ":")).encode()
    body = [np.ascontiguousarray(values, dtype=_DTYPES[code]) for code, values in
            arrays.values()]
    return [memoryview(len(header).to_bytes(_HEADER_BYTES, "little")), memoryview(header),
            *(b.data.cast("B") for b in body)]


def unpack(blob: bytes) -> tuple[dict[str, NDArray[Any]], dict[str, Any]]:
    """The arrays and data of a saved blob; `CorruptSaved` when it is not one."""
    try:
        size = int.from_bytes(blob[:_HEADER_BYTES], "little")
        header = json.loads(blob[_HEADER_BYTES:_HEADER_BYTES + size])
        if not isinstance(header, dict) or header.get("format") != FORMAT:
            raise CorruptSaved("unknown format")
        data, layout = header["data"], header["arrays"]
        if not isinstance(data, dict) or not isinstance(layout, list):
            raise CorruptSaved("bad header")
        arrays: dict[str, NDArray[Any]] = {}
        offset = _HEADER_BYTES + size
        for name, code, length in layout:
            dtype = _DTYPES[code]
            if not isinstance(name, str) or not isinstance(length, int) or length < 0:
                raise CorruptSaved("bad array entry")
            end = offset + length * dtype.itemsize
            if end > len(blob):
                raise CorruptSaved("truncated")
            arrays[name] = np.frombuffer(blob, dtype=dtype, count=length,
                                         offset=offset).copy()
            offset = end
    except (ValueError, KeyError, TypeError) as exc:
        raise CorruptSaved(str(exc)) from exc
    if offset != len(blob):
        raise CorruptSaved("trailing bytes")
    return arrays, data


def _digest(parts: list[memoryview]) -> str:
    """A CRC-32 of the blob: it guards against a torn or damaged row of our own store, not
    against a forger (the layout checks do the rest); blake2b of sympy's 9.5 MB graph was
    ~15 ms of every warm open's first task context, CRC-32 ~2 ms."""
    crc = 0
    for part in parts:
        crc = zlib.crc32(part, crc)
    return f"crc32:{crc:08x}"


def save(db: sqlite3.Connection, name: str, key: str,
         arrays: dict[str, tuple[str, NDArray[Any]]], data: dict[str, Any]) -> bool:
    """Replace what is saved under `name`; False when the store would not take it (a
    read-only cache, another process writing): the structure is then built at next open.

    Written part by part into the row's blob: one blob in memory (and SQLite's copy of
    it) took sympy's index process over its 300 MB peak."""
    parts = _parts(arrays, data)
    try:
        # A savepoint: atomic on its own, and inside a caller's transaction if there is one.
        db.execute("SAVEPOINT saved_write")
        try:
            cursor = db.execute("INSERT OR REPLACE INTO saved VALUES (?,?,?,zeroblob(?))",
                                (name, key, _digest(parts), sum(p.nbytes for p in parts)))
            assert cursor.lastrowid is not None
            with db.blobopen("saved", "data", cursor.lastrowid) as blob:
                for part in parts:
                    blob.write(part)
        except BaseException:
            db.execute("ROLLBACK TO saved_write")
            raise
        finally:
            db.execute("RELEASE saved_write")
    except sqlite3.Error:
        return False
    return True


def load(db: sqlite3.Connection, name: str) -> Saved | None:
    """What is saved under `name` if its checksum and layout hold, else None."""
    try:
        row = db.execute("SELECT key, digest, data FROM saved WHERE name=?", (name,)).fetchone()
    except sqlite3.Error:
        return None
    if row is None or not isinstance(row[2], bytes) or _digest([memoryview(row[2])]) != row[1]:
        return None
    try:
        arrays, data = unpack(row[2])
    except CorruptSaved:
        return None
    return Saved(str(row[0]), arrays, data)


def int_range(values: NDArray[Any], low: int, high: int) -> bool:
    """Whether every value is in [low, high) (an empty array is)."""
    return len(values) == 0 or (int(values.min()) >= low and int(values.max()) < high)


def str_list(value: object) -> list[str] | None:
    """`value` if it is a list of strings, else None."""
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return value
    return None
