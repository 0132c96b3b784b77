/* rpx's native core: what every kernel file shares (docs/architecture.md, "The native core").
 *
 * Kernels see only flat, C-contiguous buffers (bytes, int64, float64) that the Python face
 * (rpx_cli/native.py and the ops modules) has shaped and checked; each kernel checks again
 * every length, offset and bound it relies on before touching memory, so no input can make
 * it read or write out of bounds. Pure loops run with the GIL released. */
#ifndef RPX_NATIVE_CORE_H
#define RPX_NATIVE_CORE_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* TWO_COPIES(ret, name, params, args): the function `name` made of `name##_body` (an
 * ALWAYS_INLINE function with a non-void result) compiled twice — for AVX2 and for the x86-64
 * baseline — and a `name` that calls the copy rpx_avx2() chooses: AVX2 where the CPU has it,
 * unless RPX_NATIVE_ISA=baseline (or _native.set_isa) says otherwise, so tests run both
 * copies on one machine. Elsewhere (other CPUs, other compilers) both copies are the same.
 * Integer results are the same in both copies; float kernels keep theirs the same by avoiding
 * FMA (-ffp-contract=off) and summing in fixed lanes. */
#if defined(__x86_64__) && defined(__GNUC__)
#define RPX_X86 1
#define AVX2_TARGET __attribute__((target("avx2")))
#else
#define RPX_X86 0
#define AVX2_TARGET
#endif
int rpx_avx2(void);

#define TWO_COPIES(ret, name, params, args)                                                   \
    AVX2_TARGET static ret name##_avx2 params { return name##_body args; }                     \
    static ret name##_base params { return name##_body args; }                                \
    static ret name params { return rpx_avx2() ? name##_avx2 args : name##_base args; }
#if defined(__GNUC__)
#define ALWAYS_INLINE __attribute__((always_inline))
#else
#define ALWAYS_INLINE
#endif

/* _native.set_isa / isa: which copies run ("auto", "baseline", "avx2") */
PyObject *rpx_set_isa(PyObject *self, PyObject *args);
PyObject *rpx_isa(PyObject *self, PyObject *args);

/* The runs of equal elements along n of them (label maps and id maps repeat the pixel before),
 * found a block at a time: mark(ctx, base, m, change) sets change[j] to 1 where element
 * base + j differs from element base + j - 1, else 0 (j < m; a loop the compiler vectorises),
 * then the marks are visited eight at a time (a zero word skips eight elements; ctz finds each
 * mark in a word) and run(ctx, start, stop) gets every run [start, stop) in order. Inlined
 * with its callbacks into each caller. */
#define RUN_BLOCK 4096
typedef void (*run_mark_fn)(void *ctx, Py_ssize_t base, Py_ssize_t m, uint8_t *change);
typedef void (*run_fn)(void *ctx, Py_ssize_t start, Py_ssize_t stop);

ALWAYS_INLINE static inline void walk_runs(Py_ssize_t n, void *ctx, run_mark_fn mark, run_fn run) {
    if (n == 0) return;
    uint8_t change[RUN_BLOCK + 8];
    Py_ssize_t start = 0;
    for (Py_ssize_t base = 1; base < n; base += RUN_BLOCK) {
        Py_ssize_t m = n - base < RUN_BLOCK ? n - base : RUN_BLOCK;
        mark(ctx, base, m, change);
        memset(change + m, 0, 8);
        for (Py_ssize_t j = 0; j < m; j += 8) {
#if defined(__GNUC__) && defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
            uint64_t word;
            memcpy(&word, change + j, 8);
            while (word) {
                Py_ssize_t i = base + j + (__builtin_ctzll(word) >> 3);
                run(ctx, start, i);
                start = i;
                word &= word - 1;
            }
#else
            for (int b = 0; b < 8; b++) {
                if (!change[j + b]) continue;
                run(ctx, start, base + j + b);
                start = base + j + b;
            }
#endif
        }
    }
    run(ctx, start, n);
}

/* A growable array of int64 (malloc'd; reserve() fails cleanly on overflow or ENOMEM). */
typedef struct {
    int64_t *data;
    Py_ssize_t n, cap;
} vec64;

static inline void vec64_free(vec64 *v) { free(v->data); v->data = NULL; v->n = v->cap = 0; }

static inline int vec64_reserve(vec64 *v, Py_ssize_t want) {
    if (want <= v->cap) return 0;
    Py_ssize_t cap = v->cap ? v->cap : 16;
    while (cap < want) {
        if (cap > PY_SSIZE_T_MAX / 16) return -1;
        cap *= 2;
    }
    int64_t *data = realloc(v->data, (size_t)cap * sizeof(int64_t));
    if (!data) return -1;
    v->data = data;
    v->cap = cap;
    return 0;
}

static inline int vec64_push(vec64 *v, int64_t x) {
    if (v->n == v->cap && vec64_reserve(v, v->n + 1)) return -1;
    v->data[v->n++] = x;
    return 0;
}

/* The buffer kinds a kernel accepts. */
enum { BUF_BYTES = 'B', BUF_INT64 = 'q', BUF_FLOAT64 = 'd', BUF_UINT8 = 'u', BUF_FLOAT32 = 'f',
       BUF_UINT16 = 'H', BUF_UINT32 = 'I' };

/* Get a C-contiguous buffer of `kind` (writable if asked) from `obj`; on failure set a
 * TypeError naming `name` and return -1. Release with PyBuffer_Release. */
int rpx_get_buffer(PyObject *obj, Py_buffer *view, int kind, int writable, const char *name);
/* rpx_get_buffer for objs[0..n), those from `first_writable` on writable: the number acquired
 * (n, or fewer with the error set); release that many. */
int rpx_get_buffers(PyObject *const *objs, Py_buffer *views, const int *kinds,
                    const char *const *names, int n, int first_writable);

/* Offsets (n + 1 int64 values) that start at 0, never decrease and end at most at `limit`. */
int rpx_check_offsets(const int64_t *offsets, Py_ssize_t n_plus_1, int64_t limit, const char *name);

/* Run fn(ctx, part) for part = 0 .. parts - 1, part 0 on the calling thread and the others on
 * threads of their own (at most RPX_MAX_PARTS; a thread that cannot start runs its part on
 * the calling thread after part 0). Call it with the GIL released; fn must touch no Python
 * object. Returns 0, or the first non-zero result of a part. */
#define RPX_MAX_PARTS 16
typedef int (*part_fn)(void *ctx, int part);
int rpx_run_parts(int parts, part_fn fn, void *ctx);

/* Part `part` of `parts` of n items whose work ends at bounds[1..n] (bounds: n + 1 ascending
 * offsets, characters of strings or polygons of objects): the items [*lo, *hi) that start in
 * that share of the work. The parts cover 0..n in order, each item in one. */
static inline void rpx_part_range(const int64_t *bounds, Py_ssize_t n, int part, int parts,
                                  Py_ssize_t *lo, Py_ssize_t *hi) {
    const int64_t work = bounds[n] - bounds[0];
    for (int side = 0; side < 2; side++) {
        const int k = part + side;
        Py_ssize_t found;
        if (k == 0) found = 0;
        else if (k == parts) found = n;
        else {  /* the first item starting at or after that share of the work */
            const int64_t at = bounds[0] + (int64_t)((double)work * k / parts);
            Py_ssize_t a = 0, b = n;
            while (a < b) {
                const Py_ssize_t mid = a + (b - a) / 2;
                if (bounds[mid] < at) a = mid + 1;
                else b = mid;
            }
            found = a;
        }
        if (side == 0) *lo = found;
        else *hi = found;
    }
}

/* A writable bytes-like object owning `data` (malloc'd; n bytes; NULL data is empty): no
 * copy made, the memory freed with the object. On failure `data` is freed, NULL returned with
 * MemoryError set. */
PyObject *rpx_owned(void *data, size_t n);

/* bytes objects holding a copy of `n` int64 values (NULL with MemoryError set). */
PyObject *rpx_bytes_of(const void *data, Py_ssize_t n_bytes);

/* the matcher of coco_overlaps.c */
PyObject *rpx_coco_match_overlaps(PyObject *self, PyObject *args);

/* the kernels of rle.c */
PyObject *rpx_rle_check(PyObject *self, PyObject *args);
PyObject *rpx_rle_encode(PyObject *self, PyObject *args);
PyObject *rpx_rle_intersections(PyObject *self, PyObject *args);
PyObject *rpx_polygons_rle(PyObject *self, PyObject *args);
PyObject *rpx_rle_merge(PyObject *self, PyObject *args);
PyObject *rpx_rle_bbox(PyObject *self, PyObject *args);

/* the depth kernel of depth.c */
PyObject *rpx_depth_sums(PyObject *self, PyObject *args);

/* the label-pair counts of counts.c */
PyObject *rpx_label_pair_counts(PyObject *self, PyObject *args);

/* the per-point label-pair counts of seg3d.c */
PyObject *rpx_point_label_counts(PyObject *self, PyObject *args);

/* the panoptic overlaps of panoptic.c */
PyObject *rpx_panoptic_overlaps(PyObject *self, PyObject *args);

/* the PNG rows of png.c */
PyObject *rpx_png_unfilter(PyObject *self, PyObject *args);
PyObject *rpx_png_rgb_ids(PyObject *self, PyObject *args);

/* the reader of coco_json.c */
PyObject *rpx_coco_results(PyObject *self, PyObject *args);

/* the GT reader of coco_gt.c */
PyObject *rpx_coco_gt(PyObject *self, PyObject *args);

/* the accumulation and the box matcher of coco_eval.c */
PyObject *rpx_coco_accumulate(PyObject *self, PyObject *args);
PyObject *rpx_coco_match_boxes(PyObject *self, PyObject *args);

/* the stable order of order.c */
PyObject *rpx_stable_order(PyObject *self, PyObject *args);

/* the keypoint (OKS) matcher of coco_oks.c */
PyObject *rpx_coco_match_oks(PyObject *self, PyObject *args);

#endif
