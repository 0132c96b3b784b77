/* COCO's accumulation (pycocotools' COCOeval.accumulate, LVISEval's too): the matched
 * detections of every category read as precision, recall and scores per (IoU threshold,
 * recall point, category, area range, maxDets), in one pass per cell with the GIL released.
 *
 * The numpy twin, which the tests compare with bit for bit, is reference_accumulate in
 * rpx_cli/ops/coco_accumulate.py: the same divisions in the same order (precision
 * tp / ((fp + tp) + eps), recall tp / regular), the same reading at the true positives only,
 * the same searchsorted(side="left") of the recall points. */
#include "core.h"
#include "greedy.h"
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
    const uint8_t *matched, *ignored; /* (rows, A * T): took a GT / is ignored */
    const int64_t *rank;             /* (rows,) */
    const double *score, *points;    /* (rows,), (R,) */
    const int64_t *order;            /* (N,) rows in category order; NULL: 0..N-1 */
    const int64_t *bounds;           /* (K + 1,) positions in that order */
    const int64_t *regular, *max_dets; /* (A, K), (M,) */
    Py_ssize_t rows, N, K, A, T, M, R;
    double *precision, *recall, *scores; /* (T, R, K, A, M), (T, K, A, M), (T, R, K, A, M) */
} accumulation;

enum { TRUE_POSITIVE = 1, IGNORED = 2 };

/* how many rows ahead the transposition asks for the next rows' flags (read in a random
 * order: each would otherwise wait on memory) */
#define PREFETCH_ROWS 16
#if defined(__GNUC__)
#define PREFETCH(p) __builtin_prefetch(p)
#else
#define PREFETCH(p) ((void)0)
#endif

/* A word's set bits (the x86-64 baseline has no popcnt instruction). */
static inline int64_t bits_set(uint64_t x) {
    x = x - ((x >> 1) & 0x5555555555555555ULL);
    x = (x & 0x3333333333333333ULL) + ((x >> 2) & 0x3333333333333333ULL);
    x = (x + (x >> 4)) & 0x0F0F0F0F0F0F0F0FULL;
    return (int64_t)((x * 0x0101010101010101ULL) >> 56);
}

/* A category's detections as bits, 64 to a word, `words` words a column: tp and ig (columns
 * a * T + t): a true positive / an ignored detection there; sel (one column): counted under
 * the cell's maxDets. The true positives are found a word at a time (most detections are not
 * one) and each one's place among the counted from the bits below it. */
typedef struct {
    const uint64_t *tp, *ig, *sel;
    Py_ssize_t words;
    int64_t first;  /* the first counted detection, -1: none */
} category_bits;

/* One (category k, area a, maxDets m) cell at every threshold. Scratch (one per detection of
 * the category): at, before, pick (each true positive's position among the counted, the
 * ignored counted before it, the detection itself), pr, rc. */
static void cell(const accumulation *c, Py_ssize_t k, Py_ssize_t a, Py_ssize_t m,
                 const category_bits *bits, const double *score, int64_t *at, int64_t *before,
                 int64_t *pick, double *pr, double *rc) {
    const double regular = (double)c->regular[a * c->K + k];
    const Py_ssize_t KAM = c->K * c->A * c->M, cell_at = (k * c->A + a) * c->M + m;
    const Py_ssize_t words = bits->words;
    for (Py_ssize_t t = 0; t < c->T; t++) {
        const uint64_t *tp = bits->tp + (a * c->T + t) * words, *ig = bits->ig + (a * c->T + t) * words;
        Py_ssize_t n_tp = 0;
        int64_t n_counted = 0, n_ignored = 0;
        for (Py_ssize_t w = 0; w < words; w++) {
            const uint64_t counted = bits->sel[w], ignored = ig[w] & counted;
            for (uint64_t x = tp[w] & counted; x; x &= x - 1) {
                const int b = __builtin_ctzll(x);
                const uint64_t below = (((uint64_t)1) << b) - 1;
                at[n_tp] = n_counted + bits_set(counted & below);
                before[n_tp] = n_ignored + bits_set(ignored & below);
                pick[n_tp] = (int64_t)w * 64 + b;
                n_tp++;
            }
            n_counted += bits_set(counted);
            n_ignored += bits_set(ignored);
        }
        /* precision and recall at each true positive, precision as its envelope from the
         * right (the highest at or after it), in one pass from the right; the false positives
         * before the i-th true positive: its position less the true positives and the ignored
         * detections before it */
        double envelope = 0.0;
        for (Py_ssize_t i = n_tp - 1; i >= 0; i--) {
            const double tp_i = (double)(i + 1), fp = (double)(at[i] - i - before[i]);
            const double precision = tp_i / (fp + tp_i + DBL_EPSILON);
            if (i == n_tp - 1 || precision > envelope) envelope = precision;
            pr[i] = envelope;
            rc[i] = tp_i / regular;
        }
        c->recall[t * KAM + cell_at] = (double)n_tp / regular;
        Py_ssize_t p = 0;
        for (Py_ssize_t r = 0; r < c->R; r++) {
            while (p < n_tp && rc[p] < c->points[r]) p++;
            const Py_ssize_t out = (t * c->R + r) * KAM + cell_at;
            c->precision[out] = p < n_tp ? pr[p] : 0.0;
            c->scores[out] = p < n_tp ? score[pick[p]] : 0.0;
        }
        if (bits->first >= 0 && c->R) c->scores[t * c->R * KAM + cell_at] = score[bits->first];
    }
}

/* The categories [k0, k1): every cell; -1 where a category has no regular GT in an area
 * range (the caller set every cell to -1 first). 0, or -1 (no memory). */
static int accumulate_categories(const accumulation *c, Py_ssize_t k0, Py_ssize_t k1) {
    const Py_ssize_t columns = c->A * c->T;
    Py_ssize_t widest = 1;
    for (Py_ssize_t k = k0; k < k1; k++) {
        if (c->bounds[k + 1] - c->bounds[k] > widest) widest = c->bounds[k + 1] - c->bounds[k];
    }
    const size_t w = (size_t)widest, most_words = (w + 63) / 64;
    int64_t *at = malloc(w * sizeof(int64_t)), *before = malloc(w * sizeof(int64_t));
    int64_t *pick = malloc(w * sizeof(int64_t)), *rank = malloc(w * sizeof(int64_t));
    double *pr = malloc(w * sizeof(double)), *rc = malloc(w * sizeof(double));
    double *score = malloc(w * sizeof(double));
    /* a category's bits, column by column (the caller checked columns * widest fits) */
    const size_t bit_words = (size_t)(columns ? columns : 1) * most_words;
    uint64_t *tp = malloc(bit_words * sizeof(uint64_t)), *ig = malloc(bit_words * sizeof(uint64_t));
    uint64_t *sel = malloc(most_words * sizeof(uint64_t));
    int status = (at && before && pick && rank && pr && rc && score && tp && ig && sel) ? 0 : -1;
    const int64_t last = c->max_dets[c->M - 1];
    for (Py_ssize_t k = k0; k < k1 && !status; k++) {
        const int64_t lo = c->bounds[k], hi = c->bounds[k + 1];
        const Py_ssize_t width = (Py_ssize_t)(hi - lo), words = (width + 63) / 64;
        memset(tp, 0, (size_t)(columns * words) * sizeof(uint64_t));
        memset(ig, 0, (size_t)(columns * words) * sizeof(uint64_t));
        for (Py_ssize_t j = 0; j < width; j++) {  /* rows to columns of bits */
            const int64_t row = c->order ? c->order[lo + j] : lo + j;
            if (c->order && j + PREFETCH_ROWS < width) {  /* rows at random: fetch ahead */
                const int64_t ahead = c->order[lo + j + PREFETCH_ROWS];
                PREFETCH(c->matched + ahead * columns);
                PREFETCH(c->matched + ahead * columns + columns - 1);
                PREFETCH(c->ignored + ahead * columns);
                PREFETCH(c->ignored + ahead * columns + columns - 1);
                PREFETCH(c->score + ahead);
                PREFETCH(c->rank + ahead);
            }
            const uint8_t *matched = c->matched + row * columns, *ignored = c->ignored + row * columns;
            const Py_ssize_t at_word = j >> 6;
            const int shift = (int)(j & 63);
            for (Py_ssize_t col = 0; col < columns; col++) {  /* branch-free: the flags fall at random */
                const uint64_t is_ignored = ignored[col] != 0;
                const uint64_t is_true = (uint64_t)(matched[col] != 0) & (is_ignored ^ 1);
                tp[col * words + at_word] |= is_true << shift;
                ig[col * words + at_word] |= is_ignored << shift;
            }
            score[j] = c->score[row];
            rank[j] = c->rank[row];
        }
        for (Py_ssize_t m = 0; m < c->M; m++) {
            const int64_t cap = c->max_dets[m];
            category_bits bits = {tp, ig, sel, words, -1};
            memset(sel, 0, (size_t)words * sizeof(uint64_t));
            for (Py_ssize_t j = 0; j < width; j++) {  /* every detection under the last maxDets */
                const uint64_t counted = cap >= last || rank[j] < cap;
                sel[j >> 6] |= counted << (j & 63);
                if (counted && bits.first < 0) bits.first = j;
            }
            for (Py_ssize_t a = 0; a < c->A; a++) {
                if (c->regular[a * c->K + k]) cell(c, k, a, m, &bits, score, at, before, pick, pr, rc);
            }
        }
    }
    free(at);
    free(before);
    free(pick);
    free(rank);
    free(pr);
    free(rc);
    free(score);
    free(tp);
    free(ig);
    free(sel);
    return status;
}

typedef struct {
    const accumulation *c;
    int parts;
} accumulation_parts;

/* Part `part` of `parts`: the categories whose first detection falls in that share of them
 * (each part about as many detections; a category wholly in one part). */
static int accumulate_part(void *ctx, int part) {
    const accumulation_parts *job = ctx;
    const accumulation *c = job->c;
    Py_ssize_t k0 = 0, k1 = 0;
    const double share = (double)c->N / job->parts;
    while (k0 < c->K && (double)c->bounds[k0] < share * part) k0++;
    k1 = k0;
    while (k1 < c->K && (part == job->parts - 1 || (double)c->bounds[k1] < share * (part + 1))) k1++;
    return accumulate_categories(c, k0, k1);
}

/* Every cell, the categories split among `parts` threads. 0, or -1 (no memory). */
static int accumulate_all(const accumulation *c, int parts) {
    const Py_ssize_t total = c->T * c->R * c->K * c->A * c->M;
    for (Py_ssize_t i = 0; i < total; i++) c->precision[i] = c->scores[i] = -1.0;
    for (Py_ssize_t i = 0; i < c->T * c->K * c->A * c->M; i++) c->recall[i] = -1.0;
    if (parts <= 1 || c->K < 2) return accumulate_categories(c, 0, c->K);
    accumulation_parts job = {c, parts};
    return rpx_run_parts(parts, accumulate_part, &job);
}

PyObject *rpx_coco_accumulate(PyObject *self, PyObject *args) {
    PyObject *o[12];
    Py_ssize_t T, A;
    int threads = 1;
    if (!PyArg_ParseTuple(args, "OOOOOOOOOnnOOO|i", &o[0], &o[1], &o[2], &o[3], &o[4], &o[5],
                          &o[6], &o[7], &o[8], &T, &A, &o[9], &o[10], &o[11], &threads))
        return NULL;
    static const char *names[12] = {"matched", "ignored", "rank", "score", "order", "bounds",
                                    "regular", "max_dets", "recall_points", "precision",
                                    "recall", "scores"};
    static const int kinds[12] = {BUF_UINT8, BUF_UINT8, BUF_INT64, BUF_FLOAT64, BUF_INT64,
                                  BUF_INT64, BUF_INT64, BUF_INT64, BUF_FLOAT64, BUF_FLOAT64,
                                  BUF_FLOAT64, BUF_FLOAT64};
    const int has_order = o[4] != Py_None;
    Py_buffer b[12];
    int got = 0;
    PyObject *result = NULL;
    b[4].buf = NULL; /* no order: rows 0..N-1 */
    b[4].len = 0;
    for (; got < 12; got++) {
        if (got == 4 && !has_order) continue;
        if (rpx_get_buffer(o[got], &b[got], kinds[got], got >= 9, names[got])) goto done;
    }
    const Py_ssize_t rows = b[2].len / 8;
    accumulation c = {
        .matched = b[0].buf, .ignored = b[1].buf, .rank = b[2].buf, .score = b[3].buf,
        .order = b[4].buf, .bounds = b[5].buf, .regular = b[6].buf, .max_dets = b[7].buf,
        .points = b[8].buf, .precision = b[9].buf, .recall = b[10].buf, .scores = b[11].buf,
        .rows = rows, .N = has_order ? b[4].len / 8 : rows, .K = b[5].len / 8 - 1, .A = A,
        .T = T, .M = b[7].len / 8, .R = b[8].len / 8,
    };
    Py_ssize_t columns, flags, codes, regular, cells, curve;
    if (T < 0 || A < 0 || c.K < 0 || c.M < 1) {
        PyErr_SetString(PyExc_ValueError, "coco_accumulate: T, A >= 0, K + 1 bounds and one maxDets at least");
        goto done;
    }
    /* codes: a category's scratch, columns x at most N */
    if (!mul_ok(A, T, &columns) || !mul_ok(columns, rows, &flags) || !mul_ok(columns, c.N, &codes) ||
        !mul_ok(A, c.K, &regular) || !mul_ok(T, c.K, &cells) || !mul_ok(cells, A, &cells) ||
        !mul_ok(cells, c.M, &cells) || !mul_ok(cells, c.R, &curve)) {
        PyErr_SetString(PyExc_ValueError, "coco_accumulate: sizes overflow");
        goto done;
    }
    if (b[0].len != flags || b[1].len != flags || b[3].len != rows * 8 ||
        b[6].len != regular * 8 || b[9].len / 8 != curve || b[11].len / 8 != curve ||
        b[10].len / 8 != cells) {
        PyErr_SetString(PyExc_ValueError, "coco_accumulate: a buffer of the wrong size");
        goto done;
    }
    if (rpx_check_offsets(c.bounds, c.K + 1, c.N, "coco_accumulate: bounds")) goto done;
    for (Py_ssize_t i = 0; has_order && i < c.N; i++) {
        if (c.order[i] < 0 || c.order[i] >= rows) {
            PyErr_SetString(PyExc_ValueError, "coco_accumulate: an order entry out of range");
            goto done;
        }
    }
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
    status = accumulate_all(&c, threads < 1 ? 1 : threads > RPX_MAX_PARTS ? RPX_MAX_PARTS : threads);
    Py_END_ALLOW_THREADS
    if (status) PyErr_NoMemory();
    else result = Py_NewRef(Py_None);
done:
    while (got-- > 0) {
        if (got != 4 || has_order) PyBuffer_Release(&b[got]);
    }
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

/* The IoU of the walk's detection d with its group's GT (greedy_values_fn). */
typedef struct {
    const double *dt, *gt;
    const uint8_t *gt_crowd;
} box_values;

static void box_ious(const void *ctx, void *scratch, Py_ssize_t d, Py_ssize_t g0, Py_ssize_t n_g,
                     double loosest, double *value) {
    const box_values *b = ctx;
    (void)scratch;
    (void)loosest;
    for (Py_ssize_t j = 0; j < n_g; j++) value[j] = iou_xywh(b->dt + 4 * d, b->gt + 4 * (g0 + j), b->gt_crowd[g0 + j]);
}

PyObject *rpx_coco_match_boxes(PyObject *self, PyObject *args) {
    PyObject *o[10], *outside_obj = Py_None;
    int threads = 1;
    if (!PyArg_ParseTuple(args, "OOOOOOOOOO|iO", &o[0], &o[1], &o[2], &o[3], &o[4], &o[5], &o[6],
                          &o[7], &o[8], &o[9], &threads, &outside_obj))
        return NULL;
    Py_buffer outside = {0};
    const int has_outside = outside_obj != Py_None;
    static const char *const names[10] = {"dt_box", "dt_group", "gt_box", "gt_group", "gt_crowd",
                                    "gt_area", "ranges", "thresholds", "matched", "ignored"};
    static const int kinds[10] = {BUF_FLOAT64, BUF_INT64, BUF_FLOAT64, BUF_INT64, BUF_UINT8,
                                  BUF_FLOAT64, BUF_FLOAT64, BUF_FLOAT64, BUF_UINT8, BUF_UINT8};
    Py_buffer b[10];
    PyObject *result = NULL;
    int got = rpx_get_buffers(o, b, kinds, names, 10, 8);
    if (got < 10) goto done;
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
    if (has_outside) {
        if (rpx_get_buffer(outside_obj, &outside, BUF_UINT8, 0, "outside")) goto done;
        if (outside.len != D * A) {
            PyBuffer_Release(&outside);
            PyErr_SetString(PyExc_ValueError, "coco_match_boxes: a buffer of the wrong size");
            goto done;
        }
    }
    /* pycocotools' greedy matching of [x, y, w, h] boxes (rpx_cli/ops/matching.py's
     * greedy_match with ops/coco.py's iou_similarity, rule >=, ties to the last GT): the
     * walk of greedy.h with the IoU computed per detection; a detection that takes none in
     * a column is ignored there when `outside` says its area is outside range a */
    const box_values values = {.dt = b[0].buf, .gt = b[2].buf, .gt_crowd = b[4].buf};
    greedy_walk_t walk = {
        .dt_group = dg, .gt_group = gg, .gt_crowd = b[4].buf,
        .outside = has_outside ? outside.buf : NULL,
        .gt_area = b[5].buf, .ranges = b[6].buf, .thresholds = thresholds,
        .D = D, .G = G, .A = A, .T = T, .matched = b[8].buf, .ignored = b[9].buf,
        .values = box_ious, .ctx = &values, .scratch_bytes = 0, .parts = threads,
    };
    int status;
    Py_BEGIN_ALLOW_THREADS
    status = greedy_walk(&walk);
    Py_END_ALLOW_THREADS
    if (has_outside) PyBuffer_Release(&outside);
    if (status) PyErr_NoMemory();
    else result = Py_NewRef(Py_None);
done:
    while (got-- > 0) PyBuffer_Release(&b[got]);
    return result;
}
