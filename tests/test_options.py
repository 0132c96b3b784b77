"""One declaration per option (issue 26): every task's every option, given through the CLI
flag, ``rpx.toml`` and the Python API, is checked by the same code — an invalid value is
the same :class:`ParameterError` with the same message on every path, and a valid value
gives the same ``params``."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any

import pytest
from helpers import FIXTURES

import rpx_cli.run.plan
from rpx_cli.api import evaluate_dirs
from rpx_cli.errors import InputError, ParameterError
from rpx_cli.params import Band, Option, resolve
from rpx_cli.run.files import run_file_evaluation
from rpx_cli.tasks import TASKS

# texts a user might give by mistake: each option refuses those its declaration forbids
CANDIDATES = ("abc", "", " ", "-1", "0", "0.5", "1.5", "nan", "inf", "-inf", "1e400",
              str(2**64), "x=1", "car", "car=XYZ", "0:", "5:1", "0:x", ":3", "none")
# a valid value (the text a user types) per flag whose kind has no obvious one
VALID = {
    "--range": ("0:2", "2:"),
    "--iou-threshold": ("0.7",),
    "--conf-threshold": ("0.3",),
    "--threshold": ("0.3",),
    "--dist-th": ("1", "3"),
    "--iou-th": ("0.3", "0.5"),
    "--tp-threshold": ("1.5",),
    "--class-range": ("car=50", "truck=40"),
    "--tp-error-exempt": ("car=AOE,AVE",),
    "--pi-period-class": ("barrier",),
    "--min-recall": ("0.2",),
    "--min-precision": ("0.2",),
    "--oks-sigmas": ("0.25,0.25,0.5,0.5,0.35",),
    "--iou-type": ("keypoints",),
    "--ultralytics-version": ("8.4.190",),
    "--image-size": ("640,480",),
    "--data-yaml": (str(FIXTURES / "detection" / "formats" / "data.yaml"),),
    "--kpt-shape": ("17,3",),
    "--recall-points": ("11",),
}


# options that need another one to be valid: (task, flag) -> its flag (any valid value), or
# (its flag, the value)
NEEDS = {
    ("segmentation3d", "--range"): "--points-dir",
    ("segmentation3d", "--protocol"): "--num-classes",
    ("detection", "--oks-sigmas"): "--iou-type",
    ("detection", "--max-dets"): "--protocol",
    ("detection", "--ultralytics-version"): ("--protocol", "ultralytics"),
    ("detection", "--oi-hierarchy"): ("--protocol", "openimages"),
    ("detection", "--oi-image-labels"): ("--protocol", "openimages"),
    ("detection3d", "--recall-points"): ("--protocol", "kitti"),
    ("detection3d", "--kitti-iou"): ("--protocol", "kitti"),
}


def options_of(task) -> list[Option]:
    return [*task.options, *task.aux_inputs]


CASES = [(name, option) for name, task in sorted(TASKS.items()) if name != "cer"
         for option in options_of(task)]


def case_id(case: tuple[str, Option]) -> str:
    return f"{case[0]}{case[1].flag}"


def command(task) -> list[str]:
    return list(task.command)


def dir_flags(task, root: Path) -> list[str]:
    pred, gt = (f"--{name.replace('_', '-')}" for name in task.input_names)
    return [pred, str(root / "pred"), gt, str(root / "gt")]


def invalid_values(option: Option, tmp_path: Path) -> dict[str, str]:
    """The candidate texts the option refuses, with the message the API gives."""
    texts = list(CANDIDATES)
    if option.kind == "dir":
        (tmp_path / "a-file").write_text("x")
        texts.append(str(tmp_path / "a-file"))
    if option.kind == "file":
        texts.append(str(tmp_path / "no-such-file"))
    refused = {}
    for text in texts:
        try:
            option.convert_one(text)
        except ParameterError as exc:
            refused[text] = str(exc)
    return refused


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_an_invalid_value_is_the_same_error_everywhere(case, rpx, tmp_path: Path) -> None:
    name, option = case
    task = TASKS[name]
    refused = invalid_values(option, tmp_path)
    if option.kind not in ("str",):
        assert refused, f"{name} {option.flag} accepts every candidate: is it checked at all?"
    for folder in ("pred", "gt"):
        (tmp_path / folder).mkdir(exist_ok=True)
    for text, message in refused.items():
        assert message.startswith(f"{option.flag}: "), message
        # the Python API: the same class and message, before anything is read
        with pytest.raises(ParameterError) as caught:
            evaluate_dirs(name, tmp_path / "pred", tmp_path / "gt", **{option.param: text})
        assert str(caught.value) == message
        # the flag: a usage error (exit 2) with the same message
        if option.kind != "flag":
            run = rpx([*command(task), *dir_flags(task, tmp_path), option.flag, text])
            assert run.exit_code == 2 and f"Error: {message}\n" in run.stderr, (text, run.stderr)
        # rpx.toml: the same
        config = tmp_path / "rpx.toml"
        table = ".".join(command(task))
        config.write_text(f"[{table}]\n{option.name} = {json.dumps(text)}\n")
        run = rpx([*command(task), *dir_flags(task, tmp_path), "--config", str(config)])
        assert run.exit_code == 2 and f"Error: {message}\n" in run.stderr, (text, run.stderr)


def valid_texts(task, option: Option, tmp_path: Path) -> tuple[str, ...]:
    """One or two valid, non-default values of the option as a user types them."""
    if option.flag in VALID:
        return VALID[option.flag]
    kind = option.kind
    if kind == "choice":
        return tuple(c for c in option.choices if c != option.default)[:1]
    if kind == "flag":
        return ("true",)
    if kind == "int":
        low = int(option.minimum or 0) + (1 if option.open_min else 0)
        defaults = option.default if option.multiple else (option.default,)
        value = next(v for v in range(low, low + 10) if v not in defaults)
        return (str(value),)
    if kind == "float":
        low = option.minimum or 0.0
        high = option.maximum if option.maximum is not None else low + 10
        return (repr((low + high) / 4 if high - low > 1 else low + (high - low) / 3),)
    if kind == "dir":
        (tmp_path / "aux").mkdir(exist_ok=True)
        return (str(tmp_path / "aux"),)
    if kind in ("file", "str") and option.param in ("class_names",):
        path = tmp_path / "names.txt"
        path.write_text("car\ntruck\nbarrier\n")
        return (str(path),)
    if kind == "file" and option.param == "label_map":
        path = tmp_path / "map.json"
        path.write_text(json.dumps({"0": 0, "1": 1, "10": 2}))
        return (str(path),)
    if kind == "file" and option.param == "class_map":
        path = tmp_path / "class_map.json"
        path.write_text(json.dumps({"dog": "animal"}))
        return (str(path),)
    if kind == "file" and option.param == "oi_class_descriptions":
        path = tmp_path / "class-descriptions.csv"
        path.write_text("/m/0k4j,car\n/m/07r04,truck\n")
        return (str(path),)
    if kind == "file" and option.param == "oi_hierarchy":
        path = tmp_path / "hierarchy.json"
        path.write_text(json.dumps({"LabelName": "/m/0bl9f", "Subcategory": [{"LabelName": "car"}]}))
        return (str(path),)
    if kind == "file" and option.param == "oi_image_labels":
        path = tmp_path / "image-labels.csv"
        path.write_text("ImageID,Source,LabelName,Confidence\nimg1,human,car,1\n")
        return (str(path),)
    if kind == "parsed" and option.param == "categories":
        path = tmp_path / "categories.json"
        path.write_text(json.dumps([{"id": 1, "name": "person", "isthing": 1},
                                    {"id": 2, "name": "sky", "isthing": 0}]))
        return (str(path),)
    raise AssertionError(f"{task.name} {option.flag}: add a valid value to VALID")


def listing_files(task, root: Path) -> dict[str, str]:
    """Input files that list no pair, for a task whose files list its pairs (panoptic)."""
    if not task.files_list_pairs:
        return {}
    gt, pred = root / "listing-gt.json", root / "listing-pred.json"
    gt.write_text(json.dumps({"annotations": [], "categories": [
        {"id": 1, "name": "person", "isthing": 1}]}))
    pred.write_text(json.dumps({"annotations": []}))
    return dict(zip((option.param for option in task.file_inputs), (str(gt), str(pred)),
                    strict=True))


def python_value(option: Option, text: str) -> Any:
    """The value an API caller would pass for ``text``: a number for a number, a bool for a
    flag, a Band for a band."""
    if option.kind == "flag":
        return text == "true"
    if option.kind == "int":
        return int(text)
    if option.kind == "float" or (option.kind == "parsed" and _is_float(text)):
        return float(text)
    if option.flag == "--range":
        return Band.parse(text)
    return text


def _is_float(text: str) -> bool:
    try:
        return math.isfinite(float(text))
    except ValueError:
        return False


@pytest.fixture
def captured(monkeypatch) -> list[dict[str, Any]]:
    """The params every run resolves (the run then stops: its folders are empty)."""
    seen: list[dict[str, Any]] = []
    real = rpx_cli.run.plan.resolve

    def recording(task, given):
        seen.append(real(task, given))
        return seen[-1]

    monkeypatch.setattr(rpx_cli.run.plan, "resolve", recording)
    return seen


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_a_valid_value_gives_the_same_params_everywhere(case, rpx, tmp_path: Path,
                                                        captured) -> None:
    name, option = case
    task = TASKS[name]
    texts = valid_texts(task, option, tmp_path)
    for folder in ("pred", "gt"):
        (tmp_path / folder).mkdir(exist_ok=True)
    # a single-valued option takes one value (VALID's pair is for a repeatable flag of that
    # name in another task: tracking3d's --dist-th and detection3d's)
    texts = texts if option.multiple else texts[:1]
    flags = [word for text in texts for word in (option.flag, text)]
    if option.kind == "flag":
        flags = [option.flag]
    extra: dict[str, Any] = {}
    if (name, option.flag) in NEEDS:
        needed = NEEDS[name, option.flag]
        flag, value = needed if isinstance(needed, tuple) else (needed, None)
        other = next(o for o in options_of(task) if o.flag == flag)
        extra[other.param] = value or valid_texts(task, other, tmp_path)[0]
        flags += [other.flag, extra[other.param]]
    listed = listing_files(task, tmp_path)
    extra.update(listed)
    flags += [word for o in task.file_inputs if o.param in listed for word in (o.flag, listed[o.param])]
    run = rpx([*command(task), *dir_flags(task, tmp_path), *flags])
    assert run.exit_code == 1 and "no pairs to evaluate" in run.stderr, run.stderr
    from_cli = captured[-1]
    given_forms = [texts if option.multiple else texts[0],
                   [python_value(option, t) for t in texts] if option.multiple
                   else python_value(option, texts[0])]
    for given in given_forms:
        with pytest.raises(InputError, match="no pairs to evaluate"):
            evaluate_dirs(name, tmp_path / "pred", tmp_path / "gt", **{option.param: given},
                          **extra)
        assert captured[-1] == from_cli, (given, captured[-1], from_cli)
    given = {option.param: texts if option.multiple else texts[0],
             **{k: v for k, v in extra.items() if k not in listed}}
    assert from_cli == resolve(task, given)


@pytest.mark.parametrize("name", sorted(n for n, t in TASKS.items() if t.file_inputs))
def test_input_files_are_checked_by_their_declarations(name: str, rpx, tmp_path: Path) -> None:
    task = TASKS[name]
    files = {option.param: str(tmp_path / "no-such-file") for option in task.file_inputs}
    with pytest.raises(ParameterError) as caught:
        run_file_evaluation(name, files, {})
    first = task.file_inputs[0]
    assert str(caught.value) == f"{first.flag}: {tmp_path / 'no-such-file'}: no such file"
    flags = [word for option in task.file_inputs for word in (option.flag, files[option.param])]
    run = rpx([*command(task), *flags])
    assert run.exit_code == 2 and f"Error: {caught.value}\n" in run.stderr, run.stderr


def test_every_default_is_its_own_converted_value() -> None:
    """A declaration's default passes its own check unchanged (the CLI converts defaults too)."""
    for name, task in TASKS.items():
        for option in (*options_of(task), *task.file_inputs):
            assert option.convert(option.default) == (option.default if not option.multiple
                                                      else tuple(option.default)), (name, option)


def test_defaults_resolve_and_unknown_options_are_named() -> None:
    for name, task in TASKS.items():
        resolved = resolve(task, {})
        assert resolved == resolve(task, task.default_params), name
        assert json.loads(json.dumps(resolved)) == resolved, name  # JSON types only
    with pytest.raises(ParameterError, match=r"unknown option\(s\) for depth: max_dpeth "
                                             r"\(did you mean max_depth\?\)"):
        resolve(TASKS["depth"], {"max_dpeth": 3})


@pytest.mark.parametrize("given, message", [
    ({"box_format": "cxcywh"}, "--box-format: 'cxcywh' is not one of xyxy, xywh"),
    ({"iou_threshold": 1.5}, "--iou-threshold: IoU threshold must be in [0, 1], got 1.5"),
])
def test_grounding_options_are_checked_through_the_api(given, message) -> None:
    """Before: evaluate_dirs("grounding", ..., box_format="cxcywh") computed with xywh boxes
    and wrote "cxcywh" into params."""
    root = FIXTURES / "grounding" / "refer"
    with pytest.raises(ParameterError) as caught:
        evaluate_dirs("grounding", root / "pred", root / "gt", **given)
    assert str(caught.value) == message


def test_tracking_box_format_is_checked_through_the_api() -> None:
    root = FIXTURES / "tracking" / "mot"
    with pytest.raises(ParameterError, match="--box-format: 'bogus' is not one of xyxy, xywh"):
        evaluate_dirs("tracking", root / "pred", root / "gt", box_format="bogus")


def test_band_keys_of_a_skipped_family_leave_the_rows(rpx) -> None:
    """Before: with --range 2:1e20 --metrics dataset, keys like absrel_2m_1e+20m stayed in
    the rows (a regex parsed suffixes back and missed this one)."""
    root = FIXTURES / "depth" / "indoor"
    report = rpx(f"eval depth --pred-dir {root / 'pred'} --gt-dir {root / 'gt'} "
                 "--range 2:1e20 --range 0:2 --metrics dataset").json
    from rpx_cli.ops.depth import METRICS

    for row in [*report["rows"], report["aggregate"]]:
        assert not set(row) & {f"{m}_{s}" for m in METRICS for s in ("2m_1e+20m", "0m_2m")}
    assert "absrel_2m_1e+20m" in report["dataset"] and "n_valid_2m_1e+20m" in report["rows"][0]
    assert os.environ.get("RPX_DIGEST_CACHE")


def test_bands_or_thresholds_that_share_their_keys_are_refused() -> None:
    """Two values whose keys would be one (a suffix keeps 6 significant digits) must not
    overwrite each other's figures."""
    with pytest.raises(ParameterError, match=r"--range: 0:1234568.0 and 0:1234567.0 give the "
                                             r"same keys \(_0m_1p23457e\+06m\)"):
        resolve(TASKS["depth"], {"ranges": ["0:1234567", "0:1234568"]})
    with pytest.raises(ParameterError, match="--range: 0:2 is given twice"):
        resolve(TASKS["segmentation3d"], {"ranges": ["0:2", "0:2.0"], "points_dir": "."})
    with pytest.raises(ParameterError, match=r"--dist-th: thresholds 1\.0, 1\.0000001 are too close"):
        resolve(TASKS["detection3d"], {"dist_th": [1, 1.0000001]})
