"""The child-process decode check that keeps a crashing llama.cpp build from killing codeloop."""

from __future__ import annotations

from pathlib import Path

import pytest

from codeloop.errors import ConfigError
from codeloop.llm.llama_probe import LlamaBuildCrashes, build_has_amx, check_decodes

# Real system-info lines of two llama-cpp-python 0.3.36 builds: -march=native on a Sapphire
# Rapids host, and GGML_NATIVE=OFF with AVX2.
NATIVE = (b"CPU : SSE3 = 1 | SSSE3 = 1 | AVX = 1 | AVX_VNNI = 1 | AVX2 = 1 | F16C = 1 | "
          b"FMA = 1 | BMI2 = 1 | AVX512 = 1 | AVX512_VBMI = 1 | AVX512_VNNI = 1 | "
          b"AVX512_BF16 = 1 | AMX_INT8 = 1 | LLAMAFILE = 1 | OPENMP = 1 | REPACK = 1 | ")
PORTABLE = (b"CPU : SSE3 = 1 | SSSE3 = 1 | AVX = 1 | AVX2 = 1 | F16C = 1 | FMA = 1 | "
            b"BMI2 = 1 | LLAMAFILE = 1 | OPENMP = 1 | REPACK = 1 | ")


def test_only_a_build_with_amx_is_probed() -> None:
    assert build_has_amx(NATIVE)
    assert not build_has_amx(PORTABLE)


def test_a_child_killed_by_a_signal_is_a_clear_error(tmp_path: Path) -> None:
    # A real child process that dies by SIGSEGV, as the AMX kernels make it die.
    crash = "import os, signal, sys\nos.kill(os.getpid(), signal.SIGSEGV)\n"
    model = tmp_path / "crash.gguf"
    with pytest.raises(LlamaBuildCrashes) as err:
        check_decodes(model, script=crash)
    assert isinstance(err.value, ConfigError)
    assert "SIGSEGV" in err.value.message and str(model) in err.value.message
    assert "GGML_NATIVE=OFF" in err.value.hint


def test_a_model_that_decodes_is_checked_once(tmp_path: Path) -> None:
    marker = tmp_path / "runs"
    script = f"open({str(marker)!r}, 'a').write('x')\n"
    model = tmp_path / "ok.gguf"
    check_decodes(model, script=script)
    check_decodes(model, script=script)
    assert marker.read_text() == "x"
