/* PNG image data unfiltered (the five filters of the PNG specification, section 9), for the
 * plain PNGs rpx reads itself: the chunks are walked, their CRCs checked and the data inflated
 * by the Python face (rpx_cli/io/png_native.py: zlib-ng when installed, else zlib), which hands
 * over exactly height * (1 + bpp * width) bytes. Two outputs:
 *   png_unfilter: the rows as they are (8-bit samples, or 16-bit ones swapped to little-endian);
 *   png_rgb_ids:  8-bit RGB rows as panoptic segment ids, id = R + 256 G + 256^2 B
 *                 (panopticapi's rgb2id), little-endian uint32.
 * Anything unusual on the Python side, or a filter type above 4 here, sends the file to Pillow,
 * which reads it or words the error. The twin is Pillow itself (rpx_cli/io/images.py,
 * rpx_cli/io/panoptic.py: reference_ids); tests/test_native_png.py compares them on PNGs
 * written with every filter type. */
#include "core.h"
#include <stdlib.h>
#include <string.h>

/* the Paeth predictor of the PNG specification (9.4), without branches: p - a = b - c,
 * p - b = a - c, p - c = a + b - 2c */
ALWAYS_INLINE static inline uint8_t paeth(int a, int b, int c) {
    int pa = abs(b - c), pb = abs(a - c), pc = abs(a + b - 2 * c);
    int bc = pb <= pc ? b : c;
    return (uint8_t)(pa <= pb && pa <= pc ? a : bc);
}

/* one filtered row (its filter type byte first) into `row`, given the row above `prior`
 * (zeros for the first row) and `bpp` bytes a pixel (1 to 8); 0, or -1 for an unknown filter
 * type. Inlined with a constant bpp into each caller. */
ALWAYS_INLINE static inline int unfilter_row(const uint8_t *restrict in, uint8_t *restrict row,
                                             const uint8_t *restrict prior, Py_ssize_t n, int bpp) {
    const uint8_t *x = in + 1;
    switch (in[0]) {
    case 0:
        memcpy(row, x, (size_t)n);
        return 0;
    case 1:
        for (Py_ssize_t i = 0; i < bpp && i < n; i++) row[i] = x[i];
        for (Py_ssize_t i = bpp; i < n; i++) row[i] = (uint8_t)(x[i] + row[i - bpp]);
        return 0;
    case 2:
        for (Py_ssize_t i = 0; i < n; i++) row[i] = (uint8_t)(x[i] + prior[i]);
        return 0;
    case 3:
        for (Py_ssize_t i = 0; i < bpp && i < n; i++) row[i] = (uint8_t)(x[i] + (prior[i] >> 1));
        for (Py_ssize_t i = bpp; i < n; i++) row[i] = (uint8_t)(x[i] + ((row[i - bpp] + prior[i]) >> 1));
        return 0;
    case 4:
        if (bpp == 3) { /* a pixel at a time, the left pixel (a) and the one above it (c) in
                         * registers: three independent byte chains, no store-to-load trip */
            int a0 = 0, a1 = 0, a2 = 0, c0 = 0, c1 = 0, c2 = 0;
            for (Py_ssize_t i = 0; i + 2 < n; i += 3) {
                int b0 = prior[i], b1 = prior[i + 1], b2 = prior[i + 2];
                a0 = (uint8_t)(x[i] + paeth(a0, b0, c0));
                a1 = (uint8_t)(x[i + 1] + paeth(a1, b1, c1));
                a2 = (uint8_t)(x[i + 2] + paeth(a2, b2, c2));
                row[i] = (uint8_t)a0;
                row[i + 1] = (uint8_t)a1;
                row[i + 2] = (uint8_t)a2;
                c0 = b0;
                c1 = b1;
                c2 = b2;
            }
            return 0;
        }
        for (Py_ssize_t i = 0; i < bpp && i < n; i++) row[i] = (uint8_t)(x[i] + prior[i]);
        for (Py_ssize_t i = bpp; i < n; i++)
            row[i] = (uint8_t)(x[i] + paeth(row[i - bpp], prior[i], prior[i - bpp]));
        return 0;
    default:
        return -1;
    }
}

/* pixel x of an unfiltered RGB row as the id R + 256 G + 256^2 B (little-endian uint32) */
ALWAYS_INLINE static inline void row_ids(const uint8_t *restrict row, uint8_t *restrict dst,
                                         Py_ssize_t width) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    uint32_t *restrict ids = (uint32_t *)(void *)dst; /* checked 4-byte aligned */
    for (Py_ssize_t x = 0; x < width; x++)
        ids[x] = (uint32_t)row[3 * x] | (uint32_t)row[3 * x + 1] << 8 | (uint32_t)row[3 * x + 2] << 16;
#else
    for (Py_ssize_t x = 0; x < width; x++) {
        dst[4 * x] = row[3 * x];
        dst[4 * x + 1] = row[3 * x + 1];
        dst[4 * x + 2] = row[3 * x + 2];
        dst[4 * x + 3] = 0;
    }
#endif
}

/* every row unfiltered (two row buffers of 3 width bytes in `rows`, zeroed) and written as
 * ids; -1, or the first row whose filter type is unknown */
CLONES static Py_ssize_t unfilter_ids(const uint8_t *in, uint8_t *rows, uint8_t *ids,
                                      Py_ssize_t width, Py_ssize_t height) {
    Py_ssize_t n = 3 * width, stride = n + 1;
    uint8_t *row = rows, *prior = rows + n;
    for (Py_ssize_t y = 0; y < height; y++) {
        uint8_t *swap = prior;
        prior = row;
        row = swap;
        if (unfilter_row(in + y * stride, row, prior, n, 3) < 0) return y; /* row 0: prior is zeros */
        row_ids(row, ids + 4 * width * y, width);
    }
    return -1;
}

/* every row unfiltered into out (width * bpp bytes a row), 16-bit samples swapped to
 * little-endian when swap16; -1, or the first row whose filter type is unknown */
ALWAYS_INLINE static inline Py_ssize_t unfilter_rows(const uint8_t *in, uint8_t *rows, uint8_t *out,
                                                     Py_ssize_t width, Py_ssize_t height, int bpp,
                                                     int swap16) {
    Py_ssize_t n = bpp * width, stride = n + 1;
    uint8_t *row = rows, *prior = rows + n;
    for (Py_ssize_t y = 0; y < height; y++) {
        uint8_t *swap = prior;
        prior = row;
        row = swap;
        if (unfilter_row(in + y * stride, row, prior, n, bpp) < 0) return y;
        uint8_t *restrict dst = out + n * y;
        if (swap16) {
            for (Py_ssize_t i = 0; i + 1 < n; i += 2) {
                dst[i] = row[i + 1];
                dst[i + 1] = row[i];
            }
        } else {
            memcpy(dst, row, (size_t)n);
        }
    }
    return -1;
}

/* unfilter_rows with bpp a constant in each branch (the filters' loops then vectorise) */
CLONES static Py_ssize_t unfilter_any(const uint8_t *in, uint8_t *rows, uint8_t *out, Py_ssize_t width,
                                      Py_ssize_t height, int bpp, int swap16) {
    switch (bpp) {
    case 1: return unfilter_rows(in, rows, out, width, height, 1, swap16);
    case 2: return unfilter_rows(in, rows, out, width, height, 2, swap16);
    case 3: return unfilter_rows(in, rows, out, width, height, 3, swap16);
    case 4: return unfilter_rows(in, rows, out, width, height, 4, swap16);
    default: return unfilter_rows(in, rows, out, width, height, bpp, swap16);
    }
}

/* the checks, buffers and row scratch both entry points share; `ids`: RGB rows (bpp 3) into
 * uint32 segment ids, else the rows as they are */
static PyObject *unfilter_call(PyObject *raw_o, PyObject *out_o, Py_ssize_t width, Py_ssize_t height,
                               int bpp, int swap16, int ids, const char *name) {
    if (width <= 0 || height <= 0 || bpp < 1 || bpp > 8 || width > PY_SSIZE_T_MAX / 16 / height
        || (swap16 && bpp % 2)) {
        PyErr_Format(PyExc_ValueError, "%s: width and height must be positive, bpp 1 to 8 (even "
                                       "to swap 16-bit samples)", name);
        return NULL;
    }
    Py_buffer raw = {0}, out = {0};
    if (rpx_get_buffer(raw_o, &raw, BUF_BYTES, 0, "raw") < 0) return NULL;
    if (rpx_get_buffer(out_o, &out, BUF_BYTES, 1, "out") < 0) {
        PyBuffer_Release(&raw);
        return NULL;
    }
    PyObject *result = NULL;
    Py_ssize_t n = (Py_ssize_t)bpp * width, out_row = ids ? 4 * width : n;
    if (raw.len != (n + 1) * height || out.len != out_row * height || (ids && (uintptr_t)out.buf % 4)) {
        PyErr_Format(PyExc_ValueError, "%s: raw must hold height * (1 + bpp width) bytes and out "
                                       "height * %s, 4-byte aligned for ids", name,
                     ids ? "4 width" : "bpp width");
        goto done;
    }
    uint8_t *rows = calloc(2 * (size_t)n, 1);
    if (!rows) {
        PyErr_NoMemory();
        goto done;
    }
    Py_ssize_t bad_row;
    Py_BEGIN_ALLOW_THREADS
    bad_row = ids ? unfilter_ids(raw.buf, rows, out.buf, width, height)
                  : unfilter_any(raw.buf, rows, out.buf, width, height, bpp, swap16);
    Py_END_ALLOW_THREADS
    free(rows);
    /* the first row whose filter type is unknown, else None */
    result = bad_row >= 0 ? PyLong_FromSsize_t(bad_row) : Py_NewRef(Py_None);
done:
    PyBuffer_Release(&raw);
    PyBuffer_Release(&out);
    return result;
}

PyObject *rpx_png_unfilter(PyObject *self, PyObject *args) {
    PyObject *raw_o, *out_o;
    Py_ssize_t width, height;
    int bpp, swap16;
    if (!PyArg_ParseTuple(args, "OnnipO", &raw_o, &width, &height, &bpp, &swap16, &out_o)) return NULL;
    return unfilter_call(raw_o, out_o, width, height, bpp, swap16, 0, "png_unfilter");
}

PyObject *rpx_png_rgb_ids(PyObject *self, PyObject *args) {
    PyObject *raw_o, *out_o;
    Py_ssize_t width, height;
    if (!PyArg_ParseTuple(args, "OnnO", &raw_o, &width, &height, &out_o)) return NULL;
    return unfilter_call(raw_o, out_o, width, height, 3, 0, 1, "png_rgb_ids");
}
