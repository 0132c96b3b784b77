/* Label-pair counts of two 8-bit label maps: out[g * 256 + p] += the pixels whose GT label is
 * g and predicted label p (a 256 x 256 confusion matrix of int64), counted by runs of equal
 * pairs along the row-major pixels (label maps repeat the pair of the pixel before, so a run
 * adds its length once instead of one increment a pixel, each waiting on the last). The twin
 * is rpx_cli/ops/confusion.py's numpy code_counts (np.bincount by runs); tests/test_native_counts.py
 * compares them. */
#include "core.h"

typedef struct {
    const uint8_t *gt, *pred;
    int64_t *out;
} pairs_t;

ALWAYS_INLINE static inline void mark_pairs(void *ctx, Py_ssize_t base, Py_ssize_t m, uint8_t *change) {
    const pairs_t *c = ctx;
    const uint8_t *g = c->gt + base, *p = c->pred + base;
    for (Py_ssize_t j = 0; j < m; j++) change[j] = (uint8_t)((g[j] != g[j - 1]) | (p[j] != p[j - 1]));
}

ALWAYS_INLINE static inline void add_pair_run(void *ctx, Py_ssize_t start, Py_ssize_t stop) {
    pairs_t *c = ctx;
    c->out[(c->gt[start] << 8) | c->pred[start]] += stop - start;
}

/* the runs of the pixels [0, n) into out (core.h: walk_runs) */
CLONES static void count_pairs(const uint8_t *gt, const uint8_t *pred, Py_ssize_t n, int64_t *out) {
    pairs_t ctx = {gt, pred, out};
    walk_runs(n, &ctx, mark_pairs, add_pair_run);
}

PyObject *rpx_label_pair_counts(PyObject *self, PyObject *args) {
    PyObject *gt_o, *pred_o, *out_o;
    if (!PyArg_ParseTuple(args, "OOO", &gt_o, &pred_o, &out_o)) return NULL;
    Py_buffer gt = {0}, pred = {0}, out = {0};
    PyObject *result = NULL;
    if (rpx_get_buffer(gt_o, &gt, BUF_UINT8, 0, "gt") < 0) return NULL;
    if (rpx_get_buffer(pred_o, &pred, BUF_UINT8, 0, "pred") < 0) goto done;
    if (rpx_get_buffer(out_o, &out, BUF_INT64, 1, "out") < 0) goto done;
    if (gt.len != pred.len || out.len != 65536 * 8) {
        PyErr_SetString(PyExc_ValueError, "label_pair_counts: the label maps differ in size, or "
                                          "out does not hold 256 x 256 counts");
        goto done;
    }
    Py_BEGIN_ALLOW_THREADS
    count_pairs(gt.buf, pred.buf, gt.len, out.buf);
    Py_END_ALLOW_THREADS
    result = Py_NewRef(Py_None);
done:
    PyBuffer_Release(&gt);
    if (pred.obj) PyBuffer_Release(&pred);
    if (out.obj) PyBuffer_Release(&out);
    return result;
}
