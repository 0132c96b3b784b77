"""``rpx_cli.Evaluator`` (SPEC §12): the same metrics inside a training loop, without files.

For every task, the golden fixtures' samples are loaded into memory (arrays, dicts, text),
fed to three evaluators merged in two orders, and compared with ``rpx eval`` on the same
samples written as files (``.npy`` for arrays, ``.json`` for structures, ``.txt`` for text):
every key of the report but ``run_provenance`` and the rows' file paths is equal."""

from __future__ import annotations

import itertools
import json
import multiprocessing
import os
import shlex
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from helpers import FIXTURES, parse_report

from rpx_cli import Evaluator
from rpx_cli.cli.eval import build_command
from rpx_cli.errors import InputError, ParameterError
from rpx_cli.tasks import TASKS

# flags of golden cases the in-memory path has no equivalent for (input files, run options)
NOT_IN_MEMORY = {"--coco-gt", "--coco-dt", "--gt-file", "--pred-file", "--manifest", "--missing",
                 "--on-error", "--mask-dir", "--task", "--gt-json", "--pred-json"}
FOLDER_FLAGS = {"--pred-dir", "--gt-dir", "--points-dir", "--mask-dir", "--depth-dir"}


def golden_cases() -> list[tuple[str, Path, list[str]]]:
    cases = []
    for args in sorted(FIXTURES.glob("*/*/args")):
        name = args.parent.parent.name
        task = TASKS.get(name)
        words = shlex.split(args.read_text())
        if task is None or NOT_IN_MEMORY & set(words) or (
                name == "detection" and holds_a_set(args.parent, words)):
            continue
        cases.append((name, args.parent, words))
    return cases


def holds_a_set(case: Path, words: list[str]) -> bool:
    """A side given as files of the whole set (a CVAT XML, VOC results files): no sample of
    its own to hold in memory."""
    from rpx_cli.tasks.detection.parts import FORMATS
    from rpx_cli.tasks.detection.sets import set_layout
    from rpx_cli.tasks.detection.sniff import sniff_folder

    for flag, value in itertools.pairwise(words):
        if flag in ("--pred-dir", "--gt-dir"):
            path = case / value
            if path.is_file() or set_layout(FORMATS[sniff_folder(str(path), "gt")], str(path)):
                return True
    return False


CASES = golden_cases()


def test_every_task_has_an_in_memory_case() -> None:
    """A golden case per built-in task is fed through the Evaluator (coherence's flags name
    its own folders and panoptic's images come from JSON files, so their cases are built
    below)."""
    covered = {name for name, _, _ in CASES} | {"coherence", "panoptic"}
    assert covered >= {name for name in TASKS if name != "cer"}


def folders(task, case: Path, words: list[str]) -> dict[str, Path]:
    """The case's folders by option name (pred_dir, gt_dir, points_dir, ...)."""
    found = {task.input_names[0]: case / "pred", task.input_names[1]: case / "gt"}
    for flag, value in itertools.pairwise(words):
        if flag in FOLDER_FLAGS:
            found[flag[2:].replace("-", "_")] = case / value
    return found


def options_of(task, case: Path, words: list[str]) -> dict[str, Any]:
    """The task's options of the case, parsed by its CLI command (typed values)."""
    command = build_command(task)
    kept = []
    skip = False
    for word in words:
        if skip:
            skip = False
            continue
        if word in FOLDER_FLAGS:
            skip = True
            continue
        kept.append(word)
    cwd = os.getcwd()
    os.chdir(case)
    try:
        ctx = command.make_context(command.name, [*kept, f"--{task.input_names[0].replace('_', '-')}",
                                                  ".", f"--{task.input_names[1].replace('_', '-')}", "."])
    finally:
        os.chdir(cwd)
    options = {option.param: ctx.params[option.param] for option in task.options}
    for option in task.options:  # file options: absolute, as the case's folder holds them
        if option.kind == "file" and options[option.param]:
            options[option.param] = str(case / options[option.param])
    if task.families and ctx.params.get("metrics"):
        options["metrics"] = ctx.params["metrics"]
    return options


def in_memory(path: Path, task, params: dict[str, Any]) -> Any:
    """What a training loop would hold for the file: an array, a dict/list, or text."""
    suffix = path.suffix.lower()
    if suffix == ".npy":
        return np.load(path, allow_pickle=False)
    if suffix == ".npz":
        with np.load(path, allow_pickle=False) as data:
            if "depth" in data:
                return data["depth"]
            return np.concatenate([data["position"], data["orientation"]])  # pose: RPX (7,)
    if suffix == ".json":
        return json.loads(path.read_text())
    if suffix in (".txt", ".xml"):  # text records (YOLO, KITTI, DOTA lines; VOC XML)
        return path.read_text()
    if suffix == ".label":
        return (np.fromfile(path, np.uint32) & 0xFFFF).astype(np.int64)
    if suffix == ".bin":
        if path.parent.name in ("velodyne", "lidar", "points"):
            return np.fromfile(path, np.float32).reshape(-1, params.get("point_fields", 4))
        return np.fromfile(path, np.uint8).astype(np.int64)
    from PIL import Image

    with Image.open(path) as image:
        return np.array(image)


TEXT_SUFFIX: dict[str, str] = {}  # a role's text files: .txt, or .xml (VOC)


def write(value: Any, folder: Path, stem: str, text_suffix: str = ".txt") -> None:
    (folder / stem).parent.mkdir(parents=True, exist_ok=True)
    if isinstance(value, np.ndarray):
        np.save(folder / f"{stem}.npy", value)
    elif isinstance(value, str):
        (folder / f"{stem}{text_suffix}").write_text(value)
    else:
        (folder / f"{stem}.json").write_text(json.dumps(value))


def samples_of(task, dirs: dict[str, Path], params: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """stem -> {role: in-memory value} for every stem of the GT folder."""
    samples: dict[str, dict[str, Any]] = {}
    for role, folder in dirs.items():
        for path in sorted(folder.rglob("*")):
            if path.is_file() and not path.name.startswith("."):
                stem = str(path.relative_to(folder).with_suffix(""))
                samples.setdefault(stem, {})[role] = in_memory(path, task, params)
                TEXT_SUFFIX[role] = path.suffix.lower() if path.suffix.lower() == ".xml" else ".txt"
    if task.folder_pairs:  # a pair is a folder (a scene): its files' values by name
        grouped: dict[str, dict[str, Any]] = {}
        for stem, values in samples.items():
            folder, _, name = stem.rpartition("/")
            for role, value in values.items():
                grouped.setdefault(folder, {}).setdefault(role, {})[name] = value
        samples = grouped
    pred, gt = task.input_names
    both = task.default_missing == "skip"  # the CLI evaluates the stems in both folders
    return {stem: values for stem, values in samples.items()
            if gt in values and (pred in values or not both)}


def comparable(report: dict[str, Any]) -> dict[str, Any]:
    out = {key: value for key, value in report.items() if key != "run_provenance"}
    out["rows"] = [{k: v for k, v in row.items() if not k.endswith("_path")}  # mask_path too
                   for row in report.get("rows", [])]
    return out


def feed(evaluator: Evaluator, task, stems: list[str], samples: dict[str, dict[str, Any]]) -> None:
    pred_name, gt_name = task.input_names
    for stem in stems:
        values = samples[stem]
        extra = {name.removesuffix("_dir"): value for name, value in values.items()
                 if name not in (pred_name, gt_name)}
        evaluator.update(stem, values.get(pred_name), values[gt_name], **extra)


def run_case(rpx, tmp_path: Path, name: str, dirs: dict[str, Path], options: dict[str, Any],
             cli_words: list[str]) -> None:
    task = TASKS[name]
    probe = Evaluator(name, **options)
    samples = samples_of(task, dirs, probe.params)
    stems = sorted(samples)
    assert stems, name
    # the in-memory samples as files, evaluated by rpx eval
    written = {role: tmp_path / role for role in dirs}
    for stem, values in samples.items():
        for role, value in values.items():
            if task.folder_pairs:  # each of the folder's files
                for file, part in value.items():
                    write(part, written[role], f"{stem}/{file}")
            else:
                write(value, written[role], stem, TEXT_SUFFIX.get(role, ".txt"))
    flags = [word for role, folder in written.items()
             for word in (f"--{role.replace('_', '-')}", str(folder))]
    command = list(task.command)
    run = rpx([*command, *flags, *cli_words])
    assert run.exit_code == 0, run.stderr
    want = comparable(run.json)
    # three evaluators, merged in two orders and grouped two ways
    thirds = [stems[0::3], stems[1::3], stems[2::3]]
    evaluators = []
    for part in thirds:
        evaluator = Evaluator(name, **options)
        feed(evaluator, task, part, samples)
        evaluators.append(evaluator)
    states = [evaluator.state() for evaluator in evaluators]
    assert all(isinstance(state, bytes) and state.startswith(b"rpx-state\n") for state in states)
    first = Evaluator.merged(states).report()
    second = Evaluator.merged([Evaluator.merged(states[2:]).state(), states[1], states[0]]).report()
    assert comparable(first) == want
    assert comparable(second) == want
    from rpx_cli.report.serialize import dumps

    parse_report(dumps(first))  # strict JSON, valid against its schema
    assert first["params"] == run.json["params"]
    inputs = first["run_provenance"]["inputs"]["samples"]
    assert inputs["kind"] == "in-memory" and inputs["n_samples"] == len(stems)
    assert all(row["pred_path"] is None and row["gt_path"] is None for row in first["rows"])


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c[0]}/{c[1].name}")
def test_in_memory_equals_files(case, rpx, tmp_path: Path) -> None:
    name, folder, words = case
    task = TASKS[name]
    dirs = folders(task, folder, words)
    options = options_of(task, folder, words)
    # what the folders settle (detection's --*-format auto: VOC, YOLO) an Evaluator is told
    pred, gt = task.input_names
    from rpx_cli.params import resolve

    given = resolve(task, {**options, **{o.param: str(dirs[o.param]) for o in task.aux_inputs
                                          if o.param in dirs}})
    settled = task.settle_inputs(given, {"pred": dirs.get(pred), "gt": dirs.get(gt)})
    options.update({key: value for key, value in settled.items() if given.get(key) != value})
    cli_words = []
    skip = False
    for word in words:  # the case's flags without its folders (and relative files absolute)
        if skip:
            skip = False
            continue
        if word in FOLDER_FLAGS:
            skip = True
            continue
        cli_words.append(str(folder / word) if (folder / word).is_file() else word)
    run_case(rpx, tmp_path, name, dirs, options, cli_words)


def test_coherence_in_memory_equals_files(rpx, tmp_path: Path) -> None:
    case = FIXTURES / "coherence" / "shelf"
    dirs = {"mask_dir": case / "mask", "depth_dir": case / "depth"}
    run_case(rpx, tmp_path, "coherence", dirs, {"tau": 0.1, "dilation": 2}, ["--tau", "0.1"])


def test_panoptic_in_memory_equals_files(rpx) -> None:
    """panoptic's golden case: each image's id map (decoded from its PNG, and once as the RGB
    array itself) with its segments_info, the categories as an option."""
    from PIL import Image

    case = FIXTURES / "panoptic" / "coco"
    gt_json, pred_json = (json.loads((case / f"{side}.json").read_text()) for side in ("gt", "pred"))
    preds = {ann["image_id"]: ann for ann in pred_json["annotations"]}

    def sample(folder: str, ann: dict[str, Any], rgb: bool) -> dict[str, Any]:
        with Image.open(case / folder / ann["file_name"]) as image:
            array = np.array(image)
        wide = array.astype(np.int64)
        ids = wide[..., 0] + 256 * wide[..., 1] + 65536 * wide[..., 2]
        return {"rgb" if rgb else "ids": array if rgb else ids, "image_id": ann["image_id"],
                "segments_info": ann["segments_info"]}

    samples = [(ann["file_name"].removesuffix(".png"), sample("pred", preds[ann["image_id"]], i == 1),
                sample("gt", ann, i == 2)) for i, ann in enumerate(gt_json["annotations"])]
    categories = gt_json["categories"]
    evaluators = []
    for part in (samples[0::2], samples[1::2]):
        evaluator = Evaluator("panoptic", categories=categories)
        for key, pred, gt in part:
            evaluator.update(key, pred, gt)
        evaluators.append(evaluator.state())
    report = Evaluator.merged(evaluators[::-1]).report()
    cwd = os.getcwd()
    os.chdir(case)
    try:
        run = rpx(["eval", "panoptic", *shlex.split((case / "args").read_text())])
    finally:
        os.chdir(cwd)
    assert run.exit_code == 0, run.stderr
    assert comparable(report) == comparable(run.json)
    with pytest.raises(InputError, match="panoptic needs the categories"):
        Evaluator("panoptic").update(*samples[0])
    with pytest.raises(InputError, match="'rgb' must be an"):
        Evaluator("panoptic", categories=categories).update("a", None, {"rgb": np.zeros((2, 2)),
                                                                        "segments_info": []})


# --- processes, errors, options ---------------------------------------------------------------


def _half(task: str, options: dict[str, Any], samples: list[tuple[str, Any, Any]], conn) -> None:
    evaluator = Evaluator(task, **options)
    for key, pred, gt in samples:
        evaluator.update(key, pred, gt)
    conn.send_bytes(evaluator.state())
    conn.close()


def depth_samples(n: int) -> list[tuple[str, np.ndarray, np.ndarray]]:
    rng = np.random.default_rng(7)
    out = []
    for i in range(n):
        gt = rng.uniform(0.5, 8.0, (12, 16)).astype(np.float32)
        gt[rng.random(gt.shape) < 0.1] = 0
        out.append((f"f{i:02d}", (gt * rng.uniform(0.8, 1.2, gt.shape)).astype(np.float32), gt))
    return out


def test_two_spawned_processes_merge_to_one() -> None:
    samples = depth_samples(10)
    options = {"ranges": ["0:2", "2:"], "max_depth": 7.5}
    context = multiprocessing.get_context("spawn")
    states = []
    workers = []
    for half in (samples[:5], samples[5:]):
        receive, send = context.Pipe(duplex=False)
        worker = context.Process(target=_half, args=("depth", options, half, send))
        worker.start()
        send.close()
        workers.append(worker)
        states.append(receive.recv_bytes())
    for worker in workers:
        worker.join(60)
        assert worker.exitcode == 0
    one = Evaluator("depth", **options)
    for key, pred, gt in samples:
        one.update(key, pred, gt)
    want = comparable(one.report())
    assert comparable(Evaluator.merged(states).report()) == want
    assert comparable(Evaluator.merged(states[::-1]).report()) == want


def test_a_key_in_two_states_is_an_input_error_naming_it() -> None:
    samples = depth_samples(3)
    a, b = Evaluator("depth"), Evaluator("depth")
    for key, pred, gt in samples:
        a.update(key, pred, gt)
    b.update(*samples[1])
    with pytest.raises(InputError, match="'f01'"):
        Evaluator.merged([a.state(), b.state()])
    with pytest.raises(InputError, match="'f01' was given twice"):
        a.update(*samples[1])


def test_states_of_different_options_do_not_merge() -> None:
    a, b = Evaluator("depth", max_depth=5), Evaluator("depth")
    a.update(*depth_samples(1)[0])
    with pytest.raises(InputError, match="params"):
        Evaluator.merged([a.state(), b.state()])
    with pytest.raises(InputError, match="not an rpx Evaluator state"):
        Evaluator.merged([b"garbage"])


@pytest.mark.parametrize("task, options, message", [
    ("detection3d", {"ranges": ["0:x"]}, "--range: expected numbers in A:B, got '0:x'"),
    ("grounding", {"box_format": "cxcywh"}, "--box-format: 'cxcywh' is not one of xyxy, xywh"),
    ("depth", {"max_dpeth": 3}, "did you mean max_depth"),
    ("depth", {"metrics": "nope"}, "--metrics: unknown metric family nope"),
])
def test_invalid_options_are_the_cli_error_before_any_update(rpx, task, options, message) -> None:
    with pytest.raises(ParameterError, match=message.replace("(", r"\(").replace(")", r"\)")):
        Evaluator(task, **options)


def test_nan_in_a_prediction_is_the_file_readers_error() -> None:
    key, pred, gt = depth_samples(1)[0]
    pred = pred.copy()
    pred[3, 3] = np.nan
    with pytest.raises(InputError, match=r"pred/f00\.npy: .*non-finite"):
        Evaluator("depth").update(key, pred, gt)
    box = {"translation": [1.0, 2.0, 0.0], "size": [2.0, 4.0, 1.5], "rotation": [1, 0, 0, 0],
           "detection_name": "car"}
    bad = [{**box, "translation": [float("nan"), 2.0, 0.0], "detection_score": 0.5}]
    with pytest.raises(InputError, match=r"pred/s0\.json"):
        Evaluator("detection3d").update("s0", bad, [box])
    with pytest.raises(InputError, match=r"gt/s1\.json"):
        Evaluator("detection3d").update("s1", [], [{**box, "size": [float("inf"), 1, 1]}])


def test_metrics_selects_families_and_names_the_skipped(tmp_path: Path) -> None:
    evaluator = Evaluator("detection3d", metrics="ap")
    box = {"translation": [1.0, 2.0, 0.0], "size": [2.0, 4.0, 1.5], "rotation": [1, 0, 0, 0],
           "detection_name": "car"}
    evaluator.update("s0", [{**box, "detection_score": 0.9}], [box])
    report = evaluator.report()
    assert report["params"]["metrics"] == ["ap"]
    assert report["params"]["skipped_metrics"] == ["rows", "tp", "aph", "curves"]
    assert report["dataset"]["mAP"] == pytest.approx(1.0) and "mATE" not in report["dataset"]


def test_reset_forgets_and_a_merged_evaluator_keeps_updating() -> None:
    samples = depth_samples(4)
    evaluator = Evaluator("depth")
    evaluator.update(*samples[0])
    evaluator.reset()
    assert len(evaluator) == 0
    with pytest.raises(InputError, match="no sample"):
        evaluator.report()
    a = Evaluator("depth")
    a.update(*samples[0])
    merged = Evaluator.merged([a.state()])
    for sample in samples[1:]:
        merged.update(*sample)
    whole = Evaluator("depth")
    for sample in samples:
        whole.update(*sample)
    assert comparable(merged.report()) == comparable(whole.report())


def test_numpy_values_in_a_structure_read_as_their_json() -> None:
    """"Arrays of the documented columns": a structure holding numpy arrays and scalars
    scores as the same structure in lists and numbers (its JSON file)."""
    gt = {"boxes": [[0, 0, 10, 10], [20, 20, 30, 32]], "labels": ["cup", "box"]}
    pred = {"boxes": [[1, 0, 10, 11], [20, 21, 30, 30], [5, 5, 8, 8]], "labels": ["cup", "box", "cup"],
            "scores": [0.9, 0.8, 0.3]}
    as_numpy = {"boxes": np.array(pred["boxes"], np.float32), "labels": np.array(pred["labels"]),
                "scores": np.array(pred["scores"])}
    gt_numpy = {"boxes": np.array(gt["boxes"], np.int64), "labels": [np.str_(x) for x in gt["labels"]]}
    reports = []
    for p, g in ((pred, gt), (as_numpy, gt_numpy)):
        evaluator = Evaluator("detection")
        evaluator.update("img", p, g)
        reports.append(comparable(evaluator.report()))
    assert reports[0] == reports[1]
    scores = Evaluator("classification")
    scores.update("a", {"scores": {"cat": np.float32(0.25), "dog": np.float64(0.75)}}, {"label": "dog"})
    scores.update("b", {"scores": {"cat": np.float32(0.5), "dog": 0.25}}, "cat")
    assert scores.report()["dataset"]["accuracy"] == 1.0
    labels = Evaluator("classification")
    labels.update("c", {"label": np.int64(3)}, "3")
    assert labels.report()["dataset"]["accuracy"] == 1.0


def test_ranges_need_the_points_of_every_scan() -> None:
    evaluator = Evaluator("segmentation3d", ranges=["0:10"])
    with pytest.raises(InputError, match=r"gt/a\.npy: ranges= buckets points .* \(points=\)"):
        evaluator.update("a", np.array([1, 2, 3]), np.array([1, 2, 2]))
    evaluator.update("a", np.array([1, 2, 3]), np.array([1, 2, 2]),
                     points=np.array([[1.0, 0.0], [5.0, 5.0], [20.0, 0.0]]))
    assert evaluator.report()["dataset"]["n_labelled_0m_10m"] == 2
    with pytest.raises(ParameterError, match="takes no colour"):
        evaluator.update("b", np.array([1]), np.array([1]), colour=np.zeros(1))


def test_the_docs_training_loop_example_runs() -> None:
    """The first example of docs/python-api.md's Evaluator section runs as written (the
    torch.distributed recipe is the same calls with torch's all_gather_object)."""
    text = (Path(__file__).resolve().parent.parent / "docs" / "python-api.md").read_text()
    section = text[text.index("## In a training loop"):]
    start = section.index("```python") + len("```python")
    code = section[start:section.index("```", start)]
    namespace: dict[str, Any] = {}
    exec(compile(code, "docs/python-api.md", "exec"), namespace)
    assert namespace["report"]["n_pairs"] == 4


# --- the in-memory forms of issue 38 #8 -------------------------------------------------------


def mot_rows() -> np.ndarray:
    """Two tracks over three frames (MOT columns frame, id, x, y, w, h, conf, x, y, z)."""
    return np.array([[f, i, 10.0 * i + f, 5.0, 20.0, 30.0, 1, -1, -1, -1]
                     for f in (1, 2, 3) for i in (1, 2)])


def test_tracking_takes_mot_rows_as_an_array() -> None:
    gt = mot_rows()
    pred = gt.copy()
    pred[::2, 2] += 12.0  # track 1 shifted: IoU 8 / 32 in every frame, below 0.5
    text = "\n".join(",".join(f"{v:g}" for v in row) for row in pred.tolist()) + "\n"
    gt_text = "\n".join(",".join(f"{v:g}" for v in row) for row in gt.tolist()) + "\n"
    reports = []
    for p, g in ((text, gt_text), (pred, gt), (pred[:, :6], gt.astype(np.float32))):
        evaluator = Evaluator("tracking")
        evaluator.update("seq", p, g)
        reports.append(comparable(evaluator.report()))
    assert reports[0] == reports[1] == reports[2]
    assert reports[0]["dataset"]["mota"] == pytest.approx(1 - (3 + 3) / 6)  # 3 FN + 3 FP of 6 GT
    bad = gt.copy()
    bad[3, 4] = np.nan
    with pytest.raises(InputError, match=r"pred/seq\.txt: row 4: a value is not a finite number"):
        Evaluator("tracking").update("seq", bad, gt)
    with pytest.raises(InputError, match=r"gt/seq\.txt: MOT rows must be an \(N, >= 6\) array"):
        Evaluator("tracking").update("seq", gt, gt[0])
    with pytest.raises(InputError, match=r"gt/seq\.txt: row 1: 5 columns, need at least 6"):
        Evaluator("tracking").update("seq", gt, gt[:, :5])


def test_pose_takes_the_rpx_forms() -> None:
    """RPX's (7,) ``[x, y, z, qx, qy, qz, qw]`` and its .npz ``{position, orientation}`` (as a
    dict of arrays) score as the JSON form of the same pose."""
    half = np.sqrt(0.5)
    gt_json = {"quaternion_xyzw": [0.0, 0.0, half, half], "t": [1.0, 2.0, 3.0]}  # 90° about z
    pred_json = {"quaternion_xyzw": [0.0, 0.0, 0.0, 1.0], "t": [1.0, 2.0, 4.0]}
    forms = {
        "json": (pred_json, gt_json),
        "array": (np.array([1.0, 2.0, 4.0, 0, 0, 0, 1]), np.array([1.0, 2.0, 3.0, 0, 0, half, half])),
        "npz": ({"position": np.array([1.0, 2.0, 4.0]), "orientation": np.array([0, 0, 0, 1.0])},
                {"position": [1.0, 2.0, 3.0], "orientation": np.array([0, 0, half, half], np.float32)}),
    }
    rows = {}
    for name, (pred, gt) in forms.items():
        evaluator = Evaluator("pose")
        evaluator.update("a", pred, gt)
        rows[name] = evaluator.report()["rows"][0]
    assert rows["json"]["rotation_error_deg"] == pytest.approx(90.0)
    assert rows["json"]["translation_error_m"] == pytest.approx(1.0)
    for name in ("array", "npz"):
        assert rows[name]["rotation_error_deg"] == pytest.approx(90.0, abs=1e-5)
        assert rows[name]["translation_error_m"] == rows["json"]["translation_error_m"]
    with pytest.raises(InputError, match=r"gt/a\.json: 'orientation' \(x, y, z, w\) must be \[4\]"):
        Evaluator("pose").update("a", pred_json, {"position": [0, 0, 0], "orientation": [0, 0, 1]})


def test_lvis_without_a_category_table_fails_at_construction() -> None:
    with pytest.raises(ParameterError, match=r"protocol='lvis'.*category table.*'frequency'"):
        Evaluator("detection", protocol="lvis")


def test_states_of_different_params_name_the_params_and_both_values() -> None:
    a, b = Evaluator("depth", max_depth=5), Evaluator("depth", min_depth=0.5)
    a.update(*depth_samples(2)[0])
    b.update(*depth_samples(2)[1])
    with pytest.raises(InputError, match=r"params differ: max_depth 5\.0 vs None, min_depth "
                                         r"None vs 0\.5"):
        Evaluator.merged([a.state(), b.state()])


@pytest.mark.parametrize("task, options, pred, gt, words", [
    ("depth", {}, {"depth": [1.0]}, np.ones((2, 2), np.float32), "takes an array, not a dict"),
    ("tracking", {}, 3.5, mot_rows(), "takes an array or a dict or list or text, not a float"),
    ("segmentation3d", {"ranges": ["0:10"]}, np.array([1]), np.array([1]), "ranges= buckets points"),
    ("detection", {"box_format": "xywh"}, [{"bbox": [0, 0, -1, 2], "label": "a", "score": 1.0}],
     [], "box_format='xywh'"),
])
def test_messages_name_what_the_caller_gave(task, options, pred, gt, words) -> None:
    """Never a file or a flag the caller of update did not use: the task's flags are named by
    their keywords, the value by its in-memory form."""
    with pytest.raises(InputError) as caught:
        Evaluator(task, **options).update("k", pred, gt)
    message = str(caught.value)
    assert words in message, message
    assert " --" not in message and "file" not in message, message
