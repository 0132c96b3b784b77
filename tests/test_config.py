"""Defaults from rpx.toml / [tool.rpx] in pyproject.toml; flags win; unknown keys fail."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import FIXTURES, dirs

DEPTH = FIXTURES / "depth" / "indoor"
SALIENCY = FIXTURES / "saliency-mb" / "original-xyz"
ARGS = f"eval depth {dirs(DEPTH)}"


def test_rpx_toml_in_a_parent_folder(rpx, tmp_path: Path, monkeypatch) -> None:
    (tmp_path / "rpx.toml").write_text(
        '[eval.depth]\nmax-depth = 6\nrange = ["0:2", "2:"]\n\n[saliency-mb]\nblock-size = 2\n')
    work = tmp_path / "a" / "b"
    work.mkdir(parents=True)
    monkeypatch.chdir(work)
    report = rpx(ARGS).json
    assert report["params"]["max_depth"] == 6.0
    assert report["params"]["ranges"] == [[0.0, 2.0], [2.0, None]]
    assert report["run_provenance"]["args"]["config"] == str(tmp_path / "rpx.toml")
    assert rpx(ARGS + " --max-depth 9").json["params"]["max_depth"] == 9.0  # flags win
    saliency = rpx(f"saliency-mb {dirs(SALIENCY)}").json
    assert saliency["block_size"] == 2


def test_pyproject_tool_rpx(rpx, tmp_path: Path, monkeypatch) -> None:
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "x"\n\n[tool.rpx.eval.depth]\ndepth-scale = 256\nno-rows = true\n')
    monkeypatch.chdir(tmp_path)
    report = rpx(ARGS).json
    assert report["params"]["depth_scale"] == 256.0 and "rows" not in report


def test_explicit_config_before_or_after_the_subcommand(rpx, tmp_path: Path) -> None:
    config = tmp_path / "ci.toml"
    config.write_text("[eval.depth]\nmin-depth = 0.5\n")
    after = rpx(ARGS + f" --config {config}").json
    before = rpx(f"--config {config} " + ARGS).json
    assert after["params"]["min_depth"] == before["params"]["min_depth"] == 0.5


@pytest.mark.parametrize(("content", "message"), [
    ("[eval.depth]\nmax-dept = 6\n", "unknown key 'max-dept' in [eval.depth]; did you mean "
                                      "'max-depth' or 'min-depth'?"),
    ("[eval.depth]\ndepth_scale = 256\n", "unknown key 'depth_scale' in [eval.depth]; did you "
                                          "mean 'depth-scale'?"),
    ("[eval.depth]\nzzzz = 6\n", "unknown key 'zzzz' in [eval.depth] (keys are long flag names "
                                  "without the dashes)"),
    ("[eval.dpeth]\nmax-depth = 6\n", "unknown command table [eval.dpeth]; did you mean "
                                       "[eval.depth]?"),
    ("[eval.depth]\nmax-depth = 'far'\n", "max-depth"),
    ("[eval.depth\n", "cannot read the config file"),
])
def test_bad_config_is_a_usage_error(rpx, tmp_path: Path, content: str, message: str) -> None:
    config = tmp_path / "bad.toml"
    config.write_text(content)
    run = rpx(ARGS + f" --config {config}")
    assert run.exit_code == 2 and message in run.stderr and "Traceback" not in run.stderr


def test_missing_config_file_is_a_usage_error(rpx, tmp_path: Path) -> None:
    run = rpx(ARGS + f" --config {tmp_path / 'none.toml'}")
    assert run.exit_code == 2 and "no such file" in run.stderr


def test_config_on_python_3_10_reads_with_tomli(rpx, tmp_path: Path, monkeypatch) -> None:
    """Without the standard library's tomllib (Python 3.10), tomli reads the file."""
    import sys
    import types

    try:
        import tomllib
    except ImportError:  # Python 3.10: the real tomli stands in for the standard library
        import tomli as tomllib
    used = []
    tomli = types.ModuleType("tomli")
    tomli.TOMLDecodeError = tomllib.TOMLDecodeError
    tomli.load = lambda handle: used.append(handle.name) or tomllib.load(handle)
    monkeypatch.setitem(sys.modules, "tomllib", None)  # `import tomllib` fails
    monkeypatch.setitem(sys.modules, "tomli", tomli)
    config = tmp_path / "rpx.toml"
    config.write_text("[eval.depth]\nmax-depth = 6\n")
    monkeypatch.chdir(tmp_path)
    assert rpx(ARGS).json["params"]["max_depth"] == 6.0
    assert used == [str(config)]


def test_config_without_any_toml_reader_is_one_line(rpx, tmp_path: Path, monkeypatch) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "tomllib", None)
    monkeypatch.setitem(sys.modules, "tomli", None)
    (tmp_path / "rpx.toml").write_text("[eval.depth]\nmax-depth = 6\n")
    monkeypatch.chdir(tmp_path)
    run = rpx(ARGS)
    assert run.exit_code == 1 and run.stdout == ""
    assert run.stderr.count("\n") == 1 and "Traceback" not in run.stderr
    assert run.stderr.startswith(f"rpx: {tmp_path / 'rpx.toml'}: ") and "pip install tomli" in run.stderr
    # a pyproject.toml that does not mention rpx is never parsed: no reader needed
    (tmp_path / "rpx.toml").unlink()
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "model"\n')
    assert rpx(ARGS).exit_code == 0


def test_tomli_is_a_dependency_on_python_3_10_only() -> None:
    from importlib import metadata

    requires = metadata.requires("rpx-eval") or []
    assert any(r.replace(" ", "").startswith("tomli") and "python_version<\"3.11\"" in r.replace(" ", "")
               .replace("'", '"') for r in requires), requires
