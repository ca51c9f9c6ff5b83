"""A virtualenv and the Python installation it runs on, read from files, never by running them."""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

# Directories the sandbox already shows (read-only): an installation there needs no bind.
SYSTEM_DIRS = (Path("/usr"), Path("/bin"), Path("/sbin"), Path("/lib"), Path("/lib64"))

_VERSION = re.compile(r"^(\d+)\.(\d+)")
_BIN_VERSION = re.compile(r"python(\d+)\.(\d+)$")


@dataclass(frozen=True)
class VenvConfig:
    """What `pyvenv.cfg` says: where the base interpreter lives and its version."""

    home: Path | None
    version: tuple[int, int] | None


@dataclass(frozen=True)
class Installation:
    """A Python installation: its prefix (holding `lib/pythonX.Y`) and its real interpreter."""

    prefix: Path
    interpreter: Path
    version: tuple[int, int]

    @property
    def stdlib(self) -> Path:
        return self.prefix / "lib" / f"python{self.version[0]}.{self.version[1]}"

    @property
    def in_system_dirs(self) -> bool:
        return under_any(self.prefix, SYSTEM_DIRS)

    @property
    def label(self) -> str:
        return f"Python {self.version[0]}.{self.version[1]} at {self.prefix}"


def under_any(path: Path, roots: Iterable[Path]) -> bool:
    """Whether `path` is one of `roots` or lies beneath one."""
    return any(path == root or root in path.parents for root in roots)


def parse_pyvenv(text: str) -> VenvConfig:
    """`home` (absolute only) and `version` (uv writes `version_info`) of a `pyvenv.cfg`."""
    values: dict[str, str] = {}
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if sep:
            values[key.strip().lower()] = value.strip()
    home = values.get("home", "")
    found = _VERSION.match(values.get("version") or values.get("version_info") or "")
    return VenvConfig(Path(home) if home.startswith("/") else None,
                      (int(found[1]), int(found[2])) if found else None)


def _executable_file(path: Path) -> bool:
    try:
        st = path.stat()
    except OSError:
        return False
    return stat.S_ISREG(st.st_mode) and bool(st.st_mode & 0o111)


def installation(bin_dir: Path, version: tuple[int, int] | None = None,
                 names: Iterable[str] = ()) -> Installation | str:
    """The installation whose interpreter is in `bin_dir` (links resolved), or why there is none.

    `bin_dir` must lie outside the repository (the caller checks): its links are the host's.
    """
    tried = [*names, *([f"python{version[0]}.{version[1]}"] if version else []), "python3", "python"]
    for name in tried:
        real = Path(os.path.realpath(bin_dir / name))
        if not _executable_file(real):
            continue
        found = _BIN_VERSION.search(real.name)
        ver = version or ((int(found[1]), int(found[2])) if found else None)
        if ver is None:
            return f"cannot tell the Python version of {real}"
        # Python finds its standard library at ../lib/pythonX.Y from its real executable.
        candidate = Installation(real.parent.parent, real, ver)
        if not (candidate.stdlib / "os.py").is_file():
            return f"{candidate.prefix} is not a Python installation (no {candidate.stdlib}/os.py)"
        return candidate
    return f"no Python interpreter in {bin_dir}"
