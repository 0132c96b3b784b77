"""Commands that read reports and metadata: ``show``, ``schema``, ``validate``, ``metrics``,
and ``completion`` (the shell completion script)."""

from __future__ import annotations

import click

from rpx_cli.cli.options import traceback_option, write_stdout


class KindChoice(click.Choice):
    """The report kinds, from the task registry, resolved when the command runs (so
    ``rpx --help`` imports no task)."""

    def __init__(self) -> None:
        super().__init__([])

    @property
    def choices(self):  # type: ignore[override]
        from rpx_cli.report.schemas import schema_kinds

        return tuple(schema_kinds())

    @choices.setter
    def choices(self, value) -> None:
        pass

    def get_metavar(self, param, ctx=None) -> str:  # type: ignore[override]
        return "KIND"


def _read_json(path: str):
    from rpx_cli.run.documents import read_json

    return read_json(path)[0]


@click.command()
@click.argument("report", type=click.Path(dir_okay=False, allow_dash=True))
@click.option("--format", "fmt", type=click.Choice(["table", "markdown"]), default="table",
              show_default=True, help="A terminal table, or Markdown for a PR comment / CI summary.")
@traceback_option
def show(report: str, fmt: str) -> None:
    """Print the headline figures of any rpx report.

    \b
    Examples:
      rpx eval depth --pred-dir fixtures/depth/indoor/pred --gt-dir fixtures/depth/indoor/gt -o report.json
      rpx show report.json
      rpx show report.json --format markdown > summary.md   # CI: >> "$GITHUB_STEP_SUMMARY"
    """
    from rpx_cli.console import render_table
    from rpx_cli.errors import InputError
    from rpx_cli.report.render import context, markdown, metric_table
    from rpx_cli.report.render import fmt as fmt_value

    document = _read_json(report)
    if not isinstance(document, dict):
        raise InputError("is not an rpx report (a JSON object)", path=report)
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
    if fmt == "markdown":
        click.echo(markdown(document), nl=False)
        return
    title = f"rpx {document.get('task', document.get('schema', ''))} — {report}"
    columns, rows = metric_table(document)
    render_table(title, columns, rows)
    render_table("run", ["", ""], [(name, fmt_value(value)) for name, value in context(document)])


@click.command()
@click.argument("kind", type=KindChoice())
def schema(kind: str) -> None:
    """Print the JSON Schema (Draft 2020-12) of a report kind.

    KIND is eval, a task's own report kind (saliency-mb, coherence) or a workflow's
    (stability, readiness, compare, manifest, provenance). Schemas are self-contained.

    \b
    Example:
      rpx schema saliency-mb | jq '.properties | keys'
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
    if problems:
        errors = [PairError(stem="", path=file, message=problem) for problem in problems]
        raise EvaluationFailed(errors, len(errors),
                               f"{file} is not a valid {kind} report ({len(problems)} problem(s))")
    click.echo(f"{file}: valid {kind} report", err=True)


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
    from rpx_cli.cli.options import plugin_warnings
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
