"""Head-and-tail capture of streamed output."""

from __future__ import annotations

import pytest

from codeloop.sandbox.base import cap_output
from codeloop.sandbox.capture import HeadTail


@pytest.mark.parametrize("size", [0, 1, 99, 100, 101, 199, 200, 201, 5_000])
@pytest.mark.parametrize("chunk", [1, 7, 64, 10_000])
def test_streamed_capture_matches_cap_output(size: int, chunk: int) -> None:
    data = bytes((i * 7) % 251 for i in range(size)).replace(b"\x00", b"a")
    data = bytes(b % 90 + 33 for b in data)  # printable, so decoding is lossless
    capture = HeadTail(200)
    for start in range(0, len(data), chunk):
        capture.feed(data[start : start + chunk])
    assert capture.total == size
    assert capture.render() == cap_output(data, 200)


def test_cut_is_reported_with_the_number_of_bytes_left_out() -> None:
    capture = HeadTail(10)
    capture.feed(b"HEAD!" + b"x" * 1000 + b"TAIL!")
    text, truncated = capture.render()
    assert truncated
    assert text.startswith("HEAD!") and text.endswith("TAIL!")
    assert "[... 1000 bytes of output omitted ...]" in text
