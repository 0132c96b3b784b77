/* COCO's accumulation (pycocotools' COCOeval.accumulate, LVISEval's too): the matched
 * detections of every category read as precision, recall and scores per (IoU threshold,
 * recall point, category, area range, maxDets), in one pass per cell with the GIL released.
 *
 * The numpy twin, which the tests compare with bit for bit, is reference_accumulate in
 * rpx_cli/ops/coco_accumulate.py: the same divisions in the same order (precision
 * tp / ((fp + tp) + eps), recall tp / regular), the same reading at the true positives only,
 * the same searchsorted(side="left") of the recall points. */
#include "core.h"
#include <float.h>
#include <math.h>
#include <string.h>

/* a * b into *out, or 0 when it would overflow (a, b >= 0) */
static int mul_ok(Py_ssize_t a, Py_ssize_t b, Py_ssize_t *out) {
    if (a && b > PY_SSIZE_T_MAX / a) return 0;
    *out = a * b;
    return 1;
}

typedef struct {
    const uint8_t *matched, *ignored; /* (N, A * T): took a GT / is ignored */
    const int64_t *rank, *bounds;    /* (N,), (K + 1,) */
    const double *score, *points;    /* (N,), (R,) */
    const int64_t *regular, *max_dets; /* (A, K), (M,) */
    Py_ssize_t N, K, A, T, M, R;
    double *precision, *recall, *scores; /* (T, R, K, A, M), (T, K, A, M), (T, R, K, A, M) */
} accumulation;

enum { TRUE_POSITIVE = 1, IGNORED = 2 };

/* One (category k, area a, maxDets m) cell at every threshold, over the selected
 * detections sel[0..n) (indices into the category's). `codes`: the category's detections
 * per column a * T + t, contiguous (`width` each), TRUE_POSITIVE | IGNORED. Scratch: at
 * (n), pr (n), rc (n). */
static void cell(const accumulation *c, Py_ssize_t k, Py_ssize_t a, Py_ssize_t m,
                 const uint8_t *codes, Py_ssize_t width, const int64_t *sel, Py_ssize_t n,
                 int64_t *at, double *pr, double *rc) {
    const double regular = (double)c->regular[a * c->K + k];
    const double *score = c->score + c->bounds[k];
    const Py_ssize_t KAM = c->K * c->A * c->M, cell_at = (k * c->A + a) * c->M + m;
    for (Py_ssize_t t = 0; t < c->T; t++) {
        const uint8_t *code = codes + (a * c->T + t) * width;
        Py_ssize_t n_tp = 0, n_ig = 0;
        for (Py_ssize_t j = 0; j < n; j++) {
            const uint8_t x = code[sel[j]];
            if (x & TRUE_POSITIVE) {
                /* false positives before it: its position less the true positives and the
                 * ignored detections before it */
                const double tp = (double)(n_tp + 1), fp = (double)(j - n_tp - n_ig);
                at[n_tp] = j;
                pr[n_tp] = tp / (fp + tp + DBL_EPSILON);
                rc[n_tp] = tp / regular;
                n_tp++;
            }
            if (x & IGNORED) n_ig++;
        }
        c->recall[t * KAM + cell_at] = (double)n_tp / regular;
        for (Py_ssize_t i = n_tp - 2; i >= 0; i--) { /* the envelope from the right */
            if (pr[i + 1] > pr[i]) pr[i] = pr[i + 1];
        }
        Py_ssize_t p = 0;
        for (Py_ssize_t r = 0; r < c->R; r++) {
            while (p < n_tp && rc[p] < c->points[r]) p++;
            const Py_ssize_t out = (t * c->R + r) * KAM + cell_at;
            c->precision[out] = p < n_tp ? pr[p] : 0.0;
            c->scores[out] = p < n_tp ? score[sel[at[p]]] : 0.0;
        }
        if (n && c->R) c->scores[t * c->R * KAM + cell_at] = score[sel[0]];
    }
}

/* Every cell; -1 where a category has no regular GT in an area range. 0, or -1 (no memory). */
static int accumulate_all(const accumulation *c) {
    Py_ssize_t total = c->T * c->R * c->K * c->A * c->M, columns = c->A * c->T;
    for (Py_ssize_t i = 0; i < total; i++) c->precision[i] = c->scores[i] = -1.0;
    for (Py_ssize_t i = 0; i < c->T * c->K * c->A * c->M; i++) c->recall[i] = -1.0;
    Py_ssize_t widest = 1;
    for (Py_ssize_t k = 0; k < c->K; k++) {
        if (c->bounds[k + 1] - c->bounds[k] > widest) widest = c->bounds[k + 1] - c->bounds[k];
    }
    int64_t *sel = malloc((size_t)widest * sizeof(int64_t));
    int64_t *at = malloc((size_t)widest * sizeof(int64_t));
    double *pr = malloc((size_t)widest * sizeof(double));
    double *rc = malloc((size_t)widest * sizeof(double));
    /* a category's codes, column by column (the caller checked columns * widest fits) */
    uint8_t *codes = malloc((size_t)(columns ? columns : 1) * (size_t)widest);
    int status = (sel && at && pr && rc && codes) ? 0 : -1;
    const int64_t last = c->max_dets[c->M - 1];
    for (Py_ssize_t k = 0; k < c->K && !status; k++) {
        const int64_t lo = c->bounds[k], hi = c->bounds[k + 1];
        const Py_ssize_t width = (Py_ssize_t)(hi - lo);
        for (Py_ssize_t j = 0; j < width; j++) {  /* rows to columns: each pass contiguous */
            const uint8_t *matched = c->matched + (lo + j) * columns;
            const uint8_t *ignored = c->ignored + (lo + j) * columns;
            for (Py_ssize_t col = 0; col < columns; col++) {
                codes[col * width + j] = (uint8_t)((matched[col] && !ignored[col] ? TRUE_POSITIVE : 0) |
                                                   (ignored[col] ? IGNORED : 0));
            }
        }
        for (Py_ssize_t m = 0; m < c->M; m++) {
            const int64_t cap = c->max_dets[m];
            Py_ssize_t n = 0;
            for (Py_ssize_t j = 0; j < width; j++) {  /* every detection under the last maxDets */
                if (cap >= last || c->rank[lo + j] < cap) sel[n++] = j;
            }
            for (Py_ssize_t a = 0; a < c->A; a++) {
                if (c->regular[a * c->K + k]) cell(c, k, a, m, codes, width, sel, n, at, pr, rc);
            }
        }
    }
    free(sel);
    free(at);
    free(pr);
    free(rc);
    free(codes);
    return status;
}

PyObject *rpx_coco_accumulate(PyObject *self, PyObject *args) {
    PyObject *o[11];
    Py_ssize_t T, A;
    if (!PyArg_ParseTuple(args, "OOOOOOOOnnOOO", &o[0], &o[1], &o[2], &o[3], &o[4], &o[5],
                          &o[6], &o[7], &T, &A, &o[8], &o[9], &o[10]))
        return NULL;
    static const char *names[11] = {"matched", "ignored", "rank", "score", "bounds", "regular",
                                    "max_dets", "recall_points", "precision", "recall", "scores"};
    static const int kinds[11] = {BUF_UINT8, BUF_UINT8, BUF_INT64, BUF_FLOAT64, BUF_INT64,
                                  BUF_INT64, BUF_INT64, BUF_FLOAT64, BUF_FLOAT64, BUF_FLOAT64,
                                  BUF_FLOAT64};
    Py_buffer b[11];
    int got = 0;
    PyObject *result = NULL;
    for (; got < 11; got++) {
        if (rpx_get_buffer(o[got], &b[got], kinds[got], got >= 8, names[got])) goto done;
    }
    accumulation c = {
        .matched = b[0].buf, .ignored = b[1].buf, .rank = b[2].buf, .score = b[3].buf,
        .bounds = b[4].buf, .regular = b[5].buf, .max_dets = b[6].buf, .points = b[7].buf,
        .precision = b[8].buf, .recall = b[9].buf, .scores = b[10].buf,
        .N = b[2].len / 8, .K = b[4].len / 8 - 1, .A = A, .T = T, .M = b[6].len / 8,
        .R = b[7].len / 8,
    };
    Py_ssize_t rows, flags, regular, cells, curve;
    if (T < 0 || A < 0 || c.K < 0 || c.M < 1) {
        PyErr_SetString(PyExc_ValueError, "coco_accumulate: T, A >= 0, K + 1 bounds and one maxDets at least");
        goto done;
    }
    if (!mul_ok(A, T, &rows) || !mul_ok(rows, c.N, &flags) || !mul_ok(A, c.K, &regular) ||
        !mul_ok(T, c.K, &cells) || !mul_ok(cells, A, &cells) || !mul_ok(cells, c.M, &cells) ||
        !mul_ok(cells, c.R, &curve)) {
        PyErr_SetString(PyExc_ValueError, "coco_accumulate: sizes overflow");
        goto done;
    }
    if (b[0].len != flags || b[1].len != flags || b[3].len != c.N * 8 ||
        b[5].len != regular * 8 || b[8].len / 8 != curve || b[10].len / 8 != curve ||
        b[9].len / 8 != cells) {
        PyErr_SetString(PyExc_ValueError, "coco_accumulate: a buffer of the wrong size");
        goto done;
    }
    if (rpx_check_offsets(c.bounds, c.K + 1, c.N, "coco_accumulate: bounds")) goto done;
    for (Py_ssize_t i = 0; i < regular; i++) {
        if (c.regular[i] < 0) {
            PyErr_SetString(PyExc_ValueError, "coco_accumulate: a negative GT count");
            goto done;
        }
    }
    for (Py_ssize_t r = 0; r < c.R; r++) {
        if (!isfinite(c.points[r]) || (r && c.points[r] < c.points[r - 1])) {
            PyErr_SetString(PyExc_ValueError, "coco_accumulate: recall points must be finite and ascending");
            goto done;
        }
    }
    int status;
    Py_BEGIN_ALLOW_THREADS
    status = accumulate_all(&c);
    Py_END_ALLOW_THREADS
    if (status) PyErr_NoMemory();
    else result = Py_NewRef(Py_None);
done:
    while (got-- > 0) PyBuffer_Release(&b[got]);
    return result;
}

/* IoU of two [x, y, w, h] boxes as rpx_cli/ops/coco.py's iou_xywh_rows computes it (the same
 * operations in the same order: bit for bit), over the detection's area for a crowd GT. */
static inline double iou_xywh(const double *d, const double *g, int crowd) {
    const double w = fmin(d[0] + d[2], g[0] + g[2]) - fmax(d[0], g[0]);
    const double h = fmin(d[1] + d[3], g[1] + g[3]) - fmax(d[1], g[1]);
    const double inter = (w > 0 && h > 0) ? w * h : 0.0;
    const double da = d[2] * d[3], ga = g[2] * g[3];
    const double uni = crowd ? da : da + ga - inter;
    return inter > 0 ? inter / uni : 0.0;
}

/* pycocotools' greedy matching of [x, y, w, h] boxes (rpx_cli/ops/matching.py's greedy_match
 * with ops/coco.py's iou_similarity, rule >=, ties to the last GT): per group (detections
 * and GT of one image and category, both sorted by group; detections in rank order), per
 * column a * T + t, each detection takes among the GT whose IoU >= thresholds[t] and that no
 * earlier detection took (a crowd GT may be taken again) the regular one (not crowd, area
 * within ranges[a]) of highest IoU, else the ignored one; ties to the last. */
static int match_boxes(const double *dt, const int64_t *dt_group, Py_ssize_t D, const double *gt,
                       const int64_t *gt_group, Py_ssize_t G, const uint8_t *gt_crowd,
                       const double *gt_area, const double *ranges, Py_ssize_t A,
                       const double *thresholds, Py_ssize_t T, uint8_t *matched, uint8_t *ignored) {
    const Py_ssize_t C = A * T;
    Py_ssize_t widest = 1;  /* the most GT of one group */
    for (Py_ssize_t j = 0, start = 0; j <= G; j++) {
        if (j == G || (j && gt_group[j] != gt_group[j - 1])) {
            if (j - start > widest) widest = j - start;
            start = j;
        }
    }
    uint8_t *taken = malloc((size_t)(C ? C : 1) * (size_t)widest);
    uint8_t *ig = malloc((size_t)(A ? A : 1) * (size_t)widest);  /* ignored GT per range */
    double *iou = malloc((size_t)widest * sizeof(double));
    Py_ssize_t *pass = malloc((size_t)widest * sizeof(Py_ssize_t));
    int status = (taken && ig && iou && pass) ? 0 : -1;
    double loosest = INFINITY;
    for (Py_ssize_t t = 0; t < T; t++) if (thresholds[t] < loosest) loosest = thresholds[t];
    memset(matched, 0, (size_t)D * (size_t)C);
    memset(ignored, 0, (size_t)D * (size_t)C);
    Py_ssize_t g0 = 0;  /* the first GT of the current group */
    for (Py_ssize_t i = 0; i < D && !status;) {
        const int64_t group = dt_group[i];
        Py_ssize_t end = i;
        while (end < D && dt_group[end] == group) end++;
        while (g0 < G && gt_group[g0] < group) g0++;
        Py_ssize_t g1 = g0;
        while (g1 < G && gt_group[g1] == group) g1++;
        const Py_ssize_t n_g = g1 - g0;
        if (n_g) {
            memset(taken, 0, (size_t)C * (size_t)n_g);
            for (Py_ssize_t a = 0; a < A; a++) {
                for (Py_ssize_t j = 0; j < n_g; j++) {
                    const double area = gt_area[g0 + j];
                    ig[a * n_g + j] = gt_crowd[g0 + j] || area < ranges[2 * a] || area > ranges[2 * a + 1];
                }
            }
            for (Py_ssize_t d = i; d < end; d++) {
                Py_ssize_t n_pass = 0;
                for (Py_ssize_t j = 0; j < n_g; j++) {
                    iou[j] = iou_xywh(dt + 4 * d, gt + 4 * (g0 + j), gt_crowd[g0 + j]);
                    if (iou[j] >= loosest) pass[n_pass++] = j;
                }
                if (!n_pass) continue;
                for (Py_ssize_t col = 0; col < C; col++) {
                    const Py_ssize_t a = col / T, t = col % T;
                    const uint8_t *tk = taken + col * n_g, *ia = ig + a * n_g;
                    Py_ssize_t best_regular = -1, best_ignored = -1;
                    for (Py_ssize_t q = 0; q < n_pass; q++) {
                        const Py_ssize_t j = pass[q];
                        if (!(iou[j] >= thresholds[t]) || (tk[j] && !gt_crowd[g0 + j])) continue;
                        Py_ssize_t *best = ia[j] ? &best_ignored : &best_regular;
                        if (*best < 0 || iou[j] >= iou[*best]) *best = j;  /* ties: the last */
                    }
                    const Py_ssize_t best = best_regular >= 0 ? best_regular : best_ignored;
                    if (best < 0) continue;
                    matched[d * C + col] = 1;
                    ignored[d * C + col] = ia[best];
                    taken[col * n_g + best] = 1;
                }
            }
        }
        i = end;
    }
    free(taken);
    free(ig);
    free(iou);
    free(pass);
    return status;
}

PyObject *rpx_coco_match_boxes(PyObject *self, PyObject *args) {
    PyObject *o[10];
    if (!PyArg_ParseTuple(args, "OOOOOOOOOO", &o[0], &o[1], &o[2], &o[3], &o[4], &o[5], &o[6],
                          &o[7], &o[8], &o[9]))
        return NULL;
    static const char *names[10] = {"dt_box", "dt_group", "gt_box", "gt_group", "gt_crowd",
                                    "gt_area", "ranges", "thresholds", "matched", "ignored"};
    static const int kinds[10] = {BUF_FLOAT64, BUF_INT64, BUF_FLOAT64, BUF_INT64, BUF_UINT8,
                                  BUF_FLOAT64, BUF_FLOAT64, BUF_FLOAT64, BUF_UINT8, BUF_UINT8};
    Py_buffer b[10];
    int got = 0;
    PyObject *result = NULL;
    for (; got < 10; got++) {
        if (rpx_get_buffer(o[got], &b[got], kinds[got], got >= 8, names[got])) goto done;
    }
    const Py_ssize_t D = b[1].len / 8, G = b[3].len / 8, A = b[6].len / 16, T = b[7].len / 8;
    Py_ssize_t columns, flags;
    if (A < 1 || T < 1 || b[6].len % 16 || !mul_ok(A, T, &columns) || !mul_ok(D, columns, &flags)) {
        PyErr_SetString(PyExc_ValueError, "coco_match_boxes: one area range and one threshold at least");
        goto done;
    }
    if (b[0].len != D * 32 || b[2].len != G * 32 || b[4].len != G || b[5].len != G * 8 ||
        b[8].len != flags || b[9].len != flags) {
        PyErr_SetString(PyExc_ValueError, "coco_match_boxes: a buffer of the wrong size");
        goto done;
    }
    const int64_t *dg = b[1].buf, *gg = b[3].buf;
    for (Py_ssize_t i = 1; i < D; i++) {
        if (dg[i] < dg[i - 1]) {
            PyErr_SetString(PyExc_ValueError, "coco_match_boxes: dt_group must be sorted");
            goto done;
        }
    }
    for (Py_ssize_t j = 1; j < G; j++) {
        if (gg[j] < gg[j - 1]) {
            PyErr_SetString(PyExc_ValueError, "coco_match_boxes: gt_group must be sorted");
            goto done;
        }
    }
    const double *thresholds = b[7].buf;
    for (Py_ssize_t t = 0; t < T; t++) {
        if (!isfinite(thresholds[t])) {
            PyErr_SetString(PyExc_ValueError, "coco_match_boxes: thresholds must be finite");
            goto done;
        }
    }
    int status;
    Py_BEGIN_ALLOW_THREADS
    status = match_boxes(b[0].buf, dg, D, b[2].buf, gg, G, b[4].buf, b[5].buf, b[6].buf, A,
                         thresholds, T, b[8].buf, b[9].buf);
    Py_END_ALLOW_THREADS
    if (status) PyErr_NoMemory();
    else result = Py_NewRef(Py_None);
done:
    while (got-- > 0) PyBuffer_Release(&b[got]);
    return result;
}
