from __future__ import annotations

import pytest

from codeloop.eval.swebench.condayml import CondaYamlError, pip_requirements

ENV = """\
name: tests
channels:
  - conda-forge
dependencies:
  - python=3.10
  - pip
  - hdf5
  - matplotlib-base
  - dask-core
  - numpy=1.21   # conda: any 1.21.x
  - pandas>=1.1
  - conda-forge::zarr
  - scipy==1.7.1
  - pip:
    - numbagg
    - -e .
    - git+https://example.invalid/x.git
"""


def test_conda_packages_become_pip_requirements() -> None:
    assert pip_requirements(ENV) == [
        "matplotlib", "dask", "numpy==1.21.*", "pandas>=1.1", "zarr", "scipy==1.7.1", "numbagg",
    ]


@pytest.mark.parametrize("text", ["name: x\n", "- a\n- b\n", "dependencies: [unclosed\n"])
def test_a_file_without_a_dependency_list_is_refused(text: str) -> None:
    with pytest.raises(CondaYamlError):
        pip_requirements(text)
