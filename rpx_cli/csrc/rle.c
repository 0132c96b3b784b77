/* COCO run-length masks: compressed counts decoded and encoded, polygons rasterised, masks
 * merged and intersected — equal to pycocotools' maskApi (rleFrString, rleToString,
 * rleFrPoly, rleMerge, rleIou's run walk, rleToBbox) for every mask it accepts, written
 * from scratch for rpx with 64-bit sums and every input checked.
 *
 * A mask of h x w pixels is a list of runs in column-major order, alternating 0s and 1s and
 * starting with 0s, summing to h * w. The compressed string writes each count as groups of
 * 5 bits in characters 48 + (bits | 0x20 if more follow), the last group's 0x10 bit the sign,
 * and each count from the fourth on as the difference to the count two before.
 *
 * The numpy twins (tests compare them bit for bit): rpx_cli/ops/rle.py (decode_counts,
 * encode_values), rpx_cli/ops/polygon_raster.py (reference_polygon, reference_merge),
 * rpx_cli/ops/masks.py (reference_intersections). */
#include "core.h"
#include <limits.h>
#include <math.h>
#include <string.h>

/* problems of a compressed string (0: well formed) */
enum { RLE_OK = 0, RLE_BAD_CHAR = 1, RLE_OPEN_END = 2, RLE_TOO_LONG = 4, RLE_NEGATIVE = 8 };

/* Decode one compressed string into `out` (appended) as pycocotools' rleFrString does, in
 * wrapping 64-bit arithmetic (as numpy's int64 in the reference). Returns the problems seen;
 * the counts are meaningful only when it returns RLE_OK. */
static int decode_string(const uint8_t *s, int64_t len, vec64 *out, uint64_t *total, uint64_t *area) {
    int problem = RLE_OK;
    /* at most one count a character: room for all of them once, then plain stores, and the
     * count two before kept in a register (not read back from the store just made) */
    if (vec64_reserve(out, out->n + (len > 0 ? len : 0))) return -1;
    int64_t *o = out->data + out->n;
    Py_ssize_t m = 0;
    uint64_t sum = 0, ones = 0, before1 = 0, before2 = 0;  /* counts m - 1 and m - 2 */
    int64_t p = 0;
    while (p < len) {
        uint64_t x;
        int c = (int)s[p] - 48;
        if ((unsigned)c < 32) {  /* the common count: one character, no continuation */
            x = (uint64_t)(c & 0x1f);
            if (c & 0x10) x -= (uint64_t)1 << 5;
            p++;
        } else {
            x = 0;
            int k = 0, more = 1;
            while (more) {
                if (p >= len) { problem |= RLE_OPEN_END; break; }
                c = (int)s[p] - 48;
                if (c < 0 || c > 63) { problem |= RLE_BAD_CHAR; c = 0; }
                if (k >= 12) { problem |= RLE_TOO_LONG; }
                int place = k < 12 ? k : 11;
                x += (uint64_t)(c & 0x1f) << (5 * place);
                more = (c & 0x20) != 0;
                p++;
                k++;
                if (!more && (c & 0x10)) {
                    int top = 5 * (k < 12 ? k : 12);
                    x -= (uint64_t)1 << top;
                }
            }
        }
        if (m > 2) x += before2;
        if ((int64_t)x < 0) problem |= RLE_NEGATIVE;
        o[m] = (int64_t)x;
        sum += x;
        if (m & 1) ones += x;
        before2 = before1;
        before1 = x;
        m++;
    }
    out->n += m;
    *total = sum;
    *area = ones;
    return problem;
}

typedef struct {
    const uint8_t *text;
    const int64_t *off;
    Py_ssize_t n;
    int64_t *area, *total;
    uint8_t *bad;
    int parts;
} rle_checking;

/* Part `part` of the strings: those starting in that share of the characters. 0, or -1 (no
 * memory). */
static int check_part(void *ctx, int part) {
    const rle_checking *c = ctx;
    Py_ssize_t i0, i1;
    rpx_part_range(c->off, c->n, part, c->parts, &i0, &i1);
    vec64 scratch = {0};
    int failed = 0;
    for (Py_ssize_t i = i0; i < i1; i++) {
        uint64_t sum = 0, ones = 0;
        scratch.n = 0;
        const int problem = decode_string(c->text + c->off[i], c->off[i + 1] - c->off[i], &scratch, &sum, &ones);
        if (problem < 0) { failed = 1; break; }
        c->area[i] = (int64_t)ones;
        c->total[i] = (int64_t)sum;
        c->bad[i] = (uint8_t)problem;
    }
    vec64_free(&scratch);
    return failed ? -1 : 0;
}

PyObject *rpx_rle_check(PyObject *self, PyObject *args) {
    PyObject *text_o, *off_o, *area_o, *total_o, *bad_o;
    int threads = 1;
    if (!PyArg_ParseTuple(args, "OOOOO|i", &text_o, &off_o, &area_o, &total_o, &bad_o, &threads)) return NULL;
    Py_buffer text, off, area, total, bad;
    PyObject *result = NULL;
    if (rpx_get_buffer(text_o, &text, BUF_BYTES, 0, "text")) return NULL;
    if (rpx_get_buffer(off_o, &off, BUF_INT64, 0, "offsets")) goto e1;
    if (rpx_get_buffer(area_o, &area, BUF_INT64, 1, "area_out")) goto e2;
    if (rpx_get_buffer(total_o, &total, BUF_INT64, 1, "total_out")) goto e3;
    if (rpx_get_buffer(bad_o, &bad, BUF_UINT8, 1, "bad_out")) goto e4;
    Py_ssize_t n = off.len / 8 - 1;
    const int64_t *o = off.buf;
    if (n < 0 || area.len != n * 8 || total.len != n * 8 || bad.len != n) {
        PyErr_SetString(PyExc_ValueError, "rle_check: outputs must hold one value per string");
        goto done;
    }
    if (rpx_check_offsets(o, n + 1, text.len, "rle_check")) goto done;
    /* the strings split among threads by characters (each writes its own strings' values) */
    const rle_checking job = {text.buf, o, n, area.buf, total.buf, bad.buf,
                              threads < 1 || n < 2 ? 1 : threads > RPX_MAX_PARTS ? RPX_MAX_PARTS : threads};
    int failed;
    Py_BEGIN_ALLOW_THREADS
    failed = job.parts > 1 ? rpx_run_parts(job.parts, check_part, (void *)&job) : check_part((void *)&job, 0);
    Py_END_ALLOW_THREADS
    if (failed) { PyErr_NoMemory(); goto done; }
    result = Py_NewRef(Py_None);
done:
    PyBuffer_Release(&bad);
e4: PyBuffer_Release(&total);
e3: PyBuffer_Release(&area);
e2: PyBuffer_Release(&off);
e1: PyBuffer_Release(&text);
    return result;
}

/* --- encoding ------------------------------------------------------------------------ */

/* Characters rleToString writes for the runs c[0..m) (to `s` when not NULL); their number. */
static int64_t encode_runs(const int64_t *c, int64_t m, char *s) {
    int64_t p = 0;
    for (int64_t i = 0; i < m; i++) {
        int64_t x = c[i];
        if (i > 2) x -= c[i - 2];
        int more = 1;
        while (more) {
            int ch = (int)(x & 0x1f);
            x >>= 5; /* arithmetic: gcc and clang on every platform CPython supports */
            more = (ch & 0x10) ? x != -1 : x != 0;
            if (more) ch |= 0x20;
            if (s) s[p] = (char)(ch + 48);
            p++;
        }
    }
    return p;
}

/* Encode every mask of (counts, starts) into one bytes object + offsets. */
static PyObject *encode_all(const int64_t *counts, const int64_t *starts, Py_ssize_t n) {
    PyObject *offsets = PyBytes_FromStringAndSize(NULL, (n + 1) * 8);
    if (!offsets) return NULL;
    int64_t *o = (int64_t *)PyBytes_AS_STRING(offsets);
    o[0] = 0;
    for (Py_ssize_t i = 0; i < n; i++)
        o[i + 1] = o[i] + encode_runs(counts + starts[i], starts[i + 1] - starts[i], NULL);
    PyObject *text = PyBytes_FromStringAndSize(NULL, o[n]);
    if (!text) { Py_DECREF(offsets); return NULL; }
    char *s = PyBytes_AS_STRING(text);
    for (Py_ssize_t i = 0; i < n; i++)
        encode_runs(counts + starts[i], starts[i + 1] - starts[i], s + o[i]);
    PyObject *pair = PyTuple_Pack(2, text, offsets);
    Py_DECREF(text);
    Py_DECREF(offsets);
    return pair;
}

PyObject *rpx_rle_encode(PyObject *self, PyObject *args) {
    PyObject *counts_o, *starts_o;
    if (!PyArg_ParseTuple(args, "OO", &counts_o, &starts_o)) return NULL;
    Py_buffer counts, starts;
    if (rpx_get_buffer(counts_o, &counts, BUF_INT64, 0, "counts")) return NULL;
    if (rpx_get_buffer(starts_o, &starts, BUF_INT64, 0, "starts")) { PyBuffer_Release(&counts); return NULL; }
    PyObject *result = NULL;
    Py_ssize_t n = starts.len / 8 - 1;
    const int64_t *c = counts.buf;
    if (rpx_check_offsets(starts.buf, n + 1, counts.len / 8, "rle_encode")) goto done;
    for (Py_ssize_t i = 0; i < counts.len / 8; i++) {
        if (c[i] < 0 || c[i] > ((int64_t)1 << 40)) {
            PyErr_Format(PyExc_ValueError, "rle_encode: count %zd out of range", i);
            goto done;
        }
    }
    result = encode_all(c, starts.buf, n);
done:
    PyBuffer_Release(&starts);
    PyBuffer_Release(&counts);
    return result;
}

/* --- merging (rleMerge) ---------------------------------------------------------------- */

/* pycocotools' rleMerge of two masks a[0..na) and b[0..nb) of the same size into out
 * (which must hold na + nb + 1 values); the number written. Both must sum alike (every
 * caller's masks sum to h * w); a step that makes no progress ends the walk. */
static int64_t merge_two(const int64_t *A, int64_t na, const int64_t *B, int64_t nb, int intersect,
                         int64_t *out) {
    if (na == 0 || nb == 0) return 0;
    uint64_t ca = (uint64_t)A[0], cb = (uint64_t)B[0], cc = 0, ct = 1;
    int v = 0, va = 0, vb = 0, vp;
    int64_t m = 0, a = 1, b = 1;
    while (ct > 0) {
        uint64_t c = ca < cb ? ca : cb;
        int advanced = 0;
        cc += c;
        ct = 0;
        ca -= c;
        if (!ca && a < na) { ca = (uint64_t)A[a++]; va = !va; advanced = 1; }
        ct += ca;
        cb -= c;
        if (!cb && b < nb) { cb = (uint64_t)B[b++]; vb = !vb; advanced = 1; }
        ct += cb;
        vp = v;
        v = intersect ? (va && vb) : (va || vb);
        if (v != vp || ct == 0) { out[m++] = (int64_t)cc; cc = 0; }
        if (!advanced && c == 0) break; /* unequal sums: never loop */
    }
    return m;
}

/* rleMerge of masks[0..n) (counts of each, one after the other) into *out. */
static int merge_many(const int64_t *counts, const int64_t *starts, Py_ssize_t n, int intersect,
                      vec64 *out, vec64 *tmp) {
    out->n = 0;
    if (n == 0) return 0;
    int64_t m0 = starts[1] - starts[0];
    if (vec64_reserve(out, m0 + 1)) return -1;
    memcpy(out->data, counts + starts[0], (size_t)m0 * sizeof(int64_t));
    out->n = m0;
    for (Py_ssize_t i = 1; i < n; i++) {
        int64_t mb = starts[i + 1] - starts[i];
        if (vec64_reserve(tmp, out->n + mb + 1)) return -1;
        tmp->n = merge_two(out->data, out->n, counts + starts[i], mb, intersect, tmp->data);
        vec64 swap = *out;
        *out = *tmp;
        *tmp = swap;
    }
    return 0;
}

PyObject *rpx_rle_merge(PyObject *self, PyObject *args) {
    PyObject *counts_o, *starts_o;
    int intersect;
    if (!PyArg_ParseTuple(args, "OOp", &counts_o, &starts_o, &intersect)) return NULL;
    Py_buffer counts, starts;
    if (rpx_get_buffer(counts_o, &counts, BUF_INT64, 0, "counts")) return NULL;
    if (rpx_get_buffer(starts_o, &starts, BUF_INT64, 0, "starts")) { PyBuffer_Release(&counts); return NULL; }
    PyObject *result = NULL;
    Py_ssize_t n = starts.len / 8 - 1;
    const int64_t *c = counts.buf;
    if (rpx_check_offsets(starts.buf, n + 1, counts.len / 8, "rle_merge")) goto done;
    for (Py_ssize_t i = 0; i < counts.len / 8; i++) {
        if (c[i] < 0) { PyErr_SetString(PyExc_ValueError, "rle_merge: negative run"); goto done; }
    }
    /* the same total for every mask (pycocotools requires one size) */
    {
        const int64_t *s = starts.buf;
        uint64_t first = 0;
        for (Py_ssize_t i = 0; i < n; i++) {
            uint64_t sum = 0;
            for (int64_t j = s[i]; j < s[i + 1]; j++) sum += (uint64_t)c[j];
            if (i == 0) first = sum;
            else if (sum != first) { PyErr_SetString(PyExc_ValueError, "rle_merge: masks of different sizes"); goto done; }
        }
    }
    vec64 out = {0}, tmp = {0};
    if (merge_many(c, starts.buf, n, intersect, &out, &tmp)) {
        PyErr_NoMemory();
    } else {
        result = rpx_bytes_of(out.data, out.n * 8);
    }
    vec64_free(&out);
    vec64_free(&tmp);
done:
    PyBuffer_Release(&starts);
    PyBuffer_Release(&counts);
    return result;
}

/* --- polygons (rleFrPoly) ---------------------------------------------------------------- */

/* C's (int) of a double as x86-64's cvttsd2si computes it (the machines pycocotools' wheels
 * run on): truncation, and INT_MIN for NaN or a value out of range (undefined in C). */
static inline int to_int(double v) {
    if (!(v > -2147483649.0 && v < 2147483648.0)) return INT_MIN;
    return (int)v;
}

typedef struct {
    int have, pu, pv;
    double wm1, hd;
    int64_t h;
    vec64 *a;
    int failed;
} walk_t;

/* A crossing of the walk from one point to the next, x changing: `xraw` is the lower of the
 * two points' x (rleFrPoly's `u[j] < u[j-1] ? u[j] : u[j] - 1`), `vmin` the lower y. Kept
 * where it crosses a pixel column's centre inside the image, as its pixel index. */
static inline void crossing(walk_t *w, int xraw, int vmin) {
    double xd = ((double)xraw + .5) / 5.0 - .5;
    if (floor(xd) != xd || xd < 0 || xd > w->wm1) return;
    double yd = ((double)vmin + .5) / 5.0 - .5;
    if (yd < 0) yd = 0;
    else if (yd > w->hd) yd = w->hd;
    yd = ceil(yd);
    uint32_t at = (uint32_t)((uint64_t)(int64_t)xd * (uint64_t)w->h + (uint64_t)(int64_t)yd);
    if (vec64_push(w->a, at)) w->failed = 1;
}

/* One point of the upsampled boundary (rleFrPoly's second loop, point by point). */
static inline void walk_point(walk_t *w, int u, int v) {
    if (w->have && u != w->pu) crossing(w, u < w->pu ? u : u - 1, v < w->pv ? v : w->pv);
    w->have = 1;
    w->pu = u;
    w->pv = v;
}

/* An edge walked along x (|dx| >= |dy|, dx > 0): x moves by one every step, so every step is
 * a crossing, and only those whose lower x is 2 (mod 5) — a column centre — inside the
 * image can be kept. Those are visited directly (the others' points are never needed); the
 * crossings are the same set as the point-by-point walk's (their order does not matter:
 * rleFrPoly sorts them). */
static void walk_along_x(walk_t *w, int xs, int ys, int dx, int flip, double s) {
    int t0 = flip ? dx : 0;
    walk_point(w, t0 + xs, to_int(ys + s * t0 + .5));
    int64_t lo = xs > 2 ? xs : 2, hi = (int64_t)xs + dx - 1, top = 5 * (int64_t)(w->wm1) + 2;
    if (hi > top) hi = top;
    lo += ((2 - lo) % 5 + 5) % 5;  /* the first value >= lo that is 2 (mod 5) */
    for (int64_t m = lo; m <= hi && !w->failed; m += 5) {
        int d = flip ? (int)(xs + dx - m) : (int)(m - xs + 1);
        int tp = flip ? dx - (d - 1) : d - 1, tc = flip ? dx - d : d;
        int vp = to_int(ys + s * tp + .5), vc = to_int(ys + s * tc + .5);
        crossing(w, (int)m, vp < vc ? vp : vc);
    }
    int tl = flip ? 0 : dx;
    w->pu = tl + xs;
    w->pv = to_int(ys + s * tl + .5);
}

/* The crossings sorted ascending (rleFrPoly's qsort; the same result: they are integers).
 * Every one is a pixel index below 2^31. A few by insertion; more by a least-significant-digit
 * radix sort, a byte a pass, skipping the bytes all of them share: linear in their number
 * whatever their order, and no comparison callback (qsort's took most of a polygon's time).
 * `tmp` is scratch room for as many. 0, or -1 (no memory). */
static int sort_crossings(vec64 *a, vec64 *tmp) {
    int64_t *v = a->data;
    Py_ssize_t n = a->n;
    if (n <= 32) {
        for (Py_ssize_t i = 1; i < n; i++) {
            int64_t x = v[i];
            Py_ssize_t j = i;
            while (j > 0 && v[j - 1] > x) { v[j] = v[j - 1]; j--; }
            v[j] = x;
        }
        return 0;
    }
    if (vec64_reserve(tmp, n)) return -1;
    uint64_t all_or = 0, all_and = ~(uint64_t)0;
    for (Py_ssize_t i = 0; i < n; i++) { all_or |= (uint64_t)v[i]; all_and &= (uint64_t)v[i]; }
    int64_t *from = v, *to = tmp->data;
    for (int shift = 0; shift < 32; shift += 8) {
        if ((((all_or ^ all_and) >> shift) & 0xff) == 0) continue;  /* one value of this byte */
        Py_ssize_t count[257] = {0};
        for (Py_ssize_t i = 0; i < n; i++) count[(((uint64_t)from[i] >> shift) & 0xff) + 1]++;
        for (int b = 0; b < 256; b++) count[b + 1] += count[b];
        for (Py_ssize_t i = 0; i < n; i++) to[count[((uint64_t)from[i] >> shift) & 0xff]++] = from[i];
        int64_t *t = from; from = to; to = t;
    }
    if (from != v) memcpy(v, from, (size_t)n * sizeof(int64_t));
    return 0;
}

/* the largest |coordinate| a polygon may have: 5 x + .5 and differences of two stay in int */
#define MAX_COORDINATE 1.0e8

/* rleFrPoly of the k vertices xy[0..2k) at (h, w) into *out (runs); `a` is scratch. */
static int frpoly(const double *xy, int64_t k, int64_t h, int64_t w, vec64 *a, vec64 *out) {
    walk_t walk = {0, 0, 0, (double)(uint64_t)(w - 1), (double)h, h, a, 0};
    a->n = 0;
    int x0 = to_int(5.0 * xy[0] + .5), y0 = to_int(5.0 * xy[1] + .5);
    int xj = x0, yj = y0;
    for (int64_t j = 0; j < k && !walk.failed; j++) {
        int xn = j + 1 < k ? to_int(5.0 * xy[2 * j + 2] + .5) : x0;
        int yn = j + 1 < k ? to_int(5.0 * xy[2 * j + 3] + .5) : y0;
        int xs = xj, xe = xn, ys = yj, ye = yn, t;
        int dx = abs(xe - xs), dy = abs(ys - ye);
        int flip = (dx >= dy && xs > xe) || (dx < dy && ys > ye);
        if (flip) { t = xs; xs = xe; xe = t; t = ys; ys = ye; ye = t; }
        double s = dx >= dy ? (double)(ye - ys) / dx : (double)(xe - xs) / dy;
        if (dx >= dy && dx > 0) {
            walk_along_x(&walk, xs, ys, dx, flip, s);
        } else if (dx >= dy) {  /* one point (a repeated vertex): s is 0/0 */
            walk_point(&walk, xs, to_int(ys + s * 0 + .5));
        } else {
            for (int d = 0; d <= dy; d++) {
                t = flip ? dy - d : d;
                walk_point(&walk, to_int(xs + s * t + .5), t + ys);
            }
        }
        xj = xn;
        yj = yn;
    }
    if (walk.failed || vec64_push(a, (int64_t)(uint32_t)(h * w))) return -1;
    if (sort_crossings(a, out)) return -1;
    int64_t p = 0;
    for (Py_ssize_t j = 0; j < a->n; j++) {
        int64_t t = a->data[j];
        a->data[j] -= p;
        p = t;
    }
    if (vec64_reserve(out, a->n)) return -1;
    Py_ssize_t j = 0, m = 0;
    out->data[m++] = a->data[j++];
    while (j < a->n) {
        if (a->data[j] > 0) out->data[m++] = a->data[j++];
        else {
            j++;
            if (j < a->n) out->data[m - 1] += a->data[j++];
        }
    }
    out->n = m;
    return 0;
}

/* The upsampled boundary's length of a polygon (rleFrPoly's first allocation), or -1 when a
 * coordinate is not finite or beyond MAX_COORDINATE. */
static int64_t boundary_points(const double *xy, int64_t k) {
    int64_t m = 0;
    for (int64_t j = 0; j < 2 * k; j++)
        if (!(fabs(xy[j]) <= MAX_COORDINATE)) return -1;
    for (int64_t j = 0; j < k; j++) {
        int64_t jn = j + 1 < k ? j + 1 : 0;
        int64_t dx = llabs((int64_t)to_int(5.0 * xy[2 * j] + .5) - to_int(5.0 * xy[2 * jn] + .5));
        int64_t dy = llabs((int64_t)to_int(5.0 * xy[2 * j + 1] + .5) - to_int(5.0 * xy[2 * jn + 1] + .5));
        m += (dx > dy ? dx : dy) + 1;
    }
    return m;
}

/* A growable run of characters (malloc'd), as vec64. */
typedef struct {
    char *data;
    Py_ssize_t n, cap;
} chars;

static int chars_reserve(chars *v, Py_ssize_t want) {
    if (want <= v->cap) return 0;
    Py_ssize_t cap = v->cap ? v->cap : 1024;
    while (cap < want) {
        if (cap > PY_SSIZE_T_MAX / 2) return -1;
        cap *= 2;
    }
    char *data = realloc(v->data, (size_t)cap);
    if (!data) return -1;
    v->data = data;
    v->cap = cap;
    return 0;
}

typedef struct {
    const double *xy;
    const int64_t *vs, *ps, *sizes;
    Py_ssize_t n;
    int parts;
    /* each part's strings, and their ends (from 0 in the part) */
    chars text[RPX_MAX_PARTS];
    vec64 ends[RPX_MAX_PARTS];
} rasterising;

/* Part `part` of the objects (about as many polygons each): each object's polygons
 * rasterised, merged into its runs and written as its string (only the strings are kept: a
 * tenth of the runs' memory). 0, or -1 (no memory). */
static int rasterise_part(void *ctx, int part) {
    rasterising *c = ctx;
    Py_ssize_t i0, i1;
    rpx_part_range(c->ps, c->n, part, c->parts, &i0, &i1);
    chars *text = &c->text[part];
    vec64 *ends = &c->ends[part];
    vec64 a = {0}, one = {0}, merged = {0}, tmp = {0}, parts = {0}, part_starts = {0};
    int failed = 0;
    for (Py_ssize_t i = i0; i < i1 && !failed; i++) {
        int64_t h = c->sizes[2 * i], w = c->sizes[2 * i + 1];
        parts.n = 0;
        part_starts.n = 0;
        if (vec64_push(&part_starts, 0)) { failed = 1; break; }
        for (int64_t q = c->ps[i]; q < c->ps[i + 1] && !failed; q++) {
            if (frpoly(c->xy + 2 * c->vs[q], c->vs[q + 1] - c->vs[q], h, w, &a, &one)) { failed = 1; break; }
            if (vec64_reserve(&parts, parts.n + one.n)) { failed = 1; break; }
            memcpy(parts.data + parts.n, one.data, (size_t)one.n * sizeof(int64_t));
            parts.n += one.n;
            if (vec64_push(&part_starts, parts.n)) failed = 1;
        }
        if (failed) break;
        if (merge_many(parts.data, part_starts.data, part_starts.n - 1, 0, &merged, &tmp)) { failed = 1; break; }
        int64_t len = encode_runs(merged.data, merged.n, NULL);
        if (chars_reserve(text, text->n + len)) { failed = 1; break; }
        encode_runs(merged.data, merged.n, text->data + text->n);
        text->n += len;
        if (vec64_push(ends, text->n)) failed = 1;
    }
    vec64_free(&a); vec64_free(&one); vec64_free(&merged); vec64_free(&tmp);
    vec64_free(&parts); vec64_free(&part_starts);
    return failed ? -1 : 0;
}

PyObject *rpx_polygons_rle(PyObject *self, PyObject *args) {
    PyObject *xy_o, *vs_o, *ps_o, *sizes_o;
    long long max_points;
    int threads = 1;
    if (!PyArg_ParseTuple(args, "OOOOL|i", &xy_o, &vs_o, &ps_o, &sizes_o, &max_points, &threads)) return NULL;
    Py_buffer xyb, vsb, psb, sizesb;
    PyObject *result = NULL;
    if (rpx_get_buffer(xy_o, &xyb, BUF_FLOAT64, 0, "xy")) return NULL;
    if (rpx_get_buffer(vs_o, &vsb, BUF_INT64, 0, "vertex_starts")) goto e1;
    if (rpx_get_buffer(ps_o, &psb, BUF_INT64, 0, "polygon_starts")) goto e2;
    if (rpx_get_buffer(sizes_o, &sizesb, BUF_INT64, 0, "sizes")) goto e3;
    const double *xy = xyb.buf;
    const int64_t *vs = vsb.buf, *ps = psb.buf, *sizes = sizesb.buf;
    Py_ssize_t n_poly = vsb.len / 8 - 1, n = psb.len / 8 - 1;
    if (rpx_check_offsets(vs, n_poly + 1, xyb.len / 16, "polygons_rle vertices")) goto done;
    if (rpx_check_offsets(ps, n + 1, n_poly, "polygons_rle polygons")) goto done;
    if (n < 0 || sizesb.len != n * 16 || ps[n] != n_poly) {
        PyErr_SetString(PyExc_ValueError, "polygons_rle: one (h, w) per object, every polygon owned");
        goto done;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        int64_t h = sizes[2 * i], w = sizes[2 * i + 1];
        if (h < 1 || w < 1 || h > ((int64_t)1 << 31) || w > ((int64_t)1 << 31) || h * w >= ((int64_t)1 << 31)) {
            PyErr_Format(PyExc_ValueError, "polygons_rle: object %zd: image size out of bounds", i);
            goto done;
        }
        if (ps[i + 1] == ps[i]) {
            PyErr_Format(PyExc_ValueError, "polygons_rle: object %zd has no polygon", i);
            goto done;
        }
    }
    for (Py_ssize_t q = 0; q < n_poly; q++) {
        int64_t k = vs[q + 1] - vs[q];
        int64_t m = k >= 1 ? boundary_points(xy + 2 * vs[q], k) : -1;
        if (m < 0 || m > max_points) {
            PyErr_Format(PyExc_ValueError, "polygons_rle: polygon %zd out of bounds", q);
            goto done;
        }
    }
    /* the objects split among threads (about as many polygons each); each part's runs kept
     * apart, then joined in part order: the same strings for any number of threads */
    rasterising *job = calloc(1, sizeof(rasterising));
    if (!job) { PyErr_NoMemory(); goto done; }
    *job = (rasterising){.xy = xy, .vs = vs, .ps = ps, .sizes = sizes, .n = n,
                         .parts = threads < 1 || n < 2 ? 1 : threads > RPX_MAX_PARTS ? RPX_MAX_PARTS : threads};
    int failed;
    Py_BEGIN_ALLOW_THREADS
    failed = job->parts > 1 ? rpx_run_parts(job->parts, rasterise_part, job) : rasterise_part(job, 0);
    Py_END_ALLOW_THREADS
    Py_ssize_t total = 0;
    for (int k = 0; k < job->parts; k++) total += job->text[k].n;
    PyObject *text = NULL, *offsets = NULL;
    if (failed) PyErr_NoMemory();
    else if ((text = PyBytes_FromStringAndSize(NULL, total)) &&
             (offsets = PyBytes_FromStringAndSize(NULL, (n + 1) * 8))) {
        /* the parts joined in part order: the same strings for any number of threads */
        char *t = PyBytes_AS_STRING(text);
        int64_t *o = (int64_t *)PyBytes_AS_STRING(offsets);
        Py_ssize_t at = 0, m = 0;
        o[m++] = 0;
        for (int k = 0; k < job->parts; k++) {
            const chars *c = &job->text[k];
            const vec64 *e = &job->ends[k];
            for (Py_ssize_t j = 0; j < e->n; j++) o[m++] = at + e->data[j];
            if (c->n) memcpy(t + at, c->data, (size_t)c->n);
            at += c->n;
        }
        result = PyTuple_Pack(2, text, offsets);
    }
    Py_XDECREF(text);
    Py_XDECREF(offsets);
    for (int k = 0; k < RPX_MAX_PARTS; k++) {
        free(job->text[k].data);
        vec64_free(&job->ends[k]);
    }
    free(job);
done:
    PyBuffer_Release(&sizesb);
e3: PyBuffer_Release(&psb);
e2: PyBuffer_Release(&vsb);
e1: PyBuffer_Release(&xyb);
    return result;
}

/* --- intersections (rleIou's run walk) ----------------------------------------------------- */

/* A decoded mask: its 1-runs as [start, end) pixel intervals and its bounding box. */
typedef struct {
    int64_t first, count;      /* intervals iv[first .. first + count) */
    int64_t x0, x1, y0, y1;    /* inclusive columns and rows; x0 > x1 when empty */
} mask_t;

static int decode_masks(const uint8_t *text, const int64_t *off, int64_t lo, int64_t hi, int64_t h,
                        int rows, vec64 *runs, vec64 *iv, mask_t *masks) {
    iv->n = 0;
    for (int64_t i = lo; i < hi; i++) {
        uint64_t total, area;
        runs->n = 0;
        int problem = decode_string(text + off[i], off[i + 1] - off[i], runs, &total, &area);
        if (problem) return problem < 0 ? -1 : -2;
        mask_t *mk = &masks[i - lo];
        mk->first = iv->n / 2;
        mk->count = 0;
        mk->x0 = INT64_MAX; mk->x1 = -1; mk->y0 = INT64_MAX; mk->y1 = -1;
        int64_t p = 0;
        for (Py_ssize_t j = 0; j < runs->n; j++) {
            int64_t c = runs->data[j];
            if (c > INT64_MAX / 2 - p) return -2; /* no mask is that large */
            if ((j & 1) && c > 0) {
                if (vec64_push(iv, p) || vec64_push(iv, p + c)) return -1;
                mk->count++;
            }
            p += c;
        }
        /* the box: columns from the first and last pixel; rows from every run only when
         * needed (rle_bbox) — the intersection walk tests columns alone */
        if (mk->count) {
            const int64_t *v = iv->data + 2 * mk->first;
            mk->x0 = v[0] / h;
            mk->x1 = (v[2 * mk->count - 1] - 1) / h;
            if (rows) {
                for (int64_t r = 0; r < mk->count; r++) {
                    int64_t s0 = v[2 * r], e0 = v[2 * r + 1] - 1;
                    if (s0 / h < e0 / h) { mk->y0 = 0; mk->y1 = h - 1; break; }
                    if (s0 % h < mk->y0) mk->y0 = s0 % h;
                    if (e0 % h > mk->y1) mk->y1 = e0 % h;
                }
            }
        }
    }
    return 0;
}

/* The first of n intervals iv[0..2n) whose end is past `at` (n when none). */
static int64_t first_ending_after(const int64_t *iv, int64_t n, int64_t at) {
    int64_t lo = 0, hi = n;
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        if (iv[2 * mid + 1] <= at) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

/* Pixels in both sorted interval lists: the walk starts where both have begun and stops
 * where either has ended (masks are local: most of two lists lies outside the other). */
static int64_t intersect_intervals(const int64_t *a, int64_t na, const int64_t *b, int64_t nb) {
    int64_t i = first_ending_after(a, na, b[0]), j = first_ending_after(b, nb, a[0]), total = 0;
    int64_t a_end = a[2 * na - 1], b_end = b[2 * nb - 1];
    while (i < na && j < nb) {
        if (a[2 * i] >= b_end || b[2 * j] >= a_end) break;
        int64_t s = a[2 * i] > b[2 * j] ? a[2 * i] : b[2 * j];
        int64_t e = a[2 * i + 1] < b[2 * j + 1] ? a[2 * i + 1] : b[2 * j + 1];
        if (e > s) total += e - s;
        if (a[2 * i + 1] < b[2 * j + 1]) i++;
        else j++;
    }
    return total;
}

typedef struct {
    const uint8_t *pred_text, *gt_text;
    const int64_t *pred_off, *gt_off, *pred_bounds, *gt_bounds, *heights;
    Py_ssize_t frames;
    int parts;
    vec64 d[RPX_MAX_PARTS], g[RPX_MAX_PARTS], inter[RPX_MAX_PARTS]; /* each part's pairs */
} intersecting;

/* Part `part` of the frames (whole frames, about as many predictions each): every pair of
 * a prediction and a GT mask of one frame whose boxes' columns meet, with its intersection
 * when it is not empty, in frame order. 0, -1 (no memory) or -2 (a malformed string). */
static int intersect_part(void *ctx, int part) {
    intersecting *c = ctx;
    const int64_t *pbv = c->pred_bounds, *gbv = c->gt_bounds, *hv = c->heights;
    Py_ssize_t f0, f1;
    rpx_part_range(pbv, c->frames, part, c->parts, &f0, &f1);
    vec64 *d = &c->d[part], *g = &c->g[part], *inter = &c->inter[part];
    vec64 runs = {0}, piv = {0}, giv = {0};
    int64_t most_p = 0, most_g = 0;
    for (Py_ssize_t f = f0; f < f1; f++) {
        if (pbv[f + 1] - pbv[f] > most_p) most_p = pbv[f + 1] - pbv[f];
        if (gbv[f + 1] - gbv[f] > most_g) most_g = gbv[f + 1] - gbv[f];
    }
    mask_t *pm = malloc(sizeof(mask_t) * (size_t)(most_p + 1));
    mask_t *gm = malloc(sizeof(mask_t) * (size_t)(most_g + 1));
    int status = pm && gm ? 0 : -1;
    for (Py_ssize_t f = f0; f < f1 && !status; f++) {
        int64_t p0 = pbv[f], p1 = pbv[f + 1], g0 = gbv[f], g1 = gbv[f + 1];
        if (p0 == p1 || g0 == g1) continue;
        status = decode_masks(c->gt_text, c->gt_off, g0, g1, hv[f], 0, &runs, &giv, gm);
        if (!status) status = decode_masks(c->pred_text, c->pred_off, p0, p1, hv[f], 0, &runs, &piv, pm);
        for (int64_t i = 0; i < p1 - p0 && !status; i++) {
            const mask_t *a = &pm[i];
            if (!a->count) continue;
            for (int64_t j = 0; j < g1 - g0; j++) {
                const mask_t *b = &gm[j];
                if (!b->count || a->x1 < b->x0 || b->x1 < a->x0) continue;
                int64_t k = intersect_intervals(piv.data + 2 * a->first, a->count,
                                                giv.data + 2 * b->first, b->count);
                if (k > 0 && (vec64_push(d, p0 + i) || vec64_push(g, g0 + j) || vec64_push(inter, k))) {
                    status = -1;
                    break;
                }
            }
        }
    }
    free(pm);
    free(gm);
    vec64_free(&runs);
    vec64_free(&piv);
    vec64_free(&giv);
    return status;
}

/* The parts' pairs one after the other (part order is frame order): bytes objects of n
 * int64 values each, NULL with MemoryError set. */
static PyObject *joined_parts(const vec64 *v, int parts) {
    Py_ssize_t n = 0;
    for (int k = 0; k < parts; k++) n += v[k].n;
    int64_t *all = malloc((size_t)(n ? n : 1) * sizeof(int64_t));
    if (!all) return PyErr_NoMemory();
    Py_ssize_t at = 0;
    for (int k = 0; k < parts; k++) {
        if (v[k].n) memcpy(all + at, v[k].data, (size_t)v[k].n * sizeof(int64_t));
        at += v[k].n;
    }
    PyObject *out = rpx_bytes_of(all, n * 8);
    free(all);
    return out;
}

PyObject *rpx_rle_intersections(PyObject *self, PyObject *args) {
    PyObject *pt_o, *po_o, *gt_o, *go_o, *pb_o, *gb_o, *h_o;
    int threads = 1;
    if (!PyArg_ParseTuple(args, "OOOOOOO|i", &pt_o, &po_o, &gt_o, &go_o, &pb_o, &gb_o, &h_o, &threads))
        return NULL;
    Py_buffer pt, po, gtx, go, pb, gb, hb;
    PyObject *result = NULL;
    if (rpx_get_buffer(pt_o, &pt, BUF_BYTES, 0, "pred_text")) return NULL;
    if (rpx_get_buffer(po_o, &po, BUF_INT64, 0, "pred_offsets")) goto e1;
    if (rpx_get_buffer(gt_o, &gtx, BUF_BYTES, 0, "gt_text")) goto e2;
    if (rpx_get_buffer(go_o, &go, BUF_INT64, 0, "gt_offsets")) goto e3;
    if (rpx_get_buffer(pb_o, &pb, BUF_INT64, 0, "pred_bounds")) goto e4;
    if (rpx_get_buffer(gb_o, &gb, BUF_INT64, 0, "gt_bounds")) goto e5;
    if (rpx_get_buffer(h_o, &hb, BUF_INT64, 0, "heights")) goto e6;
    Py_ssize_t n_pred = po.len / 8 - 1, n_gt = go.len / 8 - 1, frames = hb.len / 8;
    const int64_t *pbv = pb.buf, *gbv = gb.buf, *hv = hb.buf;
    if (rpx_check_offsets(po.buf, n_pred + 1, pt.len, "pred_offsets") ||
        rpx_check_offsets(go.buf, n_gt + 1, gtx.len, "gt_offsets") ||
        rpx_check_offsets(pbv, frames + 1, n_pred, "pred_bounds") ||
        rpx_check_offsets(gbv, frames + 1, n_gt, "gt_bounds")) goto done;
    if (pb.len != (frames + 1) * 8 || gb.len != (frames + 1) * 8) {
        PyErr_SetString(PyExc_ValueError, "rle_intersections: one height per frame");
        goto done;
    }
    for (Py_ssize_t f = 0; f < frames; f++) {
        if (hv[f] < 1) { PyErr_SetString(PyExc_ValueError, "rle_intersections: a height < 1"); goto done; }
    }
    /* the frames split among threads (whole frames; each part's pairs kept apart, then
     * joined in part order: the same arrays for any number of threads) */
    intersecting *job = calloc(1, sizeof(intersecting));
    if (!job) { PyErr_NoMemory(); goto done; }
    *job = (intersecting){.pred_text = pt.buf, .gt_text = gtx.buf, .pred_off = po.buf, .gt_off = go.buf,
                          .pred_bounds = pbv, .gt_bounds = gbv, .heights = hv, .frames = frames,
                          .parts = threads < 1 || frames < 2 ? 1 : threads > RPX_MAX_PARTS ? RPX_MAX_PARTS : threads};
    int status;
    Py_BEGIN_ALLOW_THREADS
    status = job->parts > 1 ? rpx_run_parts(job->parts, intersect_part, job) : intersect_part(job, 0);
    Py_END_ALLOW_THREADS
    if (status == -1) PyErr_NoMemory();
    else if (status) PyErr_SetString(PyExc_ValueError, "rle_intersections: a malformed RLE string");
    else {
        PyObject *d = joined_parts(job->d, job->parts), *g = d ? joined_parts(job->g, job->parts) : NULL;
        PyObject *inter = g ? joined_parts(job->inter, job->parts) : NULL;
        if (inter) result = Py_BuildValue("NNN", d, g, inter);
        else { Py_XDECREF(d); Py_XDECREF(g); }
    }
    for (int k = 0; k < RPX_MAX_PARTS; k++) {
        vec64_free(&job->d[k]);
        vec64_free(&job->g[k]);
        vec64_free(&job->inter[k]);
    }
    free(job);
done:
    PyBuffer_Release(&hb);
e6: PyBuffer_Release(&gb);
e5: PyBuffer_Release(&pb);
e4: PyBuffer_Release(&go);
e3: PyBuffer_Release(&gtx);
e2: PyBuffer_Release(&po);
e1: PyBuffer_Release(&pt);
    return result;
}

/* --- bounding boxes (rleToBbox) ---------------------------------------------------------- */

PyObject *rpx_rle_bbox(PyObject *self, PyObject *args) {
    PyObject *t_o, *o_o, *h_o, *out_o;
    if (!PyArg_ParseTuple(args, "OOOO", &t_o, &o_o, &h_o, &out_o)) return NULL;
    Py_buffer tb, ob, hb, outb;
    PyObject *result = NULL;
    if (rpx_get_buffer(t_o, &tb, BUF_BYTES, 0, "text")) return NULL;
    if (rpx_get_buffer(o_o, &ob, BUF_INT64, 0, "offsets")) goto e1;
    if (rpx_get_buffer(h_o, &hb, BUF_INT64, 0, "heights")) goto e2;
    if (rpx_get_buffer(out_o, &outb, BUF_FLOAT64, 1, "out")) goto e3;
    Py_ssize_t n = ob.len / 8 - 1;
    const int64_t *hv = hb.buf;
    if (rpx_check_offsets(ob.buf, n + 1, tb.len, "rle_bbox")) goto done;
    if (hb.len != n * 8 || outb.len != n * 32) {
        PyErr_SetString(PyExc_ValueError, "rle_bbox: one height and one box per mask");
        goto done;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        if (hv[i] < 1) { PyErr_SetString(PyExc_ValueError, "rle_bbox: a height < 1"); goto done; }
    }
    int status = 0;
    Py_BEGIN_ALLOW_THREADS
    vec64 runs = {0}, iv = {0};
    mask_t mk;
    double *box = outb.buf;
    for (Py_ssize_t i = 0; i < n && !status; i++) {
        status = decode_masks(tb.buf, ob.buf, i, i + 1, hv[i], 1, &runs, &iv, &mk);
        if (status) break;
        if (!mk.count) { box[4 * i] = box[4 * i + 1] = box[4 * i + 2] = box[4 * i + 3] = 0; continue; }
        box[4 * i] = (double)mk.x0;
        box[4 * i + 1] = (double)mk.y0;
        box[4 * i + 2] = (double)(mk.x1 - mk.x0 + 1);
        box[4 * i + 3] = (double)(mk.y1 - mk.y0 + 1);
    }
    vec64_free(&runs);
    vec64_free(&iv);
    Py_END_ALLOW_THREADS
    if (status == -1) PyErr_NoMemory();
    else if (status) PyErr_SetString(PyExc_ValueError, "rle_bbox: a malformed RLE string");
    else result = Py_NewRef(Py_None);
done:
    PyBuffer_Release(&outb);
e3: PyBuffer_Release(&hb);
e2: PyBuffer_Release(&ob);
e1: PyBuffer_Release(&tb);
    return result;
}
