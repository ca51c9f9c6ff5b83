"""The `local:` provider's checks before any model is loaded (the extra may be missing)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from codeloop.config import Settings
from codeloop.errors import CodeloopError
from codeloop.llm.factory import make_model
from codeloop.llm.local_provider import LocalModelError, check_gguf, load_llama


def test_missing_file_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(LocalModelError, match="does not exist"):
        make_model(f"local:{tmp_path / 'nope.gguf'}", Settings())


def test_a_file_that_is_not_gguf_is_refused(tmp_path: Path) -> None:
    fake = tmp_path / "model.gguf"
    fake.write_bytes(b"PK\x03\x04 not a model")
    with pytest.raises(LocalModelError, match="is not a GGUF model") as err:
        make_model(f"local:{fake}", Settings())
    assert isinstance(err.value, CodeloopError) and err.value.hint


def test_gguf_magic_is_accepted(tmp_path: Path) -> None:
    path = tmp_path / "m.gguf"
    path.write_bytes(b"GGUF\x03\x00\x00\x00")
    assert check_gguf(path) == path


def test_missing_extra_names_the_pip_command(tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    # The extra is installed on this machine; a None entry in sys.modules is how Python
    # itself marks a module as unimportable, which is the state of a machine without it.
    monkeypatch.setitem(sys.modules, "llama_cpp", None)
    path = tmp_path / "m.gguf"
    path.write_bytes(b"GGUF\x03\x00\x00\x00")
    with pytest.raises(LocalModelError) as err:
        load_llama(path, {})
    assert "llama-cpp-python" in err.value.message
    assert "pip install 'codeloop[local]'" in (err.value.hint or "")
