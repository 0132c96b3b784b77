"""``rpx convert``: detection files of any format rpx reads written as COCO files."""

from __future__ import annotations

from typing import Any

import click

from rpx_cli.cli.eval import click_option

# the detection options that say how files are read (the rest only change scores)
READ_OPTIONS = ("box_format", "geometry", "angle_unit", "iou_type", "oks_sigmas", "pred_format",
                "gt_format", "image_size", "data_yaml", "class_names", "kpt_shape", "images_dir",
                "class_map")


def _read_options(func: Any) -> Any:
    from rpx_cli.tasks.registry import get_task

    options = [option for option in get_task("detection").options if option.param in READ_OPTIONS]
    for option in reversed(options):
        func = click_option(option)(func)
    return func


_BUILT: list[click.Command] = []


def build_convert() -> click.Command:
    """The ``rpx convert`` command (its reading options are detection's declarations),
    built once."""
    if not _BUILT:
        _BUILT.append(_read_options(convert_command))
    return _BUILT[0]


@click.command("convert")
@click.option("--to", "target", type=click.Choice(["coco"]), default="coco", show_default=True,
              help="The format written.")
@click.option("--gt-dir", type=click.Path(exists=True), required=True,
              help="Folder of GT files (any format), or the file of the whole set (a CVAT "
                   "XML, an Open Images CSV).")
@click.option("--pred-dir", type=click.Path(exists=True), default=None,
              help="Folder of prediction files, or the file of the whole set.")
@click.option("-o", "--out", "out_dir", required=True, metavar="DIR",
              help="Folder to write instances.json (and results.json) into.")
def convert_command(target: str, gt_dir: str, pred_dir: str | None, out_dir: str, **params: Any) -> None:
    """Write detections of any format rpx reads (YOLO, VOC, KITTI, DOTA, LabelMe, rpx JSON) as
    COCO files: OUT/instances.json (images with sizes, categories, annotations) and
    OUT/results.json. rpx and pycocotools read them back to the same numbers.

    \b
    Example:
      rpx convert --to coco --gt-dir fixtures/detection/formats/gt \\
          --pred-dir fixtures/detection/formats/pred \\
          --data-yaml fixtures/detection/formats/data.yaml \\
          --images-dir fixtures/detection/formats/images -o /tmp/coco
    """
    from rpx_cli.run.convert import convert_to_coco

    given = {key: value for key, value in params.items() if value is not None}
    summary = convert_to_coco(gt_dir, out_dir, given, pred_dir=pred_dir)
    written = ", ".join(summary["written"].values())
    click.echo(f"rpx convert: {summary['images']} images, {summary['annotations']} annotations, "
               f"{summary['results']} results ({summary['gt_format']} GT"
               + (f", {summary['pred_format']} predictions" if pred_dir else "") + f") -> {written}",
               err=True)
