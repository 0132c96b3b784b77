"""The ``rpx`` command group, and the one place errors become exit codes."""

from __future__ import annotations

import _thread
import contextlib
import functools
import os
import signal
import sys
import threading
import time
import traceback
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import click

from rpx_cli import __version__
from rpx_cli.cli.options import SHOW_TRACEBACK, SuggestingGroup
from rpx_cli.errors import (
    EvaluationFailed,
    ExitStatus,
    Interrupted,
    RpxError,
    UnknownGatePath,
    capped,
    escaped,
    located,
)

# tasks with a command of their own (``rpx saliency-mb``): each command is built from its
# task's declarations when it runs; the one-line help is here so that ``rpx --help`` imports
# no task (a test holds it equal to the task's own first line)
TASK_COMMANDS = {
    "saliency-mb": "Block-level IoU of saliency masks, as ROI encoders consume them.",
    "coherence": "Stack-Level Geometric Coherence: do mask boundaries sit on depth discontinuities?",
}

# every command but ``eval``, imported when it runs: ``rpx --help`` imports no task, and an
# ``rpx eval`` builds none of the others' options (issue 43's start-up). name -> (module,
# attribute: the command, or a builder of it from a task's declarations, one-line help); a
# test holds each line equal to the command's own
LAZY_COMMANDS = {
    "convert": ("rpx_cli.cli.convert", "build_convert",
                "Write detections of any format rpx reads (YOLO, VOC, KITTI, DOTA, LabelMe, rpx "
                "JSON) as COCO files: OUT/instances.json (images with sizes, categories, "
                "annotations) and OUT/results.json. rpx and pycocotools read them back to the "
                "same numbers."),
    "show": ("rpx_cli.cli.inspect", "show",
             "Print any rpx report: headline figures, per-class tables, confusion matrix, gates."),
    "schema": ("rpx_cli.cli.inspect", "schema",
               "Print the JSON Schema (Draft 2020-12) of a report kind."),
    "validate": ("rpx_cli.cli.inspect", "validate",
                 "Validate a report (or manifest) against its JSON Schema."),
    "metrics": ("rpx_cli.cli.inspect", "metrics",
                "List every registered metric, which way is better, and where it comes from."),
    "completion": ("rpx_cli.cli.inspect", "completion",
                   "Print the shell completion script of rpx (commands, tasks, flags, choices)."),
    "merge": ("rpx_cli.cli.workflow", "merge",
              "Merge the partial reports of a sharded evaluation into the single-run report."),
    "check": ("rpx_cli.cli.workflow", "check",
              "Gate an existing report: exit 0 when every gate passes, 3 when one fails."),
    "compare": ("rpx_cli.cli.workflow", "compare",
                "Compare two reports metric by metric, with a paired bootstrap over shared stems."),
    "readiness": ("rpx_cli.cli.readiness", "readiness",
                  "Combine an eval report (with strata), temporal stability, geometric coherence "
                  "and cost figures into one deployment-readiness report."),
    "stability": ("rpx_cli.cli.stability", "stability",
                  "Temporal stability (TS): do a model's predictions for consecutive frames agree "
                  "once the camera motion is undone?"),
    "report": ("rpx_cli.cli.report", "report",
               "Render rpx JSON reports as one self-contained HTML page with charts."),
}


class RpxGroup(SuggestingGroup):
    """Translates domain errors into one line on stderr and rpx's exit codes (README.md, "Exit codes")."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*self.commands, *TASK_COMMANDS, *LAZY_COMMANDS})

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name in TASK_COMMANDS and name not in self.commands:
            from rpx_cli.cli.eval import build_command
            from rpx_cli.tasks.registry import get_task

            return build_command(get_task(name))
        if name in LAZY_COMMANDS and name not in self.commands:
            import importlib

            module, attribute, _ = LAZY_COMMANDS[name]
            found = getattr(importlib.import_module(module), attribute)
            command = found if isinstance(found, click.Command) else found()
            self.add_command(command, name)
            return command
        return super().get_command(ctx, name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """click's listing, with the task commands' help taken from :data:`TASK_COMMANDS`."""
        limit = formatter.width - 6 - max(len(name) for name in self.list_commands(ctx))
        rows = []
        for name in self.list_commands(ctx):
            if name in TASK_COMMANDS or name in LAZY_COMMANDS:
                text = TASK_COMMANDS[name] if name in TASK_COMMANDS else LAZY_COMMANDS[name][2]
                rows.append((name, click.Command(name, help=text).get_short_help_str(limit)))
                continue
            command = self.commands[name]
            if not command.hidden:
                rows.append((name, command.get_short_help_str(limit)))
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)

    def suggest(self, ctx: click.Context, name: str) -> str:
        eval_group = self.commands.get("eval")
        if isinstance(eval_group, click.Group) and name in eval_group.list_commands(ctx):
            return f"Did you mean 'rpx eval {name}'?"
        return super().suggest(ctx, name)

    def make_context(self, info_name, args, parent=None, **extra):  # type: ignore[override]
        from rpx_cli.cli import config

        args = list(args)
        ctx = super().make_context(info_name, list(args), parent=parent, **extra)
        ctx.meta["rpx.argv"] = ["rpx", *args]
        if "--help" not in args and "-h" not in args and "--version" not in args and "-V" not in args:
            defaults, path = config.resolve(self, ctx, args)
            ctx.default_map = defaults or None
            ctx.meta["rpx.config"] = path
        return ctx

    def invoke(self, ctx: click.Context):  # type: ignore[override]
        SHOW_TRACEBACK["enabled"] = "--traceback" in ctx.meta.get("rpx.argv", ())
        from rpx_cli.cli.output import PENDING_HTML, WRITTEN

        WRITTEN.clear()  # the CLI runs in-process in tests and notebooks
        PENDING_HTML.clear()
        with stop_signals(), one_line_warnings():
            try:
                result = super().invoke(ctx)
                stop_if_received()  # (a stop lost in a finaliser that has not come again)
                return result
            except (click.exceptions.Exit, click.ClickException, click.Abort, SystemExit):
                raise
            except BaseException as exc:
                if RECEIVED and not isinstance(exc, KeyboardInterrupt):
                    # a signal that surfaced as another error first (a worker it killed)
                    exc = Interrupted(RECEIVED[-1])
                self._fail(ctx, exc)

    @staticmethod
    def _fail(ctx: click.Context, exc: BaseException) -> None:
        if isinstance(exc, BrokenPipeError):
            # the reader went away (`rpx ... | head`): nothing to say, and no noise at exit
            with contextlib.suppress(OSError):
                devnull = os.open(os.devnull, os.O_WRONLY)
                os.dup2(devnull, sys.stdout.fileno())
            ctx.exit(ExitStatus.FAILED)
        if isinstance(exc, KeyboardInterrupt):
            signum = exc.signum if isinstance(exc, Interrupted) else signal.SIGINT
            what = "interrupted" if signum == signal.SIGINT else \
                f"stopped by {signal.Signals(signum).name}"
            from rpx_cli.cli.output import PENDING_HTML, WRITTEN

            if WRITTEN:  # the report was complete: only what came after it is missing
                page = f"; the HTML page {PENDING_HTML[-1]} was not written" if PENDING_HTML \
                    else ""
                _say(f"rpx: {what} after the report was written to {WRITTEN[-1]}{page}")
            else:
                _say(f"rpx: {what}; no report written")
            if STANDALONE:
                # the rpx process itself: end now. Interpreter shutdown would run the exit
                # hooks of a process pool whose workers the same signal killed (CPython
                # < 3.12 prints "Exception ignored ... Bad file descriptor" from them);
                # everything rpx writes was finished or removed by now
                with contextlib.suppress(Exception):
                    sys.stdout.flush()
                    sys.stderr.flush()
                os._exit(128 + signum)
            ctx.exit(128 + signum)
        if isinstance(exc, EvaluationFailed):
            for line in capped([located(error.path, error.message) for error in exc.errors]):
                _say(f"rpx: {line}")
            _say(f"rpx: {exc}")
            ctx.exit(exc.exit_status)
        if isinstance(exc, RpxError):
            if exc.exit_status == ExitStatus.USAGE and not isinstance(exc, UnknownGatePath):
                raise click.UsageError(escaped(str(exc)), ctx=ctx) from None
            _say(f"rpx: {exc}")
            ctx.exit(exc.exit_status)
        if not isinstance(exc, Exception):
            raise exc
        if SHOW_TRACEBACK["enabled"]:
            traceback.print_exception(exc, file=sys.stderr)
        _say(f"rpx: internal error: {type(exc).__name__}: {exc} "
             "(please report it; --traceback shows where)")
        ctx.exit(ExitStatus.FAILED)


# signals received by this run (the last one decides the exit status)
RECEIVED: list[int] = []
# the signal whose Interrupted was raised (once a run: later signals are only noted)
RAISED: list[int] = []
STOP_SIGNALS = tuple(getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP")
                     if hasattr(signal, name))


def _raise_interrupted(signum: int, frame: object) -> None:
    RECEIVED.append(signum)
    if STANDALONE:
        # the rpx process is stopping: a process pool's manager thread that finds its
        # workers killed by the same signal would print "Exception in thread ..." after
        # rpx's line; such an error is a consequence of the stop, not news
        threading.excepthook = _quiet_thread_error
    if not RAISED:  # a second signal while stopping (Slurm, CI retries) is noted only
        RAISED.append(signum)
        raise Interrupted(signum)


def _unraisable(previous: Callable[[Any], object], args: Any) -> None:
    """``sys.unraisablehook`` while the stop signals are ours. Python runs a signal's handler
    at the next bytecode it can, which may be inside a finaliser or a weakref callback (an
    import lock's, a pool's); the :class:`Interrupted` raised there cannot propagate, so
    Python would print "Exception ignored ..." and the run would go on. Deliver the stop
    again instead: the handler runs once more, at the main thread's next bytecode."""
    if isinstance(args.exc_value, Interrupted):
        RAISED.clear()
        _thread.start_new_thread(_deliver_again, (args.exc_value.signum,))
        return
    previous(args)


def stop_if_received() -> None:
    """Raise the stop of a signal received whose :class:`Interrupted` was lost in a
    finaliser (:func:`_unraisable`) and has not come again yet: called before a report or a
    page is written, so that a signal received before leaves none."""
    if RECEIVED and not RAISED:
        RAISED.append(RECEIVED[-1])
        raise Interrupted(RECEIVED[-1])


def _deliver_again(signum: int) -> None:
    """The stop signal once more, to the main thread, once the finaliser it was lost in has
    returned (a real signal: it also wakes a main thread blocked in a wait)."""
    time.sleep(0.001)
    with contextlib.suppress(OSError, ValueError):
        signal.pthread_kill(threading.main_thread().ident or 0, signum)


def _quiet_thread_error(args: threading.ExceptHookArgs) -> None:
    """``threading.excepthook`` once a stop signal came: says nothing."""


@contextlib.contextmanager
def stop_signals() -> Iterator[None]:
    """SIGTERM (CI cancellation, Slurm, ``timeout``) and SIGHUP stop a run the way Ctrl-C
    (SIGINT) does: :class:`Interrupted` is raised in the main thread, the engine terminates
    its workers, no report or temporary file is left, and rpx exits 128 + the signal number
    (143, 129, 130). A second signal while stopping is only noted. The previous handlers are
    restored afterwards unless a signal came (the CLI runs in-process in tests and
    notebooks)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    RECEIVED.clear()
    RAISED.clear()
    previous = {signum: signal.signal(signum, _raise_interrupted) for signum in STOP_SIGNALS}
    unraisable = sys.unraisablehook
    sys.unraisablehook = functools.partial(_unraisable, unraisable)
    try:
        yield
    finally:
        if not RECEIVED:  # after a stop signal, later ones are only noted: the exit stays 128+N
            for signum, handler in previous.items():
                signal.signal(signum, handler)
            sys.unraisablehook = unraisable


@contextlib.contextmanager
def one_line_warnings() -> Iterator[None]:
    """A library warning that reaches the CLI (outside the readers, which route theirs
    through the task's warnings) prints as one ``rpx: warning:`` line, never with the
    library's file name and source line."""
    def show(message, category, filename, lineno, file=None, line=None) -> None:
        text = str(message).strip().splitlines()
        _say(f"rpx: warning: {category.__name__}: {text[0] if text else ''}")

    with warnings.catch_warnings():
        warnings.showwarning = show
        yield


def version_text() -> str:
    """``rpx, version X (Python Y, numpy Z, kernels K)``, importing nothing heavy: numpy's
    version is read from its ``version.py`` (importing ``importlib.metadata`` to ask the
    package metadata costs ~40 ms, a third of ``--version``), the metadata only if that
    fails; ``K`` is ``native`` or ``numpy (why)`` (:mod:`rpx_cli.native`: the extension
    imports no numpy)."""
    import platform

    from rpx_cli.native import describe

    return (f"rpx, version {__version__} (Python {platform.python_version()}, "
            f"numpy {_numpy_version()}, kernels {describe()})")


def _numpy_version() -> str:
    import re
    from importlib.util import find_spec

    spec = find_spec("numpy")
    if spec is None:
        return "not installed"
    for folder in spec.submodule_search_locations or ():
        try:
            with open(os.path.join(folder, "version.py"), encoding="utf-8") as handle:
                text = handle.read()
        except OSError:
            continue
        found = re.search(r"^version(?:\s*:\s*str)?\s*=\s*[\"']([^\"']+)[\"']", text, re.M)
        if found:
            return found.group(1)
    from importlib import metadata

    try:
        return metadata.version("numpy")
    except metadata.PackageNotFoundError:
        return "not installed"


def _print_version(ctx: click.Context, value: bool) -> None:
    if value and not ctx.resilient_parsing:
        click.echo(version_text())
        ctx.exit()


def _say(line: str) -> None:
    """One line on stderr, file names that are not UTF-8 escaped (``ls -b``); after a URL
    was opened, credentials masked (:func:`rpx_cli.io.remote.scrub`)."""
    remote = sys.modules.get("rpx_cli.io.remote")
    if remote is not None:
        line = remote.scrub(line)
    click.echo(escaped(line), err=True)


@click.group(name="rpx", cls=RpxGroup, context_settings={"help_option_names": ["-h", "--help"],
                                             "max_content_width": 100})
@click.option("-V", "--version", is_flag=True, expose_value=False, is_eager=True,
              callback=lambda ctx, param, value: _print_version(ctx, value),
              help="Show rpx's version, and the Python and numpy it runs on, and exit.")
@click.option("--config", metavar="FILE", expose_value=False,
              help="Defaults for any command from this TOML file [default: the nearest rpx.toml, "
                   "or pyproject.toml with [tool.rpx]]. Flags win.")
def cli() -> None:
    """rpx: evaluate a folder of predictions against a folder of ground truth.

    Files are paired by stem (relative path without suffix); every command that reads
    pairs writes one JSON report with run provenance to stdout or --out.

    \b
    Examples (from the repository root, on the committed fixtures):
      rpx eval depth --pred-dir fixtures/depth/indoor/pred --gt-dir fixtures/depth/indoor/gt \\
          | jq .aggregate.absrel
      rpx saliency-mb --pred-dir fixtures/saliency-mb/ctu64/pred --gt-dir fixtures/saliency-mb/ctu64/gt \\
          --block-size 64 | jq .micro_iou
    """


def _register() -> None:
    from rpx_cli.cli import eval as eval_cli

    cli.add_command(eval_cli.eval_group)  # the others: LAZY_COMMANDS


_register()


# True in the rpx process (the console script, python -m rpx_cli), not when the CLI runs
# in-process (tests, notebooks): a stop signal then ends the process at once (RpxGroup._fail)
STANDALONE = False


def main() -> None:
    global STANDALONE
    STANDALONE = True
    cli(prog_name="rpx")
