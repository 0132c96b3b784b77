"""Defaults for any command from ``rpx.toml`` or ``[tool.rpx]`` in ``pyproject.toml``.

Tables are command paths (``[eval.depth]``, ``[saliency-mb]``, ``[compare]``; under
``[tool.rpx]`` in ``pyproject.toml``), keys are long flag names without the dashes
(``depth-scale = 256``, ``range = ["0:1", "1:"]``, ``no-rows = true``). Flags on the command
line win. ``--config FILE`` names the file; otherwise the nearest ``rpx.toml`` or
``pyproject.toml`` with a ``[tool.rpx]`` table, from the working directory up. An unknown
table or key is a usage error naming it and the file.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import click

CONFIG_FLAG = "--config"


def config_path_from_args(args: list[str]) -> str | None:
    """The ``--config`` value anywhere in ``args`` (it may follow the subcommand)."""
    for index, arg in enumerate(args):
        if arg == CONFIG_FLAG and index + 1 < len(args):
            return args[index + 1]
        if arg.startswith(CONFIG_FLAG + "="):
            return arg.split("=", 1)[1]
    return None


def find_config(start: Path) -> Path | None:
    """The nearest rpx.toml, or pyproject.toml holding [tool.rpx], from ``start`` up."""
    for folder in (start, *start.parents):
        candidate = folder / "rpx.toml"
        if candidate.is_file():
            return candidate
        pyproject = folder / "pyproject.toml"
        # a pyproject.toml that never says "rpx" is not parsed (nor needs a TOML reader)
        if pyproject.is_file() and "rpx" in pyproject.read_text(errors="replace"):
            try:
                if "tool" in (data := _read_toml(pyproject)) and "rpx" in data["tool"]:
                    return pyproject
            except click.UsageError:
                return None
    return None


class ConfigUnreadable(click.ClickException):
    """A config file rpx cannot read at all in this environment: one line, exit 1."""

    def show(self, file: Any = None) -> None:
        click.echo(f"rpx: {self.format_message()}", err=True)


def toml_module(path: Path) -> Any:
    """``tomllib`` (Python >= 3.11), else ``tomli`` (a dependency on Python 3.10)."""
    try:
        import tomllib
    except ImportError:
        try:
            import tomli as tomllib
        except ImportError:
            version = ".".join(map(str, sys.version_info[:2]))
            raise ConfigUnreadable(
                f"{path}: reading a config file on Python {version} needs tomli "
                "(pip install tomli), which rpx-eval declares for Python < 3.11") from None
    return tomllib


def _read_toml(path: Path) -> dict[str, Any]:
    from rpx_cli.errors import InputError
    from rpx_cli.io.local_files import open_regular

    tomllib = toml_module(path)
    try:
        with open_regular(str(path)):  # a regular file: a FIFO would block the read
            pass
        with open(path, "rb") as handle:
            return tomllib.load(handle)
    except InputError as exc:
        raise click.UsageError(f"cannot read the config file ({exc})") from None
    except (OSError, RecursionError, tomllib.TOMLDecodeError) as exc:
        raise click.UsageError(f"{path}: cannot read the config file ({exc})") from None


def load(path: Path) -> dict[str, Any]:
    """The rpx tables of a config file (``[tool.rpx]`` for a pyproject.toml)."""
    data = _read_toml(path)
    if path.name == "pyproject.toml":
        data = data.get("tool", {}).get("rpx", {})
    if not isinstance(data, dict):
        raise click.UsageError(f"{path}: [tool.rpx] must be a table")
    return data


def default_map(group: click.Group, ctx: click.Context, tables: dict[str, Any],
                path: Path) -> dict[str, Any]:
    """click's ``default_map`` for ``tables``, every key checked against the real command."""
    result: dict[str, Any] = {}
    for name, table in tables.items():
        command = group.get_command(ctx, name)
        prefix = ctx.command_path.split(" ")[1:]  # "rpx eval" -> ["eval"]
        where = ".".join([*prefix, name])
        if command is None:
            known = group.list_commands(ctx)
            hint = _did_you_mean(name, known, shown=lambda k, p=prefix: f"[{'.'.join([*p, k])}]")
            raise click.UsageError(f"{path}: unknown command table [{where}]{hint}")
        if not isinstance(table, dict):
            raise click.UsageError(f"{path}: [{where}] must be a table of flag = value")
        if isinstance(command, click.Group):
            sub_ctx = click.Context(command, info_name=name, parent=ctx)
            result[name] = default_map(command, sub_ctx, table, path)
            continue
        flags = {}
        for param in command.params:
            if isinstance(param, click.Option):
                for opt in param.opts + param.secondary_opts:
                    if opt.startswith("--"):
                        flags[opt[2:]] = param
        values = {}
        for key, value in table.items():
            param = flags.get(key)
            if param is None or key in ("config", "help", "traceback"):
                known = [k for k in flags if k not in ("config", "help", "traceback")]
                hint = _did_you_mean(key.replace("_", "-"), known, shown=lambda k: f"'{k}'") or \
                    " (keys are long flag names without the dashes)"
                raise click.UsageError(f"{path}: unknown key '{key}' in [{where}]{hint}")
            if param.is_flag and param.secondary_opts and key in [o[2:] for o in param.secondary_opts]:
                value = not value  # e.g. no-progress = true
            if isinstance(value, list):
                value = list(value)
            elif param.multiple:  # one value of a repeatable flag: range = "0:2"
                value = [value]
            values[param.name] = value
        result[name] = values
    return result


def _did_you_mean(name: str, known: list[str], *, shown: Any = str) -> str:
    """``; did you mean 'depth-scale'?`` when a known name is close (a typo, or
    ``depth_scale`` for ``depth-scale``), else "". ``shown``: how a name is written."""
    import difflib

    near = difflib.get_close_matches(name, known, n=3, cutoff=0.6)
    if not near:
        return ""
    return "; did you mean " + " or ".join(shown(k) for k in near) + "?"


def resolve(group: click.Group, ctx: click.Context, args: list[str]) -> tuple[dict, str | None]:
    """``(default_map, config path or None)`` for one invocation."""
    named = config_path_from_args(args)
    if named is not None:
        path = Path(named)
        if not path.is_file():
            raise click.UsageError(f"--config {named}: no such file")
    else:
        path = find_config(Path(os.getcwd()))
        if path is None:
            return {}, None
    return default_map(group, ctx, load(path), path), str(path)
