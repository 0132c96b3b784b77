/* Panoptic overlaps: counts[a][b], the pixels whose GT id has compact index a and whose
 * predicted id compact index b (0: an id neither JSON lists, 1: VOID (id 0), 2 + i: segment i
 * of that side's segments_info), counted by runs of equal (GT, prediction) id pairs along
 * the row-major pixels, each run's ids looked up once by binary search in the side's sorted
 * segment ids. The twin is rpx_cli/ops/panoptic.py's numpy overlap_counts (and
 * reference_overlap_counts, panopticapi's np.unique form); tests/test_native_panoptic.py
 * compares them. */
#include "core.h"

/* the compact index of `id`: 2 + order[k] where sorted[k] == id, else VOID (1) for 0, else 0 */
ALWAYS_INLINE static inline int64_t compact(uint32_t id, const int64_t *sorted, const int64_t *order,
                                            Py_ssize_t k) {
    Py_ssize_t lo = 0, hi = k;
    while (lo < hi) {
        Py_ssize_t mid = lo + (hi - lo) / 2;
        if (sorted[mid] < (int64_t)id) lo = mid + 1;
        else hi = mid;
    }
    if (lo < k && sorted[lo] == (int64_t)id) return 2 + order[lo];
    return id == 0 ? 1 : 0;
}

/* a side's ids -> compact indices, remembered in a small direct-mapped cache in front of the
 * binary search (an image has tens of ids, its runs number tens of thousands) */
#define CACHE_BITS 10
typedef struct {
    uint32_t id[1 << CACHE_BITS];
    int64_t index[1 << CACHE_BITS]; /* -1: empty */
    const int64_t *sorted, *order;
    Py_ssize_t k;
} lookup_t;

ALWAYS_INLINE static inline int64_t cached(lookup_t *t, uint32_t id) {
    uint32_t slot = (uint32_t)(id * 2654435761u) >> (32 - CACHE_BITS);
    if (t->index[slot] >= 0 && t->id[slot] == id) return t->index[slot];
    int64_t index = compact(id, t->sorted, t->order, t->k);
    t->id[slot] = id;
    t->index[slot] = index;
    return index;
}

typedef struct {
    const uint32_t *gt, *pred;
    lookup_t *gl, *pl;
    Py_ssize_t cols;
    int64_t *out;
} overlaps_t;

ALWAYS_INLINE static inline void mark_ids(void *ctx, Py_ssize_t base, Py_ssize_t m, uint8_t *change) {
    const overlaps_t *c = ctx;
    const uint32_t *g = c->gt + base, *p = c->pred + base;
    for (Py_ssize_t j = 0; j < m; j++) change[j] = (uint8_t)((g[j] != g[j - 1]) | (p[j] != p[j - 1]));
}

ALWAYS_INLINE static inline void add_id_run(void *ctx, Py_ssize_t start, Py_ssize_t stop) {
    overlaps_t *c = ctx;
    c->out[cached(c->gl, c->gt[start]) * c->cols + cached(c->pl, c->pred[start])] += stop - start;
}

/* every run of equal (GT, prediction) ids along the pixels into out (core.h: walk_runs) */
CLONES static void count_runs(const uint32_t *gt, const uint32_t *pred, Py_ssize_t n,
                              lookup_t *gl, lookup_t *pl, Py_ssize_t cols, int64_t *out) {
    overlaps_t ctx = {gt, pred, gl, pl, cols, out};
    walk_runs(n, &ctx, mark_ids, add_id_run);
}

static int check_segments(const Py_buffer *sorted, const Py_buffer *order, const char *side) {
    Py_ssize_t k = sorted->len / 8;
    const int64_t *s = sorted->buf, *o = order->buf;
    if (order->len != sorted->len) {
        PyErr_Format(PyExc_ValueError, "panoptic_overlaps: %s order and ids differ in length", side);
        return -1;
    }
    for (Py_ssize_t i = 0; i < k; i++) {
        if ((i && s[i] <= s[i - 1]) || o[i] < 0 || o[i] >= k) {
            PyErr_Format(PyExc_ValueError, "panoptic_overlaps: %s ids must increase and order "
                                           "index them", side);
            return -1;
        }
    }
    return 0;
}

PyObject *rpx_panoptic_overlaps(PyObject *self, PyObject *args) {
    PyObject *objects[7];
    if (!PyArg_ParseTuple(args, "OOOOOOO", &objects[0], &objects[1], &objects[2], &objects[3],
                          &objects[4], &objects[5], &objects[6]))
        return NULL;
    static const char *names[7] = {"gt_ids", "pred_ids", "gt_sorted", "gt_order", "pred_sorted",
                                   "pred_order", "out"};
    const int kinds[7] = {BUF_UINT32, BUF_UINT32, BUF_INT64, BUF_INT64, BUF_INT64, BUF_INT64, BUF_INT64};
    Py_buffer views[7];
    int got = 0;
    PyObject *result = NULL;
    for (; got < 7; got++) {
        if (rpx_get_buffer(objects[got], &views[got], kinds[got], got == 6, names[got]) < 0) goto done;
    }
    Py_ssize_t n = views[0].len / 4, k_gt = views[2].len / 8, k_pred = views[4].len / 8;
    if (views[1].len != views[0].len) {
        PyErr_SetString(PyExc_ValueError, "panoptic_overlaps: the id maps differ in size");
        goto done;
    }
    if (check_segments(&views[2], &views[3], "GT") < 0 || check_segments(&views[4], &views[5], "prediction") < 0)
        goto done;
    Py_ssize_t cols = k_pred + 2;
    if (views[6].len / 8 != (k_gt + 2) * cols) {
        PyErr_SetString(PyExc_ValueError, "panoptic_overlaps: out must hold (GT segments + 2) x "
                                          "(predicted segments + 2) counts");
        goto done;
    }
    const uint32_t *gt = views[0].buf, *pred = views[1].buf;
    const int64_t *gs = views[2].buf, *go = views[3].buf, *ps = views[4].buf, *po = views[5].buf;
    int64_t *out = views[6].buf;
    lookup_t *tables = malloc(2 * sizeof(lookup_t));
    if (!tables) {
        PyErr_NoMemory();
        goto done;
    }
    Py_BEGIN_ALLOW_THREADS
    for (int side = 0; side < 2; side++) {
        memset(tables[side].index, 0xff, sizeof(tables[side].index));
        tables[side].sorted = side ? ps : gs;
        tables[side].order = side ? po : go;
        tables[side].k = side ? k_pred : k_gt;
    }
    count_runs(gt, pred, n, &tables[0], &tables[1], cols, out);
    Py_END_ALLOW_THREADS
    free(tables);
    result = Py_NewRef(Py_None);
done:
    for (int j = 0; j < got; j++) PyBuffer_Release(&views[j]);
    return result;
}
