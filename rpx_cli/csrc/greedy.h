/* pycocotools' greedy walk, shared by the box matcher (coco_eval.c, IoU), the keypoint
 * matcher (coco_oks.c, OKS) and the matcher of intersections computed beforehand
 * (coco_overlaps.c: masks, polygons): which GT each area range ignores, one detection's
 * decision at every (area range, threshold) column, and the walk over (image, category)
 * groups (greedy_walk), split among threads by whole groups. The similarity is each
 * matcher's own (greedy_values_fn). */
#ifndef RPX_GREEDY_H
#define RPX_GREEDY_H

#include "core.h"
#include <math.h>
#include <string.h>

/* ig[a * n_g + j]: the group's GT j (its crowd flag and area) is ignored in area range a:
 * a crowd region, or an area outside ranges[2a .. 2a + 1]. */
static inline void greedy_ignored_gt(const uint8_t *crowd, const double *area, Py_ssize_t n_g,
                                     const double *ranges, Py_ssize_t A, uint8_t *ig) {
    for (Py_ssize_t a = 0; a < A; a++) {
        for (Py_ssize_t j = 0; j < n_g; j++) {
            ig[a * n_g + j] = crowd[j] || area[j] < ranges[2 * a] || area[j] > ranges[2 * a + 1];
        }
    }
}

/* One detection, every column a * T + t: among the GT that passed the loosest threshold
 * (pass[0 .. n_pass), value[j] its similarity) whose value >= thresholds[t] and that no
 * earlier detection took in that column (a crowd GT may be taken again), the regular one of
 * highest value, else the ignored one; ties to the last. Sets the detection's matched and
 * ignored flags (its row: A * T each, zero on entry) and marks the GT taken (C x n_g). */
static inline void greedy_columns(const double *value, const Py_ssize_t *pass, Py_ssize_t n_pass,
                                  const uint8_t *crowd, const uint8_t *ig, uint8_t *taken,
                                  Py_ssize_t n_g, const double *thresholds, Py_ssize_t A,
                                  Py_ssize_t T, uint8_t *matched, uint8_t *ignored) {
    for (Py_ssize_t a = 0; a < A; a++) {  /* (no division per column: a hot loop) */
        const uint8_t *ia = ig + a * n_g;
        for (Py_ssize_t t = 0; t < T; t++) {
            const Py_ssize_t col = a * T + t;
            const uint8_t *tk = taken + col * n_g;
            Py_ssize_t best_regular = -1, best_ignored = -1;
            for (Py_ssize_t q = 0; q < n_pass; q++) {
                const Py_ssize_t j = pass[q];
                if (!(value[j] >= thresholds[t]) || (tk[j] && !crowd[j])) continue;
                Py_ssize_t *best = ia[j] ? &best_ignored : &best_regular;
                if (*best < 0 || value[j] >= value[*best]) *best = j;  /* ties: the last */
            }
            const Py_ssize_t best = best_regular >= 0 ? best_regular : best_ignored;
            if (best < 0) continue;
            matched[col] = 1;
            ignored[col] = ia[best];
            taken[col * n_g + best] = 1;
        }
    }
}
/* The similarity of the walk's detection d with the GT g0 .. g0 + n_g - 1 of its group into
 * value[0 .. n_g), and the loosest threshold (a similarity may skip work below it); `scratch`:
 * the walker's room of the size the caller asked for, one per part. */
typedef void (*greedy_values_fn)(const void *ctx, void *scratch, Py_ssize_t d, Py_ssize_t g0,
                                 Py_ssize_t n_g, double loosest, double *value);

typedef struct {
    const int64_t *dt_group, *gt_group;  /* both sorted */
    const uint8_t *gt_crowd;
    const uint8_t *outside;              /* (D, A) or NULL: a detection that takes no GT is
                                          * ignored in a range its area is outside */
    const double *gt_area, *ranges, *thresholds;
    Py_ssize_t D, G, A, T;
    uint8_t *matched, *ignored;          /* (D, A * T) */
    greedy_values_fn values;
    const void *ctx;
    size_t scratch_bytes;
    int parts;
} greedy_walk_t;

/* The first detection of a group at or after i. */
static inline Py_ssize_t greedy_group_start(const greedy_walk_t *w, Py_ssize_t i) {
    while (i > 0 && i < w->D && w->dt_group[i] == w->dt_group[i - 1]) i++;
    return i;
}

/* Part `part` of the walk: the detections [i0, i1) of whole groups, about D / parts of them:
 * pycocotools' greedy walk with w->values' similarity (greedy_columns per detection). 0, or
 * -1 (no memory). */
static int greedy_walk_part(void *arg, int part) {
    const greedy_walk_t *w = arg;
    const Py_ssize_t i0 = greedy_group_start(w, (Py_ssize_t)((double)w->D * part / w->parts));
    const Py_ssize_t i1 = part == w->parts - 1 ? w->D :
                          greedy_group_start(w, (Py_ssize_t)((double)w->D * (part + 1) / w->parts));
    const Py_ssize_t A = w->A, T = w->T, C = A * T, G = w->G;
    const int64_t *gt_group = w->gt_group;
    if (i1 <= i0) return 0;
    memset(w->matched + i0 * C, 0, (size_t)(i1 - i0) * (size_t)C);
    if (w->outside) {  /* ignored where the area is outside, until the walk says otherwise */
        for (Py_ssize_t d = i0; d < i1; d++) {
            for (Py_ssize_t a = 0; a < A; a++) memset(w->ignored + d * C + a * T, w->outside[d * A + a] != 0, (size_t)T);
        }
    } else {
        memset(w->ignored + i0 * C, 0, (size_t)(i1 - i0) * (size_t)C);
    }
    Py_ssize_t g0 = 0, hi = G;  /* the first GT of the part's first group: a binary search */
    while (g0 < hi) {
        const Py_ssize_t mid = g0 + (hi - g0) / 2;
        if (gt_group[mid] < w->dt_group[i0]) g0 = mid + 1;
        else hi = mid;
    }
    Py_ssize_t widest = 1;  /* the most GT of one group from there */
    for (Py_ssize_t j = g0, start = g0; j <= G; j++) {
        if (j == G || (j > start && gt_group[j] != gt_group[j - 1])) {
            if (j - start > widest) widest = j - start;
            start = j;
        }
    }
    uint8_t *taken = malloc((size_t)(C ? C : 1) * (size_t)widest);
    uint8_t *ig = malloc((size_t)(A ? A : 1) * (size_t)widest);  /* ignored GT per range */
    double *value = malloc((size_t)widest * sizeof(double));
    Py_ssize_t *pass = malloc((size_t)widest * sizeof(Py_ssize_t));
    void *scratch = malloc(w->scratch_bytes ? w->scratch_bytes : 1);
    int status = (taken && ig && value && pass && scratch) ? 0 : -1;
    double loosest = INFINITY;
    for (Py_ssize_t t = 0; t < T; t++) if (w->thresholds[t] < loosest) loosest = w->thresholds[t];
    for (Py_ssize_t i = i0; i < i1 && !status;) {
        const int64_t group = w->dt_group[i];
        Py_ssize_t end = i;
        while (end < i1 && w->dt_group[end] == group) end++;
        while (g0 < G && gt_group[g0] < group) g0++;
        Py_ssize_t g1 = g0;
        while (g1 < G && gt_group[g1] == group) g1++;
        const Py_ssize_t n_g = g1 - g0;
        if (n_g) {
            memset(taken, 0, (size_t)C * (size_t)n_g);
            greedy_ignored_gt(w->gt_crowd + g0, w->gt_area + g0, n_g, w->ranges, A, ig);
            for (Py_ssize_t d = i; d < end; d++) {
                w->values(w->ctx, scratch, d, g0, n_g, loosest, value);
                Py_ssize_t n_pass = 0;
                for (Py_ssize_t j = 0; j < n_g; j++) {
                    if (value[j] >= loosest) pass[n_pass++] = j;
                }
                if (!n_pass) continue;
                greedy_columns(value, pass, n_pass, w->gt_crowd + g0, ig, taken, n_g, w->thresholds,
                               A, T, w->matched + d * C, w->ignored + d * C);
            }
        }
        i = end;
    }
    free(taken);
    free(ig);
    free(value);
    free(pass);
    free(scratch);
    return status;
}

/* The whole walk, its groups split among w->parts threads (whole groups each: they share
 * nothing). 0, or -1 (no memory). */
static inline int greedy_walk(greedy_walk_t *w) {
    if (w->parts < 1 || w->D < 2) w->parts = 1;
    if (w->parts > RPX_MAX_PARTS) w->parts = RPX_MAX_PARTS;
    return w->parts > 1 ? rpx_run_parts(w->parts, greedy_walk_part, w) : greedy_walk_part(w, 0);
}

#endif
