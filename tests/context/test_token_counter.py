"""The token counter is loaded once per process, however many threads ask for it at once."""

from __future__ import annotations

import subprocess
import sys

import pytest

pytest.importorskip("quicktok", reason="CANNOT EXERCISE: quicktok is not installed")

# A fresh interpreter: the counter is cached per process, and this one may hold it already.
SCRIPT = """
import threading
import quicktok
from codeloop.context import tokens

loads = []
real = quicktok.get_encoding
def counting(name):
    loads.append(name)
    return real(name)
quicktok.get_encoding = counting

start = threading.Barrier(4)
def ask():
    start.wait()
    tokens.get_counter()
threads = [threading.Thread(target=ask) for _ in range(4)]
for t in threads:
    t.start()
for t in threads:
    t.join()
print(len(loads))
"""


def test_threads_asking_at_once_load_the_encoding_once() -> None:
    out = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True,
                         timeout=120, check=True)
    assert out.stdout.strip() == "1"
