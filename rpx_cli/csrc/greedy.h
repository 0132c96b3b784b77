/* pycocotools' greedy walk within one (image, category) group, shared by the box matcher
 * (coco_eval.c, IoU) and the keypoint matcher (coco_oks.c, OKS): which GT each area range
 * ignores, and one detection's decision at every (area range, threshold) column. The
 * similarity itself, and the walk over groups and detections, are each matcher's own. */
#ifndef RPX_GREEDY_H
#define RPX_GREEDY_H

#include "core.h"

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

#endif
