"""Large freed buffers go back to the system once an index is opened (glibc's threshold)."""

from __future__ import annotations

import platform
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(platform.libc_ver()[0] != "glibc",
                                reason="the mmap threshold is glibc's (mallinfo2 reads it)")

# A fresh process: frees a 16 MB buffer (glibc then serves buffers up to 16 MB from the
# heap), allocates 2 MB and says where glibc put it.
_PROBE = """
import ctypes, sys
from pathlib import Path
class Info(ctypes.Structure):
    _fields_ = [(n, ctypes.c_size_t) for n in ("arena", "ordblks", "smblks", "hblks",
                "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks", "keepcost")]
libc = ctypes.CDLL(None)
libc.mallinfo2.restype = Info
if sys.argv[1] == "index":
    from codeloop.index.service import RepoIndex
    RepoIndex(Path(sys.argv[2]), cache=Path(sys.argv[3])).close()
big = bytearray(16 << 20)
del big
before = libc.mallinfo2().hblkhd
buf = bytearray(2 << 20)
print("mmap" if libc.mallinfo2().hblkhd - before >= 2 << 20 else "heap")
"""


def _where(tmp_path: Path, mode: str) -> str:
    repo, cache = tmp_path / "repo", tmp_path / "cache"
    repo.mkdir(exist_ok=True)
    (repo / "m.py").write_text("def f():\n    return 1\n")
    out = subprocess.run([sys.executable, "-c", _PROBE, mode, str(repo), str(cache)],
                         capture_output=True, text=True, timeout=120, check=True)
    return out.stdout.strip()


def test_a_freed_large_buffer_does_not_stay_resident_once_an_index_is_open(tmp_path: Path
                                                                          ) -> None:
    # Without the index, glibc's moving threshold keeps the 2 MB buffer in the heap.
    assert _where(tmp_path, "plain") == "heap"
    assert _where(tmp_path, "index") == "mmap"
