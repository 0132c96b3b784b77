/* Per-point label-pair counts of a lidar scan in one pass (rpx eval segmentation3d): the two
 * uint32 label arrays of SemanticKITTI .label files (semantic label = value & 0xFFFF), each
 * point's labels mapped through one lookup table (the learning map, a class index below
 * `width` for every 16-bit raw label; the caller's spare index marks raw labels the map does
 * not list) and counted at out[(interval * width + gt class) * width + predicted class].
 *
 * The twin is rpx_cli/ops/point_counts.py's reference form (LabelMap.apply on both sides, then
 * interval_confusions' np.bincount of the codes); tests/test_native_seg3d.py compares them.
 * Labels are not in runs in general (SemanticKITTI scans are, generated benchmark scans are
 * not), so the pairs are counted point by point, spread over four tables of uint32 counters
 * (consecutive points never wait on the same counter) that are flushed into the int64 output
 * before they could overflow. */
#include "core.h"

#define COPIES 4
#define FLUSH_EVERY ((Py_ssize_t)1 << 30) /* points per flush: a uint32 counter never wraps */
#define MAX_SCRATCH ((Py_ssize_t)1 << 16) /* counters of one table kept in the scratch tables */

typedef struct {
    const uint32_t *gt, *pred;
    const uint8_t *lut, *interval;
    Py_ssize_t n, width, cells;
    int64_t *out;
    uint32_t *scratch; /* COPIES x cells, or NULL: count straight into out */
} seg3d_t;

/* the largest byte of p[0 .. n) (0 for none): a loop the compiler vectorises */
ALWAYS_INLINE static inline int max_byte_body(const uint8_t *p, Py_ssize_t n) {
    uint8_t high = 0;
#pragma omp simd reduction(max : high)
    for (Py_ssize_t i = 0; i < n; i++) high = p[i] > high ? p[i] : high;
    return high;
}
TWO_COPIES(int, max_byte, (const uint8_t *p, Py_ssize_t n), (p, n))

/* points [begin, end) into four uint32 tables of `cells` counters (t, t + cells, ...), in
 * turn; everything the loop reads is in locals (restrict: the stores into the tables change
 * none of it, which -fno-strict-aliasing would otherwise make the compiler assume they may) */
ALWAYS_INLINE static inline void count_block(const uint32_t *restrict gt, const uint32_t *restrict pred,
                                             const uint8_t *restrict lut, const uint8_t *restrict interval,
                                             Py_ssize_t begin, Py_ssize_t end, Py_ssize_t width,
                                             Py_ssize_t cells, uint32_t *restrict t) {
    uint32_t *restrict t0 = t, *restrict t1 = t + cells, *restrict t2 = t1 + cells, *restrict t3 = t2 + cells;
    Py_ssize_t plane = width * width;
#define CELL(i) ((Py_ssize_t)lut[gt[i] & 0xFFFFu] * width + lut[pred[i] & 0xFFFFu] + \
                 (interval ? (Py_ssize_t)interval[i] * plane : 0))
    Py_ssize_t i = begin;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    /* two points' words in one 64-bit load a side (the first point in the low half): ~1.8x
     * faster here than a load a word */
#define PAIR(w, half) (((w) >> (32 * (half))) & 0xFFFFu)
#define CELL2(g, p, i, half) ((Py_ssize_t)lut[PAIR(g, half)] * width + lut[PAIR(p, half)] + \
                              (interval ? (Py_ssize_t)interval[(i) + (half)] * plane : 0))
    for (; i + COPIES <= end; i += COPIES) {
        uint64_t g0, g1, p0, p1;
        memcpy(&g0, gt + i, 8);
        memcpy(&g1, gt + i + 2, 8);
        memcpy(&p0, pred + i, 8);
        memcpy(&p1, pred + i + 2, 8);
        Py_ssize_t a = CELL2(g0, p0, i, 0), b = CELL2(g0, p0, i, 1);
        Py_ssize_t d = CELL2(g1, p1, i + 2, 0), e = CELL2(g1, p1, i + 2, 1);
        t0[a]++;
        t1[b]++;
        t2[d]++;
        t3[e]++;
    }
#undef CELL2
#undef PAIR
#else
    for (; i + COPIES <= end; i += COPIES) {
        Py_ssize_t a = CELL(i), b = CELL(i + 1), d = CELL(i + 2), e = CELL(i + 3);
        t0[a]++;
        t1[b]++;
        t2[d]++;
        t3[e]++;
    }
#endif
    for (; i < end; i++) t0[CELL(i)]++;
#undef CELL
}

static void flush(uint32_t *scratch, Py_ssize_t cells, int64_t *out) {
    for (int k = 0; k < COPIES; k++) {
        uint32_t *table = scratch + (Py_ssize_t)k * cells;
        for (Py_ssize_t j = 0; j < cells; j++) out[j] += table[j];
        memset(table, 0, (size_t)cells * sizeof(uint32_t));
    }
}

static void count_points(const seg3d_t *c) {
    const uint32_t *gt = c->gt, *pred = c->pred;
    const uint8_t *lut = c->lut, *interval = c->interval;
    Py_ssize_t n = c->n, width = c->width, plane = width * width;
    if (!c->scratch) { /* tables too large to copy: one int64 counter each */
        int64_t *out = c->out;
        for (Py_ssize_t i = 0; i < n; i++) {
            Py_ssize_t code = (Py_ssize_t)lut[gt[i] & 0xFFFFu] * width + lut[pred[i] & 0xFFFFu];
            out[code + (interval ? (Py_ssize_t)interval[i] * plane : 0)] += 1;
        }
        return;
    }
    for (Py_ssize_t begin = 0; begin < n; begin += FLUSH_EVERY) {
        Py_ssize_t end = n - begin < FLUSH_EVERY ? n : begin + FLUSH_EVERY;
        if (interval)
            count_block(gt, pred, lut, interval, begin, end, width, c->cells, c->scratch);
        else
            count_block(gt, pred, lut, NULL, begin, end, width, c->cells, c->scratch);
        flush(c->scratch, c->cells, c->out);
    }
}

/* 1 + the largest GT (rows) and predicted (cols) class holding a count in out, summed over
 * the intervals (0 for none) */
static void present(const int64_t *out, Py_ssize_t n_intervals, Py_ssize_t width, Py_ssize_t *rows,
                    Py_ssize_t *cols) {
    *rows = *cols = 0;
    for (Py_ssize_t k = 0; k < n_intervals; k++)
        for (Py_ssize_t g = 0; g < width; g++) {
            const int64_t *row = out + (k * width + g) * width;
            for (Py_ssize_t p = 0; p < width; p++)
                if (row[p]) {
                    if (g >= *rows) *rows = g + 1;
                    if (p >= *cols) *cols = p + 1;
                }
        }
}

PyObject *rpx_point_label_counts(PyObject *self, PyObject *args) {
    PyObject *gt_o, *pred_o, *lut_o, *interval_o, *out_o;
    Py_ssize_t width, n_intervals;
    if (!PyArg_ParseTuple(args, "OOOnOnO", &gt_o, &pred_o, &lut_o, &width, &interval_o,
                          &n_intervals, &out_o))
        return NULL;
    Py_buffer gt = {0}, pred = {0}, lut = {0}, interval = {0}, out = {0};
    PyObject *result = NULL;
    uint32_t *scratch = NULL;
    if (rpx_get_buffer(gt_o, &gt, BUF_UINT32, 0, "gt") < 0) return NULL;
    if (rpx_get_buffer(pred_o, &pred, BUF_UINT32, 0, "pred") < 0) goto done;
    if (rpx_get_buffer(lut_o, &lut, BUF_UINT8, 0, "lut") < 0) goto done;
    if (interval_o != Py_None && rpx_get_buffer(interval_o, &interval, BUF_UINT8, 0, "interval") < 0)
        goto done;
    if (rpx_get_buffer(out_o, &out, BUF_INT64, 1, "out") < 0) goto done;
    Py_ssize_t n = gt.len / 4;
    if (width < 1 || width > 256 || n_intervals < 1 || n_intervals > 256) {
        PyErr_SetString(PyExc_ValueError, "point_label_counts: width and n_intervals must be 1..256");
        goto done;
    }
    Py_ssize_t cells = width * width, size = n_intervals * cells;
    if (pred.len != gt.len || lut.len != 65536 || out.len != size * 8 ||
        (interval.obj ? interval.len != n : n_intervals != 1)) {
        PyErr_SetString(PyExc_ValueError, "point_label_counts: the label arrays differ in size, the "
                                          "table does not hold 65,536 entries, the intervals are not "
                                          "one a point (or n_intervals is not 1 without them), or out "
                                          "does not hold n_intervals x width x width counts");
        goto done;
    }
    if (max_byte(lut.buf, 65536) >= width ||
        (interval.obj && n && max_byte(interval.buf, n) >= n_intervals)) {
        PyErr_SetString(PyExc_ValueError, "point_label_counts: a table entry is not below width, or "
                                          "an interval not below n_intervals");
        goto done;
    }
    if (size <= MAX_SCRATCH) {
        scratch = calloc((size_t)(COPIES * size), sizeof(uint32_t));
        if (!scratch) {
            PyErr_NoMemory();
            goto done;
        }
    }
    seg3d_t ctx = {gt.buf, pred.buf, lut.buf, interval.obj ? interval.buf : NULL, n, width, size,
                   out.buf, scratch};
    Py_ssize_t rows = 0, cols = 0;
    Py_BEGIN_ALLOW_THREADS
    count_points(&ctx);
    present(out.buf, n_intervals, width, &rows, &cols);
    Py_END_ALLOW_THREADS
    result = Py_BuildValue("(nn)", rows, cols);
done:
    free(scratch);
    PyBuffer_Release(&gt);
    if (pred.obj) PyBuffer_Release(&pred);
    if (lut.obj) PyBuffer_Release(&lut);
    if (interval.obj) PyBuffer_Release(&interval);
    if (out.obj) PyBuffer_Release(&out);
    return result;
}
