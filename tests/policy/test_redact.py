"""The redactor: what it hides, what it leaves alone, and that megabytes stay cheap."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable

import pytest

from codeloop.policy.redact import Redactor
from codeloop.policy.untrusted import inspect

AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"


@pytest.mark.parametrize(("text", "label"), [
    ("key sk-ant-api03-abcdefghijklmnopqrstuvwxyz012345_-AB end", "anthropic api key"),
    ("OPENAI_API_KEY=sk-proj-abcdefghijklmnopqrstuvwxyz0123", "openai api key"),
    ("token ghp_0123456789abcdefghijABCDEFGHIJ012345", "github token"),
    ("github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz", "github token"),
    ("SLACK=xoxb-123456789012-abcdefABCDEF", "slack token"),
    ("id AKIAIOSFODNN7EXAMPLE here", "aws access key id"),
    (f"aws_secret_access_key = {AWS_SECRET}", "aws secret key"),
    ("-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA\n-----END RSA PRIVATE KEY-----",
     "private key"),
])
def test_known_shapes_are_redacted(text: str, label: str) -> None:
    result = Redactor().redact(text)
    assert f"[redacted: {label}]" in result.text and result.found[label] == 1
    assert label in result.note()


def test_an_aws_secret_beside_its_key_id_goes_too_and_the_rest_stays() -> None:
    row = f"alice,AKIAIOSFODNN7EXAMPLE,{AWS_SECRET},enabled"
    assert Redactor().redact(row).text == (
        "alice,[redacted: aws access key id],[redacted: aws secret key],enabled")


def test_a_key_block_cut_short_still_hides_its_body() -> None:
    text = ("  1\t-----BEGIN OPENSSH PRIVATE KEY-----\n  2\tb3BlbnNzaC1rZXktdjEAAAAABG5vbmUA\n"
            "  3\tAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtz\n[... 400 characters cut ...]\nnext line")
    out = Redactor().redact(text).text
    assert "b3Blbn" not in out and "AAAAEbm9" not in out and "next line" in out


def test_secret_named_environment_values_are_redacted_by_name() -> None:
    env = {"MY_API_TOKEN": "tok-0123456789", "DB_PASSWORD": "hunter2hunter2",
           "SHORT_KEY": "1234567", "PWD": "/home/someone/project", "PATH": "/usr/bin:/bin"}
    out = Redactor.from_environment(env).redact(
        "t=tok-0123456789 p=hunter2hunter2 s=1234567 in /home/someone/project /usr/bin")
    assert out.text == ("t=[redacted: value of $MY_API_TOKEN] p=[redacted: value of "
                        "$DB_PASSWORD] s=1234567 in /home/someone/project /usr/bin")
    extra = Redactor.from_environment({}, extra=[("the configured api key", "abcdefgh12345")])
    assert "abcdefgh12345" not in extra.redact("key abcdefgh12345").text


def test_ordinary_text_is_left_alone() -> None:
    text = ("task-abcdefghijklmnopqrstuvwxyz0123 risk-abcdefghijklmnopqrstuvwxyz\n"
            "my secret is safe; skip the AKIA prefix; ghp_short; BEGIN PUBLIC KEY\n"
            "ASIAN_MARKETS = 3\n")
    result = Redactor().redact(text)
    assert result.text == text and not result


def test_data_is_redacted_through_nested_containers() -> None:
    counts: Counter[str] = Counter()
    data = {"runs": [{"message": "leak ghp_0123456789abcdefghijABCDEFGHIJ012345"}], "n": 3}
    out = Redactor().redact_data(data, counts)
    assert out == {"runs": [{"message": "leak [redacted: github token]"}], "n": 3}
    assert counts["github token"] == 1


def test_a_megabyte_of_output_stays_cheap() -> None:
    """Cheaper than the scrub and injection scan every output already gets (5 MB: ~60 ms
    against ~650 ms, docs/benchmarks.md); relative, so a loaded machine slows both alike.
    Every line says "secret", which must not send the regex over every line."""
    line = "2026-01-01 INFO handled GET /api/v1/items?page=3 in 12ms user=alice secret=no\n"
    text = (line * (1_000_000 // len(line) + 1))[:1_000_000] + "\nsk-ant-api03-" + "x" * 40
    redactor = Redactor.from_environment({"MY_API_TOKEN": "tok-0123456789abcdef"})
    assert redactor.redact(text).found["anthropic api key"] == 1
    assert best_of(3, lambda: redactor.redact(text)) < best_of(2, lambda: inspect(text))


def best_of(runs: int, fn: Callable[[], object]) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)
