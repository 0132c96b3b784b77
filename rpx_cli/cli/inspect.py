"""Commands that read reports and metadata: ``show``, ``schema``, ``validate``, ``metrics``,
and ``completion`` (the shell completion script)."""

from __future__ import annotations

from typing import Any

import click

from rpx_cli.cli.options import traceback_option
from rpx_cli.cli.output import write_stdout


class KindChoice(click.ParamType):
    """A report kind (``rpx schema KIND``, ``rpx validate --kind KIND``): one of
    :func:`rpx_cli.report.schemas.schema_kinds`, looked up only when a value is checked,
    missing or completed, never when the command is built (so ``rpx --help`` imports no
    task). Messages as ``click.Choice``'s."""

    name = "kind"

    @staticmethod
    def kinds() -> list[str]:
        from rpx_cli.report.schemas import schema_kinds

        return schema_kinds()

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> str:
        kinds = self.kinds()
        if value in kinds:
            return value
        self.fail(f"{value!r} is not one of {', '.join(map(repr, kinds))}.", param, ctx)

    def get_metavar(self, param: click.Parameter, ctx: click.Context | None = None) -> str:  # type: ignore[override]
        return "KIND"

    def get_missing_message(self, param: click.Parameter, ctx: click.Context | None = None) -> str:
        return "Choose from:\n\t" + ",\n\t".join(self.kinds())

    def shell_complete(self, ctx: click.Context, param: click.Parameter, incomplete: str):
        from click.shell_completion import CompletionItem

        return [CompletionItem(kind) for kind in self.kinds() if kind.startswith(incomplete)]


def _read_json(path: str):
    from rpx_cli.run.documents import read_json

    return read_json(path)[0]


@click.command()
@click.argument("report", type=click.Path(dir_okay=False, allow_dash=True))
@click.option("--format", "fmt", type=click.Choice(["table", "markdown", "csv", "tsv"]), default="table",
              show_default=True,
              help="Terminal tables, Markdown for a PR comment / CI summary, or CSV/TSV rows for "
                   "spreadsheets and pandas.")
@click.option("--table", "which", type=click.Choice(["rows", "per_class", "metrics", "confusion"]),
              default=None,
              help="With csv/tsv: which table [default: rows, else metrics when the report has no "
                   "rows]. Values keep full precision; null is an empty cell.")
@traceback_option
def show(report: str, fmt: str, which: str | None) -> None:
    """Print any rpx report: headline figures, per-class tables, confusion matrix, gates.

    \b
    Examples:
      rpx eval depth --pred-dir fixtures/depth/indoor/pred --gt-dir fixtures/depth/indoor/gt -o report.json
      rpx show report.json
      rpx show report.json --format markdown > summary.md   # CI: >> "$GITHUB_STEP_SUMMARY"
      rpx show report.json --format csv > rows.csv      # pandas.read_csv("rows.csv")
      rpx show report.json --format tsv --table per_class | sort -t$'\\t' -k2 -g | head
    """

    from rpx_cli.run.documents import read_valid_report

    if which is not None and fmt not in ("csv", "tsv"):
        raise click.UsageError("--table goes with --format csv or tsv")
    document, _ = read_valid_report(report)
    try:
        _show(document, report, fmt, which)
    except BrokenPipeError:
        # the reader went away (`rpx show ... | head`): what it wanted was printed
        _quiet_stdout()


def _quiet_stdout() -> None:
    import contextlib
    import os
    import sys

    with contextlib.suppress(OSError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())


def _show(document: dict, report: str, fmt: str, which: str | None) -> None:
    from rpx_cli.console import render_table
    from rpx_cli.report import render

    if fmt in ("csv", "tsv"):
        _write_delimited(document, fmt, which)
        return
    if document.get("schema") == "rpx.readiness":
        from rpx_cli.report import readiness_view

        if fmt == "markdown":
            click.echo(readiness_view.markdown(document), nl=False)
            return
        name = document.get("model_name") or "model"
        for title, columns, rows in readiness_view.sections(document):
            render_table(f"{name} on {document.get('task')}: {title}", columns,
                         readiness_view.table_cells(rows))
        return
    if document.get("schema") == "rpx.compare":
        if fmt == "markdown":
            click.echo(render.compare_markdown(document), nl=False)
            return
        counts = document.get("summary") or {}
        columns, rows = render.compare_table(document)
        render_table(f"rpx compare — {counts.get('improved', 0)} improved, "
                     f"{counts.get('regressed', 0)} regressed, "
                     f"{counts.get('no_significant_change', 0)} no significant change — {report}",
                     columns, rows)
        gates = render.gates_table(document)
        if gates:
            render_table("gates", *gates)
        return
    if fmt == "markdown":
        click.echo(render.markdown(document), nl=False)
        return
    title = f"rpx {render.title(document)} — {report}"
    columns, rows = render.metric_table(document)
    render_table(title, columns, rows)
    columns, rows = render.per_class_table(document)
    if rows:
        render_table("per class", columns, [(r[0], *(render.fmt(v) for v in r[1:])) for r in rows])
    confusion = render.confusion_table(document)
    if confusion:
        columns, rows = confusion
        if len(rows) <= render.MAX_CONFUSION_SIDE:
            render_table("confusion matrix (rows: ground truth, columns: predicted)", columns, rows)
        else:
            click.echo(f"confusion matrix: {len(rows)} classes (see `rpx report` or "
                       "`rpx show --format csv --table confusion`)")
    gates = render.gates_table(document)
    if gates:
        render_table("gates", *gates)
    render_table("run", ["", ""], [(name, render.fmt(value)) for name, value in render.context(document)])


def _write_delimited(document: dict, fmt: str, which: str | None) -> None:
    import csv
    import io
    import sys

    from rpx_cli.errors import InputError
    from rpx_cli.report import render

    if which is None:
        which = "rows" if document.get("rows") or document.get("schema") in ("rpx.compare",
                                                                              "rpx.stability") else "metrics"
    if which == "rows":
        columns, rows = render.rows_table(document)
    elif which == "per_class":
        columns, rows = render.per_class_table(document)
    elif which == "confusion":
        table = render.confusion_table(document)
        if table is None:
            raise InputError("has no dataset.confusion to write", path="--table confusion")
        columns, rows = table
    else:
        columns, rows = render.metrics_rows(document)
    buffer = io.StringIO()
    writer = csv.writer(buffer, delimiter="," if fmt == "csv" else "\t", lineterminator="\n")
    writer.writerow(columns)
    writer.writerows([render.cell_text(v) for v in row] for row in rows)
    sys.stdout.write(buffer.getvalue())
    sys.stdout.flush()


@click.command()
@click.argument("kind", type=KindChoice())
def schema(kind: str) -> None:
    """Print the JSON Schema (Draft 2020-12) of a report kind.

    KIND is eval, an eval task (depth, detection3d, ...: the eval schema with that task's
    block, its headline figures required and typed), a task's own report kind (saliency-mb,
    coherence) or a workflow's (stability, readiness, compare, manifest, provenance).
    Schemas are self-contained.

    \b
    Example:
      rpx schema saliency-mb | jq '.properties | keys'
      rpx schema depth | jq .title
    """
    from rpx_cli.report.schemas import schema_text

    write_stdout(schema_text(kind))


@click.command()
@click.argument("file", type=click.Path(dir_okay=False, allow_dash=True))
@click.option("--kind", type=KindChoice(), default=None,
              help="Validate as this kind [default: from the file's 'schema' field].")
@traceback_option
def validate(file: str, kind: str | None) -> None:
    """Validate a report (or manifest) against its JSON Schema.

    Exit 0 when valid; exit 1 listing each failing path when not.

    \b
    Example:
      rpx saliency-mb --pred-dir fixtures/saliency-mb/ctu64/pred \\
          --gt-dir fixtures/saliency-mb/ctu64/gt -o report.json
      rpx validate report.json && jq .micro_iou report.json
    """
    from rpx_cli.errors import EvaluationFailed, InputError, PairError
    from rpx_cli.report.schemas import detect_kind, validation_errors

    document = _read_json(file)
    if kind is None:
        try:
            kind = detect_kind(document)
        except InputError as exc:
            raise InputError(str(exc), path=file) from None
    problems = validation_errors(document, kind)
    # a manifest or a provenance record is not a report
    what = {"manifest": "manifest", "provenance": "run provenance record"}.get(kind, f"{kind} report")
    if problems:
        errors = [PairError(stem="", path=file, message=problem) for problem in problems]
        raise EvaluationFailed(errors, len(errors),
                               f"{file} is not a valid {what} ({len(problems)} problem(s))")
    click.echo(f"{file}: valid {what}", err=True)


@click.command()
@click.option("--task", "task_name", default=None, help="Only this task.")
@click.option("--json", "as_json", is_flag=True, help="JSON on stdout instead of a table.")
def metrics(task_name: str | None, as_json: bool) -> None:
    """List every registered metric, which way is better, and where it comes from.

    Built-in tasks and third-party calculators (entry-point group rpx.calculators.v1)
    are listed through one registry.

    \b
    Example:
      rpx metrics --json | jq '."saliency-mb".micro_iou.direction'
      rpx metrics --task depth
    """
    from rpx_cli.cli.output import plugin_warnings
    from rpx_cli.console import print_lines, render_table
    from rpx_cli.report.serialize import dumps
    from rpx_cli.tasks import TASKS
    from rpx_cli.tasks.calculators import metric_listing

    names = sorted(TASKS)
    if task_name is not None:
        if task_name not in TASKS:
            raise click.BadParameter(f"unknown task (known: {', '.join(names)})",
                                     param_hint="--task")
        names = [task_name]
    table, families = metric_listing(names)
    print_lines(plugin_warnings(), style="yellow")
    if as_json:
        write_stdout(dumps({**table, "families": families} if task_name and families else table))
        return
    rows = [(name, metric, info["direction"], info["calculator"], info["description"])
            for name in names for metric, info in table[name].items()]
    render_table("rpx metrics", ["task", "metric", "better", "from", "meaning"], rows)
    if families:
        render_table("metric families (--metrics)", ["task", "family", "keys"],
                     [(name, family, ", ".join(keys)) for name, fams in families.items()
                      for family, keys in fams.items()])


@click.command()
@click.argument("shell", type=click.Choice(["bash", "zsh", "fish"]))
@click.pass_context
def completion(ctx: click.Context, shell: str) -> None:
    """Print the shell completion script of rpx (commands, tasks, flags, choices).

    Load it from your shell's start-up file; it asks rpx itself for the candidates
    (click's _RPX_COMPLETE protocol), so new tasks and plugins complete too. Bash needs
    version 4.4 or later.

    \b
    Examples:
      rpx completion bash > ~/.rpx-complete.bash   # then in ~/.bashrc: . ~/.rpx-complete.bash
      rpx completion zsh > ~/.rpx-complete.zsh     # then in ~/.zshrc: . ~/.rpx-complete.zsh
      rpx completion fish > ~/rpx.fish             # then: mv ~/rpx.fish ~/.config/fish/completions/
    """
    from click.shell_completion import get_completion_class

    complete = get_completion_class(shell)
    assert complete is not None  # the three choices are click's built-in shells
    script = complete(ctx.find_root().command, {}, "rpx", "_RPX_COMPLETE").source()
    write_stdout(script.encode() + (b"" if script.endswith("\n") else b"\n"))
