/* sign_kern.h - the sign compressor's kernel family (sign_tmpl.c,
 * core/kern/kfam.h; internal to core). */
#ifndef LBS_SIGN_KERN_H
#define LBS_SIGN_KERN_H

#include <stddef.h>
#include <stdint.h>

struct lbs_sign_kern {
    /* pack bytes [b0, b1) of x[0, n) (bit 1: x < 0, sign.c) and return
     * sum |x| (l2 0) or x^2 over them */
    double (*sign_pack)(const float *x, size_t n, uint8_t *bits, size_t b0,
                        size_t b1, int l2);
};
struct lbs_kfam;
extern const struct lbs_kfam lbs_sign_kfam;

#endif
