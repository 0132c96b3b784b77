"""The flags commands share (pairs, output paths, gates, jobs and shards, digest cache, object
storage, executors) and their click types; what a command then writes is in
:mod:`rpx_cli.cli.output`. Every option that is declared (a task's, and the workflows':
:mod:`rpx_cli.params.workflows`) becomes its click flag here (:func:`click_option`), its
values checked by the declaration itself (:class:`OptionType`)."""

from __future__ import annotations

import difflib
import os
from collections.abc import Callable
from typing import Any

import click

SHOW_TRACEBACK = {"enabled": False}
_UNSET: Any = object()


class OptionType(click.ParamType):
    """The click type of a declared :class:`~rpx_cli.params.Option`: click hands every value
    (a flag's text, a ``rpx.toml`` value, a default) to :meth:`Option.convert_one`, the very
    check the Python API runs, so a bad value gets the same message on every path (a usage
    error, exit 2)."""

    _METAVARS = {"int": "INTEGER", "float": "FLOAT", "file": "FILE", "dir": "DIR", "str": "TEXT"}

    def __init__(self, option: Any) -> None:
        self.option = option
        self.name = option.kind

    def get_metavar(self, param: click.Parameter, ctx: click.Context | None = None) -> str:  # type: ignore[override]
        option = self.option
        if option.metavar:
            return option.metavar
        if option.choices:
            return "[" + "|".join(option.choices) + "]"
        return self._METAVARS.get(option.kind, "VALUE")

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        from rpx_cli.errors import ParameterError

        try:
            return self.option.convert_one(value)
        except ParameterError as exc:
            raise click.UsageError(str(exc), ctx=ctx) from None

    def shell_complete(self, ctx: click.Context, param: click.Parameter, incomplete: str):
        from click.shell_completion import CompletionItem

        option = self.option
        if option.choices:
            return [CompletionItem(choice) for choice in option.choices if choice.startswith(incomplete)]
        if option.kind in ("file", "dir"):
            return [CompletionItem(incomplete, type=option.kind)]
        return []


def cli_name(option: Any) -> str:
    """The name click parses a declared option into: its ``param``, or for a flag that
    switches a value off (``--no-rows``, :attr:`Option.switches_off`) the flag's own name
    (``no_rows``, True when given)."""
    return option.name.replace("-", "_") if option.switches_off else option.param


def cli_value(option: Any, value: Any) -> Any:
    """The option's value from what click parsed into :func:`cli_name`."""
    return option.convert(not value) if option.switches_off else value


def click_option(option: Any, *, default: Any = _UNSET, **extra: Any) -> Callable[..., Any]:
    """The click option of a declared :class:`~rpx_cli.params.Option` (a task's or a
    workflow's). ``default``: the command's own default when it differs from the
    declaration's (``--missing``: the task's); ``extra``: click's own settings (an
    environment variable, a callback, ``required``)."""
    names = [*([option.short] if option.short else []), option.flag, cli_name(option)]
    if option.kind == "flag":  # a value only from rpx.toml: checked by the option too
        return click.option(*names, is_flag=True, type=OptionType(option),
                            default=False if option.switches_off else bool(option.default),
                            help=option.help, **extra)
    default = option.default if default is _UNSET else default
    return click.option(*names, type=OptionType(option), default=default, help=option.help,
                        multiple=option.multiple, show_default=default not in (None, ()), **extra)


def declared_options(options: tuple[Any, ...], **defaults: Any) -> Callable[..., Any]:
    """A decorator adding the click options of ``options`` in their order (``defaults``:
    a command's own default by option name)."""
    def decorate(func: Callable[..., Any]) -> Callable[..., Any]:
        for option in reversed(options):
            func = click_option(option, default=defaults.get(option.param, _UNSET))(func)
        return func

    return decorate


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
    work, so a run never ends in a failed write. ``-`` (stdout) is not checked, a URL only
    for its scheme (:func:`~rpx_cli.io.remote.scheme_problem`); a
    missing folder is fine when it can be created (the write creates it)."""
    if path == "-":
        return None
    if "://" in path:
        from rpx_cli.io.remote import is_url, scheme_problem

        return scheme_problem(path) if is_url(path) else None
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


def require_option(func: Callable[..., Any]) -> Callable[..., Any]:
    return click.option("--require", "require", type=GateType(), multiple=True, metavar="EXPR",
                        help="Gate on the report, e.g. aggregate.absrel<=0.12 (repeatable): "
                             "the report is written, then exit 3 if any gate fails.")(func)


def digest_cache_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """``--digest-cache DIR`` (declared) and ``--no-digest-cache``, the CLI's spelling of
    ``digest_cache=False`` (the stat-keyed cache of file sha256s)."""
    from rpx_cli.params.workflows import DIGEST_CACHE

    func = click.option("--no-digest-cache", is_flag=True,
                        help="Hash every input file, neither reusing nor storing digests.")(func)
    return click_option(DIGEST_CACHE)(func)


def digest_cache_setting(directory: str | None, off: bool) -> str | bool | None:
    """What the run layer takes: False (off), a folder, or None (the default folder)."""
    if off and directory:
        raise click.UsageError("give --digest-cache DIR or --no-digest-cache, not both")
    return False if off else directory


# --- object storage and distributed execution (docs/remote.md, docs/distributed.md) -----------


def set_storage_options(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
    """``--storage-options JSON``, converted by its declaration: used for every URL this
    process opens. Only the standard library is imported."""
    from rpx_cli.io import remote

    remote.configure(value)
    return value


def storage_options_option(func: Callable[..., Any]) -> Callable[..., Any]:
    """``--storage-options JSON`` (fsspec keyword arguments for URLs; secrets never shown)."""
    from rpx_cli.params.workflows import STORAGE_OPTIONS

    return click_option(STORAGE_OPTIONS, callback=set_storage_options,
                        envvar="RPX_STORAGE_OPTIONS")(func)


def executor_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """``--executor local|dask`` and ``--scheduler ADDRESS``."""
    from rpx_cli.params.workflows import EXECUTOR, SCHEDULER

    func = click_option(SCHEDULER, envvar="DASK_SCHEDULER_ADDRESS")(func)
    return click_option(EXECUTOR)(func)


def pair_options(*, default_missing: str, dirs_required: bool = True,
                 inputs: tuple[tuple[str, str], tuple[str, str]] = (
                     ("pred_dir", "Folder of predictions."), ("gt_dir", "Folder of ground truth.")),
                 files_ok: bool = False) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """The two folders (``--pred-dir``, ``--gt-dir``, or a task's own names: ``inputs`` =
    (name, help) of each), ``--out``, the run options (``--missing``, ``--on-error``,
    ``--jobs``, ``--shard``, ``--no-rows``, the digest cache, ``--storage-options``,
    ``--executor``: :data:`rpx_cli.params.workflows.RUN_OPTIONS`), ``--compact``,
    ``--quiet``, ``--progress/--no-progress``, ``--traceback``. ``files_ok``: either folder
    may name a file too (one that holds the whole set: ``Task.inputs_may_be_files``)."""
    from rpx_cli.params.workflows import INCLUDE_ROWS, JOBS, KEEP_STATE, MISSING, ON_ERROR, SHARD

    dir_type = click.Path(file_okay=files_ok, path_type=str)
    options = [
        *(click.option("--" + name.replace("_", "-"), name, required=dirs_required, type=dir_type,
                       help=text) for name, text in inputs),
        out_option(),
        click_option(MISSING, default=default_missing),
        click_option(ON_ERROR),
        click_option(JOBS),
        click_option(SHARD),
        require_option,
        click_option(INCLUDE_ROWS),
        click_option(KEEP_STATE),
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


