from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.eval.conftest import FakeTask

from codeloop.eval.swebench.instances import InstanceError, load_instances


def test_lists_stored_as_json_text_are_decoded(fake_task: FakeTask) -> None:
    [inst] = load_instances(fake_task.jsonl)
    assert inst.FAIL_TO_PASS == ["test_calc.py::test_add"]
    assert inst.PASS_TO_PASS == ["test_calc.py::test_sub"]
    assert inst.mirror_name == "acme+calc"
    assert inst.test_files() == ["test_calc.py"]


def test_filters_and_limit(tmp_path: Path, fake_task: FakeTask) -> None:
    line = fake_task.jsonl.read_text().strip()
    other = json.loads(line) | {"instance_id": "zeta__z-2", "repo": "zeta/z",
                                "FAIL_TO_PASS": ["a"], "version": 2.0}
    path = tmp_path / "i.jsonl"
    path.write_text(line + "\n\n" + json.dumps(other) + "\n")
    assert [i.instance_id for i in load_instances(path, repos=["zeta"])] == ["zeta__z-2"]
    assert load_instances(path, repos=["zeta"])[0].version == "2.0"
    assert [i.instance_id for i in load_instances(path, ids=["acme__calc-1"])] == ["acme__calc-1"]
    assert len(load_instances(path, limit=1)) == 1


def test_data_files_are_not_test_directives(fake_task: FakeTask) -> None:
    patch = fake_task.inst.test_patch + "diff --git a/tests/data.json b/tests/data.json\n"
    inst = fake_task.inst.model_copy(update={"test_patch": patch})
    assert inst.test_files() == ["test_calc.py"]


def test_bad_records_and_missing_files_are_user_errors(tmp_path: Path) -> None:
    with pytest.raises(InstanceError, match="no instances file"):
        load_instances(tmp_path / "absent.jsonl")
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"instance_id": "x"}\n')
    with pytest.raises(InstanceError, match=r"bad\.jsonl:1"):
        load_instances(bad)
