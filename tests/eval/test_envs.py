from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from tests.eval.conftest import SPEC, git

import codeloop.eval.swebench.envs as envs_module
from codeloop.eval.swebench.build_requires import build_requires
from codeloop.eval.swebench.ccache import (
    compiler_cache_basedir,
    sandboxed_compiler_cache,
    with_compiler_cache,
)
from codeloop.eval.swebench.envs import (
    EnvBuilder,
    EnvUnavailable,
    TaskEnv,
    _requirements_at,
    bootstrap_command,
    offline_reinstall,
    tox_current_env_in_venv,
)
from codeloop.eval.swebench.specs import SpecMissing, spec_for
from codeloop.verify.commands import spec_from_command


def test_a_missing_interpreter_is_unavailable_and_remembered(tmp_path: Path) -> None:
    spec = SPEC.__class__(**{**SPEC.__dict__, "python": "2.5"})
    builder = EnvBuilder(tmp_path)
    with pytest.raises(EnvUnavailable, match=r"no Python 2\.5"):
        builder.get(spec, tmp_path, "HEAD", tmp_path)
    assert builder.is_cached(spec)
    recorded = json.loads((tmp_path / spec.key / "failed.json").read_text())
    assert "no Python 2.5" in recorded["reason"]
    # A second call answers from the record without trying again.
    with pytest.raises(EnvUnavailable, match=r"no Python 2\.5"):
        EnvBuilder(tmp_path).get(spec, tmp_path, "HEAD", tmp_path)


def test_reinstall_is_offline_and_keeps_extras() -> None:
    assert offline_reinstall("python -m pip install -e .[test] --verbose") == (
        "python -m pip install --no-build-isolation -e .[test] --verbose")
    assert offline_reinstall("") == ""


def test_requirements_are_read_at_the_commit_with_includes(tmp_path: Path) -> None:
    src = tmp_path / "src"
    (src / "requirements").mkdir(parents=True)
    (src / "requirements" / "dev.txt").write_text("-r tests.txt\n-e .\nsphinx==4.0\n# note\n")
    (src / "requirements" / "tests.txt").write_text("pytest==6.2.4\n")
    git("init", "-q", cwd=src)
    git("add", ".", cwd=src)
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "r", cwd=src)
    mirror = tmp_path / "m.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(src), str(mirror)], check=True)
    text = _requirements_at(mirror, "HEAD", ("requirements.txt", "requirements/dev.txt"))
    assert text.split() == ["pytest==6.2.4", "sphinx==4.0"]
    with pytest.raises(EnvUnavailable, match="no requirements file"):
        _requirements_at(mirror, "HEAD", ("nope.txt",))


def test_a_conda_environment_is_installed_from_pypi_under_the_pins(tmp_path: Path) -> None:
    src = tmp_path / "src"
    (src / "ci").mkdir(parents=True)
    (src / "ci" / "environment.yml").write_text(
        "dependencies:\n  - python=3.10\n  - netcdf4\n  - numpy\n")
    git("init", "-q", cwd=src)
    git("add", ".", cwd=src)
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "e", cwd=src)
    mirror = tmp_path / "m.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(src), str(mirror)], check=True)
    spec = SPEC.__class__(**{**SPEC.__dict__, "packages": "environment.yml",
                             "pip_packages": ("numpy==1.23.0", "pytest"),
                             "requirements_paths": ("environment.yml", "ci/environment.yml")})
    root = tmp_path / "env"
    root.mkdir()
    steps = EnvBuilder(tmp_path)._recipe(spec, root, mirror, "HEAD", src)
    assert (root / "environment-requirements.txt").read_text().split() == ["netcdf4", "numpy"]
    assert (root / "pins.txt").read_text().split() == ["numpy==1.23.0"]
    assert f"-c {root / 'pins.txt'}" in steps[0][0]
    assert steps[1][0] == "python -m pip install numpy==1.23.0 pytest"
    missing = SPEC.__class__(**{**spec.__dict__, "requirements_paths": ("nope.yml",)})
    with pytest.raises(EnvUnavailable, match="no conda environment file"):
        EnvBuilder(tmp_path)._recipe(missing, root, mirror, "HEAD", src)


def test_spec_table_has_the_harness_facts() -> None:
    sympy = spec_for("sympy/sympy", "1.1")
    assert sympy.runner == "sympy" and "bin/test -C --verbose" in sympy.test_cmd
    flask = spec_for("pallets/flask", "2.0")
    assert flask.python == "3.9" and "Werkzeug==2.3.7" in flask.pip_packages
    assert flask.requirements_paths == ("requirements/dev.txt",)
    with pytest.raises(SpecMissing):
        spec_for("pallets/flask", "0.0")


def test_build_backend_keeps_scm_plugins_but_not_a_setuptools_floor(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(
        '[build-system]\nrequires = ["setuptools>=40.0", "setuptools-scm", "wheel",\n'
        '  "cython==0.29.30", "oldest-supported-numpy", "Oldest_Supported_Numpy; python_version>\'3\'"]\n')
    # oldest-supported-numpy would replace the spec's numpy pin with the oldest one.
    assert build_requires(tmp_path) == ["setuptools-scm", "wheel", "cython==0.29.30"]
    spec = SPEC.__class__(**{**SPEC.__dict__, "pip_packages": ("numpy==1.25.2", "pytest")})
    root = tmp_path / "env"
    root.mkdir()
    steps = dict((label, step) for step, label in
                 EnvBuilder(tmp_path)._recipe(spec, root, tmp_path, "HEAD", tmp_path))
    backend = steps["install the build backend"]
    assert f"-c {root / 'pins.txt'}" in backend and "oldest" not in backend
    assert (root / "pins.txt").read_text().split() == ["numpy==1.25.2"]
    (tmp_path / "pyproject.toml").write_text("not toml [")
    assert build_requires(tmp_path) == []


def _installed_ccache(tmp: Path) -> Path:
    """Stands in for /usr/bin/ccache, which machines without Debian's ccache lack: the code
    only asks whether the masquerade's links lead to a file."""
    binary = tmp / "bin" / "ccache"
    binary.parent.mkdir()
    binary.write_text("#!/bin/sh\n")
    binary.chmod(0o755)
    return binary


def test_compilers_go_through_ccache_only_when_it_is_installed(tmp_path: Path) -> None:
    env: dict[str, str] = {}
    assert with_compiler_cache("/usr/bin", env, tmp_path / "none") == "/usr/bin"
    assert env == {}
    (tmp_path / "gcc").symlink_to(_installed_ccache(tmp_path))
    assert with_compiler_cache("/usr/bin", env, tmp_path) == f"{tmp_path}:/usr/bin"
    assert env["CCACHE_NOHASHDIR"] == "1"
    # The checkout's own paths are rewritten relative to it, nothing wider.
    assert compiler_cache_basedir(env, tmp_path / "repo")["CCACHE_BASEDIR"] == str(tmp_path / "repo")
    assert compiler_cache_basedir({}, tmp_path / "repo") == {}


def test_tox_current_env_runs_inside_the_virtualenv(tmp_path: Path) -> None:
    """The link tox-current-env makes must start the virtualenv's Python, not the base one."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    # Stands in for tox with the plugin (not installed here): it links the env's python to
    # the interpreter running it unless one is there already, then runs the command with it.
    tox = venv / "bin" / "tox"
    tox.write_text(
        f"#!{venv / 'bin' / 'python'}\n"
        "import os, subprocess, sys\n"
        "bindir = '.tox/py39/bin'\n"
        "os.makedirs(bindir, exist_ok=True)\n"
        "link = os.path.join(bindir, 'python')\n"
        "if not os.path.exists(link):\n"
        "    os.symlink(sys.executable, link)\n"
        "subprocess.run([link, '-c', 'import sys; print(sys.prefix != sys.base_prefix)'])\n"
    )
    tox.chmod(0o755)
    command = tox_current_env_in_venv("tox --current-env -epy39 -v --")
    assert tox_current_env_in_venv("pytest -rA") == "pytest -rA"
    work = tmp_path / "repo"
    work.mkdir()
    environ = {"PATH": f"{venv / 'bin'}:/usr/bin:/bin", "VIRTUAL_ENV": str(venv)}
    ran = subprocess.run(["bash", "-c", command], cwd=work, env=environ,
                         capture_output=True, text=True, check=True)
    assert ran.stdout.strip() == "True"
    bare = subprocess.run(["bash", "-c", "rm -rf .tox && tox"], cwd=work, env=environ,
                          capture_output=True, text=True, check=True)
    assert bare.stdout.strip() == "False"  # the failure the link exists to prevent



def test_the_verifier_runs_pytest_where_tox_only_wraps_it(tmp_path: Path) -> None:
    def env_for(test_cmd: str) -> TaskEnv:
        return TaskEnv(SPEC.__class__(**{**SPEC.__dict__, "test_cmd": test_cmd}), tmp_path, "")

    assert env_for("tox --current-env -epy39 -v --").verifier_test_cmd == "python -m pytest -rA"
    assert env_for("pytest -rA").verifier_test_cmd == "pytest -rA"
    # sympy's runner with one seed for `random`, in the judge and the verifier alike.
    # The verifier with sympy's cache on; the judge as the harness runs it.
    assert env_for("bin/test -C --verbose").verifier_test_cmd == "bin/test --verbose --seed 0"
    assert env_for("bin/test -C --verbose").test_cmd == "bin/test -C --verbose --seed 0"
    assert env_for("bin/test -C --verbose --seed 3").test_cmd == "bin/test -C --verbose --seed 3"
    spec = spec_from_command(env_for("tox --current-env -epy39 -v --").verifier_test_cmd,
                             "test", "config")
    assert spec.parser == "junit" and spec.target_command is not None


def test_sphinx_environments_get_the_roman_module_docutils_dropped(tmp_path: Path) -> None:
    sphinx = spec_for("sphinx-doc/sphinx", "3.0")
    steps = [step for step, _ in EnvBuilder(tmp_path)._recipe(sphinx, tmp_path, tmp_path, "HEAD", tmp_path)]
    assert "python -m pip install roman" in steps
    assert steps.index("python -m pip install roman") > steps.index(sphinx.install)
    other = [step for step, _ in EnvBuilder(tmp_path)._recipe(SPEC, tmp_path, tmp_path, "HEAD", tmp_path)]
    assert not any("roman" in step for step in other)


def test_pydicom_environments_hold_the_test_data_its_tests_would_download(tmp_path: Path) -> None:
    pydicom = spec_for("pydicom/pydicom", "2.3")
    steps = [step for step, _ in EnvBuilder(tmp_path)._recipe(pydicom, tmp_path, tmp_path, "HEAD", tmp_path)]
    data = [step for step in steps if "pydicom-data" in step]
    # Optional: a build where it cannot be installed still succeeds.
    assert len(data) == 1 and data[0].startswith("python -m pip install pydicom-data ||")
    other = [step for step, _ in EnvBuilder(tmp_path)._recipe(SPEC, tmp_path, tmp_path, "HEAD", tmp_path)]
    assert not any("pydicom-data" in step for step in other)


def test_pip_constraints_keep_every_spec_pin_and_exclude_pytest_cov_that_old_pytest_rejects(
) -> None:
    from packaging.requirements import Requirement

    constraints_file = Path(envs_module.__file__).with_name("constraints.txt")
    constraints = {r.name: r.specifier for r in map(Requirement, constraints_file.read_text().split())}
    # pytest-cov 6 imports with `hookimpl(wrapper=True)`, which sphinx 3.x's pytest 5.3 refuses.
    assert not constraints["pytest-cov"].contains("6.2.0")
    # docutils 0.21 numbers image lines, which sphinx-8579's linkcheck test expects as 0.
    assert not constraints["docutils"].contains("0.21.2")
    assert constraints["docutils"].contains("0.20.1")
    specs = json.loads(Path(envs_module.__file__).with_name("specs.json").read_text())["specs"]
    for versions in specs.values():
        for spec in versions.values():
            for pin in spec.get("pip_packages") or []:
                req = Requirement(pin)
                exact = [s.version for s in req.specifier if s.operator == "=="]
                if req.name in constraints and exact:
                    assert constraints[req.name].contains(exact[0]), pin


# The last releases that still install on each Python (PyPI's Requires-Python metadata).
_LAST_FOR_PYTHON = {
    "3.6": {"pip": "21.3.1", "setuptools": "59.6.0", "wheel": "0.37.1"},
    "3.8": {"pip": "24.3.1", "setuptools": "70.3.0", "wheel": "0.45.1"},
}


@pytest.mark.parametrize("python", ["3.6", "3.8", "3.9", "3.10", "3.11"])
def test_the_pip_bootstrap_keeps_each_tool_to_releases_the_python_can_install(python: str) -> None:
    from packaging.requirements import Requirement

    command = bootstrap_command(python)
    assert command.startswith("python -m pip install -U ")
    caps = {r.name: r.specifier for r in map(Requirement, shlex.split(command)[5:])}
    assert set(caps) == {"pip", "setuptools", "wheel"}
    for tool, last in _LAST_FOR_PYTHON.get(python, {}).items():
        assert caps[tool].contains(last), (tool, last)
    if python == "3.6":
        # The wheel releases this machine's local index lists without Requires-Python.
        assert not caps["wheel"].contains("0.46.3") and not caps["wheel"].contains("0.48.0")
        assert not caps["pip"].contains("22.0")


def test_astropy_versions_with_a_helpers_submodule_install_its_release_first(tmp_path: Path) -> None:
    for version in ("1.3", "3.0"):
        astropy = spec_for("astropy/astropy", version)
        steps = [s for s, _ in EnvBuilder(tmp_path)._recipe(astropy, tmp_path, tmp_path, "HEAD", tmp_path)]
        helpers = [s for s in steps if "astropy-helpers" in s]
        assert len(helpers) == 1 and steps.index(helpers[0]) < steps.index(astropy.install)
    later = spec_for("astropy/astropy", "5.0")
    steps = [s for s, _ in EnvBuilder(tmp_path)._recipe(later, tmp_path, tmp_path, "HEAD", tmp_path)]
    assert not any("astropy-helpers" in s for s in steps)


@pytest.mark.parametrize(("requires", "legacy"), [
    ('["setuptools~=62.6", "wheel~=0.37.1"]', True),   # pylint 2.x
    ('["setuptools<64"]', True),
    ('["setuptools>=40.0", "setuptools-scm"]', False),
    ('["setuptools==68.0.0"]', False),
    ('["setuptools==61.*", "wheel"]', True),
    ('["setuptools>=40,<70"]', False),
    ('["hatchling"]', False),
])
def test_a_build_pinned_below_setuptools_64_is_reinstalled_as_a_path_entry(
        tmp_path: Path, requires: str, legacy: bool) -> None:
    (tmp_path / "pyproject.toml").write_text(f"[build-system]\nrequires = {requires}\n")
    env = TaskEnv(SPEC, tmp_path, "").reinstall_environ(tmp_path)
    assert (env.get("SETUPTOOLS_ENABLE_FEATURES") == "legacy-editable") is legacy
    assert env["PIP_CONSTRAINT"]  # the environment's own settings stay


def test_the_sandboxed_reinstall_gets_the_compiler_cache_when_installed(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert sandboxed_compiler_cache(tmp_path, tmp_path / "none") == ({}, None)
    masquerade = tmp_path / "ccache-links"
    masquerade.mkdir()
    (masquerade / "gcc").symlink_to(_installed_ccache(tmp_path))
    monkeypatch.setenv("CCACHE_DIR", str(tmp_path / "cache"))
    env, cache_dir = sandboxed_compiler_cache(tmp_path / "ws", masquerade)
    assert cache_dir == tmp_path / "cache" and cache_dir.is_dir()
    assert env["PATH"].split(":")[0] == str(masquerade)
    assert env["CCACHE_DIR"] == str(cache_dir) and env["CCACHE_BASEDIR"] == str(tmp_path / "ws")


def test_build_requires_does_not_follow_a_linked_pyproject(tmp_path: Path) -> None:
    outside = tmp_path / "outside.toml"
    outside.write_text('[build-system]\nrequires = ["evil-backend"]\n')
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "pyproject.toml").symlink_to(outside)
    assert build_requires(repo) == []
