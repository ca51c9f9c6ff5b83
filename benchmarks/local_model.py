"""Local model speed: llama-cpp-python's server vs in-process, and our provider's overhead.

Time to first token and tokens per second for the same prompt through the server (our
OpenAI provider) and in-process (`local:`), plus the overhead of our provider over a raw
httpx POST to the same server. Last line: one JSON object.

    PYTHONPATH=src python benchmarks/local_model.py --runs 5
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

import httpx
from tests.interop.conftest import free_port, smollm2_path

from codeloop.llm.local_provider import LocalModel
from codeloop.llm.openai_provider import OpenAIModel
from codeloop.llm.types import Completion, Message, Model, ModelRequest

PROMPT = "Write a short Python function that reverses a string."


def request(max_tokens: int, stream: bool) -> ModelRequest:
    return ModelRequest(messages=[Message("user", PROMPT)], max_tokens=max_tokens,
                        temperature=0.0, stream=stream)


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def speed(model: Model, runs: int, max_tokens: int) -> tuple[list[float], list[float]]:
    ttfts, rates = [], []
    for _ in range(runs):
        out: Completion = model.complete(request(max_tokens, True))
        assert out.ttft_ms is not None
        ttfts.append(out.ttft_ms)
        gen_s = max(1e-6, (out.latency_ms - out.ttft_ms) / 1000)
        rates.append(max(0, out.usage.output_tokens - 1) / gen_s)
    return ttfts, rates


def overhead(base: str, runs: int) -> list[float]:
    """Ours minus raw, per pair of identical one-token calls (alternated to share load).

    One output token keeps the model's own time small and steady, so the difference is the
    client side: request building, the SDK, response parsing and usage handling.
    """
    model = OpenAIModel("smollm2", base_url=base, max_retries=0, timeout_s=300)
    body = {"model": "smollm2", "messages": [{"role": "user", "content": PROMPT}],
            "max_tokens": 1, "temperature": 0.0}
    diffs = []
    with httpx.Client(timeout=300) as client:
        for _ in range(runs * 4):
            t = time.perf_counter()
            client.post(base + "/chat/completions", json=body).raise_for_status()
            raw_ms = (time.perf_counter() - t) * 1000
            t = time.perf_counter()
            model.complete(request(1, False))
            ours_ms = (time.perf_counter() - t) * 1000
            diffs.append(ours_ms - raw_ms)
    return diffs


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--max-tokens", type=int, default=32)
    args = parser.parse_args()
    gguf: Path = smollm2_path()
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "llama_cpp.server", "--model", str(gguf),
                             "--host", "127.0.0.1", "--port", str(port), "--n_ctx", "2048"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}/v1"
    try:
        for _ in range(600):
            try:
                if httpx.get(base + "/models", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                time.sleep(0.2)
        server = OpenAIModel("smollm2", base_url=base, max_retries=0, timeout_s=300)
        speed(server, 1, args.max_tokens)  # warm-up
        s_ttft, s_rate = speed(server, args.runs, args.max_tokens)
        diffs = overhead(base, args.runs)
    finally:
        proc.kill()
        proc.wait()
    local = LocalModel(gguf, {"n_ctx": 2048})
    speed(local, 1, args.max_tokens)
    i_ttft, i_rate = speed(local, args.runs, args.max_tokens)
    for label, values, unit in (("server ttft", s_ttft, "ms"), ("server speed", s_rate, "tok/s"),
                                ("in-process ttft", i_ttft, "ms"),
                                ("in-process speed", i_rate, "tok/s"),
                                ("provider overhead", diffs, "ms")):
        print(f"{label:18} median {statistics.median(values):9.1f} {unit}  "
              f"p95 {pct(values, 0.95):9.1f} {unit}")
    print(json.dumps({
        "runs": args.runs, "max_tokens": args.max_tokens, "model": gguf.name,
        "server_ttft_ms": round(statistics.median(s_ttft), 1),
        "server_ttft_p95_ms": round(pct(s_ttft, 0.95), 1),
        "server_tokens_per_s": round(statistics.median(s_rate), 1),
        "inprocess_ttft_ms": round(statistics.median(i_ttft), 1),
        "inprocess_ttft_p95_ms": round(pct(i_ttft, 0.95), 1),
        "inprocess_tokens_per_s": round(statistics.median(i_rate), 1),
        "provider_overhead_ms": round(statistics.median(diffs), 1),
        "provider_overhead_p95_ms": round(pct(diffs, 0.95), 1),
    }))


if __name__ == "__main__":
    main()
