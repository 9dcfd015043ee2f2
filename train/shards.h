/* shards.h - label-skewed shards for `lbscale train --shards` (train/
 * only).  The iid shards are data_shard's (data.h: one permutation cut
 * into equal pieces); this file adds the classic Dirichlet label partition
 * (Hsu, Qi and Brown 2019, "Measuring the effects of non-identical data
 * distribution for federated visual classification", sec. 3; the form of
 * NIID-Bench's `partition_data`):
 *
 *   for every class c: its samples, in the seed's permutation order, are
 *   cut among the P ranks by proportions p_c ~ Dir(alpha, ..., alpha)
 *   (cut points floor(n_c * cumsum(p_c)), the last at n_c);
 *
 * so every training sample is in exactly one shard (nothing dropped) and
 * shard sizes differ.  Small alpha: each class lands on few ranks (alpha
 * 0.1, 8-16 ranks, 10 classes: three classes hold over 90% of three
 * shards in four); large alpha: every rank's label
 * histogram approaches the global one (iid).  A draw that leaves some
 * rank with fewer than min(10, n_train / P) samples is redrawn (attempt
 * counter in the key; NIID-Bench's min_require_size = 10), at most 1000
 * times.
 *
 * Dir(alpha) is drawn as normalised Gamma(alpha) variates: Marsaglia and
 * Tsang (2000) for shape >= 1, with Gamma(a) = Gamma(a + 1) U^(1/a) for
 * a < 1, carried in logarithms so that alpha = 0.01 does not underflow to
 * an all-zero row.  Every draw is a counter-based lbs_rng value keyed by
 * (seed, attempt, class): the partition is a pure function of the seed,
 * the same on every rank, and every rank computes the whole of it.
 *
 * The per-rank batch stays equal: each rank takes global/P samples per
 * step from its own shard in reshuffled passes (loop.c's next_batch), so
 * a small shard is passed over more often within an epoch (its samples
 * repeat) and a large one partly; an epoch is n_train / global_batch
 * steps, as with iid shards.
 */
#ifndef LBS_SHARDS_H
#define LBS_SHARDS_H

#include <stddef.h>
#include <stdint.h>

#include "data.h"
#include "lbscale/error.h"

#define SHARDS_DIRICHLET_TRIES 1000
#define SHARDS_DIRICHLET_MIN 10

/* --shards iid | dirichlet:alpha=A (0 < A <= 1e6): *alpha = 0 for iid.
 * -EINVAL with one sentence naming the problem. */
int shards_parse(const char *s, double *alpha, struct lbs_err *err);

/* The Dirichlet partition above: rank `rank`'s shard (sample indices,
 * class by class) into *idx (malloc'd), its size into *n; counts, when
 * not NULL, gets the whole partition's size x classes sample counts
 * (counts[r * classes + c]).  -EINVAL when no draw within the tries gives
 * every rank the minimum, -ENOMEM. */
int shards_dirichlet(const struct dataset *d, uint64_t seed, double alpha,
                     int rank, int size, size_t **idx, size_t *n,
                     size_t *counts, struct lbs_err *err);

/* Mean over ranks of the total-variation distance between a rank's label
 * histogram and the whole partition's (0: iid-like, 1 - 1/classes at
 * most), from counts as above. */
double shards_label_tv(const size_t *counts, int size, size_t classes);

#endif
