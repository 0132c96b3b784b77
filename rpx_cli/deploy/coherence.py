"""Stack-Level Geometric Coherence on arrays in memory: RPX ``compute_sgc`` without files.

``rpx coherence`` (:mod:`rpx_cli.tasks.coherence`) evaluates folders; this is the same
computation for a notebook or a pipeline that already holds a stack's outputs, with the
seed's call shape (``compute_sgc(pred_masks, pred_depths, depth_gradient_threshold,
boundary_dilation)``) and result (``sgc_score``, ``precision``, ``recall``,
``num_samples``). Definitions: :mod:`rpx_cli.ops.boundaries`. Unlike the seed, no frame
gives nulls (not 0.0), a non-finite depth raises ``ValueError``, and depth ``<= 0`` marks a
pixel without depth.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from rpx_cli.ops.boundaries import FrameAgreement, boundary_agreement, sgc_summary


@dataclass(frozen=True)
class CoherenceResult:
    """``sgc_score`` = F-score of the mean ``precision`` and the mean ``recall``."""

    sgc_score: float | None
    precision: float | None
    recall: float | None
    num_samples: int
    frames: list[FrameAgreement] = field(default_factory=list)


def compute_sgc(pred_masks: Sequence[np.ndarray], pred_depths: Sequence[np.ndarray], *,
                depth_gradient_threshold: float = 0.1,
                boundary_dilation: int = 2) -> CoherenceResult:
    """SGC over frames: mask ``i`` (H x W integer labels) against depth ``i`` (H x W metres).

    >>> import numpy as np
    >>> mask = np.zeros((8, 8), int); mask[:, 4:] = 1
    >>> depth = np.where(mask == 1, 2.0, 1.0)
    >>> result = compute_sgc([mask], [depth])
    >>> result.precision, round(result.recall, 4), round(result.sgc_score, 5)
    (1.0, 0.8333, 0.90909)
    """
    if len(pred_masks) != len(pred_depths):
        raise ValueError(f"{len(pred_masks)} masks but {len(pred_depths)} depth maps")
    if not (np.isfinite(depth_gradient_threshold) and depth_gradient_threshold > 0):
        raise ValueError(f"depth_gradient_threshold must be > 0, got {depth_gradient_threshold}")
    if boundary_dilation < 0:
        raise ValueError(f"boundary_dilation must be >= 0, got {boundary_dilation}")
    frames = []
    for index, (mask, depth) in enumerate(zip(pred_masks, pred_depths, strict=True)):
        mask, depth = np.asarray(mask), np.asarray(depth, dtype=np.float64)
        if not np.isfinite(depth).all():
            raise ValueError(f"depth map {index} holds non-finite values; mark pixels without "
                             "depth with 0")
        frames.append(boundary_agreement(mask, depth, tau=depth_gradient_threshold,
                                         dilation=boundary_dilation))
    precision, recall, sgc = sgc_summary([f.precision for f in frames], [f.recall for f in frames])
    return CoherenceResult(sgc_score=sgc, precision=precision, recall=recall,
                           num_samples=len(frames), frames=frames)
