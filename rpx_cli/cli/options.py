"""The flags commands share (pairs, output paths, gates, jobs and shards, digest cache, object
storage, executors) and their click types; what a command then writes is in
:mod:`rpx_cli.cli.output`."""

from __future__ import annotations

import difflib
import os
from collections.abc import Callable
from typing import Any

import click

SHOW_TRACEBACK = {"enabled": False}
INT64_MAX = 2**63 - 1
MAX_JOBS = 4096  # worker processes; more than any machine's CPUs
MAX_SHARDS = 1_000_000


def int_range(minimum: int | None = None, maximum: int = INT64_MAX, *,
              min_open: bool = False) -> click.IntRange:
    """An integer option: every one is bounded (at most 64 bits by default), so a value of
    99999999999999999999999 is a usage error (exit 2), never an overflow further on."""
    return click.IntRange(min=minimum, max=maximum, min_open=min_open)


def enable_traceback(ctx: click.Context, param: click.Parameter, value: bool) -> bool:
    if value:
        SHOW_TRACEBACK["enabled"] = True
    return value


class SuggestingGroup(click.Group):
    """A group that answers an unknown subcommand with the closest names ("did you mean")."""

    noun = "command"

    def suggest(self, ctx: click.Context, name: str) -> str:
        """The hint after "No such command 'NAME'."."""
        known = self.list_commands(ctx)
        close = difflib.get_close_matches(name, known, n=2, cutoff=0.6)
        if close:
            return f"Did you mean {' or '.join(repr(c) for c in close)}?"
        return f"({self.noun}s: {', '.join(known)})"

    def resolve_command(self, ctx: click.Context, args: list[str]):  # type: ignore[override]
        name = args[0] if args else ""
        # get_command, not list_commands: `rpx eval depth` loads the depth task only
        if (name and not name.startswith("-") and not ctx.resilient_parsing
                and self.get_command(ctx, name) is None):
            ctx.fail(f"No such {self.noun} '{name}'. {self.suggest(ctx, name)}")
        return super().resolve_command(ctx, args)


def config_option(func: Callable[..., Any]) -> Callable[..., Any]:
    """``--config FILE`` after the subcommand too (read by the root group before parsing)."""
    return click.option("--config", metavar="FILE", expose_value=False,
                        help="Defaults from this TOML file (rpx.toml format; flags win).")(func)


def traceback_option(func: Callable[..., Any]) -> Callable[..., Any]:
    return click.option("--traceback", is_flag=True, expose_value=False, is_eager=True,
                        callback=enable_traceback,
                        help="Show the stack of an unexpected error.")(func)


class ShardType(click.ParamType):
    """``K/N``: shard K (1-based) of N."""

    name = "K/N"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None):
        if isinstance(value, tuple):
            return value
        head, sep, tail = str(value).partition("/")
        if not (sep and head.isdigit() and tail.isdigit() and 1 <= int(head) <= int(tail)):
            self.fail(f"expected K/N with 1 <= K <= N (e.g. 2/4), got {value!r}", param, ctx)
        if int(tail) > MAX_SHARDS:
            self.fail(f"at most {MAX_SHARDS:,} shards, got {tail}", param, ctx)
        return int(head), int(tail)


class GateType(click.ParamType):
    """``PATH OP NUMBER`` (e.g. ``aggregate.absrel<=0.12``); malformed = usage error."""

    name = "EXPR"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None):
        """Validate now (a malformed gate is a usage error); keep the text for provenance."""
        from rpx_cli.report.gates import parse_gate

        try:
            parse_gate(str(value))
        except ValueError as exc:
            self.fail(str(exc), param, ctx)
        return str(value)


class OutputPathError(click.BadParameter):
    """An output path no report can be written to: one line on stderr, exit 2 (usage)."""

    def show(self, file: Any = None) -> None:
        click.echo(f"rpx: {self.format_message()}", err=True)

    def format_message(self) -> str:
        flag = self.param_hint if isinstance(self.param_hint, str) else "-o/--out"
        return f"{flag} {self.message}"


def output_path_problem(path: str, example: str = "report.json") -> str | None:
    """Why a report cannot be written to ``path``, or None when it can: checked before any
    work, so a run never ends in a failed write. ``-`` (stdout) and URLs are not checked; a
    missing folder is fine when it can be created (the write creates it)."""
    if path == "-" or "://" in path:
        return None
    if not path.strip():
        return "'': the path is empty (give a file name, or '-' for stdout)"
    if os.path.isdir(path):
        return f"{path}: is a folder (give a file in it, e.g. {os.path.join(path, example)})"
    if path.endswith(("/", os.sep)):
        return f"{path}: names a folder (give a file name, e.g. {path}{example})"
    if os.path.exists(path) and not os.path.isfile(path):
        return None  # /dev/null, a FIFO: written directly
    existing = os.path.dirname(os.path.abspath(path))
    while not os.path.exists(existing):
        existing = os.path.dirname(existing)
    if not os.path.isdir(existing):
        return f"{path}: cannot be written, {existing} is a file, not a folder"
    if not os.access(existing, os.W_OK | os.X_OK):
        return f"{path}: cannot be written, folder {existing} is not writable"
    # access() answers for the permission bits only: root passes it everywhere, and /proc,
    # /sys or a read-only mount refuse the write anyway. A file created and removed there
    # is the question the report's write will ask.
    import tempfile

    try:
        handle, probe = tempfile.mkstemp(prefix=".rpx-probe-", dir=existing)
    except OSError as exc:
        return f"{path}: cannot be written in {existing} ({exc.strerror or exc})"
    os.close(handle)
    os.unlink(probe)
    return None


def check_output_path(ctx: click.Context | None, param: click.Parameter | None, value: Any) -> Any:
    """Click callback of every option naming a file a command writes (``-o``, and any other):
    an unusable path is a usage error before anything is read."""
    if isinstance(value, str):
        html = ctx is not None and (ctx.info_name == "report" or (param is not None and param.name == "html"))
        problem = output_path_problem(value, "report.html" if html else "report.json")
        if problem is not None:
            flag = "/".join(param.opts[:2]) if param is not None else "-o/--out"
            raise OutputPathError(problem, ctx=ctx, param_hint=flag)
    return value


def refuse_overwriting_inputs(ctx: click.Context, *, suffixes: tuple[str, ...] = (),
                              inputs: dict[str, Any] | None = None) -> None:
    """Before anything is read: no output file of the command (``-o``, ``--html``: the
    options checked by :func:`check_output_path`) may be a file the command reads, a file
    inside a folder it reads with one of the ``suffixes`` read there (the next run would
    read the report as an input), or another output. Usage error (exit 2), naming both.
    ``inputs`` (option -> path or paths): the inputs, when the command's parameters do not
    name them all (globs expanded); by default every parameter naming an existing path."""
    outputs = {_flag(param): ctx.params[param.name] for param in ctx.command.params
               if param.callback is check_output_path and isinstance(ctx.params.get(param.name), str)}
    outputs = {flag: path for flag, path in outputs.items() if path != "-" and "://" not in path}
    if not outputs:
        return
    named = {_flag(param): ctx.params.get(param.name) for param in ctx.command.params
             if param.callback is not check_output_path and param.name != "digest_cache"}
    if inputs is not None:
        named.update(inputs)
    sources: list[tuple[str, str]] = []
    for flag, value in named.items():
        for path in (value if isinstance(value, (tuple, list)) else (value,)):
            if isinstance(path, str) and path and path != "-" and "://" not in path \
                    and os.path.exists(path):
                sources.append((flag, os.path.realpath(path)))
    seen: dict[str, str] = {}
    for flag, path in outputs.items():
        real = os.path.realpath(path)
        if real in seen:
            raise OutputPathError(f"{path}: is also {seen[real]}'s file; give two different "
                                  "files", ctx=ctx, param_hint=flag)
        seen[real] = flag
        for source_flag, source in sources:
            if real == source:
                raise OutputPathError(f"{path}: is an input of this command ({source_flag}); "
                                      "it would be overwritten", ctx=ctx, param_hint=flag)
            if os.path.isdir(source) and real.startswith(source.rstrip(os.sep) + os.sep) \
                    and real.lower().endswith(tuple(s.lower() for s in suffixes or ())):
                if os.path.exists(real):
                    raise OutputPathError(f"{path}: is an input of this command (in "
                                          f"{source_flag}); it would be overwritten", ctx=ctx,
                                          param_hint=flag)
                raise OutputPathError(f"{path}: is inside {source_flag} {source} and would be "
                                      "read as an input; write it elsewhere", ctx=ctx,
                                      param_hint=flag)


def _flag(param: click.Parameter) -> str:
    if isinstance(param, click.Option):
        return "/".join(param.opts[:2])
    return str(param.human_readable_name)


def out_option(what: str = "JSON report") -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """``-o/--out`` (alias ``--out-json``): where the JSON goes, ``-`` = stdout. The path is
    checked before the command runs (:func:`check_output_path`)."""
    return click.option("-o", "--out", "--out-json", "out", default="-", show_default=True,
                        metavar="PATH", callback=check_output_path,
                        help=f"Where the {what} goes ('-' = stdout; a missing folder is "
                             "created).")


compact_option = click.option("--compact", is_flag=True, help="One-line JSON instead of indented.")


def html_option(func: Callable[..., Any]) -> Callable[..., Any]:
    """``--html FILE``: the report as a self-contained HTML page too (what `rpx report` writes)."""
    return click.option("--html", metavar="FILE", default=None, callback=check_output_path,
                        help="Also write the report as a self-contained HTML page with charts "
                             "(as `rpx report` does).")(func)


def depth_scale_option(func: Callable[..., Any]) -> Callable[..., Any]:
    return click.option("--depth-scale", type=click.FloatRange(min=0.0, min_open=True),
                        default=1000.0, show_default=True,
                        help="Integer depth (16-bit PNG/PGM/TIFF, integer .npy) is divided by "
                             "this to get metres: 1000 = millimetres.")(func)


def require_option(func: Callable[..., Any]) -> Callable[..., Any]:
    return click.option("--require", "require", type=GateType(), multiple=True, metavar="EXPR",
                        help="Gate on the report, e.g. aggregate.absrel<=0.12 (repeatable): "
                             "the report is written, then exit 3 if any gate fails.")(func)


def digest_cache_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """``--digest-cache DIR`` / ``--no-digest-cache`` (the stat-keyed cache of file sha256s)."""
    func = click.option("--no-digest-cache", is_flag=True,
                        help="Hash every input file, neither reusing nor storing digests.")(func)
    return click.option("--digest-cache", metavar="DIR", default=None,
                        help="Where file digests are cached, keyed by inode, size, mtime and "
                             "ctime [default: $RPX_DIGEST_CACHE, else ~/.cache/rpx]. Reports "
                             "are identical with or without it.")(func)


def digest_cache_setting(directory: str | None, off: bool) -> str | bool | None:
    """What the run layer takes: False (off), a folder, or None (the default folder)."""
    if off and directory:
        raise click.UsageError("give --digest-cache DIR or --no-digest-cache, not both")
    return False if off else directory


# --- object storage and distributed execution (docs/remote.md, docs/distributed.md) -----------


def set_storage_options(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """``--storage-options JSON``: checked now (bad JSON is a usage error) and used for
    every URL this process opens. Only the standard library is imported."""
    from rpx_cli.errors import ParameterError
    from rpx_cli.io import remote

    try:
        remote.configure(remote.parse_options(value))
    except ParameterError as exc:
        raise click.BadParameter(str(exc).removeprefix("--storage-options: "), ctx=ctx,
                                 param=param) from None
    return value


def storage_options_option(func: Callable[..., Any]) -> Callable[..., Any]:
    """``--storage-options JSON`` (fsspec keyword arguments for URLs; secrets never shown)."""
    return click.option("--storage-options", metavar="JSON", default=None,
                        callback=set_storage_options, envvar="RPX_STORAGE_OPTIONS",
                        help="Options of the object store for s3:// gs:// az:// URLs as a JSON "
                             "object, e.g. '{\"endpoint_url\": \"http://127.0.0.1:9000\"}' "
                             "[default: the store's usual environment, AWS_* etc.]. Secret "
                             "values are never written to a report or a message.")(func)


def executor_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """``--executor local|dask`` and ``--scheduler ADDRESS``."""
    func = click.option("--scheduler", metavar="ADDRESS", default=None,
                        envvar="DASK_SCHEDULER_ADDRESS",
                        help="The Dask scheduler for --executor dask, e.g. tcp://10.0.0.5:8786 "
                             "[default: $DASK_SCHEDULER_ADDRESS].")(func)
    return click.option("--executor", type=click.Choice(["local", "dask"]), default="local",
                        show_default=True,
                        help="Where pairs are evaluated: worker processes here (--jobs), or the "
                             "workers of a Dask cluster (rpx[dask]; --scheduler). Never "
                             "changes a number.")(func)


class InputFileType(click.Path):
    """An input file: a local path that must exist, or a URL (``s3://...``) read later."""

    def __init__(self) -> None:
        super().__init__(exists=True, dir_okay=False)

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None):
        from rpx_cli.io.remote import is_url

        if isinstance(value, str) and is_url(value):
            return value
        return super().convert(value, param, ctx)


def pair_options(*, default_missing: str, dirs_required: bool = True,
                 inputs: tuple[tuple[str, str], tuple[str, str]] = (
                     ("pred_dir", "Folder of predictions."), ("gt_dir", "Folder of ground truth.")),
                 files_ok: bool = False) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """The two folders (``--pred-dir``, ``--gt-dir``, or a task's own names: ``inputs`` =
    (name, help) of each), ``--out``, ``--missing``, ``--on-error``, ``--jobs``, ``--no-rows``,
    ``--compact``, ``--quiet``, ``--progress/--no-progress``, ``--traceback``. ``files_ok``:
    either may name a file too (one that holds the whole set: ``Task.inputs_may_be_files``)."""
    dir_type = click.Path(file_okay=files_ok, path_type=str)
    options = [
        *(click.option("--" + name.replace("_", "-"), name, required=dirs_required, type=dir_type,
                       help=text) for name, text in inputs),
        out_option(),
        click.option("--missing", type=click.Choice(["error", "skip", "empty"]),
                     default=default_missing, show_default=True,
                     help="Unpaired stems: fail, evaluate the stems in both (listing the "
                          "rest under 'unpaired'), or score a missing prediction as empty."),
        click.option("--on-error", type=click.Choice(["fail", "skip"]), default="fail",
                     show_default=True,
                     help="A pair that cannot be read: list every such pair and exit 1 "
                          "without a report, or record it under 'errors' and go on."),
        click.option("-j", "--jobs", type=int_range(1, MAX_JOBS), default=None,
                     help="Worker processes [default: as many as the work pays for, up to the "
                          "CPUs available: run_provenance.executor says how many and why]. "
                          "Never changes a number."),
        click.option("--shard", type=ShardType(), default=None,
                     help="Evaluate only shard K of N (stable hash of the stem) and write a "
                          "partial report for `rpx merge`."),
        require_option,
        click.option("--no-rows", is_flag=True, help="Omit per-pair rows from the report."),
        digest_cache_options,
        storage_options_option,
        executor_options,
        compact_option,
        html_option,
        click.option("-q", "--quiet", is_flag=True,
                     help="No progress bar, summary or warnings on stderr."),
        click.option("--progress/--no-progress", default=None,
                     help="Force the progress bar on or off [default: on when stderr is a "
                          "terminal]."),
        traceback_option,
        config_option,
    ]

    def decorate(func: Callable[..., Any]) -> Callable[..., Any]:
        for option in reversed(options):
            func = option(func)
        return func

    return decorate


