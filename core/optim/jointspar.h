/* jointspar.h - the capped-simplex projection behind JointSpar's online
 * keep probabilities.
 *
 * Internal to core (tests include it through core/optim); the optimizers
 * themselves are reached only through lbscale/optim.h, their probabilities
 * through lbs_optim_stat ("p.<i>", "p_sum", ...).
 */
#ifndef LBS_JOINTSPAR_H
#define LBS_JOINTSPAR_H

#include <stddef.h>

/* Relative-entropy (KL) projection of q >= 0 onto the capped simplex
 * {p : sum p = S, lo <= p_d <= hi}: p_d = clamp(c q_d, lo, hi) with the
 * one c > 0 that makes the sum S - the Bregman projection that goes with
 * an exponentiated-gradient step, and plain renormalisation p = S q/sum q
 * whenever no bound is active.  Exact up to rounding: the breakpoints
 * lo/q_d, hi/q_d are sorted, the segment holding c is found by binary
 * search, and c is solved linearly there (O(n log n)).  Every p_d lies in
 * [lo, hi] exactly; |sum p - S| is a few ulps of S.
 *
 * Needs 0 <= lo <= hi, n lo <= S <= n hi and q finite (entries of 0 end at
 * lo); -EINVAL when infeasible (also when the positive q cannot reach S).
 * scratch: 2n doubles, or NULL to allocate them (-ENOMEM).  p may alias q.
 */
int lbs_capped_simplex_project(const double *q, size_t n, double S, double lo,
                               double hi, double *p, double *scratch);

#endif
