/* chunks.h - how a layer is cut for deterministic sums (internal to core).
 *
 * A layer is cut into LBS_CHUNKS chunks whose bounds depend on n only;
 * each chunk is summed sequentially (float over blocks of LBS_NORM_BLOCK
 * elements, double across blocks) by whichever thread gets it, and the
 * chunk sums are added in chunk order.  The result is bit-identical for
 * any thread count and schedule, so every rank computes the same norms
 * and runs repeat bit for bit (an OpenMP reduction combines threads in
 * arrival order and does not).  The kernels (core/kern and the families
 * beside their algorithms) and the optimizers both cut this way, so the
 * one home of the cut is here, below both.
 */
#ifndef LBS_CHUNKS_H
#define LBS_CHUNKS_H

#include <stddef.h>

#define LBS_NORM_BLOCK 1024
#define LBS_CHUNKS 256
static inline size_t lbs_chunk_lo(size_t n, size_t c)
{
    return (size_t)(((unsigned __int128)n * c) / LBS_CHUNKS);
}
static inline double lbs_sum_chunks(const double *part)
{
    double s = 0;
    for (size_t c = 0; c < LBS_CHUNKS; c++)
        s += part[c];
    return s;
}

#endif
