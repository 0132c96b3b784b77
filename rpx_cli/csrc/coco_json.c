/* COCO results files read into columns: a strict JSON scanner of rpx's own (no JSON library)
 * that turns a top-level list of {image_id, category_id, score, bbox | segmentation |
 * keypoints, ...} objects into flat buffers, without building a Python object per value.
 *
 * It answers only the ordinary case and declines everything else (returns None): a JSON
 * syntax error of any kind (RFC 8259, strictly: no NaN, Infinity, leading zeros, trailing
 * commas, control characters or invalid UTF-8 in strings, lone surrogate escapes), nesting
 * deeper than MAX_DEPTH, a record that is not an object, a key given twice or written with
 * an escape, an id that is not a JSON integer within int64, a number field holding anything
 * but a number, a missing field, a polygon or uncompressed RLE, a non-ASCII RLE string, a
 * number token longer than MAX_NUMBER. The Python path (rpx_cli/io/coco_results.py) then
 * reads the file as before and words the error, so this file never formats one.
 *
 * Numbers are converted as Python's float() converts their text (correctly rounded): an
 * integer token within int64 exactly and then to double (so "-0" is +0.0, as Python's int),
 * a decimal of at most 15 significant digits and a power of ten within 1e±22 by one exact
 * division or multiplication (Clinger's fast path), one of at most 19 digits and 1e±27 the
 * same way in x87 extended precision where that is exact (Python's repr writes 17 digits),
 * every other token by strtod on a bounded, NUL-terminated copy (the caller checks that the
 * locale's decimal point is '.').
 *
 * The numpy twin is the Python path itself: rpx_cli/io/coco_results.py (orjson, then the
 * checks of rpx_cli/io/boxes.py and rpx_cli/io/instances.py); tests/test_native_coco_reader.py
 * compares the two bit for bit. */
#include "json_scan.h"

/* FIELD_KEYPOINT_ROWS: keypoints read as rows [x1, y1, v1, ..., bx, by, bw, bh, count], the
 * box the extent of every point and count the points with v > 0 (what rpx_cli/io/instances.py's
 * keypoint_boxes makes of a result's keypoints: x.min(axis=1) and the others, whose ties keep
 * the later value, as numpy's strided reduction does), written where the values are: no second
 * copy of a 200 MB column. A list of no values or not of triplets is declined. */
enum { FIELD_BBOX = 0, FIELD_SEGMENTATION = 1, FIELD_KEYPOINTS = 2, FIELD_KEYPOINT_ROWS = 3 };

/* The extent box and visible count after the `count` values just read into `shape`. */
static int put_extent(bbuf *shape, int64_t count) {
    if (count < 3 || count % 3) return SCAN_DECLINE;
    double v[3], tail[5];
    const uint8_t *at = shape->data + shape->n - (size_t)count * sizeof(double);
    memcpy(v, at, sizeof v);
    double x0 = v[0], x1 = v[0], y0 = v[1], y1 = v[1], seen = v[2] > 0;
    for (int64_t i = 3; i < count; i += 3) {
        memcpy(v, at + (size_t)i * sizeof(double), sizeof v);
        x0 = x0 < v[0] ? x0 : v[0];
        x1 = x1 > v[0] ? x1 : v[0];
        y0 = y0 < v[1] ? y0 : v[1];
        y1 = y1 > v[1] ? y1 : v[1];
        seen += v[2] > 0;
    }
    tail[0] = x0; tail[1] = y0; tail[2] = x1 - x0; tail[3] = y1 - y0; tail[4] = seen;
    return bbuf_put(shape, tail, sizeof tail);
}

typedef struct {
    bbuf image, category, score, bbox, has_bbox, shape, offsets, sizes;
    int64_t n;
} columns;

static void columns_free(columns *c) {
    bbuf_free(&c->image); bbuf_free(&c->category); bbuf_free(&c->score); bbuf_free(&c->bbox);
    bbuf_free(&c->has_bbox); bbuf_free(&c->shape); bbuf_free(&c->offsets); bbuf_free(&c->sizes);
}

/* A compressed RLE {"size": [h, w], "counts": "..."} (other keys passed over): its string
 * appended to c->shape, its size to c->sizes. `depth`: the RLE object's. */
static int read_rle(scanner *s, columns *c, int depth) {
    int64_t size[2];
    int kind, r;
    if ((r = read_rle_object(s, depth, size, &c->shape, NULL, &kind))) return r;
    return bbuf_put(&c->sizes, size, sizeof size);
}

enum { SEEN_IMAGE = 1, SEEN_CATEGORY = 2, SEEN_SCORE = 4, SEEN_BBOX = 8, SEEN_SHAPE = 16,
       SEEN_NULL_BBOX = 32 };

/* One record (an object at s->p, depth 2) appended to the columns. */
static int read_record(scanner *s, columns *c, int field) {
    static const char *SHAPE[] = {"bbox", "segmentation", "keypoints", "keypoints"};
    int seen = 0, r;
    int64_t image = 0, category = 0, count;
    double score = 0, box[4] = {0, 0, 0, 0};
    s->p++;
    if (next(s) == '}') return SCAN_DECLINE;
    while (1) {
        const uint8_t *key;
        size_t len;
        if (read_key(s, &key, &len)) return SCAN_DECLINE;
        if (key_is(key, len, "image_id")) {
            if (seen & SEEN_IMAGE || read_integer(s, &image)) return SCAN_DECLINE;
            seen |= SEEN_IMAGE;
        } else if (key_is(key, len, "category_id")) {
            if (seen & SEEN_CATEGORY || read_integer(s, &category)) return SCAN_DECLINE;
            seen |= SEEN_CATEGORY;
        } else if (key_is(key, len, "score")) {
            if (seen & SEEN_SCORE || read_number(s, &score)) return SCAN_DECLINE;
            seen |= SEEN_SCORE;
        } else if (key_is(key, len, "bbox")) {
            if (seen & SEEN_BBOX) return SCAN_DECLINE;
            seen |= SEEN_BBOX;
            if (field != FIELD_BBOX && next(s) == 'n') {  /* null: no box (Python's get) */
                if (expect_literal(s, "null", 4)) return SCAN_DECLINE;
                seen |= SEEN_NULL_BBOX;
            } else {
                if (next(s) != '[') return SCAN_DECLINE;
                s->p++;
                for (int k = 0; k < 4; k++) {  /* exactly four numbers */
                    if (k && next(s) != ',') return SCAN_DECLINE;
                    if (k) s->p++;
                    if (read_number(s, &box[k])) return SCAN_DECLINE;
                }
                if (next(s) != ']') return SCAN_DECLINE;
                s->p++;
            }
        } else if (field != FIELD_BBOX && key_is(key, len, SHAPE[field])) {
            if (seen & SEEN_SHAPE) return SCAN_DECLINE;
            seen |= SEEN_SHAPE;
            if (field == FIELD_KEYPOINTS || field == FIELD_KEYPOINT_ROWS) {
                if ((r = read_numbers(s, &c->shape, -1, &count))) return r;
                if (field == FIELD_KEYPOINT_ROWS && (r = put_extent(&c->shape, count))) return r;
            } else if ((r = read_rle(s, c, 3))) return r;
        } else if ((r = skip_value(s, 2))) return r;
        int ch = next(s);
        if (ch == ',') { s->p++; continue; }
        if (ch == '}') { s->p++; break; }
        return SCAN_DECLINE;
    }
    int need = SEEN_IMAGE | SEEN_CATEGORY | SEEN_SCORE | (field == FIELD_BBOX ? SEEN_BBOX : SEEN_SHAPE);
    if ((seen & need) != need) return SCAN_DECLINE;
    uint8_t has_box = (seen & SEEN_BBOX) && !(seen & SEEN_NULL_BBOX);
    if ((r = bbuf_put(&c->image, &image, 8)) || (r = bbuf_put(&c->category, &category, 8)) ||
        (r = bbuf_put(&c->score, &score, 8)) || (r = bbuf_put(&c->bbox, box, sizeof box)) ||
        (r = bbuf_put(&c->has_bbox, &has_box, 1)))
        return r;
    if (field != FIELD_BBOX) {
        int64_t end = (int64_t)(field == FIELD_SEGMENTATION ? c->shape.n : c->shape.n / sizeof(double));
        if ((r = bbuf_put(&c->offsets, &end, 8))) return r;
    }
    c->n++;
    return SCAN_OK;
}

/* The whole document: a list of records, nothing after it but white space. */
/* The list, or a part of it (`part`: 0 the whole document; 1 its head, "[" and records up to
 * the buffer's end, which must fall right after a record; 2 its tail, records from the
 * buffer's start, then "]" and the end). */
static int read_results(const uint8_t *data, size_t len, int field, columns *c, int part) {
    scanner s = {data, data + len, extended_precision()};
    int64_t zero = 0;
    int r;
    if ((r = bbuf_put(&c->offsets, &zero, 8))) return r;
    if (part != 2) {
        if (next(&s) != '[') return SCAN_DECLINE;
        s.p++;
    }
    if (part == 0 && next(&s) == ']') s.p++;
    else {
        while (1) {
            if (next(&s) != '{') return SCAN_DECLINE;
            if ((r = read_record(&s, c, field))) return r;
            if (part == 1 && s.p == s.end) return SCAN_OK;
            int ch = next(&s);
            if (ch == ',') { s.p++; continue; }
            if (ch == ']' && part != 1) { s.p++; break; }
            return SCAN_DECLINE;
        }
    }
    if (next(&s) != -1) return SCAN_DECLINE;
    return SCAN_OK;
}

/* Where a large list may be cut in two: the first "}" at or after its middle followed by
 * "," and "{" (whitespace between). Found or not, the parts are checked by their own scans:
 * a cut inside a string or a nested value leaves a head that does not end right after a
 * record, so that scan declines and the whole list is scanned in one piece. 0: none. */
static size_t cut_point(const uint8_t *data, size_t len) {
    const uint8_t *p = data + len / 2, *end = data + len;
    const uint8_t *stop = (size_t)(end - p) > ((size_t)1 << 22) ? p + ((size_t)1 << 22) : end;
    while (p < stop) {
        const uint8_t *close = memchr(p, '}', (size_t)(stop - p));
        if (!close) return 0;
        const uint8_t *q = close + 1;
        while (q < end && (*q == ' ' || *q == '\n' || *q == '\r' || *q == '\t')) q++;
        if (q < end && *q == ',') {
            q++;
            while (q < end && (*q == ' ' || *q == '\n' || *q == '\r' || *q == '\t')) q++;
            if (q < end && *q == '{') return (size_t)(close + 1 - data);
        }
        p = close + 1;
    }
    return 0;
}

typedef struct {
    const uint8_t *data;
    size_t len, cut, tail;  /* the head is data[0, cut), the tail data[tail, len) */
    int field, result[2];
    columns c[2];
} halves;

static int scan_half(void *ctx, int part) {
    halves *h = ctx;
    h->result[part] = part == 0 ? read_results(h->data, h->cut, h->field, &h->c[0], 1)
                                : read_results(h->data + h->tail, h->len - h->tail, h->field, &h->c[1], 2);
    return 0;
}

/* The tail's columns appended to the head's (its offsets moved by the head's last), each of
 * the tail's freed once it is copied: the join holds the columns once and one tail column,
 * not one and a half times the columns (Objects365's 1.2 million boxes: 34 MB less at the
 * peak). */
static int join_halves(columns *a, columns *b) {
    bbuf *to[] = {&a->image, &a->category, &a->score, &a->bbox, &a->has_bbox, &a->shape, &a->sizes};
    bbuf *from[] = {&b->image, &b->category, &b->score, &b->bbox, &b->has_bbox, &b->shape, &b->sizes};
    int r;
    for (int k = 0; k < 7; k++) {
        if ((r = bbuf_put(to[k], from[k]->data, from[k]->n))) return r;
        bbuf_free(from[k]);
    }
    int64_t shift, v;
    memcpy(&shift, a->offsets.data + a->offsets.n - 8, 8);
    for (size_t j = 8; j < b->offsets.n; j += 8) {
        memcpy(&v, b->offsets.data + j, 8);
        v += shift;
        if ((r = bbuf_put(&a->offsets, &v, 8))) return r;
    }
    bbuf_free(&b->offsets);
    a->n += b->n;
    return SCAN_OK;
}

/* read_results of the whole list, in two halves on two threads when asked and a cut is found
 * (the same columns: a cut that is not between two records fails a half's scan, and the
 * list is then scanned whole). Called with the GIL released. */
static int read_results_split(const uint8_t *data, size_t len, int field, columns *c, int threads,
                              long long min_split) {
    size_t cut = threads >= 2 && min_split >= 0 && len >= (size_t)min_split ? cut_point(data, len) : 0;
    if (!cut) return read_results(data, len, field, c, 0);
    halves *h = calloc(1, sizeof(halves));
    if (!h) return SCAN_NOMEM;
    h->data = data;
    h->len = len;
    h->cut = cut;
    h->field = field;
    const uint8_t *q = data + cut;
    while (*q != '{') q++;  /* (cut_point saw it) */
    h->tail = (size_t)(q - data);
    int r = rpx_run_parts(2, scan_half, h) ? SCAN_NOMEM : SCAN_OK;
    if (r == SCAN_OK && (h->result[0] == SCAN_NOMEM || h->result[1] == SCAN_NOMEM)) r = SCAN_NOMEM;
    if (r == SCAN_OK && h->result[0] == SCAN_OK && h->result[1] == SCAN_OK) {
        r = join_halves(&h->c[0], &h->c[1]);
        if (r == SCAN_OK) {
            *c = h->c[0];
            memset(&h->c[0], 0, sizeof(columns));
        }
    } else if (r == SCAN_OK) {
        r = read_results(data, len, field, c, 0);  /* not two halves of a list: in one piece */
    }
    columns_free(&h->c[0]);
    columns_free(&h->c[1]);
    free(h);
    return r;
}

PyObject *rpx_coco_results(PyObject *self, PyObject *args) {
    PyObject *data_o;
    int field, threads = 1;
    long long min_split = (long long)1 << 24;  /* (tests give less, to split small lists) */
    if (!PyArg_ParseTuple(args, "Oi|iL", &data_o, &field, &threads, &min_split)) return NULL;
    if (field < FIELD_BBOX || field > FIELD_KEYPOINT_ROWS) {
        PyErr_SetString(PyExc_ValueError, "coco_results: field must be 0 (bbox), 1 "
                        "(segmentation), 2 (keypoints) or 3 (keypoint rows)");
        return NULL;
    }
    struct lconv *conv = localeconv();  /* strtod reads the locale's decimal point */
    if (!conv || strcmp(conv->decimal_point, ".") != 0) Py_RETURN_NONE;
    Py_buffer data;
    if (rpx_get_buffer(data_o, &data, BUF_BYTES, 0, "data")) return NULL;
    columns c;
    memset(&c, 0, sizeof c);
    int r;
    Py_BEGIN_ALLOW_THREADS
    r = read_results_split(data.buf, (size_t)data.len, field, &c, threads, min_split);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&data);
    PyObject *result = NULL;
    if (r == SCAN_NOMEM) { PyErr_NoMemory(); goto done; }
    if (r != SCAN_OK) { result = Py_NewRef(Py_None); goto done; }
    bbuf *parts[] = {&c.image, &c.category, &c.score, &c.bbox, &c.has_bbox, &c.shape, &c.offsets, &c.sizes};
    result = PyTuple_New(9);
    if (!result) goto done;
    PyObject *count = PyLong_FromLongLong(c.n);
    if (!count) { Py_CLEAR(result); goto done; }
    PyTuple_SET_ITEM(result, 0, count);
    for (int k = 0; k < 8; k++) {
        PyObject *b;
        if (k == 5 && field == FIELD_SEGMENTATION) {
            /* RLE strings as bytes (the reader cuts each mask's from it): made here, the copy
             * with the GIL released, not on the caller's thread */
            b = parts[k]->n > (size_t)PY_SSIZE_T_MAX ? PyErr_NoMemory()
                : PyBytes_FromStringAndSize(NULL, (Py_ssize_t)parts[k]->n);
            if (!b) { Py_CLEAR(result); goto done; }
            Py_BEGIN_ALLOW_THREADS
            if (parts[k]->n) memcpy(PyBytes_AS_STRING(b), parts[k]->data, parts[k]->n);
            Py_END_ALLOW_THREADS
            bbuf_free(parts[k]);
            PyTuple_SET_ITEM(result, k + 1, b);
            continue;
        }
        /* the column's own memory, writable (numpy views it as the arrays the Python path
         * makes): no copy of a 200 MB keypoint column and no page faults for one */
        b = rpx_owned(parts[k]->data, parts[k]->n);
        parts[k]->data = NULL;
        parts[k]->n = parts[k]->cap = 0;
        if (!b) { Py_CLEAR(result); goto done; }
        PyTuple_SET_ITEM(result, k + 1, b);
    }
done:
    columns_free(&c);
    return result;
}
