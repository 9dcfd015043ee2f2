/* qsgd_kern.h - QSGD's kernel family (qsgd_tmpl.c, core/kern/kfam.h;
 * internal to core). */
#ifndef LBS_QSGD_KERN_H
#define LBS_QSGD_KERN_H

#include <stddef.h>
#include <stdint.h>

struct lbs_qsgd_kern {
    /* the levels of x[lo, hi) into lv (int8, or int16 when wide) at
     * [lo, hi): x sc stochastically rounded with the counter hash of
     * (key, i) (qsgd.c), clamped to [-s, s] */
    void (*qsgd_levels)(const float *x, size_t lo, size_t hi, float sc,
                        float s, uint64_t key, void *lv, int wide);
};
struct lbs_kfam;
extern const struct lbs_kfam lbs_qsgd_kfam;

#endif
