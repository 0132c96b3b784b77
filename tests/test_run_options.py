"""Run and workflow options declared once (issue 37.2): ``--jobs``, ``--shard``, ``--missing``,
``--on-error``, ``--no-rows``, the digest cache, ``--executor``, the strata options,
``rpx stability``'s and ``rpx compare``'s are :class:`~rpx_cli.params.Option` values like a
task's. A value given through the Python API (``evaluate_dirs``, ``run_evaluation``,
``run_file_evaluation``, the ``Evaluator``, ``run_stability_report``, ``run_compare``) is
checked by the same code as the flag and its ``rpx.toml`` key: the same
:class:`ParameterError` with the same message, before anything is read. And a value a
declaration accepts is never refused later by a hand check of its own (the declaration says
the bound)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest
from helpers import FIXTURES, dirs, without_provenance
from test_options import CANDIDATES, CASES, NEEDS, options_of, valid_texts

import rpx_cli
from rpx_cli.api import (
    Evaluator,
    RunOptions,
    Strata,
    evaluate_dirs,
    run_compare,
    run_evaluation,
    run_file_evaluation,
    run_stability_report,
)
from rpx_cli.errors import InputError, ParameterError
from rpx_cli.params import Option, resolve
from rpx_cli.params.workflows import (
    COMPARE_OPTIONS,
    RUN_OPTIONS,
    STABILITY_OPTIONS,
    STRATA_OPTIONS,
)
from rpx_cli.run.evaluate import RUN_KEYWORDS
from rpx_cli.tasks import TASKS

DEPTH = FIXTURES / "depth" / "indoor"
KITCHEN = FIXTURES / "stability" / "kitchen"
CSV = FIXTURES / "classification" / "imagenet-csv"
MORE = ("1", "2", "true", "0/2", "1/2", "3/2", "2/0", "1/2000000", "a/b", "{}", "{x", "[1]")


def refused(option: Option, tmp_path: Path) -> dict[str, str]:
    """The candidate texts the declaration refuses, with its message."""
    texts = [*CANDIDATES, *MORE]
    if option.kind == "file":
        texts.append(str(tmp_path / "no-such-file"))
    if option.kind == "dir":
        (tmp_path / "a-file").write_text("x")
        texts.append(str(tmp_path / "a-file"))
    out = {}
    for text in texts:
        try:
            option.convert_one(text)
        except ParameterError as exc:
            out[text] = str(exc)
    return out


def test_the_api_keywords_are_the_declarations() -> None:
    declared = tuple(option.param for option in (*RUN_OPTIONS, *STRATA_OPTIONS))
    assert declared == RUN_KEYWORDS
    fields = {field.name for field in dataclasses.fields(RunOptions)}
    assert {option.param for option in RUN_OPTIONS} == fields - {"strata"}
    assert {option.param for option in STRATA_OPTIONS} == {f.name for f in dataclasses.fields(Strata)}


def test_every_workflow_default_is_its_own_converted_value() -> None:
    from rpx_cli.params.workflows import COST_OPTIONS, MODEL_NAME

    for option in (*RUN_OPTIONS, *STRATA_OPTIONS, *STABILITY_OPTIONS, *COMPARE_OPTIONS,
                   *COST_OPTIONS, MODEL_NAME):
        expected = tuple(option.default) if option.multiple else option.default
        assert option.convert(option.default) == expected, option.flag
    assert RunOptions() == RunOptions.of()


def _toml(tmp_path: Path, table: str, option: Option, text: str) -> str:
    config = tmp_path / "rpx.toml"
    config.write_text(f"[{table}]\n{option.name} = {json.dumps(text)}\n")
    return str(config)


@pytest.mark.parametrize("option", [*RUN_OPTIONS, *STRATA_OPTIONS], ids=lambda o: o.flag)
def test_a_bad_run_option_is_the_same_error_everywhere(option: Option, rpx, tmp_path: Path) -> None:
    """Before: evaluate_dirs(..., shard="1/2") raised a bare ValueError, jobs="2" a message of
    its own, bootstrap="ten" a TypeError; now every entry point says what the flag says."""
    messages = refused(option, tmp_path)
    assert messages or option.kind == "str", f"{option.flag} refuses nothing: is it checked?"
    for text, message in messages.items():
        assert message.startswith(f"{option.flag}: "), message
        given = {option.param: text}
        with pytest.raises(ParameterError) as caught:
            evaluate_dirs("depth", DEPTH / "pred", DEPTH / "gt", **given)
        assert str(caught.value) == message
        with pytest.raises(ParameterError) as caught:
            run_file_evaluation("classification", {"gt_file": CSV / "gt.csv",
                                                   "pred_file": CSV / "pred.csv"}, {},
                                RunOptions.of(**given))
        assert str(caught.value) == message
        if option.kind != "flag":
            run = rpx(f"eval depth {dirs(DEPTH)} {option.flag} '{text}'")
            assert run.exit_code == 2 and f"Error: {message}\n" in run.stderr, (text, run.stderr)
        if option.param == "jobs":  # the rpx fixture passes --jobs 1, which wins over the file
            continue
        config = _toml(tmp_path, "eval.depth", option, text)
        run = rpx(f"eval depth {dirs(DEPTH)} --config {config}")
        assert run.exit_code == 2 and f"Error: {message}\n" in run.stderr, (text, run.stderr)


def test_include_rows_is_checked_by_the_no_rows_declaration() -> None:
    with pytest.raises(ParameterError, match="--no-rows: expected true or false, got 'abc'"):
        Evaluator("depth", include_rows="abc")
    with pytest.raises(ParameterError, match="--no-rows: expected true or false, got 'abc'"):
        evaluate_dirs("depth", DEPTH / "pred", DEPTH / "gt", include_rows="abc")


def test_valid_run_options_from_the_api_are_the_flags_values(rpx, tmp_path: Path) -> None:
    """``shard="1/2"`` is the part ``--shard 1/2`` writes; the same for texts of numbers."""
    part = rpx(f"eval depth {dirs(DEPTH)} --shard 1/2 --jobs 1").json
    for shard in ("1/2", (1, 2), [1, 2]):
        report = evaluate_dirs("depth", DEPTH / "pred", DEPTH / "gt", shard=shard, jobs="1")
        assert without_provenance(report) == without_provenance(part)
    assert RunOptions(shard="2/4", jobs="3", include_rows="false").shard == (2, 4)
    assert RunOptions(jobs="3").jobs == 3 and RunOptions(include_rows="no").include_rows is False
    assert Strata(str(KITCHEN / "manifest.json"), bootstrap="50").bootstrap == 50
    off = rpx(f"eval depth {dirs(DEPTH)} --no-rows").json
    assert "rows" not in off
    config = tmp_path / "rpx.toml"
    config.write_text("[eval.depth]\nno-rows = true\n")
    assert "rows" not in rpx(f"eval depth {dirs(DEPTH)} --config {config}").json


def test_the_executor_needs_its_scheduler_everywhere(rpx) -> None:
    message = "--executor dask needs --scheduler tcp://HOST:PORT (or DASK_SCHEDULER_ADDRESS)"
    with pytest.raises(ParameterError, match=message.replace("(", r"\(").replace(")", r"\)")):
        evaluate_dirs("depth", DEPTH / "pred", DEPTH / "gt", executor="dask")
    run = rpx(f"eval depth {dirs(DEPTH)} --executor dask")
    assert run.exit_code == 2 and message in run.stderr


def test_unknown_run_keywords_name_the_closest() -> None:
    with pytest.raises(ParameterError, match=r"unknown option\(s\) for depth: jbos \(did you "
                                             r"mean jobs\?\)"):
        evaluate_dirs("depth", DEPTH / "pred", DEPTH / "gt", jbos=2)


@pytest.mark.parametrize("option", STABILITY_OPTIONS, ids=lambda o: o.flag)
def test_a_bad_stability_option_is_the_same_error_everywhere(option: Option, rpx,
                                                            tmp_path: Path) -> None:
    """Before: run_stability_report(..., ignore_index="abc") raised a bare ValueError."""
    messages = refused(option, tmp_path)
    assert messages
    args = ["--pred-dir", str(KITCHEN / "pred" / "depth"), "--manifest",
            str(KITCHEN / "manifest.json")]
    for text, message in messages.items():
        task = text if option.param == "task" else "segmentation"
        given = {} if option.param == "task" else {option.param: text}
        with pytest.raises(ParameterError) as caught:
            run_stability_report(task, str(KITCHEN / "pred" / "depth"),
                                 str(KITCHEN / "manifest.json"), **given)
        assert str(caught.value) == message
        run = rpx(["stability", *(["--task", "depth"] if option.param != "task" else []),
                   *args, option.flag, text])
        assert run.exit_code == 2 and f"Error: {message}\n" in run.stderr, (text, run.stderr)


@pytest.mark.parametrize("option", COMPARE_OPTIONS, ids=lambda o: o.flag)
def test_a_bad_compare_option_is_the_same_error_everywhere(option: Option, rpx,
                                                          tmp_path: Path) -> None:
    """Before: run_compare(..., bootstrap="ten") failed deep in the bootstrap with a
    TypeError, and a bad tolerance was a bare ValueError."""
    report = tmp_path / "r.json"
    assert rpx(f"eval depth {dirs(DEPTH)} -o {report}").exit_code == 0
    messages = refused(option, tmp_path)
    if option.kind == "flag":
        messages = {"abc": "--force: expected true or false, got 'abc'"}
    for text, message in messages.items():
        with pytest.raises(ParameterError) as caught:
            run_compare(str(report), str(report), **{option.param: text})
        assert str(caught.value) == message
        if option.kind != "flag":
            run = rpx(["compare", report, report, option.flag, text])
            assert run.exit_code == 2 and f"Error: {message}\n" in run.stderr, (text, run.stderr)


def test_stability_and_compare_through_the_api_equal_the_cli(rpx, tmp_path: Path) -> None:
    cli = rpx(["stability", "--task", "depth", "--pred-dir", KITCHEN / "pred" / "depth",
               "--manifest", KITCHEN / "manifest.json", "--depth-scale", "1000"]).json
    api = run_stability_report("depth", str(KITCHEN / "pred" / "depth"),
                               str(KITCHEN / "manifest.json"), depth_scale="1000", jobs="1",
                               warp="auto").report
    assert without_provenance(api) == without_provenance(cli)
    report = tmp_path / "r.json"
    rpx(f"eval depth {dirs(DEPTH)} -o {report}")
    document = run_compare(str(report), str(report), bootstrap="10", seed="3",
                           no_regression=["absrel:1%"]).document
    assert document["gates"][0]["expr"] == "absrel:1%"


# --- a declaration says its bound: no hand check refuses what it accepts ---------------------

# values a declaration may accept that a later check of several options refuses
ACROSS = {("segmentation3d", "--range"), ("tracking3d", "--class-range")}  # (--class-names)


@pytest.mark.parametrize("case", CASES, ids=lambda case: f"{case[0]}{case[1].flag}")
def test_what_a_declaration_accepts_resolves(case, tmp_path: Path) -> None:
    """Before: --iou-threshold 0 passed tracking's declaration ([0, 1]) and then its own
    check ((0, 1]); --min-precision 1 passed detection3d's and then check_params. Now the
    declaration says the bound, and its message is the standard one."""
    name, option = case
    task = TASKS[name]
    if (name, option.flag) in ACROSS:
        return
    extra: dict[str, Any] = {}
    if (name, option.flag) in NEEDS:
        needed = NEEDS[name, option.flag]
        flag, value = needed if isinstance(needed, tuple) else (needed, None)
        other = next(o for o in options_of(task) if o.flag == flag)
        extra[other.param] = value if value is not None else valid_texts(task, other, tmp_path)[0]
    for text in (*CANDIDATES, *MORE):
        try:
            option.convert_one(text)
        except ParameterError:
            continue
        try:
            resolve(task, {option.param: text, **extra})
        except InputError:
            pass  # a file the text names: not a bound
        except ParameterError as exc:
            pytest.fail(f"{name} {option.flag} {text!r}: the declaration accepts it, then: {exc}")


@pytest.mark.parametrize("task, flag, text, bound", [
    ("tracking", "--iou-threshold", "0", "must be > 0"),
    ("tracking", "--iou-threshold", "1.5", "must be <= 1"),
    ("detection3d", "--min-precision", "1", "must be < 1"),
    ("sparse-depth", "--radius", "-1", "must be >= 0"),
    ("sparse-depth", "--depth-scale", "0", "must be > 0"),
    ("classification", "--top-k", "0", "must be >= 1"),
    ("classification", "--ece-bins", "0", "must be >= 1"),
])
def test_bounds_are_the_declarations(rpx, task, flag, text, bound) -> None:
    option = next(o for o in TASKS[task].options if o.flag == flag)
    message = f"{flag}: {bound}, got {text!r}"
    with pytest.raises(ParameterError) as caught:
        resolve(TASKS[task], {option.param: text})
    assert str(caught.value) == message
    run = rpx(["eval", task, "--pred-dir", "p", "--gt-dir", "g", flag, text])
    assert run.exit_code == 2 and f"Error: {message}\n" in run.stderr, run.stderr


def test_plan_and_run_evaluation_convert_their_options() -> None:
    with pytest.raises(ParameterError, match="--missing: 'nope' is not one of error, skip, empty"):
        rpx_cli.api.plan("depth", DEPTH / "pred", DEPTH / "gt", missing="nope")
    with pytest.raises(ParameterError, match=r"--shard: expected K/N with 1 <= K <= N \(e\.g\. "
                                             r"2/4\), got 3/2"):
        run_evaluation("depth", str(DEPTH / "pred"), str(DEPTH / "gt"), {},
                       RunOptions(shard="3/2"))


def test_readiness_cost_figures_are_declared(rpx, tmp_path: Path) -> None:
    from rpx_cli.api import run_readiness

    report = tmp_path / "eval.json"
    rpx(f"eval depth {dirs(DEPTH)} -o {report}")
    with pytest.raises(ParameterError) as caught:
        run_readiness(str(report), cost={"latency_ms": "-1"})
    assert str(caught.value) == "--latency-ms: must be >= 0, got '-1'"
    run = rpx(["readiness", "--eval", report, "--latency-ms", "-1"])
    assert run.exit_code == 2 and f"Error: {caught.value}\n" in run.stderr, run.stderr
    with pytest.raises(ParameterError, match=r"unknown option\(s\) for the cost figures: "
                                             r"latency \(did you mean latency_ms\?\)"):
        run_readiness(str(report), cost={"latency": 3})
    ready = run_readiness(str(report), cost={"latency_ms": "12"}).report
    assert ready["cost"]["latency_ms"] == 12.0
