"""Pair SemanticKITTI's own folder layout for ``rpx eval segmentation3d``.

SemanticKITTI keeps each sequence's scans, labels and a model's predictions in sibling
folders, one level below the sequence::

    dataset/sequences/08/velodyne/000000.bin       points
    dataset/sequences/08/labels/000000.label       GT
    predictions/sequences/08/predictions/000000.label

rpx pairs files by their path below the folder it is given (``08/labels/000000`` and
``08/predictions/000000`` are different stems), so this script makes a view where the three
sides share stems (``08/000000``): folders of symbolic links, one per file, nothing copied::

    python examples/semantickitti_layout.py --dataset dataset/sequences \\
        --predictions predictions/sequences --sequences 08 --out kitti-view
    rpx eval segmentation3d --gt-dir kitti-view/gt --pred-dir kitti-view/pred \\
        --points-dir kitti-view/points --label-map learning_map.json --ignore-index 0 \\
        --protocol semantickitti --range 0:20 --range 20:50 --range 50:

Several sequences (``--sequences 08 11``, default: every one that has predictions) are
pooled into one evaluation, as SemanticKITTI's ``evaluate_semantics.py`` pools its split;
rows are ``08/000000``. A scan without a prediction is left for ``--missing`` to judge.
"""

from __future__ import annotations

import argparse
import os
import sys

SIDES = (("gt", "dataset", "labels", ".label"), ("pred", "predictions", "predictions", ".label"),
         ("points", "dataset", "velodyne", ".bin"))


def make_view(dataset: str, predictions: str, out: str, sequences: list[str] | None = None) -> dict[str, int]:
    """Link every scan's files into ``out/{gt,pred,points}/<sequence>/``; the number of
    files linked per side."""
    roots = {"dataset": dataset, "predictions": predictions}
    if not sequences:
        sequences = sorted(name for name in os.listdir(predictions)
                           if os.path.isdir(os.path.join(predictions, name, "predictions")))
    counts = {side: 0 for side, *_ in SIDES}
    for sequence in sequences:
        for side, root, folder, suffix in SIDES:
            source = os.path.join(roots[root], sequence, folder)
            if not os.path.isdir(source):
                if side == "points":
                    continue  # scans without points: --points-dir is optional
                raise SystemExit(f"{source}: no such folder (sequence {sequence})")
            target = os.path.join(out, side, sequence)
            os.makedirs(target, exist_ok=True)
            for name in sorted(os.listdir(source)):
                if not name.endswith(suffix):
                    continue
                link = os.path.join(target, name)
                if os.path.lexists(link):
                    os.remove(link)
                os.symlink(os.path.abspath(os.path.join(source, name)), link)
                counts[side] += 1
    return counts


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dataset", required=True, help="SemanticKITTI's dataset/sequences folder")
    parser.add_argument("--predictions", required=True,
                        help="the predictions' sequences folder (<seq>/predictions/*.label)")
    parser.add_argument("--sequences", nargs="*", help="sequences to pool [default: every one "
                        "with predictions]")
    parser.add_argument("--out", required=True, help="the view to write (gt/, pred/, points/)")
    args = parser.parse_args(argv)
    counts = make_view(args.dataset, args.predictions, args.out, args.sequences)
    print(", ".join(f"{side}: {n} file(s)" for side, n in counts.items()), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
