/* A stable order by key ascending, then score descending: numpy's
 * np.lexsort((-score, key)), which COCO's evaluation takes twice over every detection (per
 * image and category, then per category), as a least-significant-digit radix sort.
 *
 * Each value becomes an unsigned 64-bit word whose unsigned order is the wanted one: a key
 * with its sign bit flipped; a score as its IEEE bits mapped to ascending unsigned order and
 * then complemented (descending), after adding +0.0 so that -0.0 ties with +0.0 as it does in
 * numpy's comparison, and NaN (any sign or payload) as the largest word, last, as numpy sorts
 * -NaN. Stable passes of 11 bits, the score's first and the key's last, over only the bits
 * that differ between the values (most scores share their exponent's bits; keys span a
 * small range), leave equal (key, score) pairs in input order: lexsort's ties.
 *
 * The numpy twin, which tests compare with exactly, is np.lexsort itself
 * (rpx_cli/ops/order.py). */
#include "core.h"
#include <math.h>

#define DIGIT 11
#define BUCKETS (1u << DIGIT)

static inline uint64_t descending_score(double s) {
    if (isnan(s)) return UINT64_MAX;
    s = s + 0.0; /* -0.0 + 0.0 is +0.0: the two zeros tie */
    uint64_t u;
    memcpy(&u, &s, 8);
    u = (u >> 63) ? ~u : (u | 0x8000000000000000ull); /* ascending */
    return ~u;
}

/* Stable passes over the bits [lo, hi] of words w[0..n) carried with their indices idx,
 * ping-ponging with the scratch (w2, idx2); returns 1 when the result ended in the scratch. */
static int radix_passes(uint64_t *w, int64_t *idx, uint64_t *w2, int64_t *idx2, Py_ssize_t n,
                        int lo, int hi, uint32_t *count) {
    int swapped = 0;
    for (int shift = lo; shift <= hi; shift += DIGIT) {
        memset(count, 0, BUCKETS * sizeof(uint32_t));
        for (Py_ssize_t i = 0; i < n; i++) count[(w[i] >> shift) & (BUCKETS - 1)]++;
        if (count[(w[0] >> shift) & (BUCKETS - 1)] == (uint32_t)n) continue; /* one digit */
        uint32_t sum = 0;
        for (uint32_t b = 0; b < BUCKETS; b++) {
            uint32_t c = count[b];
            count[b] = sum;
            sum += c;
        }
        for (Py_ssize_t i = 0; i < n; i++) {
            uint32_t at = count[(w[i] >> shift) & (BUCKETS - 1)]++;
            w2[at] = w[i];
            idx2[at] = idx[i];
        }
        uint64_t *tw = w; w = w2; w2 = tw;
        int64_t *ti = idx; idx = idx2; idx2 = ti;
        swapped ^= 1;
    }
    return swapped;
}

/* The lowest and highest bit that differ among w[0..n); 0 when all are equal. */
static int varying_bits(const uint64_t *w, Py_ssize_t n, int *lo, int *hi) {
    uint64_t diff = 0;
    for (Py_ssize_t i = 1; i < n; i++) diff |= w[i] ^ w[0];
    if (!diff) return 0;
    *lo = __builtin_ctzll(diff);
    *hi = 63 - __builtin_clzll(diff);
    return 1;
}

/* order[0..n) by (key ascending, score descending), ties in index order. 0, or -1 (ENOMEM). */
static int stable_order(const int64_t *key, const double *score, Py_ssize_t n, int64_t *order) {
    uint64_t *w = malloc((size_t)n * 8), *w2 = malloc((size_t)n * 8);
    int64_t *idx2 = malloc((size_t)n * 8);
    uint32_t *count = malloc(BUCKETS * sizeof(uint32_t));
    int status = (w && w2 && idx2 && count) ? 0 : -1;
    if (!status) {
        int64_t *idx = order;
        int lo, hi;
        for (Py_ssize_t i = 0; i < n; i++) {
            idx[i] = i;
            w[i] = descending_score(score[i]);
        }
        if (varying_bits(w, n, &lo, &hi) && radix_passes(w, idx, w2, idx2, n, lo, hi, count)) {
            memcpy(idx, idx2, (size_t)n * 8); /* the indices back into order[] */
        }
        for (Py_ssize_t i = 0; i < n; i++) w[i] = (uint64_t)key[idx[i]] ^ 0x8000000000000000ull;
        if (varying_bits(w, n, &lo, &hi) && radix_passes(w, idx, w2, idx2, n, lo, hi, count)) {
            memcpy(idx, idx2, (size_t)n * 8);
        }
    }
    free(w);
    free(w2);
    free(idx2);
    free(count);
    return status;
}

PyObject *rpx_stable_order(PyObject *self, PyObject *args) {
    PyObject *o[3];
    if (!PyArg_ParseTuple(args, "OOO", &o[0], &o[1], &o[2])) return NULL;
    static const char *const names[3] = {"key", "score", "order"};
    static const int kinds[3] = {BUF_INT64, BUF_FLOAT64, BUF_INT64};
    Py_buffer b[3];
    PyObject *result = NULL;
    int got = rpx_get_buffers(o, b, kinds, names, 3, 2);
    if (got < 3) goto done;
    const Py_ssize_t n = b[0].len / 8;
    if (b[1].len != b[0].len || b[2].len != b[0].len) {
        PyErr_SetString(PyExc_ValueError, "stable_order: key, score and order of one length");
        goto done;
    }
    if (n > (Py_ssize_t)UINT32_MAX) {
        PyErr_SetString(PyExc_ValueError, "stable_order: more than 2**32 values");
        goto done;
    }
    int status = 0;
    if (n) {
        Py_BEGIN_ALLOW_THREADS
        status = stable_order(b[0].buf, b[1].buf, n, b[2].buf);
        Py_END_ALLOW_THREADS
    }
    if (status) PyErr_NoMemory();
    else result = Py_NewRef(Py_None);
done:
    while (got-- > 0) PyBuffer_Release(&b[got]);
    return result;
}
