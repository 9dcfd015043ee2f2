/* lbscale/mask.h - random-k coordinate masks that every rank derives alike.
 *
 * Shared by the random-k compressors and by SLAMB.  No index ever travels:
 * each rank computes the same mask from (seed, step, layer) with the
 * counter-based generator of lbscale/rng.h.
 *
 *   Bernoulli(k): coordinate i is in the mask at step t iff
 *                 lbs_rng_hit(key(seed, t, layer), i, k 2^61): a 61-bit
 *                 uniform below k 2^61, one draw deciding eight
 *                 coordinates' top bytes (rng.h); expected density k,
 *                 a fresh draw every step, count varies per step but is
 *                 identical on all ranks.
 *   cyclic(k):    a fixed random permutation of [0, n) per (seed, layer),
 *                 cut into C = ceil(1/k) nearly equal chunks; step t uses
 *                 chunk t mod C, so every coordinate is visited once every
 *                 C steps.  Each chunk is sorted for streaming access.
 *                 Built in linear time without the permutation itself:
 *                 chunk labels swapped on one thread, then the chunks
 *                 laid out by a counting pass on the OpenMP threads
 *                 (core/mask.c says why); the chunks do not depend on the
 *                 thread count.
 *
 * Index lists are ascending uint32 (layers must have < 2^32 elements).
 * Ownership: lbs_mask_cyclic_new allocates (n indices), _free releases;
 * lbs_mask_bernoulli writes into a caller buffer of n entries.
 * Threading: pure functions; a cyclic mask is read-only after creation.
 */
#ifndef LBSCALE_MASK_H
#define LBSCALE_MASK_H

#include <stddef.h>
#include <stdint.h>

#include "lbscale/error.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Indices of the Bernoulli(k) mask; returns how many were written. */
size_t lbs_mask_bernoulli(uint64_t seed, long step, int layer, size_t n,
                          double k, uint32_t *idx);

struct lbs_mask_cyclic;

int lbs_mask_cyclic_new(uint64_t seed, int layer, size_t n, double k,
                        struct lbs_mask_cyclic **out, struct lbs_err *err);
/* The chunk used at step t: *idx points into the mask, *count entries. */
void lbs_mask_cyclic_get(const struct lbs_mask_cyclic *m, long step,
                         const uint32_t **idx, size_t *count);
size_t lbs_mask_cyclic_chunks(const struct lbs_mask_cyclic *m);
/* q[i] = the chunk of the cyclic(k) schedule that holds element i, for
 * n elements (the caller's buffer) and at most 256 chunks (-EINVAL
 * beyond): what lbs_mask_cyclic_new's chunks say, without building them.
 * One thread (it is one chain of dependent swaps over q); a caller with
 * many layers runs them side by side. */
int lbs_mask_cyclic_ids(uint64_t seed, int layer, size_t n, double k,
                        uint8_t *q, struct lbs_err *err);
/* The chunk count for density k over n elements: ceil(1/k), at most n
 * (also when 1/k exceeds what size_t holds). */
size_t lbs_mask_cyclic_count(double k, size_t n);
void lbs_mask_cyclic_free(struct lbs_mask_cyclic *m);

#ifdef __cplusplus
}
#endif
#endif
