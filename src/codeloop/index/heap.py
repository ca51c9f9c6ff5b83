"""Large freed buffers go back to the system (glibc only).

glibc serves an allocation of 128 KB or more with its own mmap, returned on free, but once
such a buffer is freed it raises that threshold to the buffer's size (up to 32 MB) and
serves later ones from the heap, whose freed holes stay resident. The index frees and
rebuilds arrays of 1-30 MB (BM25 matrices, the file graph after an edit, query scores):
with the moving threshold, `benchmarks/index_speed.py` peaked at 288-291 MB on sympy
(goal < 300 MB); with the threshold fixed at 1 MB, at 267-270 MB.
"""

from __future__ import annotations

import ctypes
import platform
import threading

# mallopt's parameter number for the threshold (malloc.h); setting it turns off glibc's
# moving threshold for the rest of the process.
_M_MMAP_THRESHOLD = -3
MMAP_THRESHOLD = 1 << 20

_lock = threading.Lock()
_done = False


def return_large_frees() -> bool:
    """Fix glibc's mmap threshold at MMAP_THRESHOLD, once per process; False where the C
    library is not glibc (nothing to do) or refused."""
    global _done
    with _lock:
        if _done:
            return True
        if platform.libc_ver()[0] != "glibc":
            return False
        try:
            libc = ctypes.CDLL(None)
            _done = bool(libc.mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD))
        except (OSError, AttributeError):
            return False
        return _done
