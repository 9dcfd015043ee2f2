/* lbscale/rng.h - counter-based random numbers that ranks agree on.
 *
 * Random-k masks and JointSpar layer samples must be identical on every
 * rank without sending indices, and any rank (or a GPU kernel) must be able
 * to recompute element i's draw on its own.  So a draw is a pure function
 * of (seed, step, layer, i): a key is derived from the first three and the
 * element index is the counter.  The mixer is SplitMix64's finaliser
 * applied twice, which passes BigCrush as a counter-mode generator and is
 * a handful of integer ops, identical in C and CUDA.
 * Header-only, no state, thread-safe.
 */
#ifndef LBSCALE_RNG_H
#define LBSCALE_RNG_H

#include <stdint.h>

/* The same functions in host and CUDA device code (GPU random-k and SLAMB
 * masks must pick the coordinates the CPU picks).  Plain C sees nothing. */
#if defined(__CUDACC__)
#define LBS_HD __host__ __device__
#else
#define LBS_HD
#endif

LBS_HD static inline uint64_t lbs_mix64(uint64_t z)
{
    z += 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* The key for one (seed, step, layer) stream. */
LBS_HD static inline uint64_t lbs_rng_key(uint64_t seed, uint64_t step,
                                          uint64_t layer)
{
    return lbs_mix64(lbs_mix64(lbs_mix64(seed) ^ step) ^ (layer << 1 | 1));
}

/* 64 random bits for counter i of stream key. */
LBS_HD static inline uint64_t lbs_rng_u64(uint64_t key, uint64_t i)
{
    return lbs_mix64(key ^ lbs_mix64(i));
}

/* Uniform double in [0, 1) with 53 random bits. */
LBS_HD static inline double lbs_rng_uniform(uint64_t key, uint64_t i)
{
    return (double)(lbs_rng_u64(key, i) >> 11) * 0x1.0p-53;
}

/* Bernoulli(k) membership: the predicate of the random-k and SLAMB masks
 * (lbscale/mask.h).  Element i of stream key is in the mask iff a 61-bit
 * uniform u_i < thr, thr = k 2^61 (lbs_rng_thr61; all ones for k >= 1).
 * u_i's top 8 bits are byte i % 8 of counter i / 8's draw, so one draw
 * decides eight elements and a vector compares 64 top bytes at once; its
 * low 53 bits are counter 2^63 + i's, drawn only when the top byte equals
 * thr's (1 element in 256).  u_i is exactly uniform on [0, 2^61): the
 * draws are those of lbs_rng_u64, the same on CPU and GPU. */
LBS_HD static inline uint64_t lbs_rng_thr61(double k)
{
    return k >= 1.0 ? UINT64_MAX : (uint64_t)(k * 2305843009213693952.0);
}

LBS_HD static inline int lbs_rng_hit(uint64_t key, uint64_t i, uint64_t thr)
{
    unsigned top = (unsigned)(lbs_rng_u64(key, i >> 3) >> (8 * (i & 7))) &
                   0xffu;
    uint64_t t = thr >> 53;
    if (top != t)
        return top < t;
    return (lbs_rng_u64(key, (1ull << 63) | i) >> 11) <
           (thr & ((1ull << 53) - 1));
}

/* Uniform integer in [0, n) (Lemire's multiply-shift; bias < n/2^64). */
LBS_HD static inline uint64_t lbs_rng_below(uint64_t key, uint64_t i,
                                            uint64_t n)
{
#if defined(__CUDA_ARCH__)
    return __umul64hi(lbs_rng_u64(key, i), n);   /* the same high word */
#else
    return (uint64_t)(((unsigned __int128)lbs_rng_u64(key, i) * n) >> 64);
#endif
}

#endif
