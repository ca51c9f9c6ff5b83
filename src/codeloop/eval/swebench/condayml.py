"""A conda `environment.yml` read as pip requirements, for repositories the harness builds
with conda (xarray): we have no conda here, so its packages are installed from PyPI."""

from __future__ import annotations

import re
from typing import Any

import yaml

# Conda packages published on PyPI under another name.
CONDA_TO_PIP = {"matplotlib-base": "matplotlib", "iris": "scitools-iris", "dask-core": "dask"}
# Conda packages with no PyPI counterpart a test run needs: interpreters, C libraries,
# conda-only builds and developer tools.
CONDA_ONLY = frozenset({"python", "pip", "hdf5", "cdms2", "pre-commit", "libnetcdf"})
_CONDA_SPEC = re.compile(r"^([A-Za-z0-9_.\-]+)\s*(.*)$")


class CondaYamlError(ValueError):
    """The file is not a conda environment with a `dependencies` list."""


def _pip_requirement(conda: str) -> str | None:
    """`numpy=1.21` (conda: any 1.21.x) as `numpy==1.21.*`; None for conda-only packages."""
    match = _CONDA_SPEC.match(conda.strip().split("::")[-1])
    if match is None:
        return None
    name, version = match.group(1), match.group(2).strip()
    if name.lower() in CONDA_ONLY:
        return None
    name = CONDA_TO_PIP.get(name.lower(), name)
    if re.fullmatch(r"=[^=<>!].*", version):
        version = f"=={version[1:]}" + ("" if version.endswith("*") else ".*")
    return f"{name}{version}"


def pip_requirements(text: str) -> list[str]:
    """The pip requirements of a conda environment file: its conda and its `pip:` packages."""
    try:
        data: Any = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise CondaYamlError(f"not YAML: {exc}") from exc
    deps = data.get("dependencies") if isinstance(data, dict) else None
    if not isinstance(deps, list):
        raise CondaYamlError("no dependencies list")
    out: list[str] = []
    for dep in deps:
        if isinstance(dep, str):
            req = _pip_requirement(dep)
            if req:
                out.append(req)
        elif isinstance(dep, dict):
            # Editable installs and URLs are the project itself or need a VCS fetch.
            out.extend(str(p).strip() for p in dep.get("pip", []) or []
                       if not str(p).startswith("-") and "://" not in str(p))
    return out
