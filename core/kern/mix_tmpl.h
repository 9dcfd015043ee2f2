/* mix_tmpl.h - the gossip mix's inner block, shared by the templates of
 * kern_tmpl.c (gossip_mix) and core/optim/decentlam_tmpl.c (its update):
 * static inline, so each level's loops compile as they did in one file. */
#ifndef LBS_MIX_TMPL_H
#define LBS_MIX_TMPL_H

#include <stddef.h>

/* The mix sum_k w[k] src[k][e] in double, ascending k from 0, into a
 * block in L1: one sweep per source vectorises (a loop over k inside the
 * loop over e does not), and each element adds the same terms in the same
 * order as lbs_gossip_mix_at.  Every source is read before x is written,
 * so x may be one of them. */
#define MIX_BLOCK 512
static inline void lbs_mix_block(const float *const *src, const double *w,
                                 int ns, size_t b, size_t len, double *acc)
{
#pragma omp simd
    for (size_t j = 0; j < len; j++)
        acc[j] = 0;
    for (int k = 0; k < ns; k++) {
        const float *restrict s = src[k] + b;
        const double wk = w[k];
#pragma omp simd
        for (size_t j = 0; j < len; j++)
            acc[j] += wk * (double)s[j];
    }
}

#endif
