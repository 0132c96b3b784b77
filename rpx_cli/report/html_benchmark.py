"""The page's table of a benchmark's APs (``dataset.kitti`` of ``rpx eval detection3d
--protocol kitti``): one row per class and one for the means, one column per metric and
difficulty, each cell coloured by its AP."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rpx_cli.report import svg_grids
from rpx_cli.report.html_blocks import is_number, section_html
from rpx_cli.report.render import lookup

METRICS = ("bbox", "bev", "3d", "aos")  # the columns, in the benchmark's order
LEVELS = ("easy", "moderate", "hard")


def benchmark_grid(report: Mapping[str, Any]) -> str:
    """A benchmark's AP table (``dataset.kitti``: ``<Class>.<metric>_<difficulty>``): one
    row per class, one column per metric and difficulty, and the means."""
    table = (report.get("dataset") or {}).get("kitti")
    if not isinstance(table, Mapping):
        return ""
    classes = [k for k, v in table.items() if isinstance(v, Mapping)]
    present = (classes and table[classes[0]]) or {}
    columns = [f"{metric}_{level}" for metric in METRICS for level in LEVELS
               if f"{metric}_{level}" in present]
    if not classes or not columns:
        return ""
    rows = [*classes, "mean"]
    values = [[table[k].get(c) if is_number(table[k].get(c)) else None for c in columns] for k in classes]
    values.append([table.get(f"mAP_{c}") if is_number(table.get(f"mAP_{c}")) else None for c in columns])
    points = lookup(report, "params.recall_points")
    return section_html(f"KITTI AP_R{points} per class", svg_grids.value_grid(
        rows, [c.replace("_", " ") for c in columns], values, title=f"AP_R{points} per class, metric and difficulty",
        value_label="AP", row_label="class", column_label="metric and difficulty",
        attrs={"name": "benchmark-ap"}),
        "dataset.kitti.&lt;Class&gt;.&lt;metric&gt;_&lt;difficulty&gt; and the means over the classes "
        "(mAP_&lt;metric&gt;_&lt;difficulty&gt;); aos n/a: the predictions carry no orientation", kind="benchmark-ap")
