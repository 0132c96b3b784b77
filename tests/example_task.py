"""A task defined only in the test suite, the way a third party would write one.

``cer``: character error rate of OCR text, one ``.txt`` per stem. Registering it is the only
step: it gets ``rpx eval cer`` (flags from its options), a place in the ``rpx.eval`` schema,
``--shard``/``rpx merge``, ``--jobs``, ``--manifest`` strata, ``rpx metrics`` and golden
coverage (``tests/fixtures/cer/``) without any other file naming it. ``docs/architecture.md``
walks through this file.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from rpx_cli.errors import InputError
from rpx_cli.ops.reduce import mean_present
from rpx_cli.tasks import register_task
from rpx_cli.tasks.base import MetricInfo, Option, Params, Sample, Task
from rpx_cli.tasks.stats import Stat, StatTable


def edit_distance(a: str, b: str) -> int:
    """Levenshtein distance (insertions, deletions, substitutions cost 1); one row of the
    table at a time, vectorised along ``b`` except for the insertion scan."""
    previous = np.arange(len(b) + 1)
    codes = np.frombuffer(b.encode("utf-32-le"), dtype=np.uint32)
    for i, char in enumerate(a, 1):
        substitute = previous[:-1] + (codes != ord(char))
        current = np.empty_like(previous)
        current[0] = i
        current[1:] = np.minimum(previous[1:] + 1, substitute)
        for j in range(1, len(current)):  # insertions depend on the left neighbour
            current[j] = min(current[j], current[j - 1] + 1)
        previous = current
    return int(previous[-1])


@register_task
class CharacterErrorRate(Task):
    name = "cer"
    help = "Character error rate of OCR text lines (edit distance / GT characters)."
    formats = "One UTF-8 .txt per stem on each side: the text line (recognised / transcribed)."
    example = ("rpx eval cer --pred-dir tests/fixtures/cer/lines/pred "
               "--gt-dir tests/fixtures/cer/lines/gt | jq .dataset.cer")
    suffixes = (".txt",)
    primary_metric = "cer"
    headline = ("dataset.cer", "aggregate.cer")  # the summary line and the page's cards
    metrics = {
        "cer": MetricInfo("lower", "row: edit distance / GT characters (null without GT text); "
                          "dataset: summed edits / summed GT characters"),
        "edits": MetricInfo("lower", "insertions + deletions + substitutions"),
        "n_chars": MetricInfo("none", "GT characters"),
    }
    options = (Option("normalise_space", "--normalise-space", "flag", False,
                      help="Collapse runs of white space and strip both ends first."),)
    stats = (Stat("edits"), Stat("n_chars"))

    def read(self, path: str, buffer: Any, params: Params, warn: Any, *, role: str = "gt") -> str:
        try:
            text = bytes(buffer.read(path)).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InputError(f"not UTF-8 text ({exc.reason})", path=path) from None
        return " ".join(text.split()) if params["normalise_space"] else text.rstrip("\n")

    def empty_prediction(self, gt: str, params: Params) -> str:
        return ""

    def evaluate(self, pred: str, gt: str, params: Params, *, pred_path: str | None,
                 gt_path: str) -> Sample:
        edits = edit_distance(pred, gt)
        return Sample({"cer": edits / len(gt) if gt else None, "edits": edits, "n_chars": len(gt)})

    def summarize(self, stats: StatTable, params: Params) -> dict[str, Any]:
        n_chars = int(stats["n_chars"].sum())
        edits = int(stats["edits"].sum())
        cer = np.where(stats["n_chars"] > 0, stats["edits"] / np.maximum(stats["n_chars"], 1), np.nan)
        return {"aggregate": {"cer": mean_present(cer), "n_frames": len(stats)},
                "dataset": {"cer": edits / n_chars if n_chars else None, "edits": edits,
                            "n_chars": n_chars}}
