"""Whether this llama.cpp build can decode here, tried in a child process before we rely on it.

llama.cpp's AMX kernels (compiled in by `-march=native` on Sapphire Rapids and newer hosts)
crash on the first multi-token decode on some of them (SIGSEGV in ggml_backend_amx_mul_mat,
ggml-org/llama.cpp#20824). In-process that would kill codeloop with no message, so a build
with AMX is tried once per model file in a child process first.
"""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

from codeloop.errors import ConfigError

REBUILD_HINT = ("reinstall llama-cpp-python without AMX: CMAKE_ARGS=\"-DGGML_NATIVE=OFF "
                "-DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON\" pip install --no-cache-dir "
                "--force-reinstall llama-cpp-python")
# A prompt of several tokens: a one-token prompt takes the vector path and does not crash.
DECODE_SCRIPT = (
    "import sys\n"
    "from llama_cpp import Llama\n"
    "llama = Llama(model_path=sys.argv[1], n_ctx=256, n_batch=64, verbose=False)\n"
    "llama.create_completion('one two three four five six seven eight nine ten', max_tokens=1)\n"
)
_checked: set[Path] = set()


class LlamaBuildCrashes(ConfigError):
    """The installed llama.cpp build dies decoding on this machine."""


def build_has_amx(system_info: bytes) -> bool:
    """`system_info` is `llama_cpp.llama_print_system_info()`: the features compiled in."""
    return b"AMX_INT8 = 1" in system_info


def check_decodes(path: Path, script: str = DECODE_SCRIPT, timeout_s: float = 600) -> None:
    """Raise LlamaBuildCrashes if a child process dies by a signal decoding with `path`."""
    key = path.resolve()
    if key in _checked:
        return
    proc = subprocess.run([sys.executable, "-c", script, str(path)], capture_output=True,
                          text=True, timeout=timeout_s, check=False)
    if proc.returncode < 0:
        name = signal.Signals(-proc.returncode).name
        raise LlamaBuildCrashes(
            f"llama.cpp crashed ({name}) decoding a short prompt with {path}: this build's "
            "AMX kernels fail on this CPU (ggml-org/llama.cpp#20824)", REBUILD_HINT)
    _checked.add(key)
