/* COCO's greedy matching of keypoints (pycocotools' evaluateImg under computeOks): per
 * (image, category) group, each detection's OKS with the group's GT computed inside the
 * greedy walk, at every area range and threshold, with the GIL released.
 *
 * The numpy twin, which the tests compare with bit for bit, is rpx_cli/ops/matching.py's
 * greedy_match with rpx_cli/ops/oks.py's OksGeometry similarity (rule >=, ties to the last
 * GT). The OKS is oks_pairs' (pycocotools' computeOks) operation for operation:
 *     e_i = (dx_i * dx_i + dy_i * dy_i) / variance_i / (area + eps) / 2
 * over the GT's visible points (v > 0), or over every point with the distance outside the
 * GT box grown by its size when none is visible, OKS = sum(exp(-e)) / count, the sum taken in
 * numpy's pairwise order (numpy's add.reduce: eight lanes, then the rest in turn), so that
 * the value is numpy's bit for bit. (OksGeometry reads a pair whose upper bound is below the
 * loosest threshold as 0; here it is computed exactly: below every threshold either way.)
 * The walk is greedy.h's (the box matcher's) with the OKS in place of the IoU, its groups
 * split among `threads` threads. */
#include "core.h"
#include "greedy.h"
#include <float.h>
#include <math.h>
#include <string.h>

#define PAIRWISE_BLOCK 128  /* numpy's PW_BLOCKSIZE */

/* numpy's pairwise sum of n doubles (DOUBLE_pairwise_sum in numpy's loops_utils.h). */
static double pairwise_sum(const double *a, Py_ssize_t n) {
    if (n < 8) {
        double res = 0.;
        for (Py_ssize_t i = 0; i < n; i++) res += a[i];
        return res;
    }
    if (n <= PAIRWISE_BLOCK) {
        double r[8];
        Py_ssize_t i;
        for (int j = 0; j < 8; j++) r[j] = a[j];
        for (i = 8; i < n - (n % 8); i += 8)
            for (int j = 0; j < 8; j++) r[j] += a[i + j];
        double res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
        for (; i < n; i++) res += a[i];
        return res;
    }
    Py_ssize_t n2 = n / 2;
    n2 -= n2 % 8;
    return pairwise_sum(a, n2) + pairwise_sum(a + n2, n - n2);
}

static inline double at_least_zero(double x) { return x > 0.0 ? x : 0.0; }

/* OKS of the detection row d with the GT row g (K points [x, y, v], then the GT box
 * [x, y, w, h]); `scale` = area + eps; `terms`: room for K values. With `loosest` > 0, a pair
 * whose every term is below loosest / (1 + 1e-9) (its largest, exp(-min e), tells: exp is
 * monotonic) has a mean below loosest and can pass no threshold: 0 is returned for it
 * without the other exponentials (every pair that may pass is computed in full). */
static double oks(const double *d, const double *g, double scale, const double *variance,
                  Py_ssize_t K, double *terms, double loosest) {
    Py_ssize_t visible = 0, n = 0;
    double least = INFINITY;
    for (Py_ssize_t i = 0; i < K; i++) visible += g[3 * i + 2] > 0;
    if (visible) {
        for (Py_ssize_t i = 0; i < K; i++) {
            if (!(g[3 * i + 2] > 0)) continue;
            const double dx = d[3 * i] - g[3 * i], dy = d[3 * i + 1] - g[3 * i + 1];
            const double e = (dx * dx + dy * dy) / variance[i] / scale / 2;
            terms[n++] = e;
            if (e < least) least = e;
        }
    } else {
        const double bx = g[3 * K], by = g[3 * K + 1], bw = g[3 * K + 2], bh = g[3 * K + 3];
        const double x0 = bx - bw, x1 = bx + bw * 2, y0 = by - bh, y1 = by + bh * 2;
        for (Py_ssize_t i = 0; i < K; i++) {
            const double xd = d[3 * i], yd = d[3 * i + 1];
            const double dx = at_least_zero(x0 - xd) + at_least_zero(xd - x1);
            const double dy = at_least_zero(y0 - yd) + at_least_zero(yd - y1);
            const double e = (dx * dx + dy * dy) / variance[i] / scale / 2;
            terms[n++] = e;
            if (e < least) least = e;
        }
    }
    if (loosest > 0 && exp(-least) * (1 + 1e-9) < loosest) return 0.0;
    for (Py_ssize_t i = 0; i < n; i++) terms[i] = exp(-terms[i]);
    return pairwise_sum(terms, n) / (double)n;
}

typedef struct {
    const double *dt_rows, *gt_rows, *oks_area, *variance;
    const int64_t *dt_id, *gt_id, *dt_group, *gt_group;
    const uint8_t *gt_crowd;
    const double *gt_area, *ranges, *thresholds;
    Py_ssize_t W, K, D, G, A, T;
    uint8_t *matched, *ignored;
} oks_problem;

/* The OKS of the walk's detection d with its group's GT (greedy_values_fn; scratch: K
 * doubles for the terms). */
static void oks_values(const void *ctx, void *scratch, Py_ssize_t d, Py_ssize_t g0, Py_ssize_t n_g,
                       double loosest, double *value) {
    const oks_problem *p = ctx;
    const double *row = p->dt_rows + p->dt_id[d] * p->W;
    for (Py_ssize_t j = 0; j < n_g; j++) {
        const int64_t k = p->gt_id[g0 + j];
        value[j] = oks(row, p->gt_rows + k * p->W, p->oks_area[k] + DBL_EPSILON, p->variance, p->K,
                       scratch, loosest);
    }
}

/* pycocotools' greedy walk (greedy.h's, as the box matcher walks) with the OKS for the IoU:
 * per group, per column a * T + t, each detection takes among the GT whose OKS >=
 * thresholds[t] and that no earlier detection took (a crowd GT may be taken again) the
 * regular one (not crowd, area within ranges[a]) of highest OKS, else the ignored one; ties
 * to the last. */
static int match_oks(const oks_problem *p, int threads) {
    greedy_walk_t walk = {
        .dt_group = p->dt_group, .gt_group = p->gt_group, .gt_crowd = p->gt_crowd, .outside = NULL,
        .gt_area = p->gt_area, .ranges = p->ranges, .thresholds = p->thresholds,
        .D = p->D, .G = p->G, .A = p->A, .T = p->T, .matched = p->matched, .ignored = p->ignored,
        .values = oks_values, .ctx = p, .scratch_bytes = (size_t)p->K * sizeof(double), .parts = threads,
    };
    return greedy_walk(&walk);
}

/* a * b into *out, or 0 when it would overflow (a, b >= 0) */
static int product_ok(Py_ssize_t a, Py_ssize_t b, Py_ssize_t *out) {
    if (a && b > PY_SSIZE_T_MAX / a) return 0;
    *out = a * b;
    return 1;
}

/* every id within [0, n) */
static int ids_within(const int64_t *id, Py_ssize_t count, Py_ssize_t n) {
    for (Py_ssize_t i = 0; i < count; i++)
        if (id[i] < 0 || id[i] >= n) return 0;
    return 1;
}

static int sorted_ok(const int64_t *x, Py_ssize_t n) {
    for (Py_ssize_t i = 1; i < n; i++)
        if (x[i] < x[i - 1]) return 0;
    return 1;
}

PyObject *rpx_coco_match_oks(PyObject *self, PyObject *args) {
    enum { N = 14 };
    PyObject *o[N];
    Py_ssize_t width;
    int threads = 1;
    if (!PyArg_ParseTuple(args, "nOOOOOOOOOOOOOO|i", &width, &o[0], &o[1], &o[2], &o[3], &o[4],
                          &o[5], &o[6], &o[7], &o[8], &o[9], &o[10], &o[11], &o[12], &o[13], &threads))
        return NULL;
    static const char *const names[N] = {"dt_rows", "dt_id", "gt_rows", "gt_id", "oks_area",
                                   "variances", "dt_group", "gt_group", "gt_crowd", "gt_area",
                                   "ranges", "thresholds", "matched", "ignored"};
    static const int kinds[N] = {BUF_FLOAT64, BUF_INT64, BUF_FLOAT64, BUF_INT64, BUF_FLOAT64,
                                 BUF_FLOAT64, BUF_INT64, BUF_INT64, BUF_UINT8, BUF_FLOAT64,
                                 BUF_FLOAT64, BUF_FLOAT64, BUF_UINT8, BUF_UINT8};
    Py_buffer b[N];
    PyObject *result = NULL;
    int got = rpx_get_buffers(o, b, kinds, names, N, 12);
    if (got < N) goto done;
    oks_problem p;
    p.K = b[5].len / 8;
    p.D = b[1].len / 8;
    p.G = b[3].len / 8;
    p.A = b[10].len / 16;
    p.T = b[11].len / 8;
    p.W = width;
    Py_ssize_t row_bytes, columns, flags;
    if (p.K < 1 || p.K > (PY_SSIZE_T_MAX - 4) / 3 || width < 3 * p.K + 4 ||
        !product_ok(width, 8, &row_bytes)) {
        PyErr_SetString(PyExc_ValueError, "coco_match_oks: one keypoint at least, and rows of "
                        "3 * keypoints + 4 values at least");
        goto done;
    }
    if (p.A < 1 || p.T < 1 || b[10].len % 16 || !product_ok(p.A, p.T, &columns) ||
        !product_ok(p.D, columns, &flags)) {
        PyErr_SetString(PyExc_ValueError, "coco_match_oks: one area range and one threshold at least");
        goto done;
    }
    if (b[0].len % row_bytes || b[2].len % row_bytes) {
        PyErr_SetString(PyExc_ValueError, "coco_match_oks: rows of `width` float64 values");
        goto done;
    }
    const Py_ssize_t n_dt = b[0].len / row_bytes, n_gt = b[2].len / row_bytes;
    if (b[4].len != n_gt * 8 || b[6].len != p.D * 8 || b[7].len != p.G * 8 || b[8].len != p.G ||
        b[9].len != p.G * 8 || b[12].len != flags || b[13].len != flags) {
        PyErr_SetString(PyExc_ValueError, "coco_match_oks: a buffer of the wrong size");
        goto done;
    }
    p.dt_rows = b[0].buf; p.dt_id = b[1].buf; p.gt_rows = b[2].buf; p.gt_id = b[3].buf;
    p.oks_area = b[4].buf; p.variance = b[5].buf; p.dt_group = b[6].buf; p.gt_group = b[7].buf;
    p.gt_crowd = b[8].buf; p.gt_area = b[9].buf; p.ranges = b[10].buf; p.thresholds = b[11].buf;
    p.matched = b[12].buf; p.ignored = b[13].buf;
    if (!ids_within(p.dt_id, p.D, n_dt) || !ids_within(p.gt_id, p.G, n_gt)) {
        PyErr_SetString(PyExc_ValueError, "coco_match_oks: an id beyond its rows");
        goto done;
    }
    if (!sorted_ok(p.dt_group, p.D) || !sorted_ok(p.gt_group, p.G)) {
        PyErr_SetString(PyExc_ValueError, "coco_match_oks: dt_group and gt_group must be sorted");
        goto done;
    }
    for (Py_ssize_t t = 0; t < p.T; t++) {
        if (!isfinite(p.thresholds[t])) {
            PyErr_SetString(PyExc_ValueError, "coco_match_oks: thresholds must be finite");
            goto done;
        }
    }
    int status;
    Py_BEGIN_ALLOW_THREADS
    status = match_oks(&p, threads);
    Py_END_ALLOW_THREADS
    if (status) PyErr_NoMemory();
    else result = Py_NewRef(Py_None);
done:
    while (got-- > 0) PyBuffer_Release(&b[got]);
    return result;
}
