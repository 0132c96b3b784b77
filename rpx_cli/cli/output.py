"""What a command writes and how it ends: the report (to a file, a URL or stdout in one
write), its HTML page, gates (exit 3), warnings, the one-line summary, progress, the
invocation recorded in ``run_provenance``, and the body every pair-reading command shares
(:func:`run_pair_command`). The flags themselves are in :mod:`rpx_cli.cli.options`."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import click

from rpx_cli.cli.options import digest_cache_setting, refuse_overwriting_inputs


def write_html(reports: list[tuple[str, Any]], path: str, *, title: str | None = None) -> None:
    """The HTML page of ``reports`` (``(name, report)`` pairs) to ``path`` (atomically; ``-``:
    stdout)."""
    from rpx_cli.io.atomic_files import write_atomic
    from rpx_cli.report.html import render_html

    PENDING_HTML.append(path)
    data = render_html(reports, title=title).encode("utf-8")
    if path == "-":
        write_stdout(data)
    else:
        write_output(path, data, write_atomic)
    PENDING_HTML.clear()



def write_output(path: str, data: bytes, write_local: Callable[[str, bytes], None]) -> None:
    """``data`` to a local path (``write_local``: atomically) or to a URL (one object).
    A stop signal received before is raised first (its stop may have been lost in a
    finaliser and not come again yet: it leaves no file)."""
    from rpx_cli.cli.main import stop_if_received
    from rpx_cli.io.remote import is_url

    stop_if_received()

    if is_url(path):
        from rpx_cli.io import remote

        remote.write(path, data)
    else:
        write_local(path, data)



def apply_gates(report: dict[str, Any], gates: tuple[Any, ...]) -> list[dict[str, Any]]:
    """Evaluate ``gates`` into ``report["gates"]``; returns the failures."""
    from rpx_cli.report.gates import check, parse_gate

    if not gates:
        return []
    report["gates"] = check(report, [parse_gate(gate) for gate in gates])
    return [gate for gate in report["gates"] if not gate["passed"]]



def raise_if_failed(failures: list[dict[str, Any]], total: int, *, verdict: str = "") -> None:
    """Each failed gate on stderr, then the verdict: exit 2 when a gate names no key of the
    report (a typo), 3 when one failed. ``verdict``: what the command says before the gates
    (``check``; ``compare (counts)``), so its last line is the verdict: ``rpx: check FAIL —
    1 of 2 gate(s) failed; exit 3``."""
    from rpx_cli.console import print_lines
    from rpx_cli.errors import GateFailed, UnknownGatePath

    lead = f"{verdict} " if verdict else ""
    if failures:
        print_lines([f"gate failed: {gate['expr']}: {gate['message']}" for gate in failures],
                    style="red")
        missing = [gate for gate in failures if gate.get("missing")]
        if missing:
            raise UnknownGatePath(f"{lead}FAIL — {len(missing)} of {total} gate(s) name no key of "
                                  "the report (see above); exit 2")
        raise GateFailed(f"{lead}FAIL — {len(failures)} of {total} gate(s) failed; exit 3")



def plugin_warnings() -> list[str]:
    """One line per plugin that failed to load (rpx carries on without it)."""
    from rpx_cli.tasks.calculators import PLUGIN_ERRORS

    return [f"warning: plugin {error} — skipped" for error in PLUGIN_ERRORS]



def show_progress(quiet: bool, progress: bool | None) -> bool:
    """The progress *bar*: on a terminal, or forced with --progress."""
    from rpx_cli.console import stderr_is_terminal

    if quiet:
        return False
    return stderr_is_terminal() if progress is None else progress



def plain_progress(quiet: bool, progress: bool | None) -> bool:
    """Plain progress lines: off a terminal (CI logs), unless --quiet or --no-progress."""
    from rpx_cli.console import stderr_is_terminal

    return not quiet and progress is None and not stderr_is_terminal()



def unpaired_note(report: dict[str, Any], missing: str) -> list[str]:
    """Stems left out by ``--missing skip``, named (the first five) so a CI log shows them."""
    unpaired = report.get("unpaired") or {}
    stems = [(side, stem) for side in ("pred_only", "gt_only", "manifest_only")
             for stem in unpaired.get(side, [])]
    if missing != "skip" or not stems:
        return []
    named = ", ".join(f"{stem} ({side.replace('_', ' ')})" for side, stem in stems[:5])
    more = f" and {len(stems) - 5} more (see 'unpaired' in the report)" if len(stems) > 5 else ""
    return [f"skipped by --missing skip: {len(stems)} unpaired stem(s): {named}{more}"]



def emit_report(report: dict[str, Any], out: str, *, compact: bool,
                parsed: tuple[str, ...] = ()) -> bytes:
    """Serialise and write the report: atomically to a file, or to stdout in one write.
    Returns the bytes written."""
    from rpx_cli.errors import RpxError
    from rpx_cli.io.atomic_files import write_atomic
    from rpx_cli.report.serialize import dumps

    data = dumps(report, compact=compact, parsed=parsed)
    if out == "-":
        from rpx_cli.cli.main import stop_if_received

        stop_if_received()  # (as write_output)
        write_stdout(data)
        WRITTEN.append("stdout")
        return data
    try:
        write_output(out, data, write_atomic)
    except OSError as exc:  # checked before the run; this is a full disk or a race
        raise RpxError(f"{out}: cannot write the report: {exc.strerror or exc}") from None
    WRITTEN.append(out)
    return data


# the reports this command has written in full, and an HTML page being made (a stop signal
# after the report, while the page renders, must not say "no report written": cli.main
# reads these)
WRITTEN: list[str] = []
PENDING_HTML: list[str] = []



def emit_html(data: bytes, out: str, html: str | None) -> None:
    """``--html FILE``: the page of the JSON just written (parsed back, so the page is built
    from exactly what `rpx report` would read)."""
    if html:
        from rpx_cli.report.serialize import loads

        write_html([("stdout" if out == "-" else out, loads(data))], html)



def write_stdout(data: bytes) -> None:
    """Bytes to stdout in one write (JSON never passes through rich or text encoding)."""
    stream = getattr(sys.stdout, "buffer", None)
    if stream is None:
        sys.stdout.write(data.decode("utf-8"))
        sys.stdout.flush()
        return
    sys.stdout.flush()
    stream.write(data)
    stream.flush()



def invocation_of(ctx: click.Context, out: str):
    """How this command was run, for ``run_provenance`` (argv, resolved args, config file)."""
    from rpx_cli.run.invocation import Invocation

    argv = ctx.meta.get("rpx.argv") or ["rpx", *sys.argv[1:]]
    unset_quiet = {param.name for param in ctx.command.params
                   if not getattr(getattr(param.type, "option", None), "args_when_unset", True)}
    args = {key: value for key, value in ctx.params.items()  # unset: None, or a flag's False
            if not (value is None or value is False) or key not in unset_quiet}
    if args.get("storage_options") is not None or any("--storage-options" in a for a in argv):
        from rpx_cli.io.remote import redact, redacted_argv
        from rpx_cli.params.workflows import storage_settings

        argv = redacted_argv(argv)  # credentials never reach a report
        if args.get("storage_options") is not None:
            args["storage_options"] = redact(storage_settings(args["storage_options"]))
    if ctx.meta.get("rpx.config"):
        args["config"] = ctx.meta["rpx.config"]
    return Invocation(command=ctx.command_path, argv=list(argv), args=args, out=out)



def finish(evaluation: Any, *, out: str, compact: bool, quiet: bool, verbose: bool,
           require: tuple[Any, ...] = (), notes: list[str] = (), html: str | None = None) -> None:
    """What every report-writing command does last: warnings, gates, write, summary line,
    exit 3 if a gate failed."""
    from rpx_cli.console import print_lines
    from rpx_cli.report.render import summary_line

    if not quiet:
        warnings = [f"warning: {text}" for text in evaluation.warnings]
        print_lines([*notes, *warnings], style="yellow")
    failures = apply_gates(evaluation.report, require)
    emit_html(emit_report(evaluation.report, out, compact=compact), out, html)
    if verbose:
        print_lines([summary_line(evaluation.report, out)])
    raise_if_failed(failures, len(require))



def run_options(flags: dict[str, Any], strata: dict[str, Any] | None = None) -> Any:
    """The run options of a pair-reading command (``flags``: what click parsed, each value
    already converted by its declaration; taken out of ``flags``) as the run layer's
    ``RunOptions``. ``--no-digest-cache`` is the CLI's spelling of ``digest_cache=False``;
    ``--storage-options`` was applied by its click callback."""
    from rpx_cli.cli.options import cli_name, cli_value
    from rpx_cli.params.workflows import RUN_OPTIONS, STORAGE_OPTIONS
    from rpx_cli.run.options import RunOptions, Strata

    values = {option.param: cli_value(option, flags.pop(cli_name(option)))
              for option in RUN_OPTIONS if cli_name(option) in flags}
    values.pop(STORAGE_OPTIONS.param, None)  # configured while parsing (io.remote.configure)
    values["digest_cache"] = digest_cache_setting(values.get("digest_cache"),
                                                  flags.pop("no_digest_cache", False))
    if strata and strata.get("manifest"):
        values["strata"] = Strata(**strata)
    return RunOptions(**values)


@contextmanager
def collector_paused() -> Iterator[None]:
    """Python's cyclic garbage collector off within the block (as it was, after): for a run
    whose every container stays alive until its report is written — the collector would
    only walk them again and again (a COCO masks run builds 500,000 RLE dicts: 0.6 s of its
    2.5 s were the collector's) and find no cycle to free."""
    import gc

    paused = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if paused:
            gc.enable()


def run_pair_command(ctx: click.Context, task: str, params: dict[str, Any], *, pred_dir: str | None,
                     gt_dir: str | None, out: str, compact: bool, quiet: bool,
                     progress: bool | None, require: tuple[Any, ...] = (),
                     files: dict[str, str | None] | None = None,
                     strata: dict[str, Any] | None = None,
                     aux: dict[str, str | None] | None = None, html: str | None = None,
                     **flags: Any) -> None:
    """The body every pair-reading command shares: evaluate, warn, write, summarise.
    ``flags``: the run options' flags (:func:`run_options`)."""
    from rpx_cli.console import ProgressBar
    from rpx_cli.tasks.registry import get_task

    refuse_overwriting_inputs(ctx, suffixes=get_task(task).suffixes)
    invocation = invocation_of(ctx, out)
    if html:  # the page draws the worst frames: keep them unless --keep-worst says otherwise
        from rpx_cli.params.pictures import settle

        settle(params, html=True)
    verbose = show_progress(quiet, progress)
    plain = plain_progress(quiet, progress)
    options = run_options(flags, strata)
    given = {k: v for k, v in (files or {}).items() if v is not None}
    from rpx_cli.tasks.registry import get_task

    listing = get_task(task).files_list_pairs  # the files list the pairs of the folders
    # the run's objects (parsed files, the rows of every pair) live until its report is
    # written: the collector is paused meanwhile, and resumed then (collector_paused)
    with collector_paused():
        if given and not listing:
            if pred_dir or gt_dir or len(given) != len(files or {}):
                flags_given = " and ".join("--" + k.replace("_", "-") for k in files or {})
                raise click.UsageError(f"give {flags_given} "
                                       "together, instead of --pred-dir/--gt-dir")
            if options.strata is not None:
                raise click.UsageError("--manifest works with --pred-dir/--gt-dir, not input files")
            if options.executor != "local":
                raise click.UsageError("--executor dask evaluates --pred-dir/--gt-dir pairs; input "
                                       "files are read in one process")
            from rpx_cli.run.files import run_file_evaluation

            evaluation = run_file_evaluation(task, given, params, options, invocation=invocation)
        else:
            if not (pred_dir and gt_dir):
                raise click.UsageError("--pred-dir and --gt-dir are required")
            from rpx_cli.run.evaluate import run_evaluation

            evaluation = run_evaluation(task, pred_dir, gt_dir, params, options, aux=aux,
                                        files=files if listing else None, invocation=invocation,
                                        progress=ProgressBar(task, enabled=verbose, plain=plain))
        from rpx_cli.errors import capped, located

        skipped = capped([f"{'scored as empty' if e.get('effect') == 'empty_prediction' else 'skipped'}"
                          f": {located(e['path'], e['message'])}"
                          for e in evaluation.report["errors"]], more=" (see 'errors' in the report)")
        skipped += unpaired_note(evaluation.report, str(options.missing))
        # the one-line summary: always, unless --quiet (a CI log too)
        finish(evaluation, out=out, compact=compact, quiet=quiet, verbose=not quiet, require=require,
               notes=plugin_warnings() + skipped, html=html)
