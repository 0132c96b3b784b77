"""``rpx coherence``: Stack-Level Geometric Coherence (SGC) of a mask and a depth map per stem.

The mask directory plays the prediction's role and the depth directory the ground truth's
(``pred_path`` is the mask, ``gt_path`` the depth map in rows and errors; rows also name
them ``mask_path`` and ``depth_path``). Definitions are in :mod:`rpx_cli.ops.boundaries`:
per frame, the mask boundary and the depth boundary (``|numpy.gradient(D)| > tau``, strict)
are both dilated by ``dilation`` 4-neighbour steps; precision = overlap / dilated mask
boundary, recall = overlap / dilated depth boundary (1.0 when the denominator is 0);
``sgc`` = F-score of the mean precision and the mean recall (RPX ``compute_sgc``).

Inputs: masks are label maps as in ``rpx eval segmentation`` (PNG L/P/I;16, integer
``.npy``); depth maps as in ``rpx eval depth`` (float ``.npy`` in metres, ``.npz`` key
``depth``, 16-bit PNG/PGM/TIFF divided by ``--depth-scale``; 8-bit depth refused).
Non-finite depth is an input error (a NaN in a model's depth is a bug to surface, not a
pixel to skip); depth ``<= 0`` marks a pixel without depth, excluded from every count
(``n_no_depth``). Mask and depth of different shapes are an input error naming both.

Sufficient statistics per row are its precision, recall and integer counts, so ``--shard``
+ ``rpx merge`` rebuild the single-run report exactly (means are ``math.fsum`` over rows).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from rpx_cli.errors import InputError
from rpx_cli.io.arrays import read_array
from rpx_cli.io.depth_maps import DepthMap, to_depth
from rpx_cli.io.filebuffer import FileBuffer
from rpx_cli.io.label_images import read_label_image
from rpx_cli.ops.boundaries import FrameAgreement, boundary_agreement, sgc_summary
from rpx_cli.tasks.base import MetricInfo, Option, Params, Sample, Task, Warn, shape_text
from rpx_cli.tasks.registry import register_task
from rpx_cli.tasks.stats import Stat, StatTable

COUNTS = ("n_mask_boundary", "n_depth_boundary", "n_mask_band", "n_depth_band", "n_overlap",
          "n_no_depth")
_COUNT = {"type": "integer", "minimum": 0}
_FRACTION = {"type": "number", "minimum": 0, "maximum": 1}


@register_task
class Coherence(Task):
    name = "coherence"
    report_schema = "rpx.coherence"
    headline = ("sgc",)
    rank_metric = "precision"  # rows have no F-score of their own
    suffixes = (".png", ".npy", ".npz", ".pgm", ".tif", ".tiff")
    help = "Stack-Level Geometric Coherence: do mask boundaries sit on depth discontinuities?"
    details = (
        "Pairs masks and depth maps by stem. Per pair: the mask boundary (a pixel whose right "
        "or lower neighbour has another label) and the depth boundary (numpy.gradient magnitude "
        "> TAU) are both grown by DILATION 4-neighbour steps; precision = overlap / grown mask "
        "boundary, recall = overlap / grown depth boundary (1.0 when nothing to match). sgc is "
        "the F-score of the mean precision and the mean recall (RPX compute_sgc). Depth <= 0 "
        "marks a pixel without depth (excluded); NaN/inf depth is an input error."
    )
    example = (
        "rpx coherence --mask-dir fixtures/coherence/shelf/mask \\\n"
        "    --depth-dir fixtures/coherence/shelf/depth --require 'sgc>=0.8' | jq .sgc"
    )
    input_help = ("Folder of label maps (PNG L/P/I;16, integer .npy).",
                  "Folder of depth maps (.npy metres, .npz 'depth', 16-bit PNG/PGM/TIFF).")
    summarize_empty = True  # the rpx.coherence schema requires sgc/precision/recall: null
    stats = (Stat("precision"), Stat("recall"), *(Stat(key, minimum=0) for key in COUNTS))
    report_properties = {
        "sgc": {"type": ["number", "null"]},
        "precision": {"type": ["number", "null"]},
        "recall": {"type": ["number", "null"]},
        "totals": {"type": "object", "description": "Pixel counts summed over the rows.",
                   "required": list(COUNTS), "properties": dict.fromkeys(COUNTS, _COUNT)},
    }
    report_required = ("sgc", "precision", "recall", "totals")
    row_properties = {"gt_path": {"type": ["string", "null"]}, "mask_path": {"type": ["string", "null"]},
                      "depth_path": {"type": ["string", "null"]}, "precision": _FRACTION,
                      "recall": _FRACTION, **dict.fromkeys(COUNTS, _COUNT)}
    row_required = ("mask_path", "depth_path", "precision", "recall", *COUNTS)
    metrics = {
        "sgc": MetricInfo("higher", "F-score of the mean precision and the mean recall"),
        "precision": MetricInfo("higher", "row: overlap / dilated mask boundary (1.0 when 0/0); "
                                "top level: mean over rows"),
        "recall": MetricInfo("higher", "row: overlap / dilated depth boundary (1.0 when 0/0); "
                             "top level: mean over rows"),
        "n_mask_boundary": MetricInfo("none", "mask boundary pixels (right or lower neighbour "
                                      "differs), before dilation"),
        "n_depth_boundary": MetricInfo("none", "depth boundary pixels (|gradient| > tau), "
                                       "before dilation"),
        "n_mask_band": MetricInfo("none", "dilated mask boundary pixels: precision denominator"),
        "n_depth_band": MetricInfo("none", "dilated depth boundary pixels: recall denominator"),
        "n_overlap": MetricInfo("none", "pixels in both dilated boundaries"),
        "n_no_depth": MetricInfo("none", "pixels with depth <= 0, excluded from every count"),
    }
    input_names = ("mask_dir", "depth_dir")
    options = (
        Option("tau", "--tau", "float", 0.1, minimum=0.0, open_min=True,
               help="Depth boundary: central-difference gradient magnitude strictly above this "
                    "(metres per pixel)."),
        Option("dilation", "--dilation", "int", 2, minimum=0,
               help="Both boundaries grow by this many 4-neighbour steps (a diamond) before "
                    "matching; 0 = exact pixels."),
        Option("depth_scale", "--depth-scale", "float", 1000.0, minimum=0.0, open_min=True,
               help="Integer depth (16-bit PNG/PGM/TIFF, integer .npy) is divided by this to "
                    "get metres: 1000 = millimetres."),
    )

    # --- parameters -------------------------------------------------------------------

    # --- per pair ---------------------------------------------------------------------

    def read(self, path: str, buffer: FileBuffer, params: Params, warn: Warn, *,
             role: str = "gt") -> np.ndarray | DepthMap:
        """``role="pred"``: the label map; ``role="gt"``: the depth map."""
        if role == "pred":
            return read_label_image(path, buffer).array
        loaded = read_array(path, buffer, npz_key="depth")
        return to_depth(loaded.array, loaded.format, params["depth_scale"], path)

    def prediction_size(self, gt: DepthMap, params: Params) -> tuple[tuple[int, int], int]:
        return gt.values.shape[:2], 1  # the mask must match the depth map's size

    def empty_prediction(self, gt: DepthMap, params: Params) -> np.ndarray:
        return np.zeros(gt.values.shape, dtype=np.uint8)  # one label: no mask boundary

    def evaluate(self, pred: np.ndarray, gt: DepthMap, params: Params, *, pred_path: str | None,
                 gt_path: str) -> Sample:
        if pred.shape != gt.values.shape:
            raise InputError(f"shapes differ: mask {pred_path} is {shape_text(pred)}, depth "
                             f"{gt_path} is {shape_text(gt.values)}", path=pred_path)
        depth = gt.metres(np.float64)
        finite = np.isfinite(depth)
        if not finite.all():
            bad = int(finite.size - np.count_nonzero(finite))
            raise InputError(f"depth map holds {bad} non-finite value(s) (NaN or inf); mark "
                             "pixels without depth with 0", path=gt_path)
        frame: FrameAgreement = boundary_agreement(pred, depth, tau=params["tau"],
                                                   dilation=params["dilation"])
        return Sample({"mask_path": pred_path, "depth_path": gt_path, **frame._asdict()})

    def summarize(self, stats: StatTable, params: Params) -> dict[str, Any]:
        if not len(stats):  # an empty --shard part: nulls, counts 0
            precision = recall = sgc = None
            totals = dict.fromkeys(COUNTS, 0)
        else:
            precision, recall, sgc = sgc_summary(stats["precision"].tolist(),
                                                 stats["recall"].tolist())
            totals = {key: int(stats[key].sum()) for key in COUNTS}
        return {"sgc": sgc, "precision": precision, "recall": recall, "totals": totals}
