"""CI workflow commands: ``merge`` (and, below, ``check`` and ``compare``)."""

from __future__ import annotations

import sys

import click

from rpx_cli.cli.options import (
    GateType,
    click_option,
    compact_option,
    config_option,
    html_option,
    out_option,
    refuse_overwriting_inputs,
    storage_options_option,
    traceback_option,
)
from rpx_cli.cli.output import (
    collector_paused,
    emit_html,
    emit_report,
    invocation_of,
    plain_progress,
    raise_if_failed,
    show_progress,
    write_html,
    write_stdout,
)
from rpx_cli.params.workflows import (
    COMPARE_BOOTSTRAP,
    COMPARE_JOBS,
    COMPARE_SEED,
    FORCE,
    KEEP_STATE,
    NO_REGRESSION,
    POOLED_BOOTSTRAP,
)


@click.command()
@click.argument("parts", nargs=-1, required=True, type=click.Path(dir_okay=False))
@out_option("merged report")
@compact_option
@html_option
@click.option("-q", "--quiet", is_flag=True, help="No summary line on stderr.")
@click_option(KEEP_STATE)
@storage_options_option
@traceback_option
@click.pass_context
def merge(ctx: click.Context, parts: tuple[str, ...], out: str, compact: bool,
          html: str | None = None, quiet: bool = False, storage_options: str | None = None,
          keep_state: bool = False) -> None:
    """Merge the partial reports of a sharded evaluation into the single-run report.

    Every shard 1..N of one evaluation (same task, parameters and inputs) must be given
    exactly once; aggregates, dataset figures and rows come out identical to one run over
    everything. A PART may be a URL and a glob (quoted: 's3://bucket/run/part-*.json').

    \b
    Example:
      rpx eval depth --pred-dir fixtures/depth/indoor/pred --gt-dir fixtures/depth/indoor/gt \\
          --shard 1/2 -o part1.json
      rpx eval depth --pred-dir fixtures/depth/indoor/pred --gt-dir fixtures/depth/indoor/gt \\
          --shard 2/2 -o part2.json
      rpx merge part1.json part2.json -o report.json && jq .aggregate.absrel report.json
    """
    from rpx_cli.run.documents import expand_parts
    from rpx_cli.run.merge import merge_files

    refuse_overwriting_inputs(ctx)
    parts = tuple(expand_parts(parts))
    refuse_overwriting_inputs(ctx, inputs={"PARTS": parts})  # a glob's files too
    warnings: list[str] = []
    # every container built from here on stays alive until the report is written (0.11 s of
    # the collector's for 64 parts of 100,000 rows)
    with collector_paused():
        report = merge_files(parts, invocation=invocation_of(ctx, out),
                             indented=not compact, warnings=warnings, keep_state=keep_state)
        # merged rows were parsed from the parts' JSON: finite by construction, not walked again
        emit_html(emit_report(report, out, compact=compact, parsed=("rows",)), out, html)
    if not quiet:
        from rpx_cli.console import print_lines
        from rpx_cli.report.render import summary_line

        print_lines([f"warning: {line}" for line in [*warnings, *(report.get("warnings") or ())]],
                    style="yellow")
        print_lines([f"merged {len(parts)} part(s): {summary_line(report, out)}"])


@click.command()
@click.argument("report", type=click.Path(dir_okay=False, allow_dash=True))
@click.option("--require", "require", type=GateType(), multiple=True, required=True,
              metavar="EXPR", help="A gate such as aggregate.absrel<=0.12 (repeatable).")
@compact_option
@traceback_option
def check(report: str, require: tuple, compact: bool) -> None:
    """Gate an existing report: exit 0 when every gate passes, 3 when one fails.

    Prints {report, passed, gates: [{expr, value, passed, message}]} as JSON and ends its
    stderr with the verdict. A null value fails its gate (never a silent pass); a path
    that is not in the report is a mistake (exit 2, naming the nearest keys); a bare
    name means the top-level key, else aggregate.<name>.

    \b
    Example:
      rpx eval depth --pred-dir fixtures/depth/indoor/pred --gt-dir fixtures/depth/indoor/gt -o report.json
      rpx check report.json --require 'aggregate.absrel<=0.12' --require 'dataset.delta1>=0.8'
      rpx eval segmentation --pred-dir fixtures/segmentation/street/pred \\
          --gt-dir fixtures/segmentation/street/gt --ignore-index 255 \\
          --class-names fixtures/segmentation/street/names.txt -o seg.json
      rpx check seg.json --require 'dataset.per_class.person.iou>=0.5' | jq .passed
    """
    from rpx_cli.report.gates import check as check_gates
    from rpx_cli.report.gates import parse_gate
    from rpx_cli.report.serialize import dumps
    from rpx_cli.run.documents import read_report

    document, _ = read_report(report)
    results = check_gates(document, [parse_gate(expr) for expr in require])
    failures = [gate for gate in results if not gate["passed"]]
    write_stdout(dumps({"report": report, "passed": not failures, "gates": results},
                       compact=compact))
    raise_if_failed(failures, len(results), verdict="check")
    from rpx_cli.console import print_lines

    print_lines([f"rpx: check PASS — all {len(results)} gate(s) passed"])


@click.command()
@click.argument("base", type=click.Path(dir_okay=False, allow_dash=True))
@click.argument("new", type=click.Path(dir_okay=False, allow_dash=True))
@click_option(NO_REGRESSION)
@click_option(COMPARE_BOOTSTRAP)
@click_option(COMPARE_SEED)
@click.option("--format", "fmt", type=click.Choice(["json", "markdown"]), default="json",
              show_default=True, help="JSON on stdout, or a Markdown table for a PR comment.")
@click_option(FORCE)
@click_option(POOLED_BOOTSTRAP)
@click_option(COMPARE_JOBS)
@out_option("JSON comparison")
@compact_option
@html_option
@click.option("-q", "--quiet", is_flag=True, help="No table on stderr.")
@config_option
@traceback_option
@click.pass_context
def compare(ctx: click.Context, base: str, new: str, no_regression: tuple, bootstrap: int,
            seed: int, fmt: str, force: bool, out: str, compact: bool, quiet: bool,
            html: str | None = None, pooled_bootstrap: int = 200, jobs: int | None = None) -> None:
    """Compare two reports metric by metric, with a paired bootstrap over shared stems.

    For every metric: both values, the delta, the relative delta and whether it improved
    or regressed given its direction. Per-row metrics get a 95% interval of the mean delta
    over the stems both reports evaluated; pooled figures (dataset.*) get one when both
    reports were written with --keep-state (--pooled-bootstrap resamples). Reports of
    different tasks or parameters are refused unless --force.

    \b
    Example:
      rpx eval depth --pred-dir fixtures/depth/indoor/pred --gt-dir fixtures/depth/indoor/gt -o main.json
      rpx eval depth --pred-dir fixtures/depth/indoor/pred --gt-dir fixtures/depth/indoor/gt -o pr.json
      rpx compare main.json pr.json --require-no-regression absrel:1% \\
          | jq '.metrics[] | select(.status == "regressed")'
      rpx compare main.json pr.json --format markdown > comment.md   # CI: >> "$GITHUB_STEP_SUMMARY"
    """
    from rpx_cli.console import ProgressBar, print_lines, render_table
    from rpx_cli.report.compare import summary_text
    from rpx_cli.report.render import compare_markdown, compare_table
    from rpx_cli.run.compare import run_compare

    refuse_overwriting_inputs(ctx)
    comparison = run_compare(base, new, no_regression=no_regression, bootstrap=bootstrap,
                             seed=seed, force=force, pooled_bootstrap=pooled_bootstrap, jobs=jobs,
                             invocation=invocation_of(ctx, out),
                             progress=ProgressBar("compare: pooled resamples",
                                                  enabled=show_progress(quiet, None),
                                                  plain=plain_progress(quiet, None)))
    document = comparison.document
    if not quiet:
        print_lines(comparison.warnings, style="yellow")
        columns, rows = compare_table(document)
        render_table(f"rpx compare — {summary_text(document['summary'])}", columns, rows,
                     stream=sys.stderr)
    if fmt == "markdown":
        click.echo(compare_markdown(document), nl=False)
        if html:
            write_html([("stdout" if out == "-" else out, document)], html)
    else:
        emit_html(emit_report(document, out, compact=compact), out, html)
    gates = document.get("gates", [])
    verdict = f"compare ({summary_text(document['summary'])})"
    raise_if_failed(comparison.failed, len(gates), verdict=verdict)
    if not quiet:
        passed = f"PASS — all {len(gates)} no-regression gate(s) passed" if gates else \
            "no --require-no-regression gate"
        print_lines([f"rpx: {verdict} {passed}"])
