/* Monocular depth sums of one frame in one pass: the float32 kernel of rpx_cli/ops/depth_kernel.py
 * (DepthKernel, float32 precision) fused, so a pixel is read once instead of ~35 times.
 *
 * Per pixel, exactly the float32 arithmetic of the numpy kernel (add, subtract, multiply,
 * divide and integer bit operations, no FMA: setup.py builds with -ffp-contract=off):
 *   valid  given (a bool mask), or derived from the GT: g > 0 and g < inf (float GT), raw > 0
 *          (integer GT, g = raw / scale rounded once to float32);
 *   p, g   the prediction clipped below at 1e-6 and the GT; invalid pixels made neutral
 *          (p = g = 1: every term exactly 0);
 *   d = p - g, r = d / g, q = p / g, and the log ratio l = ln(p/g) as ops/depth_log.py's
 *   _split_log_ratio: q = 2^k (1 + f) from q's bits, f = r where k = 0, ln(1 + f) by fdlibm's
 *   reduction and the three-term polynomial, + k ln 2 (small part first).
 * Sums of |r|, d·r, d², l and |l| are accumulated in float64 (more exactly than the numpy
 * kernel's float32 blocks: the two agree to ~1e-8 relative); the centred moment of l per block
 * of pixels in float64, blocks pooled by the pairwise formula (Chan et al.), so a constant
 * log ratio gives exactly 0; delta counts are exact: |l| < ln T decided in float32 unless
 * within 1e-6 (relative) of ln T, those re-decided in float64 from the inputs with the
 * reference's expression max(p/g, g/p) < T — as the numpy kernel does.
 *
 * The twin is DepthKernel's numpy path (rpx_cli/ops/depth_kernel.py); tests/test_native_depth.py
 * compares them. */
#include "core.h"
#include <math.h>
#include <string.h>

#define BLOCK 2048

static const float LN2_HI = 0.693145751953125f * 0x1p-23f;
static const float LN2_LO = (float)((0.69314718055994530942 - 0.693145751953125) * 0x1p-23);
static const float B1 = 0.6666677594184875f, B2 = 0.3997754156589508f, B3 = 0.29871729016304016f;
static const int32_t SQRT_HALF_BITS = 0x3F3504F3;
static const int32_t EXPONENT = (int32_t)0xFF800000u;

static inline int32_t bits_of(float x) { int32_t b; memcpy(&b, &x, 4); return b; }
static inline float float_of(int32_t b) { float x; memcpy(&x, &b, 4); return x; }

/* what a block of pixels leaves behind */
typedef struct {
    double wide[BLOCK];  /* integer GT / scale before rounding to float32 */
    float g[BLOCK];      /* the GT in metres */
    float terms[5][BLOCK]; /* |r|, d r, d^2, l, |l| */
    int32_t ok[BLOCK];   /* 1 where valid, else 0 */
    int32_t near[BLOCK]; /* 1 where some |l| is within rounding of a threshold */
} block_t;

typedef struct {
    double n, abs_rel, sq_rel, sq_err, log_sum, log_m2, abs_log;
    int64_t delta[3];
    int64_t bad;
} sums_t;

/* ln(p/g) of one pixel from q = p/g and r = (p - g)/g, as ops/depth_log.py */
ALWAYS_INLINE static inline float log_ratio(float q, float r) {
    /* in unsigned arithmetic: wraps, never overflows (a negative q, from a GT <= 0 that a
     * caller's mask calls valid, gives a meaningless d but no undefined behaviour) */
    uint32_t bits = (uint32_t)bits_of(q);
    uint32_t k_raw = (bits - (uint32_t)SQRT_HALF_BITS) & (uint32_t)EXPONENT;
    int32_t k_bits = (int32_t)k_raw;
    float f = float_of((int32_t)(bits - k_raw)) - 1.0f;
    int32_t at_one = -(k_bits == 0); /* f = r where k = 0, by bit selection (no branch) */
    f = float_of((bits_of(f) & ~at_one) | (bits_of(r) & at_one));
    float s = f / (2.0f + f);
    float z = s * s;
    float poly = z * B3;
    poly += B2;
    poly *= z;
    poly += B1;
    poly *= z;
    poly = f - poly;
    poly *= s;
    float ln1p = f - poly;
    float k = (float)k_bits;
    ln1p += k * LN2_LO;
    return ln1p + k * LN2_HI;
}

#define LANES 8

/* Σ x[j] (mean = 0, ok = NULL) or Σ ok[j] (x[j] − mean)² over j < m, in float64 with LANES
 * partial sums (x[j] into lane j % LANES) added in a fixed order: the same bits whatever
 * vector width the compiler chose. */
ALWAYS_INLINE static inline double sum_lanes(const float *x, Py_ssize_t m, double mean, const int32_t *ok) {
    double acc[LANES] = {0};
    Py_ssize_t j = 0;
    if (ok) {
        for (; j + LANES <= m; j += LANES) {
            for (int k = 0; k < LANES; k++) {
                double c = ((double)x[j + k] - mean) * (double)ok[j + k];
                acc[k] += c * c;
            }
        }
        for (; j < m; j++) {
            double c = ((double)x[j] - mean) * (double)ok[j];
            acc[j % LANES] += c * c;
        }
    } else {
        for (; j + LANES <= m; j += LANES) {
            for (int k = 0; k < LANES; k++) acc[k] += (double)x[j + k];
        }
        for (; j < m; j++) acc[j % LANES] += (double)x[j];
    }
    return ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
}

/* the GT of pixels [start, stop) as float32 metres, and which are valid */
ALWAYS_INLINE static inline void gt_block(const void *gt, int kind, double scale, const uint8_t *valid,
                     Py_ssize_t start, Py_ssize_t m, block_t *b) {
    if (kind == 'f') {
        const float *g = (const float *)gt + start;
        for (Py_ssize_t j = 0; j < m; j++) {
            b->g[j] = g[j];
            b->ok[j] = (g[j] > 0.0f) & (g[j] < INFINITY);
        }
    } else {
        const uint16_t *raw = (const uint16_t *)gt + start;
        for (Py_ssize_t j = 0; j < m; j++) b->wide[j] = (double)raw[j] / scale;
        for (Py_ssize_t j = 0; j < m; j++) {
            b->g[j] = (float)b->wide[j];
            b->ok[j] = raw[j] > 0;
        }
    }
    if (valid) {
        for (Py_ssize_t j = 0; j < m; j++) b->ok[j] = valid[start + j] != 0;
    }
}

/* the pixels [start, stop) of the frame into *t; `kind`: 'f' float32 GT, 'H' uint16 GT */
ALWAYS_INLINE static inline void depth_block(const float *pred, const void *gt, int kind, double scale,
                        const uint8_t *valid, Py_ssize_t start, Py_ssize_t stop,
                        const float lower[3], const float upper[3], const double thresholds[3],
                        block_t *b, sums_t *t) {
    const Py_ssize_t m = stop - start;
    const float floor_ = 1e-6f;
    double abs_rel, sq_rel, sq_err, log_sum, abs_log;
    int32_t n = 0, bad = 0, c0 = 0, c1 = 0, c2 = 0, amb = 0;
    gt_block(gt, kind, scale, valid, start, m, b);
    const float lo0 = lower[0], lo1 = lower[1], lo2 = lower[2];
    const float up0 = upper[0], up1 = upper[1], up2 = upper[2];
    const float *pr = pred + start;
#pragma omp simd reduction(+ : n, bad, c0, c1, c2, amb)
    for (Py_ssize_t j = 0; j < m; j++) {
        int32_t ok = b->ok[j];
        float p = pr[j];
        bad += ok & ((bits_of(p) & 0x7F800000) == 0x7F800000);
        p = p < floor_ ? floor_ : p;
        /* invalid pixels made neutral by bit selection (no branch, no conditional load) */
        int32_t keep = -ok, one = 0x3F800000 & ~keep;
        p = float_of((bits_of(p) & keep) | one);
        float g = float_of((bits_of(b->g[j]) & keep) | one);
        float d = p - g;
        float r = d / g;
        float q = p / g;
        float l = log_ratio(q, r);
        float a = fabsf(l);
        b->terms[0][j] = fabsf(r);
        b->terms[1][j] = d * r;
        b->terms[2][j] = d * d;
        b->terms[3][j] = l;
        b->terms[4][j] = a;
        n += ok;
        int32_t below0 = a < lo0, below1 = a < lo1, below2 = a < lo2;
        c0 += ok & below0;
        c1 += ok & below1;
        c2 += ok & below2;
        int32_t near = ok & (((a < up0) & !below0) | ((a < up1) & !below1) | ((a < up2) & !below2));
        amb += near;
        b->near[j] = near;
    }
    abs_rel = sum_lanes(b->terms[0], m, 0.0, NULL);
    sq_rel = sum_lanes(b->terms[1], m, 0.0, NULL);
    sq_err = sum_lanes(b->terms[2], m, 0.0, NULL);
    log_sum = sum_lanes(b->terms[3], m, 0.0, NULL);
    abs_log = sum_lanes(b->terms[4], m, 0.0, NULL);
    if (amb) { /* the pixels within rounding of a threshold: decided exactly, in float64 */
        for (Py_ssize_t j = 0; j < m; j++) {
            if (!b->near[j]) continue;
            Py_ssize_t i = start + j;
            double p = (double)pred[i], g;
            p = p < 1e-6 ? 1e-6 : p;
            g = kind == 'f' ? (double)((const float *)gt)[i] : (double)((const uint16_t *)gt)[i] / scale;
            double worst = p / g > g / p ? p / g : g / p;
            float a = b->terms[4][j];
            int32_t *count[3] = {&c0, &c1, &c2};
            for (int k = 0; k < 3; k++) {
                if (a < upper[k] && !(a < lower[k]) && worst < thresholds[k]) (*count[k])++;
            }
        }
    }
    if (n) {
        double mean = log_sum / (double)n;
        double m2 = sum_lanes(b->terms[3], m, mean, b->ok);
        /* pool with what came before: M2 = M2_a + M2_b + n_a n_b / n (mean_b - mean_a)^2 */
        if (t->n > 0) {
            double n_a = t->n, n_b = (double)n, delta = mean - t->log_sum / n_a;
            t->log_m2 += m2 + delta * delta * (n_a * n_b / (n_a + n_b));
        } else {
            t->log_m2 = m2;
        }
    }
    t->n += (double)n;
    t->abs_rel += abs_rel;
    t->sq_rel += sq_rel;
    t->sq_err += sq_err;
    t->log_sum += log_sum;
    t->abs_log += abs_log;
    t->delta[0] += c0;
    t->delta[1] += c1;
    t->delta[2] += c2;
    t->bad += bad;
}

/* the frame, block by block; AVX2 and baseline copies (core.h: TWO_COPIES) doing the same
 * arithmetic in the same order (no FMA, fixed-lane sums): the same bits on every CPU */
ALWAYS_INLINE static inline int depth_frame_body(const float *pred, const void *gt, int kind, double scale,
                                                 const uint8_t *valid, Py_ssize_t size,
                                                 const float lower[3], const float upper[3],
                                                 const double thresholds[3], block_t *b, sums_t *t) {
    for (Py_ssize_t start = 0; start < size; start += BLOCK) {
        Py_ssize_t stop = start + BLOCK < size ? start + BLOCK : size;
        depth_block(pred, gt, kind, scale, valid, start, stop, lower, upper, thresholds, b, t);
    }
    return 0;
}
TWO_COPIES(int, depth_frame, (const float *pred, const void *gt, int kind, double scale,
                              const uint8_t *valid, Py_ssize_t size, const float lower[3],
                              const float upper[3], const double thresholds[3], block_t *b,
                              sums_t *t),
           (pred, gt, kind, scale, valid, size, lower, upper, thresholds, b, t))

PyObject *rpx_depth_sums(PyObject *self, PyObject *args) {
    PyObject *pred_o, *gt_o, *valid_o;
    double scale, t1, t2, t3;
    if (!PyArg_ParseTuple(args, "OOdOddd", &pred_o, &gt_o, &scale, &valid_o, &t1, &t2, &t3)) return NULL;
    Py_buffer pred = {0}, gt = {0}, valid = {0};
    PyObject *result = NULL;
    if (rpx_get_buffer(pred_o, &pred, BUF_FLOAT32, 0, "pred") < 0) return NULL;
    int kind = scale > 0 ? 'H' : 'f';
    if (rpx_get_buffer(gt_o, &gt, kind == 'f' ? BUF_FLOAT32 : BUF_UINT16, 0, "gt") < 0) goto done;
    if (valid_o != Py_None && rpx_get_buffer(valid_o, &valid, BUF_UINT8, 0, "valid") < 0) goto done;
    Py_ssize_t size = pred.len / 4;
    if (gt.len / gt.itemsize != size || (valid.obj && valid.len != size)) {
        PyErr_SetString(PyExc_ValueError, "depth_sums: pred, gt and valid differ in length");
        goto done;
    }
    if (!(t1 > 1 && t2 > t1 && t3 > t2 && isfinite(t3)) || (kind == 'H' && !isfinite(scale))) {
        PyErr_SetString(PyExc_ValueError, "depth_sums: thresholds must increase from above 1; scale finite");
        goto done;
    }
    block_t *block = malloc(sizeof(block_t));
    if (!block) { PyErr_NoMemory(); goto done; }
    const double thresholds[3] = {t1, t2, t3};
    float lower[3], upper[3];
    for (int k = 0; k < 3; k++) { /* ln T widened by 1e-6 either side, as DepthKernel._count */
        lower[k] = (float)(log(thresholds[k]) * (1 - 1e-6));
        upper[k] = (float)(log(thresholds[k]) * (1 + 1e-6));
    }
    sums_t t = {0};
    const uint8_t *mask = valid.obj ? (const uint8_t *)valid.buf : NULL;
    Py_BEGIN_ALLOW_THREADS
    depth_frame((const float *)pred.buf, gt.buf, kind, scale, mask, size, lower, upper, thresholds,
                block, &t);
    Py_END_ALLOW_THREADS
    free(block);
    result = Py_BuildValue("(LddddddLLLL)", (long long)t.n, t.abs_rel, t.sq_rel, t.sq_err,
                           t.log_sum, t.log_m2, t.abs_log, (long long)t.delta[0],
                           (long long)t.delta[1], (long long)t.delta[2], (long long)t.bad);
done:
    PyBuffer_Release(&pred);
    PyBuffer_Release(&gt);
    if (valid.obj) PyBuffer_Release(&valid);
    return result;
}
