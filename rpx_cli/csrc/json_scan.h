/* A strict JSON scanner of rpx's own (no JSON library), shared by the COCO readers of the
 * native core (coco_json.c: results files; coco_gt.c: GT files): growable byte buffers,
 * strings checked (RFC 8259, strictly), numbers converted as Python's float() converts their
 * text, any value checked and passed over. Every function answers SCAN_OK, SCAN_DECLINE (not
 * the ordinary case: the Python path reads the file and words the error) or SCAN_NOMEM; the
 * number conversion is described in coco_json.c. Static functions: each file including this
 * has its own copy. */
#ifndef RPX_JSON_SCAN_H
#define RPX_JSON_SCAN_H

#include "core.h"
#include <float.h>
#include <locale.h>
#include <math.h>
#include <string.h>

#define MAX_DEPTH 64     /* the top-level list is depth 1, a record 2 */
#define MAX_NUMBER 400   /* longest number token converted (Python refuses ints > 4300 digits) */

enum { SCAN_OK = 0, SCAN_DECLINE = -1, SCAN_NOMEM = -2 };

/* A growable byte buffer (malloc'd; sizes checked against overflow). */
typedef struct {
    uint8_t *data;
    size_t n, cap;
} bbuf;

static void bbuf_free(bbuf *b) { free(b->data); b->data = NULL; b->n = b->cap = 0; }

static int bbuf_grow(bbuf *b, size_t want);

static inline int bbuf_put(bbuf *b, const void *x, size_t size) {
    if (size > SIZE_MAX - b->n) return SCAN_NOMEM;
    size_t want = b->n + size;
    if (want > b->cap && bbuf_grow(b, want)) return SCAN_NOMEM;
    if (size) memcpy(b->data + b->n, x, size);
    b->n = want;
    return SCAN_OK;
}

/* Room for `want` bytes (capacity doubled). */
static int bbuf_grow(bbuf *b, size_t want) {
    size_t cap = b->cap ? b->cap : 1024;
    while (cap < want) {
        if (cap > SIZE_MAX / 2) return SCAN_NOMEM;
        cap *= 2;
    }
    uint8_t *data = realloc(b->data, cap);
    if (!data) return SCAN_NOMEM;
    b->data = data;
    b->cap = cap;
    return SCAN_OK;
}

typedef struct {
    const uint8_t *p, *end;
    int extended;  /* long double arithmetic carries 64 bits here (x87's precision control) */
} scanner;

static inline void skip_ws(scanner *s) {
    while (s->p < s->end && (*s->p == ' ' || *s->p == '\n' || *s->p == '\r' || *s->p == '\t')) s->p++;
}

/* The next byte after white space, or -1 at the end. */
static inline int next(scanner *s) {
    skip_ws(s);
    return s->p < s->end ? *s->p : -1;
}

static inline int is_digit(int c) { return c >= '0' && c <= '9'; }

static int hex4(const uint8_t *q, const uint8_t *end, unsigned *out) {
    if (end - q < 4) return SCAN_DECLINE;
    unsigned v = 0;
    for (int i = 0; i < 4; i++) {
        int c = q[i], d;
        if (c >= '0' && c <= '9') d = c - '0';
        else if (c >= 'a' && c <= 'f') d = c - 'a' + 10;
        else if (c >= 'A' && c <= 'F') d = c - 'A' + 10;
        else return SCAN_DECLINE;
        v = v * 16 + (unsigned)d;
    }
    *out = v;
    return SCAN_OK;
}

/* The bytes of one valid UTF-8 sequence of more than one byte at q (0 when invalid:
 * overlong forms, UTF-16 surrogates and code points beyond U+10FFFF are invalid). */
static size_t utf8_length(const uint8_t *q, const uint8_t *end) {
    size_t left = (size_t)(end - q);
    uint8_t c = q[0];
    uint8_t lo = 0x80, hi = 0xBF;
    size_t n;
    if (c >= 0xC2 && c <= 0xDF) n = 2;
    else if (c >= 0xE0 && c <= 0xEF) {
        n = 3;
        if (c == 0xE0) lo = 0xA0;
        if (c == 0xED) hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
        n = 4;
        if (c == 0xF0) lo = 0x90;
        if (c == 0xF4) hi = 0x8F;
    } else return 0;
    if (left < n) return 0;
    if (q[1] < lo || q[1] > hi) return 0;
    for (size_t i = 2; i < n; i++)
        if (q[i] < 0x80 || q[i] > 0xBF) return 0;
    return n;
}

/* A string at s->p (which is '"'): checked, and its raw bytes between the quotes given
 * (escaped: whether it holds a backslash). */
static int scan_string(scanner *s, const uint8_t **raw, size_t *len, int *escaped) {
    const uint8_t *q = s->p + 1, *end = s->end;
    int esc = 0;
    while (1) {
        if (q >= end) return SCAN_DECLINE;
        uint8_t c = *q;
        if (c == '"') break;
        if (c < 0x20) return SCAN_DECLINE;
        if (c == '\\') {
            esc = 1;
            if (end - q < 2) return SCAN_DECLINE;
            uint8_t e = q[1];
            if (e == 'u') {
                unsigned u;
                if (hex4(q + 2, end, &u)) return SCAN_DECLINE;
                q += 6;
                if (u >= 0xDC00 && u <= 0xDFFF) return SCAN_DECLINE; /* a lone low surrogate */
                if (u >= 0xD800 && u <= 0xDBFF) {                   /* needs its low half */
                    unsigned v;
                    if (end - q < 6 || q[0] != '\\' || q[1] != 'u' || hex4(q + 2, end, &v) ||
                        v < 0xDC00 || v > 0xDFFF)
                        return SCAN_DECLINE;
                    q += 6;
                }
                continue;
            }
            if (!(e == '"' || e == '\\' || e == '/' || e == 'b' || e == 'f' || e == 'n' ||
                  e == 'r' || e == 't'))
                return SCAN_DECLINE;
            q += 2;
            continue;
        }
        if (c < 0x80) { q++; continue; }
        size_t n = utf8_length(q, end);
        if (!n) return SCAN_DECLINE;
        q += n;
    }
    *raw = s->p + 1;
    *len = (size_t)(q - (s->p + 1));
    *escaped = esc;
    s->p = q + 1;
    return SCAN_OK;
}

/* The raw bytes of a checked string, unescaped, appended to `out`; declined when the text
 * is not ASCII (a COCO RLE string is). */
static int put_ascii(const uint8_t *raw, size_t len, bbuf *out) {
    size_t i = 0;
    while (i < len) {
        size_t j = i;
        while (j < len && raw[j] != '\\' && raw[j] < 0x80) j++;
        if (j > i && bbuf_put(out, raw + i, j - i)) return SCAN_NOMEM;
        if (j >= len) break;
        if (raw[j] >= 0x80) return SCAN_DECLINE;
        /* an escape (checked by scan_string: a full one is there) */
        uint8_t e = raw[j + 1], c;
        size_t step = 2;
        switch (e) {
        case 'b': c = '\b'; break;
        case 'f': c = '\f'; break;
        case 'n': c = '\n'; break;
        case 'r': c = '\r'; break;
        case 't': c = '\t'; break;
        case 'u': {
            unsigned u;
            if (hex4(raw + j + 2, raw + len, &u) || u >= 0x80) return SCAN_DECLINE;
            c = (uint8_t)u;
            step = 6;
            break;
        }
        default: c = e; /* '"', '\\', '/' */
        }
        if (bbuf_put(out, &c, 1)) return SCAN_NOMEM;
        i = j + step;
    }
    return SCAN_OK;
}

static const double POW10[23] = {1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
                                 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

/* strtod on a NUL-terminated copy of the n <= MAX_NUMBER bytes of a checked number token
 * (out of line: the common paths keep a small frame). */
#if defined(__GNUC__)
__attribute__((noinline))
#endif
static int convert_slowly(const uint8_t *start, size_t n, double *value) {
    char copy[MAX_NUMBER + 1], *stop = NULL;
    if (n > MAX_NUMBER) return SCAN_DECLINE;
    memcpy(copy, start, n);
    copy[n] = '\0';
    double v = strtod(copy, &stop);
    if (stop != copy + n) return SCAN_DECLINE;
    *value = v;
    return SCAN_OK;
}

/* A number at s->p, strictly as JSON writes one: its value as Python's float() of the text
 * would give (float() of the int for an integer token), and (is_int) whether it is an
 * integer token within int64 (then `integer` holds it). */
static int scan_number(scanner *s, double *value, int *is_int, int64_t *integer) {
    const uint8_t *start = s->p, *q = s->p, *end = s->end;
    int neg = 0, fraction = 0, exponent = 0, truncated = 0, nsig = 0;
    uint64_t mant = 0;
    int64_t exp10 = 0;
    if (q < end && *q == '-') { neg = 1; q++; }
    if (q >= end || !is_digit(*q)) return SCAN_DECLINE;
    if (*q == '0') q++;
    else {
        while (q < end && is_digit(*q)) {
            if (nsig < 19) { mant = mant * 10 + (uint64_t)(*q - '0'); nsig++; }
            else { truncated = 1; exp10++; }
            q++;
        }
    }
    if (q < end && *q == '.') {
        fraction = 1;
        q++;
        if (q >= end || !is_digit(*q)) return SCAN_DECLINE;
        while (q < end && is_digit(*q)) {
            int d = *q - '0';
            if (mant == 0 && d == 0) exp10--;         /* a leading zero */
            else if (nsig < 19) { mant = mant * 10 + (uint64_t)d; nsig++; exp10--; }
            else truncated = 1;
            q++;
        }
    }
    if (q < end && (*q == 'e' || *q == 'E')) {
        exponent = 1;
        q++;
        int eneg = 0;
        if (q < end && (*q == '+' || *q == '-')) { eneg = *q == '-'; q++; }
        if (q >= end || !is_digit(*q)) return SCAN_DECLINE;
        int64_t e = 0;
        while (q < end && is_digit(*q)) {
            if (e < 100000000) e = e * 10 + (*q - '0');
            q++;
        }
        exp10 += eneg ? -e : e;
    }
    if ((size_t)(q - start) > MAX_NUMBER) return SCAN_DECLINE;
    s->p = q;
    *is_int = 0;
    if (!fraction && !exponent) {
        /* an integer token: Python's int, then float(int) (correctly rounded) */
        if (!truncated && (neg ? mant <= (uint64_t)INT64_MAX + 1 : mant <= (uint64_t)INT64_MAX)) {
            *is_int = 1;
            *integer = neg ? (int64_t)(0 - mant) : (int64_t)mant;
            *value = (double)*integer;  /* "-0" is 0.0, as int("-0") */
            return SCAN_OK;
        }
    } else if (!truncated && nsig <= 15 && exp10 >= -22 && exp10 <= 22) {
        double v = (double)mant;  /* exact: < 10^15 < 2^53 */
        v = exp10 < 0 ? v / POW10[-exp10] : v * POW10[exp10];  /* one correctly rounded step */
        *value = neg ? -v : v;
        return SCAN_OK;
    } else if (mant == 0 && !truncated) {
        *value = neg ? -0.0 : 0.0;
        return SCAN_OK;
    }
#if LDBL_MANT_DIG == 64
    else if (s->extended && !truncated && exp10 >= -27 && exp10 <= 27) {
        /* x87 extended precision: the mantissa (< 10^19 < 2^64) and 10^|exp10| (5^27 < 2^64)
         * are exact, so one operation rounds correctly to 64 bits; rounding that to 53 bits is
         * then correct unless it lands exactly on a midpoint between two doubles (its low 11
         * bits 0x400), the one case where two roundings may differ from one: strtod then.
         * (The results lie within 1e-27..1e46: normal doubles.) */
        long double p = 1.0L;
        for (int64_t k = exp10 < 0 ? -exp10 : exp10; k > 0; k--) p *= 10.0L;  /* exact */
        long double r = exp10 < 0 ? (long double)mant / p : (long double)mant * p;
        int e2;
        uint64_t bits = (uint64_t)ldexpl(frexpl(r, &e2), 64);
        if ((bits & 0x7FF) != 0x400) {
            double v = (double)r;
            *value = neg ? -v : v;
            return SCAN_OK;
        }
    }
#endif
    return convert_slowly(start, (size_t)(q - start), value);
}

static int expect_literal(scanner *s, const char *word, size_t n) {
    if ((size_t)(s->end - s->p) < n || memcmp(s->p, word, n)) return SCAN_DECLINE;
    s->p += n;
    return SCAN_OK;
}

static int skip_value(scanner *s, int depth);

/* An object or a list at s->p, checked and passed over (`depth`: its own). */
static int skip_container(scanner *s, int depth) {
    if (depth > MAX_DEPTH) return SCAN_DECLINE;
    int object = *s->p == '{';
    int close = object ? '}' : ']';
    s->p++;
    if (next(s) == close) { s->p++; return SCAN_OK; }
    while (1) {
        if (object) {
            const uint8_t *raw;
            size_t len;
            int esc;
            if (next(s) != '"' || scan_string(s, &raw, &len, &esc)) return SCAN_DECLINE;
            if (next(s) != ':') return SCAN_DECLINE;
            s->p++;
        }
        int r = skip_value(s, depth);
        if (r) return r;
        int c = next(s);
        if (c == ',') { s->p++; continue; }
        if (c == close) { s->p++; return SCAN_OK; }
        return SCAN_DECLINE;
    }
}

/* Any JSON value at s->p (after white space), checked and passed over; `depth` is that of
 * the container holding it. */
static int skip_value(scanner *s, int depth) {
    int c = next(s);
    const uint8_t *raw;
    size_t len;
    int esc, is_int;
    double v;
    int64_t i;
    switch (c) {
    case '{':
    case '[': return skip_container(s, depth + 1);
    case '"': return scan_string(s, &raw, &len, &esc);
    case 't': return expect_literal(s, "true", 4);
    case 'f': return expect_literal(s, "false", 5);
    case 'n': return expect_literal(s, "null", 4);
    default:
        if (c == '-' || is_digit(c)) return scan_number(s, &v, &is_int, &i);
        return SCAN_DECLINE;
    }
}

/* A JSON number (never true, false, null or a string). */
static int read_number(scanner *s, double *v) {
    int c = next(s), is_int;
    int64_t i;
    if (c != '-' && !is_digit(c)) return SCAN_DECLINE;
    return scan_number(s, v, &is_int, &i);
}

/* A JSON integer within int64. */
static int read_integer(scanner *s, int64_t *out) {
    int c = next(s), is_int;
    double v;
    if (c != '-' && !is_digit(c)) return SCAN_DECLINE;
    if (scan_number(s, &v, &is_int, out) || !is_int) return SCAN_DECLINE;
    return SCAN_OK;
}

/* [a, b]: two JSON integers within int64 (an RLE's size). */
static int read_integer_pair(scanner *s, int64_t out[2]) {
    if (next(s) != '[') return SCAN_DECLINE;
    s->p++;
    if (read_integer(s, &out[0]) || next(s) != ',') return SCAN_DECLINE;
    s->p++;
    if (read_integer(s, &out[1]) || next(s) != ']') return SCAN_DECLINE;
    s->p++;
    return SCAN_OK;
}

/* A list of numbers appended to `out` as doubles (`want` >= 0: exactly that many); their
 * number in *count. */
static int read_numbers(scanner *s, bbuf *out, int64_t want, int64_t *count) {
    if (next(s) != '[') return SCAN_DECLINE;
    s->p++;
    int64_t n = 0;
    if (next(s) == ']') s->p++;
    else {
        while (1) {
            double v;
            if (read_number(s, &v)) return SCAN_DECLINE;
            int r = bbuf_put(out, &v, sizeof v);
            if (r) return r;
            n++;
            int c = next(s);
            if (c == ',') { s->p++; continue; }
            if (c == ']') { s->p++; break; }
            return SCAN_DECLINE;
        }
    }
    if (want >= 0 && n != want) return SCAN_DECLINE;
    *count = n;
    return SCAN_OK;
}

/* A record-level (or RLE-level) key: its raw bytes, declined when escaped. */
static int read_key(scanner *s, const uint8_t **raw, size_t *len) {
    int esc;
    if (next(s) != '"' || scan_string(s, raw, len, &esc) || esc) return SCAN_DECLINE;
    if (next(s) != ':') return SCAN_DECLINE;
    s->p++;
    return SCAN_OK;
}

static inline int key_is(const uint8_t *raw, size_t len, const char *name) {
    size_t n = strlen(name);
    return len == n && !memcmp(raw, name, n);
}

/* Whether long double arithmetic rounds to 64 bits in this thread (x87 precision control
 * set to extended, as on Linux and the BSDs; not when something set it to double). */
static int extended_precision(void) {
#if LDBL_MANT_DIG == 64
    volatile long double one = 1.0L, tiny = LDBL_EPSILON;  /* 2^-63 */
    return one + tiny != one;
#else
    return 0;
#endif
}

/* A list of JSON integers (within int64) appended to `out`. */
static int read_integers(scanner *s, bbuf *out) {
    if (next(s) != '[') return SCAN_DECLINE;
    s->p++;
    if (next(s) == ']') { s->p++; return SCAN_OK; }
    while (1) {
        int64_t v;
        int r;
        if (read_integer(s, &v)) return SCAN_DECLINE;
        if ((r = bbuf_put(out, &v, 8))) return r;
        int ch = next(s);
        if (ch == ',') { s->p++; continue; }
        if (ch == ']') { s->p++; return SCAN_OK; }
        return SCAN_DECLINE;
    }
}


/* An RLE object {"size": [h, w], "counts": ...} at s->p (other keys passed over; each of the
 * two once, both needed): its string appended to `text` (*kind 2), or, where `runs` is given,
 * its list of integers appended to `runs` (*kind 1); its size in `size`. `depth`: the
 * object's. */
static int read_rle_object(scanner *s, int depth, int64_t size[2], bbuf *text, bbuf *runs, int *kind) {
    int have_size = 0, have_counts = 0, r;
    if (next(s) != '{' || depth > MAX_DEPTH) return SCAN_DECLINE;
    s->p++;
    if (next(s) == '}') return SCAN_DECLINE;
    *kind = 2;
    while (1) {
        const uint8_t *key;
        size_t len;
        if (read_key(s, &key, &len)) return SCAN_DECLINE;
        if (key_is(key, len, "size")) {
            if (have_size++ || read_integer_pair(s, size)) return SCAN_DECLINE;
        } else if (key_is(key, len, "counts")) {
            if (have_counts++) return SCAN_DECLINE;
            if (next(s) == '"') {
                const uint8_t *raw;
                size_t n;
                int esc;
                if (scan_string(s, &raw, &n, &esc)) return SCAN_DECLINE;
                if ((r = put_ascii(raw, n, text))) return r;
            } else {
                if (!runs) return SCAN_DECLINE;
                if ((r = read_integers(s, runs))) return r;
                *kind = 1;
            }
        } else if ((r = skip_value(s, depth))) return r;
        int ch = next(s);
        if (ch == ',') { s->p++; continue; }
        if (ch == '}') { s->p++; break; }
        return SCAN_DECLINE;
    }
    return have_size && have_counts ? SCAN_OK : SCAN_DECLINE;
}

#endif
