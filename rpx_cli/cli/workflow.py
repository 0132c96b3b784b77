"""CI workflow commands: ``merge`` (and, below, ``check`` and ``compare``)."""

from __future__ import annotations

import hashlib
import sys

import click

from rpx_cli.cli.options import (
    GateType,
    compact_option,
    config_option,
    emit_report,
    out_option,
    raise_if_failed,
    traceback_option,
    write_stdout,
)


def read_report(path: str) -> tuple[dict, bytes]:
    """A report file parsed, with its bytes (for digests); input errors name the file."""
    from rpx_cli.errors import InputError
    from rpx_cli.report.serialize import loads

    try:
        with click.open_file(path, "rb") as handle:
            data = handle.read()
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror or exc}", path=path) from None
    try:
        document = loads(data)
    except ValueError as exc:
        raise InputError(f"not valid JSON ({exc})", path=path) from None
    if not isinstance(document, dict):
        raise InputError("is not an rpx report (a JSON object)", path=path)
    return document, data


@click.command()
@click.argument("parts", nargs=-1, required=True, type=click.Path(dir_okay=False))
@out_option("merged report")
@compact_option
@traceback_option
@click.pass_context
def merge(ctx: click.Context, parts: tuple[str, ...], out: str, compact: bool) -> None:
    """Merge the partial reports of a sharded evaluation into the single-run report.

    Every shard 1..N of one evaluation (same task, parameters and inputs) must be given
    exactly once; aggregates, dataset figures and rows come out identical to one run over
    everything.

    \b
    Example:
      for k in 1 2 3 4; do rpx eval depth --pred-dir P --gt-dir G --shard $k/4 -o part$k.json; done
      rpx merge part*.json -o report.json && jq .aggregate.absrel report.json
    """
    from rpx_cli.api import Invocation, merge_reports

    loaded = []
    for path in parts:
        document, data = read_report(path)
        loaded.append((path, document, hashlib.sha256(data).hexdigest()))
    invocation = Invocation(command=ctx.command_path, argv=list(ctx.meta.get("rpx.argv", [])),
                            args=dict(ctx.params), out=out)
    # merged rows were parsed from the parts' JSON: finite by construction, not walked again
    emit_report(merge_reports(loaded, invocation=invocation), out, compact=compact,
                parsed=("rows",))


@click.command()
@click.argument("report", type=click.Path(dir_okay=False, allow_dash=True))
@click.option("--require", "require", type=GateType(), multiple=True, required=True,
              metavar="EXPR", help="A gate such as aggregate.absrel<=0.12 (repeatable).")
@compact_option
@traceback_option
def check(report: str, require: tuple, compact: bool) -> None:
    """Gate an existing report: exit 0 when every gate passes, 3 when one fails.

    Prints {report, passed, gates: [{expr, value, passed, message}]} as JSON. A path that
    is not in the report, or a null value, fails its gate (never a silent pass); a bare
    name means the top-level key, else aggregate.<name>.

    \b
    Example:
      rpx check report.json --require 'aggregate.absrel<=0.12' --require 'dataset.delta1>=0.9'
      rpx check seg.json --require 'dataset.per_class.person.iou>=0.5' | jq .passed
    """
    from rpx_cli.report.gates import check as check_gates
    from rpx_cli.report.gates import parse_gate
    from rpx_cli.report.serialize import dumps

    document, _ = read_report(report)
    results = check_gates(document, [parse_gate(expr) for expr in require])
    failures = [gate for gate in results if not gate["passed"]]
    write_stdout(dumps({"report": report, "passed": not failures, "gates": results},
                       compact=compact))
    raise_if_failed(failures, len(results))


class NoRegressionType(click.ParamType):
    name = "METRIC[:TOL]"

    def convert(self, value, param, ctx):
        from rpx_cli.report.compare import parse_no_regression

        try:
            parse_no_regression(str(value))
        except ValueError as exc:
            self.fail(str(exc), param, ctx)
        return str(value)


@click.command()
@click.argument("base", type=click.Path(dir_okay=False, allow_dash=True))
@click.argument("new", type=click.Path(dir_okay=False, allow_dash=True))
@click.option("--require-no-regression", "no_regression", type=NoRegressionType(), multiple=True,
              help="Exit 3 if NEW is worse than BASE on METRIC by more than TOL (absolute, or "
                   "'5%' relative; default 0). A bare name means aggregate.<name>. Repeatable.")
@click.option("--bootstrap", type=click.IntRange(min=0), default=1000, show_default=True,
              help="Paired bootstrap resamples over the shared stems (0 = off; needs rows).")
@click.option("--seed", type=int, default=0, show_default=True, help="Bootstrap seed.")
@click.option("--format", "fmt", type=click.Choice(["json", "markdown"]), default="json",
              show_default=True, help="JSON on stdout, or a Markdown table for a PR comment.")
@click.option("--force", is_flag=True,
              help="Compare reports of different tasks or parameters (a warning, not an error).")
@out_option("JSON comparison")
@compact_option
@click.option("-q", "--quiet", is_flag=True, help="No table on stderr.")
@config_option
@traceback_option
@click.pass_context
def compare(ctx: click.Context, base: str, new: str, no_regression: tuple, bootstrap: int,
            seed: int, fmt: str, force: bool, out: str, compact: bool, quiet: bool) -> None:
    """Compare two reports metric by metric, with a paired bootstrap over shared stems.

    For every metric: both values, the delta, the relative delta and whether it improved
    or regressed given its direction. Per-row metrics get a 95% interval of the mean delta
    over the stems both reports evaluated. Reports of different tasks or parameters are
    refused unless --force.

    \b
    Example:
      rpx compare main.json pr.json --require-no-regression absrel:1% \\
          | jq '.metrics[] | select(.status == "regressed")'
      rpx compare main.json pr.json --format markdown >> "$GITHUB_STEP_SUMMARY"
    """
    from rpx_cli.console import print_lines, render_table
    from rpx_cli.errors import InputError
    from rpx_cli.report.compare import check_no_regression, compare_reports, parse_no_regression
    from rpx_cli.report.provenance import Stopwatch, build_provenance, collect_environment, collect_git
    from rpx_cli.report.render import compare_markdown
    from rpx_cli.report.render import fmt as fmt_value

    stopwatch = Stopwatch()
    (base_doc, base_bytes), (new_doc, new_bytes) = read_report(base), read_report(new)
    problems = []
    if base_doc.get("task") != new_doc.get("task") or base_doc.get("schema") != new_doc.get("schema"):
        problems.append(f"different tasks: {base_doc.get('task')} vs {new_doc.get('task')}")
    differ = sorted(k for k in set(base_doc.get("params") or {}) | set(new_doc.get("params") or {})
                    if (base_doc.get("params") or {}).get(k) != (new_doc.get("params") or {}).get(k))
    if differ:
        problems.append(f"parameters that change the numbers differ: {', '.join(differ)}")
    if problems and not force:
        raise InputError("; ".join(problems) + " (--force compares them anyway)", path=new)
    if problems and not quiet:
        print_lines([f"warning: {p}" for p in problems], style="yellow")
    metrics = compare_reports(base_doc, new_doc, bootstrap=bootstrap, seed=seed)
    gates = check_no_regression(base_doc, new_doc, [parse_no_regression(t) for t in no_regression])
    counts = {s: sum(1 for m in metrics if m["status"] == s) for s in ("improved", "regressed",
                                                                          "unchanged")}
    argv = list(ctx.meta.get("rpx.argv", []))
    document = {
        "schema": "rpx.compare", "schema_version": 1,
        "base": _side(base, base_doc, base_bytes), "new": _side(new, new_doc, new_bytes),
        "params_differ": differ, "summary": counts, "metrics": metrics,
        "run_provenance": build_provenance(
            command=ctx.command_path, argv=argv, args=dict(ctx.params),
            inputs={"base": {"path": base, "kind": "file", "exists": True, "n_files": 1,
                             "sha256": hashlib.sha256(base_bytes).hexdigest()},
                    "new": {"path": new, "kind": "file", "exists": True, "n_files": 1,
                            "sha256": hashlib.sha256(new_bytes).hexdigest()}},
            outputs={"report": {"path": out}}, clock=stopwatch.stop(),
            environment=collect_environment(), git=collect_git()),
    }
    if gates:
        document["gates"] = gates
    if not quiet:
        shown = [m for m in metrics if m["base"] is not None or m["new"] is not None]
        render_table(
            f"rpx compare — {counts['improved']} improved, {counts['regressed']} regressed",
            ["metric", "base", "new", "delta", "", "95% CI"],
            [(m["metric"], fmt_value(m["base"]), fmt_value(m["new"]), fmt_value(m["delta"]),
              m["status"], _ci(m)) for m in shown],
            stream=sys.stderr)
    if fmt == "markdown":
        click.echo(compare_markdown(document), nl=False)
    else:
        emit_report(document, out, compact=compact)
    raise_if_failed([g for g in gates if not g["passed"]], len(gates))


def _side(path: str, document: dict, data: bytes) -> dict:
    return {"path": path, "schema": document.get("schema"), "task": document.get("task"),
            "n_pairs": document.get("n_pairs"), "sha256": hashlib.sha256(data).hexdigest()}


def _ci(metric: dict) -> str:
    boot = metric.get("bootstrap")
    if not boot:
        return ""
    low, high = boot["ci95"]
    return f"[{low:.3g}, {high:.3g}]{' *' if boot['significant'] else ''}"
