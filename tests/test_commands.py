"""``rpx show``, ``rpx schema``, ``rpx validate``, ``rpx metrics``, ``--version``, errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import FIXTURES, dirs

from rpx_cli import __version__
from rpx_cli.report.schemas import schema_kinds

SCHEMA_KINDS = schema_kinds()

ORIGINAL = FIXTURES / "saliency-mb" / "original-xyz"


@pytest.fixture
def report_file(rpx, tmp_path: Path) -> Path:
    out = tmp_path / "report.json"
    run = rpx(f"saliency-mb {dirs(ORIGINAL)} "
              f"--block-size 2 -o {out}")
    assert run.exit_code == 0
    return out


def test_version_names_python_numpy_and_the_kernels(rpx) -> None:
    import platform
    from importlib import metadata

    from rpx_cli.native import describe

    for flag in ("--version", "-V"):
        run = rpx(flag)
        assert run.exit_code == 0 and run.stdout == (
            f"rpx, version {__version__} (Python {platform.python_version()}, "
            f"numpy {metadata.version('numpy')}, kernels {describe()})\n")


@pytest.mark.parametrize(("shell", "marker"), [("bash", "complete -o nosort -F _rpx_completion rpx"),
                                               ("zsh", "#compdef rpx"),
                                               ("fish", "complete --no-files --command rpx")])
def test_completion_prints_the_shell_script(rpx, shell: str, marker: str) -> None:
    run = rpx(["completion", shell])
    assert run.exit_code == 0 and marker in run.stdout and "_RPX_COMPLETE" in run.stdout
    assert rpx(["completion", "tcsh"]).exit_code == 2


def test_completion_candidates_come_from_rpx(monkeypatch) -> None:
    """What the script asks: ``rpx eval de<TAB>`` -> depth, detection; choices of a flag;
    report kinds (resolved from the registry when asked)."""
    from click.testing import CliRunner

    from rpx_cli.cli.main import cli

    def complete(words: str, index: int) -> list[str]:
        env = {"_RPX_COMPLETE": "bash_complete", "COMP_WORDS": words, "COMP_CWORD": str(index)}
        result = CliRunner().invoke(cli, [], env=env, prog_name="rpx")
        return [line.split(",", 1)[1] for line in result.output.splitlines() if line]

    assert {"depth", "detection", "detection3d"} <= set(complete("rpx eval de", 2))
    assert complete("rpx eval dep", 2) == ["depth"]
    assert complete("rpx comp", 1) == ["compare", "completion"]
    assert complete("rpx eval depth --align ", 4) == ["none", "median", "ls_affine", "ls_disparity"]
    assert complete("rpx schema ", 2) == SCHEMA_KINDS
    assert complete("rpx schema st", 2) == ["stability"]
    assert complete("rpx validate report.json --kind co", 4) == ["coherence", "compare"]
    assert complete("rpx schema nonsense", 2) == []


def test_show_table(rpx, report_file: Path) -> None:
    run = rpx(f"show {report_file}")
    assert run.exit_code == 0
    assert "macro_iou" in run.stdout and "0.777778" in run.stdout
    assert "micro_iou" in run.stdout and "0.5" in run.stdout
    assert "params.block_size" in run.stdout


def test_show_markdown(rpx, report_file: Path) -> None:
    run = rpx(f"show {report_file} --format markdown")
    assert run.exit_code == 0
    assert "| `micro_iou` | 0.5 |" in run.stdout
    assert "| `macro_iou` | 0.777778 |" in run.stdout
    assert run.stdout.startswith("### rpx saliency-mb report")


def test_show_reads_stdin(rpx, report_file: Path) -> None:
    run = rpx("show - --format markdown", input=report_file.read_text())
    assert run.exit_code == 0 and "micro_iou" in run.stdout


@pytest.mark.parametrize("content", ["not json", "[1, 2]"])
def test_show_bad_file_exits_1(rpx, tmp_path: Path, content: str) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(content)
    run = rpx(f"show {bad}")
    assert run.exit_code == 1 and str(bad) in run.stderr and "Traceback" not in run.stderr


def test_show_missing_file_is_usage_or_input_error(rpx, tmp_path: Path) -> None:
    run = rpx(f"show {tmp_path / 'none.json'}")
    assert run.exit_code == 1 and "none.json" in run.stderr


@pytest.mark.parametrize("kind", SCHEMA_KINDS)
def test_schema_prints_a_valid_draft_2020_12_schema(rpx, kind: str) -> None:
    from jsonschema import Draft202012Validator

    run = rpx(f"schema {kind}")
    assert run.exit_code == 0
    schema = json.loads(run.stdout)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    Draft202012Validator.check_schema(schema)


def test_schema_unknown_kind_is_usage_error(rpx) -> None:
    run = rpx("schema nonsense")
    assert run.exit_code == 2 and run.stdout == ""
    assert "'nonsense' is not one of " + ", ".join(map(repr, SCHEMA_KINDS)) + "." in run.stderr
    run = rpx("validate report.json --kind nonsense")
    assert run.exit_code == 2 and "Invalid value for '--kind': 'nonsense' is not one of" in run.stderr
    run = rpx("schema")
    assert run.exit_code == 2
    assert "Missing argument 'KIND'. Choose from:\n\t" + ",\n\t".join(SCHEMA_KINDS) in run.stderr
    assert "rpx schema [OPTIONS] KIND" in rpx("schema --help").stdout


def test_validate_valid_report(rpx, report_file: Path) -> None:
    run = rpx(f"validate {report_file}")
    assert run.exit_code == 0 and "valid saliency-mb report" in run.stderr


def test_validate_invalid_report_names_the_failing_path(rpx, report_file: Path) -> None:
    report = json.loads(report_file.read_text())
    report["rows"][1]["iou"] = "high"
    del report["micro_iou"]
    report_file.write_text(json.dumps(report))
    run = rpx(f"validate {report_file}")
    assert run.exit_code == 1
    assert "$.rows[1].iou" in run.stderr and "'high' is not of type 'number'" in run.stderr
    assert "'micro_iou' is a required property" in run.stderr
    assert "not a valid saliency-mb report (2 problem(s))" in run.stderr


def test_validate_unknown_kind_and_override(rpx, tmp_path: Path) -> None:
    doc = tmp_path / "m.json"
    doc.write_text(json.dumps({"schema_version": 1, "samples": [{"stem": "a", "phase": "clean"}]}))
    manifest = rpx(f"validate {doc}")  # detected as a manifest, which is not a report
    assert manifest.exit_code == 0 and manifest.stderr == f"{doc}: valid manifest\n"
    other = tmp_path / "o.json"
    other.write_text(json.dumps({"hello": 1}))
    run = rpx(f"validate {other}")
    assert run.exit_code == 1 and "has no 'schema' field" in run.stderr
    wrong = rpx(f"validate {other} --kind manifest")
    assert wrong.exit_code == 1 and "is not a valid manifest (" in wrong.stderr


def test_metrics_json_and_table(rpx) -> None:
    run = rpx("metrics --json")
    assert run.exit_code == 0
    table = json.loads(run.stdout)
    assert table["saliency-mb"]["micro_iou"]["direction"] == "higher"
    single = json.loads(rpx("metrics --task saliency-mb --json").stdout)
    assert list(single) == ["saliency-mb"]
    text = rpx("metrics").stdout
    assert "micro_iou" in text and "higher" in text
    assert rpx("metrics --task nope").exit_code == 2


def test_unexpected_error_is_one_line_unless_traceback(rpx, monkeypatch) -> None:
    import rpx_cli.run.state

    def boom(*args, **kwargs):
        raise ZeroDivisionError("synthetic")

    monkeypatch.setattr(rpx_cli.run.state, "run_pairs", boom)
    args = f"saliency-mb {dirs(ORIGINAL)} --block-size 2"
    run = rpx(args)
    assert run.exit_code == 1
    assert run.stderr.count("\n") == 1 and "internal error: ZeroDivisionError: synthetic" in run.stderr
    assert "Traceback" not in run.stderr
    loud = rpx(args + " --traceback")
    assert loud.exit_code == 1 and "Traceback (most recent call last)" in loud.stderr


def test_interrupt_exits_130_without_report(rpx, monkeypatch, tmp_path: Path) -> None:
    import rpx_cli.run.state

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(rpx_cli.run.state, "run_pairs", interrupted)
    out = tmp_path / "r.json"
    run = rpx(f"saliency-mb {dirs(ORIGINAL)} -o {out}")
    assert run.exit_code == 130 and not out.exists()


def test_python_api_evaluate_dirs() -> None:
    import rpx_cli
    from rpx_cli.errors import ParameterError

    report = rpx_cli.evaluate_dirs("saliency-mb", ORIGINAL / "pred", ORIGINAL / "gt",
                                   block_size=2, jobs=1)
    assert report["macro_iou"] == 7 / 9 and report["micro_iou"] == 0.5
    with pytest.raises(ParameterError):
        rpx_cli.evaluate_dirs("saliency-mb", ORIGINAL / "pred", ORIGINAL / "gt", block_size=0)
    with pytest.raises(ParameterError, match="unknown option"):
        rpx_cli.evaluate_dirs("saliency-mb", ORIGINAL / "pred", ORIGINAL / "gt", blocksize=2)


def test_show_markdown_per_class_table_and_gates(rpx, tmp_path: Path) -> None:
    case = FIXTURES / "segmentation" / "street"
    out = tmp_path / "seg.json"
    rpx(f"eval segmentation {dirs(case)} --ignore-index 255 "
        f"--class-names {case / 'names.txt'} --require miou>=0.99 -o {out}")
    text = rpx(f"show {out} --format markdown").stdout
    assert "| class | f1 | iou | precision | recall | support |" in text
    assert "| person |" in text
    assert "| `miou>=0.99` |" in text and "FAIL" in text


@pytest.mark.parametrize(("argv", "hint"), [
    ("eval detph", "No such task 'detph'. Did you mean 'depth'?"),
    ("eval segmentaion --pred-dir p",
     "No such task 'segmentaion'. Did you mean 'segmentation' or 'segmentation3d'?"),
    ("eval saliency-mb", "saliency-mb is a command of its own: rpx saliency-mb --help"),
    ("eval nope", "No such task 'nope'. (tasks: "),
    ("evl depth", "No such command 'evl'. Did you mean 'eval'?"),
    ("depth --pred-dir p", "No such command 'depth'. Did you mean 'rpx eval depth'?"),
    ("mrege a.json", "No such command 'mrege'. Did you mean 'merge'?"),
])
def test_a_typo_gets_a_did_you_mean(rpx, argv: str, hint: str) -> None:
    run = rpx(argv)
    assert run.exit_code == 2 and run.stdout == ""
    errors = [line for line in run.stderr.splitlines() if line.startswith("Error:")]
    assert len(errors) == 1 and hint in errors[0], run.stderr
