"""CI workflow commands: ``merge`` (and, below, ``check`` and ``compare``)."""

from __future__ import annotations

import hashlib

import click

from rpx_cli.cli.options import (
    GateType,
    emit_report,
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
@click.option("-o", "--out", "--out-json", "out", default="-", show_default=True, metavar="PATH",
              help="Where the merged report goes ('-' = stdout).")
@click.option("--compact", is_flag=True, help="One-line JSON instead of indented.")
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
    emit_report(merge_reports(loaded, invocation=invocation), out, compact=compact)


@click.command()
@click.argument("report", type=click.Path(dir_okay=False, allow_dash=True))
@click.option("--require", "require", type=GateType(), multiple=True, required=True,
              metavar="EXPR", help="A gate such as aggregate.absrel<=0.12 (repeatable).")
@click.option("--compact", is_flag=True, help="One-line JSON instead of indented.")
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
