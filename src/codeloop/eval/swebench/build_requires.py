"""A project's declared build requirements, for reinstalling it without build isolation."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from codeloop.workspace.hostfs import SafeRoot

# Build requirements that only choose what an isolated build compiles against; installed in
# the environment they replace the spec's pins (oldest-supported-numpy pins numpy==1.19.3 on
# Python 3.9, under astropy 4.3-5.2's numpy==1.25.2). The reinstall compiles against the
# environment's own numpy instead.
_ISOLATED_BUILD_ONLY = frozenset({"oldest-supported-numpy"})


def editable_mode_environ(repo: Path) -> dict[str, str]:
    """What makes the reinstall put the project on `sys.path` as its own build would.

    Without build isolation our setuptools (64+) installs editable projects through an
    import hook; a project whose build pins an older setuptools (pylint 2.x: ~=62.6) got a
    path entry in the harness, and pylint's plugin loader finds its checkers only through
    `sys.path` (with the hook every checker fails to load and nearly every test fails).
    """
    for requirement in _declared_build_requires(repo):
        if _requirement_name(requirement) == "setuptools" and _capped_below(
                re.sub(r"^[A-Za-z0-9._-]+\s*", "", requirement.split(";")[0]), _PEP660_SETUPTOOLS):
            return {"SETUPTOOLS_ENABLE_FEATURES": "legacy-editable"}
    return {}


_PEP660_SETUPTOOLS = Version("64")


def _capped_below(specifier: str, limit: Version) -> bool:
    """Whether `specifier` admits no release from `limit` on (`~=62.6`, `<64`, `==61.*`)."""
    try:
        specs = SpecifierSet(specifier)
    except InvalidSpecifier:
        return False
    for spec in specs:
        try:
            bound = Version(spec.version.removesuffix(".*"))
        except InvalidVersion:
            continue
        if spec.operator in ("==", "===", "~=", "<=") and bound < limit:
            return True
        if spec.operator == "<" and bound <= limit:
            return True
    return False


def _declared_build_requires(repo: Path) -> list[str]:
    # The checkout's own file, never a link out of it.
    raw = SafeRoot(repo).read_if_file("pyproject.toml")
    if raw is None:
        return []
    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError):
        return []
    requires = data.get("build-system", {}).get("requires", [])
    return [r for r in requires if isinstance(r, str)] if isinstance(requires, list) else []


def build_requires(repo: Path) -> list[str]:
    """The build backend the project declares, needed to reinstall it without isolation."""
    requires = _declared_build_requires(repo)
    # Our setuptools pin (<71) keeps old setup.py files working; a newer floor would undo it.
    return [r for r in requires
            if not re.match(r"setuptools\s*(?:[<>=!~;\[]|$)", r)
            and _requirement_name(r) not in _ISOLATED_BUILD_ONLY]


def _requirement_name(requirement: str) -> str:
    match = re.match(r"[A-Za-z0-9._-]+", requirement.strip())
    return match.group(0).lower().replace("_", "-") if match else ""
