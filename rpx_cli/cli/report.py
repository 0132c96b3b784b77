"""``rpx report``: one self-contained HTML page from one or more JSON reports."""

from __future__ import annotations

import click

from rpx_cli.cli.options import check_output_path, refuse_overwriting_inputs, traceback_option
from rpx_cli.cli.output import write_html


@click.command("report")
@click.argument("reports", nargs=-1, required=True, type=click.Path(dir_okay=False, allow_dash=True))
@click.option("-o", "--out", default="-", show_default=True, metavar="PATH",
              callback=check_output_path,
              help="Where the HTML page goes ('-' = stdout; a missing folder is created).")
@click.option("--title", default=None, metavar="TEXT", help="The page title [default: the report kinds].")
@traceback_option
def report(reports: tuple[str, ...], out: str, title: str | None) -> None:
    """Render rpx JSON reports as one self-contained HTML page with charts.

    Any report kind (eval, compare, readiness, stability, a plugin task's) gets a header
    (task, parameters, provenance), its gates, the headline metrics with their direction,
    the pictures of its kind (PR curves, confusion heatmaps, TIDE errors, per-class bars,
    bands, phase chart, deltas with their intervals) and its worst rows. Several reports
    are shown side by side. The page uses no script and no other file: it opens offline.

    \b
    Examples:
      rpx eval detection --pred-dir fixtures/detection/shelf/pred \\
          --gt-dir fixtures/detection/shelf/gt -o det.json && rpx report det.json -o det.html
      rpx eval depth --pred-dir fixtures/depth/indoor/pred --gt-dir fixtures/depth/indoor/gt -o a.json
      rpx eval depth --pred-dir fixtures/depth/indoor/pred --gt-dir fixtures/depth/indoor/gt \\
          --align median -o b.json --html b.html && rpx report a.json b.json -o side-by-side.html
    """
    from rpx_cli.run.documents import read_valid_report

    refuse_overwriting_inputs(click.get_current_context())
    write_html([(path, read_valid_report(path)[0]) for path in reports], out, title=title)
