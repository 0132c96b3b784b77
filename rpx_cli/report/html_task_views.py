"""The pictures of a task's report on the HTML page (:mod:`rpx_cli.report.html`): the views
a task names as its ``page_view`` (COCO-style PR curves, IoU per class, depth errors per
band, tracking sequences, calibration, 3D curves per band, things and stuff) and the generic
view every other task gets (a plugin task too): per-class bars, confusion matrices, per-band
bars and the distribution of the row metric the worst rows are ranked by. The sections the
views share are in :mod:`rpx_cli.report.html_task_sections`."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from rpx_cli.report import declared, svg, svg_bars, svg_grids, svg_lines
from rpx_cli.report.html_benchmark import benchmark_grid
from rpx_cli.report.html_blocks import (
    axis_label,
    cell_html,
    direction,
    is_number,
    plural,
    section_html,
    table_html,
)
from rpx_cli.report.html_mota_recall import mota_recall_view
from rpx_cli.report.html_protocol import protocol_view
from rpx_cli.report.html_task_sections import (
    bands_section,
    class_band_grid,
    confusion_section,
    distribution_section,
    per_class_bars,
)
from rpx_cli.report.markup import data_list, esc, short
from rpx_cli.report.render import lookup


def _pr_curves(report: Mapping[str, Any]) -> str:
    dataset = report.get("dataset") or {}
    run = declared.evaluated(report)  # OKS for keypoints, the run's maxDets
    out = [protocol_view(dataset.get(run.view), run)] if run.view else []
    coco = dataset.get("coco") or {}
    at = run.measure
    per_image = f"{run.max_dets} detections per image" if run.max_dets else "every detection"
    curves = coco.get("curves")
    if curves:
        recall = curves["recall"]
        out.append(section_html("precision–recall", svg_lines.line_chart(
            [{"name": f"{at} 0.5", "y": curves["iou50"]["overall"]["precision"]},
             {"name": f"{at} 0.5:0.95 (mean)", "y": curves["iou50_95"]["overall"]["precision"], "dash": "6 3"}],
            x=recall, title="precision–recall, mean over classes with GT", x_label="recall",
            y_label="precision (interpolated)", attrs={"name": "pr-overall"}),
            f"COCO's 101-point interpolated curves (area all, {per_image}); the area under "
            "each is AP50 and AP", kind="pr"))
    if coco.get("per_class"):
        out.append(section_html("where it fails: AP per class", per_class_bars(
            coco["per_class"], "AP", title=f"COCO AP per class ({at} 0.5:0.95), worst first", way="higher",
            name="ap-per-class"), "n/a: no GT box of the class", kind="ap-per-class"))
    pooled = dataset.get("pooled") or {}
    curve = pooled.get("by_confidence")
    if curve:
        threshold = lookup(report, "params.conf_threshold")
        markers = [{"x": threshold, "y": pooled.get(k), "label": f"{k} {short(pooled.get(k))}"}
                   for k in ("precision", "recall", "f1")] if threshold is not None else []
        out.append(section_html("precision, recall and F1 against confidence", svg_lines.line_chart(
            [{"name": "precision", "y": curve["precision"]}, {"name": "recall", "y": curve["recall"], "dash": "6 3"},
             {"name": "F1", "y": curve["f1"], "dash": "2 2"}], x=curve["conf_threshold"],
            title="pooled P/R/F1 against the confidence threshold", x_label="confidence threshold (score >=)",
            y_label="pooled value", markers=markers, attrs={"name": "prf-confidence"}),
            f"rings: the operating point (--conf-threshold {esc(short(threshold))}, {esc(at)} "
            f"{esc(short(lookup(report, 'params.iou_threshold')))}), dataset.pooled", kind="prf"))
    if dataset.get("confusion"):
        out.append(confusion_section(dataset["confusion"], "detection (Aquarium: background last)"))
    errors = dataset.get("errors")
    if errors:
        names = ["cls", "loc", "both", "dupe", "bkg", "miss", "fp", "fn"]
        meaning = {"cls": "wrong class", "loc": "poor box", "both": "class and box", "dupe": "duplicate",
                   "bkg": "background", "miss": "missed GT", "fp": "all false positives",
                   "fn": "all false negatives"}
        counts = errors.get("counts") or {}
        out.append(section_html("error breakdown (TIDE)", svg_bars.bar_chart(
            [f"{n} — {meaning[n]}" for n in names], [errors.get(n) for n in names],
            title="TIDE: AP50 gained by fixing each error type", value_label="dAP (0–1 scale)",
            notes=[plural(counts[n], "error") if n in counts else "" for n in names],
            colours=[svg.PALETTE[5]] * 6 + [svg.PALETTE[3]] * 2, attrs={"name": "tide"}),
            f"IoU {esc(short(errors.get('iou_threshold')))}, background {esc(short(errors.get('background_threshold')))}; "
            f"base AP50 (TIDE's matching) {esc(short(errors.get('ap50')))}; the last two are not a "
            "partition: fixing every false positive / false negative", kind="tide"))
    elif "errors" in (lookup(report, "params.skipped_metrics") or []) and declared.accepts_family(report, "errors"):
        ran = [name for name in lookup(report, "params.metrics") or [] if isinstance(name, str)]
        out.append(section_html("error breakdown (TIDE)", "", "not computed: run with <code>--metrics "
                                f"{esc(','.join([*ran, 'errors']))}</code> to add it", kind="tide"))
    if curves:
        per_class = curves["iou50"]["per_class"]
        ap = {k: v.get("AP") if isinstance(v, Mapping) else None
              for k, v in (coco.get("per_class") or {}).items()}
        order = sorted(per_class, key=lambda k: (ap.get(k) is None, ap.get(k) or 0.0))
        charts = [svg_lines.line_chart(
            [{"name": f"{at} 0.5", "y": per_class[k]["precision"]},
             {"name": "0.5:0.95", "y": curves["iou50_95"]["per_class"][k]["precision"], "dash": "6 3"}],
            x=curves["recall"], x_attr=False, title=f"{k}: precision–recall",
            x_label=f"recall — {k} (AP {short(ap.get(k))})", y_label="precision", width=250, height=190,
            legend=False, attrs={"name": "pr-class", "class": k}) for k in order]
        out.append(section_html("precision–recall per class", f'<div class="multiples">{"".join(charts)}</div>',
                                f"worst AP first; solid {esc(at)} 0.5, dashed the mean over 0.5:0.95; recall on x from "
                                "0 to 1 (the 101 points of dataset.coco.curves.recall)", kind="pr-per-class"))
    return "".join(out)


def _class_iou(report: Mapping[str, Any]) -> str:
    dataset = report.get("dataset") or {}
    out = []
    if dataset.get("per_class"):
        out.append(section_html("where it fails: IoU per class", per_class_bars(
            dataset["per_class"], "iou", title="IoU per class (pooled), worst first", way="higher",
            name="iou-per-class"), "n = GT pixels (support); n/a: no GT support", kind="iou-per-class"))
    out.append(bands_section(report))
    if dataset.get("confusion"):
        out.append(confusion_section(dataset["confusion"], str(report.get("task") or "")))
    out.append(distribution_section(report))
    return "".join(out)


def _by_depth(report: Mapping[str, Any]) -> str:
    """``dataset.by_depth`` (AbsRel and RMSE per bin of GT depth) and ``dataset.pred_vs_gt``
    (predicted against GT depth, each GT bin's row normalised)."""
    dataset = report.get("dataset") or {}
    by_depth = dataset.get("by_depth")
    if not isinstance(by_depth, Mapping) or not by_depth.get("bins"):
        if "by_depth" in (lookup(report, "params.skipped_metrics") or []):
            return section_html("error by depth", "", "not computed: run with <code>--metrics "
                                "rows,dataset,by_depth</code> to add it", kind="by-depth")
        return ""
    labels = [f"[{short(lo)}, {short(hi) if hi is not None else 'inf'}) m" for lo, hi in by_depth["bins"]]
    notes = [f"n={n:,}" for n in by_depth["n"]]
    charts = [svg_bars.bar_chart(labels, by_depth[key], title=f"{key} per bin of GT depth", value_label=key,
                                 notes=notes, width=420, attrs={"name": "by-depth", "metric": key})
              for key in ("absrel", "rmse")]
    out = [section_html("error by depth", f'<div class="multiples">{"".join(charts)}</div>',
                        "bins of GT depth a quarter octave wide (×1.19), pooled over every valid pixel; "
                        "dataset.by_depth", kind="by-depth")]
    hist = dataset.get("pred_vs_gt")
    if isinstance(hist, Mapping) and hist.get("counts"):
        counts, edges = hist["counts"], hist["edges"]
        rows = [i for i, row in enumerate(counts) if any(row)]
        # the GT's span and two bins either side; predictions beyond it folded into two columns
        lo, hi = max(rows[0] - 2, 0), min(rows[-1] + 3, len(counts))
        span = range(lo, hi)
        names = [short(edges[k]) for k in span]
        matrix = [[sum(counts[i][:lo]), *(counts[i][j] for j in span), sum(counts[i][hi:])] for i in rows]
        columns = [f"< {short(edges[lo])}", *names, f">= {short(edges[hi]) if hi < len(edges) else 'inf'}"]
        out.append(section_html("predicted against GT depth", svg_grids.heatmap(
            [short(edges[i]) for i in rows], columns, matrix, title="pixels per GT and predicted depth bin",
            normalise_rows=True, row_label="GT depth (bin start, m)", column_label="predicted depth (bin start, m)",
            attrs={"name": "pred-vs-gt"}), "<b>rows are GT depth, columns the prediction</b>, each row "
            "normalised: a good model is near the diagonal; the first and last columns hold the predictions "
            "more than two bins beyond the GT's range; dataset.pred_vs_gt", kind="pred-vs-gt"))
    return "".join(out)


def _error_bands(report: Mapping[str, Any]) -> str:
    out = [bands_section(report), _by_depth(report), distribution_section(report, "absrel")]
    if (report.get("rows") or [{}])[0].get("rmse") is not None:
        out.append(distribution_section(report, "rmse"))
    return "".join(out)


def _sequences(report: Mapping[str, Any]) -> str:
    rows = report.get("rows") or []
    out = []
    if rows:
        keys = [k for k in ("hota", "mota", "idf1", "motp", "deta", "assa", "idsw", "fp", "fn", "num_gt")
                if k in rows[0]]
        table = table_html(["sequence", *keys], [(f"<code>{esc(r.get('stem'))}</code>", *(cell_html(r.get(k), k) for k in keys))
                                                 for r in rows],
                           attrs=[f'data-stem="{esc(r.get("stem"))}"' for r in rows], table="sequences")
        out.append(section_html("per sequence", table, "dataset = summed over sequences (not a mean of rows)",
                                kind="sequences"))
        out.append(section_html("HOTA and MOTA per sequence", svg_bars.grouped_bars(
            [str(r.get("stem")) for r in rows], ["hota", "mota", "idf1"],
            [[r.get(k) for r in rows] for k in ("hota", "mota", "idf1")], title="per-sequence scores",
            y_label="score", x_label="sequence", domain=None, attrs={"name": "sequences"}), kind="sequence-bars"))
    alpha = lookup(report, "dataset.hota_alpha")
    if isinstance(alpha, Mapping) and alpha.get("alpha"):
        series = [{"name": k, "y": alpha[k]} for k in ("hota", "deta", "assa") if isinstance(alpha.get(k), list)]
        out.append(section_html("HOTA against the localisation threshold α", svg_lines.line_chart(
            series, x=alpha["alpha"], x_domain=(0.0, 1.0), title="HOTA, DetA, AssA against α",
            x_label="α (IoU threshold)", y_label="score", attrs={"name": "hota-alpha"}), kind="hota-alpha"))
    return "".join(out)


def _calibration(report: Mapping[str, Any]) -> str:
    dataset = report.get("dataset") or {}
    out = []
    calibration = dataset.get("calibration")
    if isinstance(calibration, Mapping) and isinstance(calibration.get("confidence"), list) \
            and isinstance(calibration.get("accuracy"), list):
        conf, acc = calibration["confidence"], calibration["accuracy"]
        counts = calibration.get("count") or []
        xs = [c for c in conf]
        markers = [{"x": c, "y": a, "label": ""} for c, a in zip(conf, acc, strict=False)
                   if c is not None and a is not None]
        chart = svg_lines.line_chart(
            [{"name": "perfect calibration", "x": [0.0, 1.0], "y": [0.0, 1.0], "dash": "4 4",
              "colour": svg.NEUTRAL},
             {"name": "model", "x": xs, "y": acc}], title="reliability diagram",
            x_label="mean confidence in the bin", y_label="accuracy in the bin", markers=markers,
            attrs={"name": "reliability", "counts": data_list(counts)})
        out.append(section_html("calibration", chart, f"ECE {esc(short(dataset.get('ece')))} over "
                                f"{esc(calibration.get('n_scored'))} scored samples; a point per non-empty bin "
                                f"({len(counts)} equal-width bins)", kind="calibration"))
    if dataset.get("per_class"):
        field = "f1" if any(isinstance(e, Mapping) and "f1" in e for e in dataset["per_class"].values()) else "ap"
        out.append(section_html(f"where it fails: {field} per class", per_class_bars(
            dataset["per_class"], field, title=f"{field} per class, worst first", way="higher",
            name="f1-per-class"), "n = support", kind="per-class"))
    out.append(_class_pr_curves(dataset))
    if dataset.get("confusion"):
        out.append(confusion_section(dataset["confusion"], str(report.get("task") or "")))
    return "".join(out)


MAX_CLASS_CHARTS = 12  # small multiples per picture: the worst classes first


def _class_pr_curves(dataset: Mapping[str, Any]) -> str:
    """One-vs-rest PR curves (``dataset.curves``), the classes with the lowest AP first."""
    curves = dataset.get("curves")
    if not isinstance(curves, Mapping) or not isinstance(curves.get("per_class"), Mapping):
        return ""
    per_class = dataset.get("per_class") or {}
    ap = {k: (per_class.get(k) or {}).get("ap") for k in curves["per_class"]}
    order = [k for k in sorted(curves["per_class"], key=lambda k: (ap.get(k) is None, ap.get(k) or 0.0))
             if curves["per_class"][k]]
    charts = [svg_lines.line_chart(
        [{"name": "precision", "y": curves["per_class"][k]["precision"]},
         {"name": "score", "y": curves["per_class"][k]["score"], "dash": "4 3"}],
        x=curves["recall"], x_attr=False, title=f"{k}: precision–recall", x_label=f"recall — {k} (AP {short(ap.get(k))})",
        y_label="precision / score", width=250, height=190, legend=False, attrs={"name": "class-pr", "class": k})
        for k in order[:MAX_CLASS_CHARTS]]
    if not charts:
        return ""
    more = f"; {len(order) - MAX_CLASS_CHARTS} more in dataset.curves" if len(order) > MAX_CLASS_CHARTS else ""
    return section_html("precision–recall per class", f'<div class="multiples">{"".join(charts)}</div>',
                        "one class against the rest, the lowest AP first; solid: interpolated precision, "
                        "dashed: the score threshold reaching each recall" + more, kind="class-pr")


def _things_and_stuff(report: Mapping[str, Any]) -> str:
    """Per-class quality split into two kinds of class (``per_class.<name>.isthing``: things
    and stuff, panoptic quality): PQ per class for each kind, worst first; SQ against RQ per
    class (segment quality of the matches against how many segments were matched); the
    distribution of the rank metric over rows (the worst rows have their own section)."""
    dataset = report.get("dataset") or {}
    per_class = dataset.get("per_class")
    out = []
    if isinstance(per_class, Mapping) and per_class:
        charts = []
        for flag, kind in ((True, "things"), (False, "stuff")):
            entries = {name: entry for name, entry in per_class.items()
                       if isinstance(entry, Mapping) and bool(entry.get("isthing")) is flag}
            chart = per_class_bars(entries, "pq", title=f"PQ per class: {kind}, worst first",
                                   way="higher", name=f"pq-{kind}") if entries else ""
            if chart:  # each caption with its chart, above it: one figure per kind
                mean = dataset.get(f"pq_{kind}")
                charts.append(f'<figure class="captioned" data-kind="{esc(kind)}"><figcaption class="note-text">PQ {esc(kind)} = '
                              f"{esc(short(mean))} (the mean over {esc(dataset.get(f'n_classes_{kind}'))} "
                              f"classes seen)</figcaption>{chart}</figure>")
        if charts:
            out.append(section_html("where it fails: PQ per class, things and stuff apart",
                                    "".join(charts), "n/a: a class with no segment on either side "
                                    "(left out of the means)", kind="pq-per-class"))
        points = [(name, entry.get("rq"), entry.get("sq"), bool(entry.get("isthing")))
                  for name, entry in per_class.items() if isinstance(entry, Mapping)
                  and is_number(entry.get("rq")) and is_number(entry.get("sq"))]
        if points:
            markers = [{"x": rq, "y": sq, "label": name} for name, rq, sq, _ in points]
            chart = svg_lines.line_chart([], title="SQ against RQ per class", x_label="RQ (recognition: "
                                         "TP / (TP + FP/2 + FN/2))", y_label="SQ (mean IoU of the matches)",
                                         y_domain=(0.0, 1.0),
                                         markers=markers, legend=False,
                                         attrs={"name": "sq-rq", "classes": data_list([p[0] for p in points])})
            out.append(section_html("SQ against RQ", chart, "PQ = SQ × RQ: a class low on the x axis "
                                    "misses or invents segments, one low on the y axis outlines them "
                                    "poorly; SQ is 0 for a class without a match", kind="sq-rq"))
    out.append(distribution_section(report))
    return "".join(out)


def generic(report: Mapping[str, Any]) -> str:
    """Any other kind (a plugin task too): per-class bars, a confusion matrix, bands and the
    distribution of the primary row metric, wherever the report has them."""
    dataset = report.get("dataset") or {}
    out = []
    per_class = dataset.get("per_class")
    if isinstance(per_class, Mapping) and per_class:
        fields = [k for e in per_class.values() if isinstance(e, Mapping) for k, v in e.items() if is_number(v)]
        field = next((f for f in ("iou", "AP", "ap", "f1", "recall") if f in fields), fields[0] if fields else None)
        if field:
            way = direction(report, field)
            out.append(section_html(f"{field} per class", per_class_bars(
                per_class, field, title=f"{field} per class, worst first", way=way, domain=None,
                name="per-class", label=axis_label(report, field)), kind="per-class"))
    confusion = dataset.get("confusion")
    if isinstance(confusion, Mapping):
        out.append(confusion_section(confusion, str(report.get("task") or "")))
    out.append(bands_section(report))
    if isinstance(per_class, Mapping) and per_class:
        out.append(class_band_grid(report, next((f for f in ("iou", "AP", "ap", "f1") if any(
            isinstance(e, Mapping) and f in e for e in per_class.values())), "")))
    out.append(distribution_section(report))
    return "".join(out)


ERROR_CURVES = {"trans_err": "ATE (m)", "scale_err": "ASE", "orient_err": "AOE (rad)", "vel_err": "AVE (m/s)",
                "attr_err": "AAE"}


def _curves_bev(report: Mapping[str, Any]) -> str:
    """Range-banded 3D detection: the bands, AP per class and band, precision–recall per
    class with a line per match threshold, the TP errors against recall at the operating
    threshold (from ``dataset.curves``), and the distribution of the rank metric."""
    dataset = report.get("dataset") or {}
    per_class = dataset.get("per_class") or {}
    out = [bands_section(report), class_band_grid(report, "AP"), benchmark_grid(report)]
    curves = dataset.get("curves")
    thresholds, operating = declared.thresholds(report)
    if isinstance(curves, Mapping) and thresholds:
        ap = {k: (per_class.get(k) or {}).get("AP") for k in curves}
        order = [k for k in sorted(curves, key=lambda k: (ap.get(k) is None, ap.get(k) or 0.0))
                 if any(curves[k].get(t.token) for t in thresholds)]
        charts = []
        for k in order[:MAX_CLASS_CHARTS]:
            series = [{"name": t.label, "y": curves[k][t.token]["precision"], "x": curves[k][t.token]["recall"],
                       "dash": "" if i == 0 else ("6 3", "2 2", "8 2 2 2")[(i - 1) % 3]}
                      for i, t in enumerate(thresholds) if curves[k].get(t.token)]
            charts.append(svg_lines.line_chart(series, title=f"{k}: precision–recall", x_label=f"recall — {k} "
                                               f"(AP {short(ap.get(k))})", y_label="precision", width=270, height=210,
                                               legend=k == order[0], attrs={"name": "pr-threshold", "class": k}))
        more = f"; {len(order) - MAX_CLASS_CHARTS} more in dataset.curves" if len(order) > MAX_CLASS_CHARTS else ""
        out.append(section_html("precision–recall per class and match threshold",
                                f'<div class="multiples">{"".join(charts)}</div>',
                                "one line per match threshold (legend on the first chart); the lowest AP first; "
                                "101 recall points of dataset.curves" + more, kind="pr-threshold"))
        if operating is not None:
            charts = []
            for k in order[:MAX_CLASS_CHARTS]:
                curve = curves[k].get(operating.token)
                if not curve:
                    continue
                peak = max([v for key in ERROR_CURVES for v in curve[key] if v is not None] or [1.0])
                series = [{"name": label, "y": curve[key], "x": curve["recall"]}
                          for key, label in ERROR_CURVES.items()]
                charts.append(svg_lines.line_chart(series, title=f"{k}: TP errors against recall",
                                                   x_label=f"recall — {k}", y_label="error", y_domain=(0.0, max(peak, 1e-9)),
                                                   width=270, height=210, legend=k == order[0],
                                                   attrs={"name": "tp-errors", "class": k}))
            out.append(section_html(f"TP errors against recall (matches at {operating.label})",
                                    f'<div class="multiples">{"".join(charts)}</div>',
                                    "the errors of the matches as recall grows, as dataset.curves holds them "
                                    "(the per-class ATE … AAE read them past the minimum recall)", kind="tp-errors"))
    elif "curves" in (lookup(report, "params.skipped_metrics") or []) and "per_class" in dataset \
            and declared.accepts_family(report, "curves"):
        out.append(section_html("precision–recall per class and match threshold", "", "not computed: run "
                                "without <code>--metrics</code>, or add <code>curves</code> to it", kind="pr-threshold"))
    out.append(distribution_section(report))
    return "".join(out)


# the views a task names as its page_view (rpx_cli.tasks.base.Task.page_view)
TASK_VIEWS: dict[str, Callable[[Mapping[str, Any]], str]] = {
    "pr_curves": _pr_curves, "class_iou": _class_iou, "error_bands": _error_bands, "sequences": _sequences,
    "calibration": _calibration, "curves_bev": _curves_bev, "things_and_stuff": _things_and_stuff,
    "mota_recall": mota_recall_view,
}


def task_view(report: Mapping[str, Any]) -> Callable[[Mapping[str, Any]], str]:
    """The view the report's task names (else :func:`generic`)."""
    task = declared.task_of(report)
    return TASK_VIEWS.get(task.page_view or "", generic) if task is not None else generic
