/* COCO GT files read into columns (boxes, keypoints or masks' segmentations): the scanner of json_scan.h turns a
 * document {"images": [...], "annotations": [...], "categories": [...], ...} into flat
 * buffers, without building a Python object per value.
 *
 * It answers only the ordinary case and declines everything else (returns None): any JSON
 * syntax error, a top-level value that is not an object, one of the three lists missing or
 * given twice, a member that is not an object, a key of rpx's given twice or written with an
 * escape, an id, image_id or category_id that is not a JSON integer within int64, a
 * file_name or name that is not a string of ASCII text, a height or width that is neither a
 * JSON integer nor null, a bbox that is not a list of four numbers (or missing), an area that
 * is neither a number nor null, an iscrowd, ignore or difficult flag other than 0, 1, true or
 * false; for keypoints, a keypoints list of anything but numbers, a bbox neither four numbers
 * nor null, a num_keypoints neither an integer nor null; for masks, a segmentation neither
 * polygons (lists of six or more numbers, an even count) nor an RLE of a two-integer size and
 * a string or a list of integers as counts. The Python path (rpx_cli/io/coco_files.py: orjson, then the checks of
 * rpx_cli/io/boxes.py) then reads the file and words the error; rpx_cli/io/coco_gt_columns.py
 * declines too where a value would fail those checks. tests/test_native_coco_gt.py compares
 * the two paths bit for bit. */
#include "json_scan.h"

typedef struct {
    /* images: id, (height, width) (-1 when not a positive integer), file_name (given or not) */
    bbuf image_id, image_hw, image_name, image_name_at, image_named;
    /* categories: id, name (given or not) */
    bbuf category_id, category_name, category_name_at, category_named;
    /* annotations: image_id, category_id, bbox, area (given or not), flags */
    bbuf ann_image, ann_category, ann_bbox, ann_area, ann_has_area, ann_crowd, ann_ignore,
        ann_zero_id;
    /* keypoints GT: the values cut by offsets, whether a bbox was given, num_keypoints */
    bbuf ann_keypoints, ann_keypoints_at, ann_has_bbox, ann_count, ann_has_count;
    /* masks GT, every annotation an entry in each: its kind (0 polygons, 1 an uncompressed
     * RLE, 2 a compressed one); the polygons' numbers, each polygon's end (in numbers) and
     * each annotation's last polygon (its end in polygons); an RLE's (h, w) (-1, -1 for
     * polygons), its counts (integers) and its string, each cut by its end */
    bbuf ann_kind, ann_xy, ann_ring_at, ann_poly_at, ann_rle_size, ann_runs, ann_runs_at,
        ann_text, ann_text_at;
    int64_t n_images, n_categories, n_annotations;
    int ignore_keys;  /* some annotation has an ignore or difficult key */
    int keypoints;    /* the shapes are keypoints (the bbox optional) */
    int masks;        /* the shapes are segmentations (the bbox not read); else boxes */
} gt_columns;

#define GT_BUFFERS 31

static bbuf *gt_buffer(gt_columns *c, int k) {
    bbuf *all[GT_BUFFERS] = {&c->image_id, &c->image_hw, &c->image_name, &c->image_name_at,
                             &c->image_named, &c->category_id, &c->category_name,
                             &c->category_name_at, &c->category_named, &c->ann_image,
                             &c->ann_category, &c->ann_bbox, &c->ann_area, &c->ann_has_area,
                             &c->ann_crowd, &c->ann_ignore, &c->ann_zero_id,
                             &c->ann_keypoints, &c->ann_keypoints_at, &c->ann_has_bbox,
                             &c->ann_count, &c->ann_has_count, &c->ann_kind, &c->ann_xy,
                             &c->ann_ring_at, &c->ann_poly_at, &c->ann_rle_size, &c->ann_runs,
                             &c->ann_runs_at, &c->ann_text, &c->ann_text_at};
    return all[k];
}

/* A string value (not escaped into anything but ASCII) appended to `text`, its end to `at`. */
static int read_name(scanner *s, bbuf *text, bbuf *at) {
    const uint8_t *raw;
    size_t len;
    int esc, r;
    if (next(s) != '"' || scan_string(s, &raw, &len, &esc)) return SCAN_DECLINE;
    if ((r = put_ascii(raw, len, text))) return r;
    int64_t end = (int64_t)text->n;
    return bbuf_put(at, &end, 8);
}

/* 0, 1, true or false (Python: an int or bool in {0, 1}). */
static int read_flag(scanner *s, uint8_t *out) {
    int c = next(s);
    int64_t v;
    if (c == 't') { *out = 1; return expect_literal(s, "true", 4); }
    if (c == 'f') { *out = 0; return expect_literal(s, "false", 5); }
    if (read_integer(s, &v) || (v != 0 && v != 1)) return SCAN_DECLINE;
    *out = (uint8_t)v;
    return SCAN_OK;
}

/* A JSON integer within int64, or null (then *given = 0). */
static int read_integer_or_null(scanner *s, int64_t *out, int *given) {
    if (next(s) == 'n') { *given = 0; return expect_literal(s, "null", 4); }
    *given = 1;
    return read_integer(s, out);
}

/* The members of a list at s->p, each an object read by `member` (depth 3). */
static int read_list(scanner *s, gt_columns *c, int (*member)(scanner *, gt_columns *)) {
    if (next(s) != '[') return SCAN_DECLINE;
    s->p++;
    if (next(s) == ']') { s->p++; return SCAN_OK; }
    while (1) {
        int r;
        if (next(s) != '{') return SCAN_DECLINE;
        s->p++;
        if ((r = member(s, c))) return r;
        int ch = next(s);
        if (ch == ',') { s->p++; continue; }
        if (ch == ']') { s->p++; return SCAN_OK; }
        return SCAN_DECLINE;
    }
}

/* After a member's value: ',' (1: another key follows) or '}' (0: the member ends). */
static int member_goes_on(scanner *s, int *more) {
    int ch = next(s);
    if (ch == ',') { s->p++; *more = 1; return SCAN_OK; }
    if (ch == '}') { s->p++; *more = 0; return SCAN_OK; }
    return SCAN_DECLINE;
}

static int read_image(scanner *s, gt_columns *c) {
    int seen_id = 0, seen_name = 0, seen_h = 0, seen_w = 0, more = 1, r, given;
    int64_t id = 0, hw[2] = {-1, -1}, v;
    if (next(s) == '}') return SCAN_DECLINE;  /* no id */
    while (more) {
        const uint8_t *key;
        size_t len;
        if (read_key(s, &key, &len)) return SCAN_DECLINE;
        if (key_is(key, len, "id")) {
            if (seen_id++ || read_integer(s, &id)) return SCAN_DECLINE;
        } else if (key_is(key, len, "file_name")) {
            if (seen_name++) return SCAN_DECLINE;
            if ((r = read_name(s, &c->image_name, &c->image_name_at))) return r;
        } else if (key_is(key, len, "height") || key_is(key, len, "width")) {
            int k = key[0] == 'w';
            if ((k ? seen_w++ : seen_h++) || read_integer_or_null(s, &v, &given)) return SCAN_DECLINE;
            hw[k] = given && v > 0 ? v : -1;
        } else if ((r = skip_value(s, 3))) return r;
        if (member_goes_on(s, &more)) return SCAN_DECLINE;
    }
    if (!seen_id) return SCAN_DECLINE;
    uint8_t named = (uint8_t)seen_name;
    if (!seen_name) {  /* no name: an empty one stands in (Python names it by its id) */
        int64_t end = (int64_t)c->image_name.n;
        if ((r = bbuf_put(&c->image_name_at, &end, 8))) return r;
    }
    if ((r = bbuf_put(&c->image_id, &id, 8)) || (r = bbuf_put(&c->image_hw, hw, 16)) ||
        (r = bbuf_put(&c->image_named, &named, 1)))
        return r;
    c->n_images++;
    return SCAN_OK;
}

static int read_category(scanner *s, gt_columns *c) {
    int seen_id = 0, seen_name = 0, more = 1, r;
    int64_t id = 0;
    if (next(s) == '}') return SCAN_DECLINE;
    while (more) {
        const uint8_t *key;
        size_t len;
        if (read_key(s, &key, &len)) return SCAN_DECLINE;
        if (key_is(key, len, "id")) {
            if (seen_id++ || read_integer(s, &id)) return SCAN_DECLINE;
        } else if (key_is(key, len, "name")) {
            if (seen_name++) return SCAN_DECLINE;
            if ((r = read_name(s, &c->category_name, &c->category_name_at))) return r;
        } else if ((r = skip_value(s, 3))) return r;
        if (member_goes_on(s, &more)) return SCAN_DECLINE;
    }
    if (!seen_id) return SCAN_DECLINE;
    uint8_t named = (uint8_t)seen_name;
    if (!seen_name) {
        int64_t end = (int64_t)c->category_name.n;
        if ((r = bbuf_put(&c->category_name_at, &end, 8))) return r;
    }
    if ((r = bbuf_put(&c->category_id, &id, 8)) || (r = bbuf_put(&c->category_named, &named, 1)))
        return r;
    c->n_categories++;
    return SCAN_OK;
}

/* A GT segmentation (masks): polygons [[x1, y1, ...], ...] — at least one, each a list of
 * at least six numbers, an even count — or an RLE {"size": [h, w], "counts": a string or
 * a list of integers} (other keys passed over; the size's values are checked by Python).
 * Its entries appended to every masks buffer. */
static int read_segmentation(scanner *s, gt_columns *c) {
    int r;
    uint8_t kind;
    int64_t size[2] = {-1, -1};
    if (next(s) == '[') {
        s->p++;
        if (next(s) == ']') return SCAN_DECLINE;  /* no polygon: Python words it */
        while (1) {
            int64_t n, end;
            if ((r = read_numbers(s, &c->ann_xy, -1, &n))) return r;
            if (n < 6 || n % 2) return SCAN_DECLINE;
            end = (int64_t)(c->ann_xy.n / sizeof(double));
            if ((r = bbuf_put(&c->ann_ring_at, &end, 8))) return r;
            int ch = next(s);
            if (ch == ',') { s->p++; continue; }
            if (ch == ']') { s->p++; break; }
            return SCAN_DECLINE;
        }
        kind = 0;
    } else {
        int k;
        if ((r = read_rle_object(s, 4, size, &c->ann_text, &c->ann_runs, &k))) return r;
        kind = (uint8_t)k;
    }
    int64_t rings = (int64_t)(c->ann_ring_at.n / 8) - 1, runs = (int64_t)(c->ann_runs.n / 8),
            chars = (int64_t)c->ann_text.n;
    if ((r = bbuf_put(&c->ann_kind, &kind, 1)) || (r = bbuf_put(&c->ann_poly_at, &rings, 8)) ||
        (r = bbuf_put(&c->ann_rle_size, size, sizeof size)) || (r = bbuf_put(&c->ann_runs_at, &runs, 8)) ||
        (r = bbuf_put(&c->ann_text_at, &chars, 8)))
        return r;
    return SCAN_OK;
}

enum { ANN_IMAGE = 1, ANN_CATEGORY = 2, ANN_BBOX = 4, ANN_AREA = 8, ANN_CROWD = 16,
       ANN_IGNORE = 32, ANN_DIFFICULT = 64, ANN_ID = 128, ANN_KEYPOINTS = 256, ANN_COUNT = 512 };

static int read_annotation(scanner *s, gt_columns *c) {
    int seen = 0, more = 1, r;
    int64_t image = 0, category = 0, count = 0, n_values;
    double box[4] = {0, 0, 0, 0}, area = 0;
    uint8_t has_area = 0, crowd = 0, ignore = 0, difficult = 0, zero_id = 0, has_box = 0,
        has_count = 0;
    if (next(s) == '}') return SCAN_DECLINE;
    while (more) {
        const uint8_t *key;
        size_t len;
        if (read_key(s, &key, &len)) return SCAN_DECLINE;
        if (key_is(key, len, "image_id")) {
            if (seen & ANN_IMAGE || read_integer(s, &image)) return SCAN_DECLINE;
            seen |= ANN_IMAGE;
        } else if (key_is(key, len, "category_id")) {
            if (seen & ANN_CATEGORY || read_integer(s, &category)) return SCAN_DECLINE;
            seen |= ANN_CATEGORY;
        } else if (c->masks && key_is(key, len, "segmentation")) {
            if (seen & ANN_KEYPOINTS) return SCAN_DECLINE;  /* (the shape's bit) */
            seen |= ANN_KEYPOINTS;
            if ((r = read_segmentation(s, c))) return r;
        } else if (key_is(key, len, "bbox") && !c->masks) {  /* (masks: not read, as Python) */
            if (seen & ANN_BBOX) return SCAN_DECLINE;
            seen |= ANN_BBOX;
            if (c->keypoints && next(s) == 'n') {  /* null: no box (Python's get) */
                if (expect_literal(s, "null", 4)) return SCAN_DECLINE;
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
                has_box = 1;
            }
        } else if (c->keypoints && key_is(key, len, "keypoints")) {
            if (seen & ANN_KEYPOINTS) return SCAN_DECLINE;
            seen |= ANN_KEYPOINTS;
            if ((r = read_numbers(s, &c->ann_keypoints, -1, &n_values))) return r;
        } else if (c->keypoints && key_is(key, len, "num_keypoints")) {
            int given;
            if (seen & ANN_COUNT || read_integer_or_null(s, &count, &given)) return SCAN_DECLINE;
            seen |= ANN_COUNT;
            has_count = (uint8_t)given;
        } else if (key_is(key, len, "area")) {
            if (seen & ANN_AREA) return SCAN_DECLINE;
            seen |= ANN_AREA;
            if (next(s) == 'n') {
                if (expect_literal(s, "null", 4)) return SCAN_DECLINE;
            } else {
                if (read_number(s, &area)) return SCAN_DECLINE;
                has_area = 1;
            }
        } else if (key_is(key, len, "iscrowd")) {
            if (seen & ANN_CROWD || read_flag(s, &crowd)) return SCAN_DECLINE;
            seen |= ANN_CROWD;
        } else if (key_is(key, len, "ignore")) {
            if (seen & ANN_IGNORE || read_flag(s, &ignore)) return SCAN_DECLINE;
            seen |= ANN_IGNORE;
        } else if (key_is(key, len, "difficult")) {
            if (seen & ANN_DIFFICULT || read_flag(s, &difficult)) return SCAN_DECLINE;
            seen |= ANN_DIFFICULT;
        } else if (key_is(key, len, "id")) {  /* 0 marks the annotation (pycocotools' quirk) */
            int ch = next(s), is_int;
            int64_t id;
            double v;
            if (seen & ANN_ID) return SCAN_DECLINE;
            seen |= ANN_ID;
            if (ch == '-' || is_digit(ch)) {
                if (scan_number(s, &v, &is_int, &id)) return SCAN_DECLINE;
                zero_id = is_int && id == 0;
            } else if ((r = skip_value(s, 3))) return r;
        } else if ((r = skip_value(s, 3))) return r;
        if (member_goes_on(s, &more)) return SCAN_DECLINE;
    }
    int need = ANN_IMAGE | ANN_CATEGORY | (c->keypoints || c->masks ? ANN_KEYPOINTS : ANN_BBOX);
    if ((seen & need) != need) return SCAN_DECLINE;
    if (c->keypoints) {
        int64_t end = (int64_t)(c->ann_keypoints.n / sizeof(double));
        if ((r = bbuf_put(&c->ann_keypoints_at, &end, 8)) || (r = bbuf_put(&c->ann_has_bbox, &has_box, 1)) ||
            (r = bbuf_put(&c->ann_count, &count, 8)) || (r = bbuf_put(&c->ann_has_count, &has_count, 1)))
            return r;
    }
    if (seen & (ANN_IGNORE | ANN_DIFFICULT)) c->ignore_keys = 1;
    ignore |= difficult;
    if ((r = bbuf_put(&c->ann_image, &image, 8)) || (r = bbuf_put(&c->ann_category, &category, 8)) ||
        (r = bbuf_put(&c->ann_bbox, box, sizeof box)) || (r = bbuf_put(&c->ann_area, &area, 8)) ||
        (r = bbuf_put(&c->ann_has_area, &has_area, 1)) || (r = bbuf_put(&c->ann_crowd, &crowd, 1)) ||
        (r = bbuf_put(&c->ann_ignore, &ignore, 1)) || (r = bbuf_put(&c->ann_zero_id, &zero_id, 1)))
        return r;
    c->n_annotations++;
    return SCAN_OK;
}

/* The whole document: an object holding the three lists once each, nothing after it. */
static int read_gt(const uint8_t *data, size_t len, gt_columns *c) {
    scanner s = {data, data + len, extended_precision()};
    int64_t zero = 0;
    int r, seen = 0, more = 1;
    if ((r = bbuf_put(&c->image_name_at, &zero, 8)) || (r = bbuf_put(&c->category_name_at, &zero, 8)) ||
        (r = bbuf_put(&c->ann_keypoints_at, &zero, 8)) || (r = bbuf_put(&c->ann_ring_at, &zero, 8)) ||
        (r = bbuf_put(&c->ann_poly_at, &zero, 8)) || (r = bbuf_put(&c->ann_runs_at, &zero, 8)) ||
        (r = bbuf_put(&c->ann_text_at, &zero, 8)))
        return r;
    if (next(&s) != '{') return SCAN_DECLINE;
    s.p++;
    if (next(&s) == '}') return SCAN_DECLINE;
    while (more) {
        const uint8_t *key;
        size_t n;
        if (read_key(&s, &key, &n)) return SCAN_DECLINE;
        if (key_is(key, n, "images")) {
            if (seen & 1) return SCAN_DECLINE;
            seen |= 1;
            if ((r = read_list(&s, c, read_image))) return r;
        } else if (key_is(key, n, "annotations")) {
            if (seen & 2) return SCAN_DECLINE;
            seen |= 2;
            if ((r = read_list(&s, c, read_annotation))) return r;
        } else if (key_is(key, n, "categories")) {
            if (seen & 4) return SCAN_DECLINE;
            seen |= 4;
            if ((r = read_list(&s, c, read_category))) return r;
        } else if ((r = skip_value(&s, 1))) return r;
        if (member_goes_on(&s, &more)) return SCAN_DECLINE;
    }
    if (seen != 7 || next(&s) != -1) return SCAN_DECLINE;
    return SCAN_OK;
}

PyObject *rpx_coco_gt(PyObject *self, PyObject *args) {
    PyObject *data_o;
    int field;
    if (!PyArg_ParseTuple(args, "Oi", &data_o, &field)) return NULL;
    if (field != 0 && field != 1 && field != 2) {
        PyErr_SetString(PyExc_ValueError, "coco_gt: field must be 0 (bbox), 1 (segmentation) or 2 (keypoints)");
        return NULL;
    }
    struct lconv *conv = localeconv();  /* strtod reads the locale's decimal point */
    if (!conv || strcmp(conv->decimal_point, ".") != 0) Py_RETURN_NONE;
    Py_buffer data;
    if (rpx_get_buffer(data_o, &data, BUF_BYTES, 0, "data")) return NULL;
    gt_columns c;
    memset(&c, 0, sizeof c);
    c.keypoints = field == 2;
    c.masks = field == 1;
    int r;
    Py_BEGIN_ALLOW_THREADS
    r = read_gt(data.buf, (size_t)data.len, &c);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&data);
    PyObject *result = NULL;
    if (r == SCAN_NOMEM) { PyErr_NoMemory(); goto done; }
    if (r != SCAN_OK) { result = Py_NewRef(Py_None); goto done; }
    result = PyTuple_New(GT_BUFFERS + 4);
    if (!result) goto done;
    long long counts[4] = {c.n_images, c.n_categories, c.n_annotations, c.ignore_keys};
    for (int k = 0; k < 4; k++) {
        PyObject *n = PyLong_FromLongLong(counts[k]);
        if (!n) { Py_CLEAR(result); goto done; }
        PyTuple_SET_ITEM(result, k, n);
    }
    for (int k = 0; k < GT_BUFFERS; k++) {
        bbuf *b = gt_buffer(&c, k);
        if (b->n > (size_t)PY_SSIZE_T_MAX) { PyErr_NoMemory(); Py_CLEAR(result); goto done; }
        PyObject *bytes = PyByteArray_FromStringAndSize(b->n ? (const char *)b->data : "", (Py_ssize_t)b->n);
        bbuf_free(b);
        if (!bytes) { Py_CLEAR(result); goto done; }
        PyTuple_SET_ITEM(result, k + 4, bytes);
    }
done:
    for (int k = 0; k < GT_BUFFERS; k++) bbuf_free(gt_buffer(&c, k));
    return result;
}
