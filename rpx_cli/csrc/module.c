/* rpx_cli._native: the module object, its method table and the buffer helpers the kernels
 * share. The Python face is rpx_cli/native.py (which path runs, RPX_NATIVE=0); each kernel's
 * readable numpy twin is named reference_* beside its call site. */
#include "core.h"
#include <string.h>
#if defined(__unix__) || defined(__APPLE__)
#include <pthread.h>
#define RPX_THREADS 1
#else
#define RPX_THREADS 0
#endif

static int kind_matches(const Py_buffer *view, int kind) {
    const char *f = view->format ? view->format : "B";
    while (*f == '<' || *f == '=' || *f == '@' || *f == '|') f++;
    if (f[0] == '\0' || f[1] != '\0') return 0;
    switch (kind) {
    case BUF_BYTES:
    case BUF_UINT8:
        return view->itemsize == 1 && (f[0] == 'B' || f[0] == 'b' || f[0] == 'c' || f[0] == '?');
    case BUF_INT64:
        return view->itemsize == 8 && (f[0] == 'q' || f[0] == 'l');
    case BUF_FLOAT64:
        return view->itemsize == 8 && f[0] == 'd';
    case BUF_FLOAT32:
        return view->itemsize == 4 && f[0] == 'f';
    case BUF_UINT16:
        return view->itemsize == 2 && f[0] == 'H';
    case BUF_UINT32:
        return view->itemsize == 4 && (f[0] == 'I' || f[0] == 'L');
    default:
        return 0;
    }
}

#if RPX_THREADS
typedef struct {
    part_fn fn;
    void *ctx;
    int part, status;
} part_job;

static void *run_part(void *arg) {
    part_job *job = arg;
    job->status = job->fn(job->ctx, job->part);
    return NULL;
}
#endif

int rpx_run_parts(int parts, part_fn fn, void *ctx) {
    if (parts > RPX_MAX_PARTS) parts = RPX_MAX_PARTS;
    int status = 0;
#if RPX_THREADS
    part_job jobs[RPX_MAX_PARTS];
    pthread_t threads[RPX_MAX_PARTS];
    int started[RPX_MAX_PARTS] = {0};
    for (int p = 1; p < parts; p++) {
        jobs[p] = (part_job){fn, ctx, p, 0};
        started[p] = pthread_create(&threads[p], NULL, run_part, &jobs[p]) == 0;
    }
    status = fn(ctx, 0);
    for (int p = 1; p < parts; p++) {
        if (started[p]) pthread_join(threads[p], NULL);
        else jobs[p].status = fn(ctx, p);
        if (!status) status = jobs[p].status;
    }
#else
    for (int p = 0; p < parts; p++) {
        int s = fn(ctx, p);
        if (!status) status = s;
    }
#endif
    return status;
}

int rpx_get_buffer(PyObject *obj, Py_buffer *view, int kind, int writable, const char *name) {
    int flags = PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | (writable ? PyBUF_WRITABLE : 0);
    if (PyObject_GetBuffer(obj, view, flags) < 0) {
        PyErr_Format(PyExc_TypeError, "%s: expected a contiguous%s buffer", name,
                     writable ? " writable" : "");
        return -1;
    }
    if (!kind_matches(view, kind) || view->len % view->itemsize) {
        PyBuffer_Release(view);
        PyErr_Format(PyExc_TypeError, "%s: wrong element type (%s)", name,
                     kind == BUF_INT64 ? "int64 expected" :
                     kind == BUF_FLOAT64 ? "float64 expected" :
                     kind == BUF_FLOAT32 ? "float32 expected" :
                     kind == BUF_UINT16 ? "uint16 expected" :
                     kind == BUF_UINT32 ? "uint32 expected" : "bytes expected");
        return -1;
    }
    return 0;
}

int rpx_get_buffers(PyObject *const *objs, Py_buffer *views, const int *kinds,
                    const char *const *names, int n, int first_writable) {
    int got = 0;
    while (got < n && !rpx_get_buffer(objs[got], &views[got], kinds[got], got >= first_writable, names[got])) got++;
    return got;
}

int rpx_check_offsets(const int64_t *offsets, Py_ssize_t n_plus_1, int64_t limit, const char *name) {
    if (n_plus_1 < 1 || offsets[0] != 0) {
        PyErr_Format(PyExc_ValueError, "%s: offsets must start at 0", name);
        return -1;
    }
    for (Py_ssize_t i = 1; i < n_plus_1; i++) {
        if (offsets[i] < offsets[i - 1] || offsets[i] > limit) {
            PyErr_Format(PyExc_ValueError, "%s: offset %zd out of order or past the end", name, i);
            return -1;
        }
    }
    return 0;
}

PyObject *rpx_bytes_of(const void *data, Py_ssize_t n_bytes) {
    return PyBytes_FromStringAndSize(n_bytes ? (const char *)data : "", n_bytes);
}

/* A buffer the core malloc'd, handed to Python without a copy: a writable bytes-like object
 * (numpy views it with frombuffer, as it views a bytearray) that frees the memory when the
 * last view of it goes. */
typedef struct {
    PyObject_HEAD
    void *data;
    Py_ssize_t len;
} owned_buffer;

static void owned_dealloc(PyObject *self) {
    free(((owned_buffer *)self)->data);
    Py_TYPE(self)->tp_free(self);
}

static int owned_getbuffer(PyObject *self, Py_buffer *view, int flags) {
    owned_buffer *o = (owned_buffer *)self;
    return PyBuffer_FillInfo(view, self, o->data, o->len, 0, flags);
}

static Py_ssize_t owned_length(PyObject *self) { return ((owned_buffer *)self)->len; }

static PyBufferProcs owned_as_buffer = {owned_getbuffer, NULL};
static PySequenceMethods owned_as_sequence = {owned_length};

static PyTypeObject owned_type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "rpx_cli._native.Buffer",
    .tp_basicsize = sizeof(owned_buffer),
    .tp_dealloc = owned_dealloc,
    .tp_as_buffer = &owned_as_buffer,
    .tp_as_sequence = &owned_as_sequence,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Bytes the native core wrote (writable; numpy views them with frombuffer).",
};

PyObject *rpx_owned(void *data, size_t n) {
    if (n > (size_t)PY_SSIZE_T_MAX) {
        free(data);
        return PyErr_NoMemory();
    }
    if (!data) data = malloc(1);  /* an empty buffer still points somewhere */
    if (n) {
        void *fit = realloc(data, n);  /* the spare capacity back (mremap: no copy) */
        if (fit) data = fit;
    }
    owned_buffer *o = data ? PyObject_New(owned_buffer, &owned_type) : NULL;
    if (!o) {
        free(data);
        return PyErr_Occurred() ? NULL : PyErr_NoMemory();
    }
    o->data = data;
    o->len = (Py_ssize_t)n;
    return (PyObject *)o;
}

/* which copies of the TWO_COPIES kernels run: -1 the CPU's best, 0 baseline, 1 AVX2 */
static int isa_choice = -1;

int rpx_avx2(void) {
#if RPX_X86
    if (isa_choice >= 0) return isa_choice;
    return __builtin_cpu_supports("avx2") ? 1 : 0;
#else
    return 0;
#endif
}

static int isa_of(const char *name) {
    if (!strcmp(name, "auto")) return -1;
    if (!strcmp(name, "baseline")) return 0;
    if (!strcmp(name, "avx2")) {
#if RPX_X86
        if (__builtin_cpu_supports("avx2")) return 1;
#endif
        PyErr_SetString(PyExc_ValueError, "set_isa: this CPU (or build) has no AVX2 copies to run");
        return -2;
    }
    PyErr_Format(PyExc_ValueError, "set_isa: %s is not auto, baseline or avx2", name);
    return -2;
}

PyObject *rpx_set_isa(PyObject *self, PyObject *args) {
    const char *name;
    if (!PyArg_ParseTuple(args, "s", &name)) return NULL;
    int choice = isa_of(name);
    if (choice == -2) return NULL;
    isa_choice = choice;
    Py_RETURN_NONE;
}

PyObject *rpx_isa(PyObject *self, PyObject *args) {
    return PyUnicode_FromString(rpx_avx2() ? "avx2" : "baseline");
}

static PyMethodDef methods[] = {
    {"set_isa", rpx_set_isa, METH_VARARGS,
     "set_isa(name): which copies of the vectorised kernels run: 'auto' (AVX2 where the CPU has "
     "it), 'baseline' (x86-64 SSE2) or 'avx2'. The environment variable RPX_NATIVE_ISA sets it "
     "when the module loads. Both copies give the same results (tests compare them)."},
    {"isa", rpx_isa, METH_NOARGS, "isa() -> 'avx2' or 'baseline': the copies that run."},
    {"rle_check", rpx_rle_check, METH_VARARGS,
     "rle_check(text, offsets, area_out, total_out, bad_out, threads=1): decode every "
     "compressed RLE string text[offsets[i]:offsets[i+1]] (64-bit) into its area, the sum of "
     "its runs and whether it is malformed (a character outside '0'..'o', a string ending "
     "inside a count, a count of more than 12 characters, a negative run). GIL released; the "
     "strings split among `threads` threads."},
    {"rle_encode", rpx_rle_encode, METH_VARARGS,
     "rle_encode(counts, starts) -> (text, offsets): counts[starts[i]:starts[i+1]] (int64, "
     ">= 0) as pycocotools' rleToString strings."},
    {"rle_intersections", rpx_rle_intersections, METH_VARARGS,
     "rle_intersections(pred_text, pred_offsets, gt_text, gt_offsets, pred_bounds, gt_bounds, "
     "heights, threads=1) -> (d, g, inter) int64 bytes: every frame's (prediction, GT) pairs "
     "whose masks intersect and the intersection in pixels. GIL released; whole frames split "
     "among `threads` threads."},
    {"polygons_rle", rpx_polygons_rle, METH_VARARGS,
     "polygons_rle(xy, vertex_starts, polygon_starts, sizes, max_points, threads=1) -> (text, "
     "offsets): each object's polygons rasterised as pycocotools' rleFrPoly and merged as "
     "rleMerge (union), as compressed strings. GIL released; the objects split among "
     "`threads` threads."},
    {"rle_merge", rpx_rle_merge, METH_VARARGS,
     "rle_merge(counts, starts, intersect) -> counts int64 bytes: pycocotools' rleMerge of the "
     "masks counts[starts[i]:starts[i+1]] (union, or intersection when intersect is true)."},
    {"rle_bbox", rpx_rle_bbox, METH_VARARGS,
     "rle_bbox(text, offsets, heights, out): each compressed RLE's [x, y, w, h] bounding box "
     "(the tight box of its pixels; zeros for an empty mask) into out (float64, N x 4)."},
    {"depth_sums", rpx_depth_sums, METH_VARARGS,
     "depth_sums(pred, gt, scale, valid, t1, t2, t3) -> (n, abs_rel, sq_rel, sq_err, log_sum, "
     "log_m2, abs_log, delta1, delta2, delta3, bad): one frame's depth sums (rpx_cli/ops/depth_kernel.py, "
     "float32 precision) in one pass. pred float32; gt float32 metres (scale 0) or uint16 in "
     "1/scale m; valid: a bool mask, or None to take GT > 0 and finite; t1..t3 the delta "
     "thresholds; bad: non-finite predictions at valid pixels. GIL released."},
    {"label_pair_counts", rpx_label_pair_counts, METH_VARARGS,
     "label_pair_counts(gt, pred, out): add to out (int64, 256 x 256) the pixels of each "
     "(GT label, predicted label) pair of two 8-bit label maps of one size, counted by runs. "
     "GIL released."},
    {"point_label_counts", rpx_point_label_counts, METH_VARARGS,
     "point_label_counts(gt, pred, lut, width, interval, n_intervals, out) -> (rows, cols): add "
     "to out (int64, n_intervals x width x width) the points of each (interval, GT class, "
     "predicted class): gt and pred uint32 labels of one size (semantic label = value & "
     "0xFFFF), each mapped by lut (uint8, 65,536 entries, every one below width); interval a "
     "uint8 per point below n_intervals, or None (n_intervals 1). rows, cols: 1 + the largest "
     "GT, predicted class holding a count in out (0 for none). GIL released."},
    {"panoptic_overlaps", rpx_panoptic_overlaps, METH_VARARGS,
     "panoptic_overlaps(gt_ids, pred_ids, gt_sorted, gt_order, pred_sorted, pred_order, out): "
     "add to out (int64, (k_gt + 2) x (k_pred + 2)) the pixels of each (GT, prediction) pair "
     "of compact indices: 0 an unlisted id, 1 VOID (id 0), 2 + order[j] for sorted[j]. The id "
     "maps are uint32 of one size; sorted increasing int64 ids, order their positions in "
     "segments_info. GIL released."},
    {"png_unfilter", rpx_png_unfilter, METH_VARARGS,
     "png_unfilter(raw, width, height, bpp, swap16, out) -> None or the first bad row: the "
     "inflated data of a non-interlaced PNG (height * (1 + bpp width) bytes, each row its "
     "filter type first, bpp bytes a pixel, 1 to 8) unfiltered into out (height * bpp width "
     "bytes), 16-bit samples swapped to little-endian when swap16. Returns the first row "
     "whose filter type is above 4, else None. GIL released."},
    {"png_rgb_ids", rpx_png_rgb_ids, METH_VARARGS,
     "png_rgb_ids(raw, width, height, out) -> None or the first bad row: the inflated data of "
     "an 8-bit RGB non-interlaced PNG (height * (1 + 3 width) bytes, each row its filter type "
     "first) unfiltered into segment ids R + 256 G + 256^2 B, little-endian uint32, in out "
     "(4 * width * height bytes). Returns the first row whose filter type is above 4, else "
     "None. GIL released."},
    {"coco_results", rpx_coco_results, METH_VARARGS,
     "coco_results(data, field, threads=1, min_split=16 MB) -> (n, image, category, score, bbox, has_bbox, shape, offsets, "
     "sizes) or None: a COCO results list (field 0 bbox, 1 segmentation as compressed RLEs, 2 "
     "keypoints, 3 keypoint rows: each list followed by its points' extent [x, y, w, h] and "
     "the count of v > 0) as columns of writable buffers the core wrote (no copy): int64 ids, "
     "float64 scores, float64 boxes (n x 4) and whether each was given, the shapes (keypoints: "
     "float64 values; RLEs: their strings, as bytes) cut by int64 offsets (n + 1), RLE sizes (n x 2 "
     "int64). None for anything but the ordinary "
     "case (bad JSON, a missing or mistyped field, polygons, ...): the Python path reads it. "
     "threads >= 2: a list of min_split bytes (16 MB) or more is scanned in two halves cut "
     "between two records (the same columns). GIL released."},
    {"coco_gt", rpx_coco_gt, METH_VARARGS,
     "coco_gt(data, field) -> (images, categories, annotations, ignore_keys, image_id, "
     "image_hw, image_name, image_name_at, image_named, category_id, category_name, "
     "category_name_at, category_named, ann_image, ann_category, ann_bbox, ann_area, "
     "ann_has_area, ann_crowd, ann_ignore, ann_zero_id, ann_keypoints, ann_keypoints_at, "
     "ann_has_bbox, ann_count, ann_has_count, ann_kind, ann_xy, ann_ring_at, ann_poly_at, "
     "ann_rle_size, ann_runs, ann_runs_at, ann_text, ann_text_at) or None: a COCO GT "
     "document's images, categories and annotations (field 0: boxes; 1: segmentations, the "
     "bbox not read; 2: keypoints, the bbox optional) as columns of bytearrays (int64 ids, "
     "sizes and counts, names' ASCII text, keypoint values, polygons' numbers, RLE counts and "
     "strings cut by int64 offsets, float64 boxes and areas, uint8 flags and kinds). None for "
     "anything but the ordinary case: the Python path reads it. GIL released."},
    {"coco_accumulate", rpx_coco_accumulate, METH_VARARGS,
     "coco_accumulate(matched, ignored, rank, score, bounds, regular, max_dets, recall_points, "
     "T, A, precision, recall, scores): pycocotools' accumulate of the detections in category "
     "order (category k: bounds[k]:bounds[k+1]; matched, ignored: (N, A * T) bool; a true "
     "positive is matched and not ignored), into precision and scores "
     "(T, R, K, A, M) and recall (T, K, A, M) float64; -1 where a category has no regular GT "
     "(regular: (A, K) int64). GIL released."},
    {"coco_match_boxes", rpx_coco_match_boxes, METH_VARARGS,
     "coco_match_boxes(dt_box, dt_group, gt_box, gt_group, gt_crowd, gt_area, ranges, "
     "thresholds, matched, ignored): pycocotools' greedy matching of [x, y, w, h] boxes (IoU, "
     "crowd IoU over the detection's area, >=, ties to the last GT, ignored GT only when no "
     "regular one passes) in every group (sorted int64 groups; detections in rank order) at "
     "every area range (A x 2) and threshold (T): matched, ignored (D x A*T bool, column "
     "a * T + t). GIL released."},
    {"stable_order", rpx_stable_order, METH_VARARGS,
     "stable_order(key, score, order) -> None: order (int64, n) by key (int64) ascending, then "
     "score (float64) descending, ties in index order: numpy's lexsort((-score, key)) (the two "
     "zeros tie, NaN last). GIL released."},
    {"coco_match_oks", rpx_coco_match_oks, METH_VARARGS,
     "coco_match_oks(width, dt_rows, dt_id, gt_rows, gt_id, oks_area, variances, dt_group, "
     "gt_group, gt_crowd, gt_area, ranges, thresholds, matched, ignored): pycocotools' greedy "
     "matching of keypoints under OKS (computeOks over keypoint rows of `width` float64 "
     "values: K [x, y, v] points, then the GT box; variances (2 sigma)^2 (K,); each object "
     "an id into its rows; oks_area: each GT row's area), as coco_match_boxes walks (>=, ties "
     "to the last GT, ignored GT only when no regular one passes): matched, ignored (D x A*T "
     "bool, column a * T + t). GIL released; whole groups split among `threads` (optional, "
     "last) threads."},
    {"coco_match_overlaps", rpx_coco_match_overlaps, METH_VARARGS,
     "coco_match_overlaps(keys, inter, key_gt, pred_area, gt_area_table, dt_id, gt_id, dt_group, "
     "gt_group, gt_crowd, gt_area, ranges, thresholds, matched, ignored, threads=1): "
     "pycocotools' greedy matching (as coco_match_boxes walks) under the IoU of intersections "
     "computed beforehand (ops/geometry.py's OverlapTable: keys pred * key_gt + gt sorted, "
     "inter > 0 their intersections, each object's area): matched, ignored (D x A*T bool). "
     "GIL released."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "rpx_cli._native",
    "rpx's native core: C kernels for COCO masks, results files and accumulation (docs/architecture.md, 'The native core').",
    -1, methods,
};

PyMODINIT_FUNC PyInit__native(void) {
#if RPX_X86
    __builtin_cpu_init();
#endif
    const char *isa = getenv("RPX_NATIVE_ISA");
    if (isa && *isa) {
        int choice = isa_of(isa);
        if (choice == -2) return NULL; /* an unknown name: say so rather than guess */
        isa_choice = choice;
    }
    if (PyType_Ready(&owned_type) < 0) return NULL;
    PyObject *m = PyModule_Create(&module);
    if (!m) return NULL;
    /* bumped whenever a kernel's signature or meaning changes: native.py refuses another */
    if (PyModule_AddIntConstant(m, "ABI", 7) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
