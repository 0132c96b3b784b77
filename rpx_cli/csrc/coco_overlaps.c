/* COCO's greedy matching under intersections computed beforehand (masks' RLE intersections,
 * polygons' clipped areas): rpx_cli/ops/geometry.py's OverlapTable read inside greedy.h's
 * walk, with the GIL released.
 *
 * The table lists the pairs that intersect: keys pred * key_gt + gt, sorted (a key given
 * twice: its first), each with its intersection; any other pair's IoU is 0. A pair's IoU is
 * OverlapTable.iou's, operation for operation: inter > 0 ? inter / union : 0 with
 * union = da (a crowd GT) or da + ga - inter. The numpy twin, which the tests compare with bit
 * for bit, is rpx_cli/ops/matching.py's greedy_match with OverlapTable.similarity. */
#include "core.h"
#include "greedy.h"
#include <math.h>
#include <string.h>

typedef struct {
    const int64_t *keys, *dt_id, *gt_id;
    const double *inter, *pred_area, *gt_area_table;
    const uint8_t *gt_crowd;
    Py_ssize_t n_keys;
    int64_t key_gt;
} overlap_values;

/* The first key at or after `at`. */
static Py_ssize_t key_at(const int64_t *keys, Py_ssize_t n, int64_t at) {
    Py_ssize_t lo = 0, hi = n;
    while (lo < hi) {
        const Py_ssize_t mid = lo + (hi - lo) / 2;
        if (keys[mid] < at) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

/* The IoU of the walk's detection d with its group's GT (greedy_values_fn): 0, but where the
 * table lists the pair. */
static void overlap_ious(const void *ctx, void *scratch, Py_ssize_t d, Py_ssize_t g0, Py_ssize_t n_g,
                         double loosest, double *value) {
    const overlap_values *o = ctx;
    (void)scratch;
    (void)loosest;
    for (Py_ssize_t j = 0; j < n_g; j++) value[j] = 0.0;
    const int64_t p = o->dt_id[d], first = p * o->key_gt;
    const double da = o->pred_area[p];
    for (Py_ssize_t k = key_at(o->keys, o->n_keys, first); k < o->n_keys && o->keys[k] < first + o->key_gt; k++) {
        if (k > 0 && o->keys[k] == o->keys[k - 1]) continue;  /* a key given twice: its first */
        const int64_t gid = o->keys[k] - first;
        const double inter = o->inter[k];
        for (Py_ssize_t j = 0; j < n_g; j++) {
            if (o->gt_id[g0 + j] != gid) continue;
            const double uni = o->gt_crowd[g0 + j] ? da : da + o->gt_area_table[gid] - inter;
            value[j] = inter > 0 ? inter / uni : 0.0;
        }
    }
}

PyObject *rpx_coco_match_overlaps(PyObject *self, PyObject *args) {
    enum { N = 14 };
    PyObject *o[N];
    long long key_gt;
    int threads = 1;
    if (!PyArg_ParseTuple(args, "OOLOOOOOOOOOOOO|i", &o[0], &o[1], &key_gt, &o[2], &o[3], &o[4], &o[5],
                          &o[6], &o[7], &o[8], &o[9], &o[10], &o[11], &o[12], &o[13], &threads))
        return NULL;
    static const char *const names[N] = {"keys", "inter", "pred_area", "gt_area_table", "dt_id", "gt_id",
                                   "dt_group", "gt_group", "gt_crowd", "gt_area", "ranges",
                                   "thresholds", "matched", "ignored"};
    static const int kinds[N] = {BUF_INT64, BUF_FLOAT64, BUF_FLOAT64, BUF_FLOAT64, BUF_INT64,
                                 BUF_INT64, BUF_INT64, BUF_INT64, BUF_UINT8, BUF_FLOAT64,
                                 BUF_FLOAT64, BUF_FLOAT64, BUF_UINT8, BUF_UINT8};
    Py_buffer b[N];
    PyObject *result = NULL;
    int got = rpx_get_buffers(o, b, kinds, names, N, 12);
    if (got < N) goto done;
    const Py_ssize_t n_keys = b[0].len / 8, n_pred = b[2].len / 8, n_gt = b[3].len / 8;
    const Py_ssize_t D = b[4].len / 8, G = b[5].len / 8, A = b[10].len / 16, T = b[11].len / 8;
    if (A < 1 || T < 1 || b[10].len % 16 || T > PY_SSIZE_T_MAX / A || (D && A * T > PY_SSIZE_T_MAX / D)) {
        PyErr_SetString(PyExc_ValueError, "coco_match_overlaps: one area range and one threshold at least");
        goto done;
    }
    if (b[1].len != n_keys * 8 || b[6].len != D * 8 || b[7].len != G * 8 || b[8].len != G ||
        b[9].len != G * 8 || b[12].len != D * A * T || b[13].len != D * A * T) {
        PyErr_SetString(PyExc_ValueError, "coco_match_overlaps: a buffer of the wrong size");
        goto done;
    }
    const int64_t *keys = b[0].buf, *dt_id = b[4].buf, *gt_id = b[5].buf;
    const int64_t *dg = b[6].buf, *gg = b[7].buf;
    /* every id within its areas, the keys sorted and within the table, the groups sorted */
    if (key_gt < 1 || key_gt < n_gt || (n_pred && key_gt > INT64_MAX / n_pred)) {
        PyErr_SetString(PyExc_ValueError, "coco_match_overlaps: key_gt must cover the GT");
        goto done;
    }
    for (Py_ssize_t i = 0; i < D; i++) {
        if (dt_id[i] < 0 || dt_id[i] >= n_pred || (i && dg[i] < dg[i - 1])) {
            PyErr_SetString(PyExc_ValueError, "coco_match_overlaps: a detection id beyond its areas, or unsorted groups");
            goto done;
        }
    }
    for (Py_ssize_t j = 0; j < G; j++) {
        if (gt_id[j] < 0 || gt_id[j] >= n_gt || (j && gg[j] < gg[j - 1])) {
            PyErr_SetString(PyExc_ValueError, "coco_match_overlaps: a GT id beyond its areas, or unsorted groups");
            goto done;
        }
    }
    for (Py_ssize_t k = 0; k < n_keys; k++) {
        if (keys[k] < 0 || keys[k] >= (int64_t)n_pred * key_gt || keys[k] % key_gt >= n_gt ||
            (k && keys[k] < keys[k - 1])) {
            PyErr_SetString(PyExc_ValueError, "coco_match_overlaps: keys must be sorted pairs of the objects");
            goto done;
        }
    }
    const double *thresholds = b[11].buf;
    for (Py_ssize_t t = 0; t < T; t++) {
        if (!isfinite(thresholds[t])) {
            PyErr_SetString(PyExc_ValueError, "coco_match_overlaps: thresholds must be finite");
            goto done;
        }
    }
    const overlap_values values = {.keys = keys, .dt_id = dt_id, .gt_id = gt_id, .inter = b[1].buf,
                                   .pred_area = b[2].buf, .gt_area_table = b[3].buf,
                                   .gt_crowd = b[8].buf, .n_keys = n_keys, .key_gt = key_gt};
    greedy_walk_t walk = {
        .dt_group = dg, .gt_group = gg, .gt_crowd = b[8].buf, .outside = NULL,
        .gt_area = b[9].buf, .ranges = b[10].buf, .thresholds = thresholds,
        .D = D, .G = G, .A = A, .T = T, .matched = b[12].buf, .ignored = b[13].buf,
        .values = overlap_ious, .ctx = &values, .scratch_bytes = 0, .parts = threads,
    };
    int status;
    Py_BEGIN_ALLOW_THREADS
    status = greedy_walk(&walk);
    Py_END_ALLOW_THREADS
    if (status) PyErr_NoMemory();
    else result = Py_NewRef(Py_None);
done:
    while (got-- > 0) PyBuffer_Release(&b[got]);
    return result;
}
