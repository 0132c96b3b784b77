"""Each task's block of the report schema, generated from its declarations (issue 30, item
6): the figures CI gates on are typed and required, so a hand-broken report fails
``rpx validate`` and check-jsonschema with the committed schema alike — 19 broken reports,
12 of which passed both before the blocks existed."""

from __future__ import annotations

import copy
import json
import os
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from helpers import FIXTURES, ROOT, command_of

from rpx_cli.report import schema_catalogue
from rpx_cli.report.schemas import load_schema, validation_errors
from rpx_cli.tasks.registry import builtin_tasks

check_jsonschema = pytest.importorskip("check_jsonschema.cli.main_command")

CASES = {"depth": "depth/indoor", "detection": "detection/shelf", "detection3d": "detection3d/street",
         "segmentation": "segmentation/street", "segmentation3d": "segmentation3d/kitti",
         "tracking": "tracking/mot", "classification": "classification/pets"}


@pytest.fixture(scope="module")
def reports(tmp_path_factory) -> dict[str, dict[str, Any]]:
    from conftest import with_one_job

    from rpx_cli.cli.main import cli

    out = tmp_path_factory.mktemp("blocks")
    found = {}
    for task, case in CASES.items():
        here = os.getcwd()
        os.chdir(FIXTURES / case)
        try:
            path = out / f"{task}.json"
            result = CliRunner().invoke(cli, with_one_job([*command_of(FIXTURES / case), "-o", str(path)]),
                                        catch_exceptions=False)
        finally:
            os.chdir(here)
        assert result.exit_code == 0, result.output
        found[task] = json.loads(path.read_text())
    return found


def _delete(*path: str):
    def apply(doc):
        node = doc
        for key in path[:-1]:
            node = node[key]
        del node[path[-1]]
    return apply


def _set(value: Any, *path: str | int):
    def apply(doc):
        node = doc
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = value
    return apply


def _first_class(doc, value):
    name = next(iter(doc["dataset"]["per_class"]))
    doc["dataset"]["per_class"][name]["iou"] = value


# (task, how it is broken, whether the schema before the task blocks already caught it)
BROKEN = [
    ("depth", _delete("aggregate"), True),
    ("depth", _set("nope", "task"), True),
    ("depth", _set(-1, "n_pairs"), True),
    ("depth", _set("up", "metric_info", "absrel", "direction"), True),
    ("depth", _set("0.1", "aggregate", "absrel"), True),
    ("depth", _set(2, "schema_version"), True),
    ("depth", _set([{"stem": "x"}], "errors"), True),
    # the twelve the envelope let through
    ("depth", _delete("dataset"), False),
    ("depth", _delete("aggregate", "absrel"), False),
    ("depth", _set("x", "rows", 0, "absrel"), False),
    ("detection3d", _set("high", "dataset", "mAP"), False),
    ("detection3d", _set(True, "dataset", "NDS"), False),
    ("segmentation", _delete("dataset", "miou"), False),
    ("segmentation", _set([], "dataset", "per_class"), False),
    ("segmentation3d", lambda doc: _first_class(doc, "high"), False),
    ("detection", _delete("dataset", "coco", "AP"), False),
    ("detection", _delete("dataset", "coco"), False),
    ("tracking", _delete("dataset", "hota"), False),
    ("classification", _set("1", "dataset", "accuracy"), False),
]


def _broken(reports, tmp_path: Path) -> list[tuple[Path, bool]]:
    files = []
    for k, (task, damage, caught_before) in enumerate(BROKEN):
        document = copy.deepcopy(reports[task])
        damage(document)
        path = tmp_path / f"broken-{k:02d}-{task}.json"
        path.write_text(json.dumps(document))
        files.append((path, caught_before))
    return files


@pytest.mark.slow
def test_the_unbroken_reports_are_valid(reports) -> None:
    for task, document in reports.items():
        assert validation_errors(document, "eval") == [], task
        assert validation_errors(document, task) == [], task


def test_every_broken_report_fails_rpx_validate(rpx, reports, tmp_path) -> None:
    files = _broken(reports, tmp_path)
    assert len(files) == 19 and sum(not before for _, before in files) == 12
    for path, _ in files:
        run = rpx(f"validate {path}")
        assert run.exit_code == 1, path.name
        assert f"{path} is not a valid eval report" in run.stderr


@pytest.mark.slow
def test_every_broken_report_fails_check_jsonschema(reports, tmp_path) -> None:
    files = [path for path, _ in _broken(reports, tmp_path)]
    by_schema = {"rpx-eval.v1.schema.json": files}
    for path in files:
        task = json.loads(path.read_text()).get("task")
        if task in CASES:
            by_schema.setdefault(schema_catalogue.file_name(task, builtin_tasks()), []).append(path)
    for name, paths in by_schema.items():
        result = CliRunner().invoke(check_jsonschema.main,
                                    ["--schemafile", str(ROOT / "schemas" / name), *map(str, paths)])
        assert result.exit_code == 1
        for path in paths:  # check-jsonschema names each failing file
            assert f"{path}::" in result.output, (name, path.name, result.output)


def test_the_envelope_alone_lets_the_twelve_through(reports, tmp_path) -> None:
    """The schema without the task blocks (the envelope as it was) passes exactly the twelve
    the blocks now catch: each test above fails without them."""
    from jsonschema import Draft202012Validator

    envelope = load_schema("eval")
    del envelope["allOf"]
    envelope.pop("then")  # the full-report rule added for aggregate stays below
    envelope["if"], envelope["then"] = {"not": {"required": ["state"]}}, {"required": ["aggregate"]}
    validator = Draft202012Validator(envelope)
    for path, caught_before in _broken(reports, tmp_path):
        errors = list(validator.iter_errors(json.loads(path.read_text())))
        assert bool(errors) == caught_before, path.name


def test_a_skipped_family_does_not_require_its_headline(rpx, tmp_path) -> None:
    run = rpx(f"eval detection3d --pred-dir {FIXTURES / 'detection3d/street/pred'} --gt-dir "
              f"{FIXTURES / 'detection3d/street/gt'} --metrics rows")
    assert run.exit_code == 0
    assert "mAP" not in run.json["dataset"]
    assert validation_errors(run.json, "detection3d") == []
    # and the same report with the family run but its figure removed fails
    full = rpx(f"eval detection3d --pred-dir {FIXTURES / 'detection3d/street/pred'} --gt-dir "
               f"{FIXTURES / 'detection3d/street/gt'}").json
    del full["dataset"]["mAP"]
    assert any("'mAP' is a required property" in e for e in validation_errors(full, "detection3d"))


def test_rpx_schema_task_prints_the_tasks_own_schema(rpx) -> None:
    run = rpx("schema detection3d")
    assert run.exit_code == 0
    schema = json.loads(run.stdout)
    assert schema["properties"]["task"] == {"enum": ["detection3d"]}
    assert schema == load_schema("detection3d")
    block = schema["allOf"][0]["then"]
    typed = block["allOf"][0]["properties"]["dataset"]["properties"]
    assert typed["mAP"] == {"type": ["number", "null"]}
    assert typed["per_class"]["additionalProperties"]["properties"]["ATE"] == {"type": ["number", "null"]}
    assert (ROOT / "schemas" / "rpx-eval-detection3d.v1.schema.json").exists()


# --- issue 38, item 12: params from the declarations, every key a run writes, no stranger ---


def _params_set(key: str, value: Any):
    return _set(value, "params", key)


LET_THROUGH = [  # each passed `rpx validate` before the schemas were generated from declarations
    ("depth", _delete("rows", 0, "absrel")),
    ("classification", _delete("dataset")),
    ("depth", _set({"anything": 1}, "surprise")),
    ("detection", _params_set("box_format", "cxcywh")),
    ("detection", _params_set("iou_threshold", 7)),
    ("detection", _params_set("iou_type", "boxes")),
    ("depth", _params_set("depth_scale", -1)),
    ("depth", _params_set("align", None)),
    ("segmentation", _delete("aggregate", "miou")),
    ("tracking", _delete("rows", 0, "mota")),
]


@pytest.mark.parametrize("task, damage", LET_THROUGH, ids=range(len(LET_THROUGH)))
def test_what_the_declarations_require_is_refused_when_missing_or_wrong(rpx, reports, tmp_path,
                                                                        task, damage) -> None:
    document = copy.deepcopy(reports[task])
    damage(document)
    path = tmp_path / "broken.json"
    path.write_text(json.dumps(document))
    run = rpx(f"validate {path}")
    assert run.exit_code == 1 and f"{path} is not a valid eval report" in run.stderr, run.stderr
    assert validation_errors(document, task)  # the task's own schema too


def test_params_are_typed_from_each_option_declaration() -> None:
    """Each option of each task: its recorded value typed by its declaration — an enum of its
    choices, numbers within its bounds, null only where its default is None."""
    from jsonschema import Draft202012Validator

    from rpx_cli.report.schema_params import option_schema, params_schema

    for name, task in builtin_tasks().items():
        schema = params_schema(task)
        for option in (*task.options, *task.aux_inputs):
            assert option.param in schema["properties"], (name, option.param)
            check = Draft202012Validator(option_schema(option))
            if option.kind == "choice" and option.recorded is None:
                assert check.is_valid(option.choices[0]) and not check.is_valid("not-a-choice")
            if option.kind in ("int", "float") and not option.multiple:
                for bound, outside in ((option.minimum, -1), (option.maximum, 1)):
                    if bound is not None:
                        assert not check.is_valid(bound + outside), (name, option.param)
            assert check.is_valid(None) == (option.default is None or (
                option.recorded is not None and Draft202012Validator(option.recorded).is_valid(None))), \
                (name, option.param)
    # parsed options type what their parser declares: an IoU threshold is in [0, 1]
    detection = params_schema(builtin_tasks()["detection"])["properties"]
    assert detection["iou_threshold"]["maximum"] == 1 and detection["box_format"]["enum"] == ["xyxy", "xywh"]


def test_every_committed_golden_report_validates() -> None:
    """fixtures/**/expected.json (what tools/fixture_reports.py writes, without provenance)."""
    from helpers import FIXTURE_ROOTS

    from rpx_cli.report.schemas import detect_kind

    found = [p for root in FIXTURE_ROOTS for p in root.glob("*/*/expected*.json")]
    assert len(found) > 40
    for path in found:
        document = json.loads(path.read_text())
        if document.get("task") not in builtin_tasks() and document.get("schema") == "rpx.eval":
            continue  # a task defined in the test suite (test_golden validates it registered)
        problems = [p for p in validation_errors(document, detect_kind(document))
                    if p != "$: 'run_provenance' is a required property"]
        assert problems == [], (path, problems[:3])
