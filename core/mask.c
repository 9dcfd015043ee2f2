/* mask.c - Bernoulli and cyclic random-k masks (see lbscale/mask.h). */
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "kern.h"
#include "par.h"
#include "lbscale/mask.h"
#include "lbscale/mem.h"
#include "lbscale/rng.h"

/* Bernoulli selection, parallel and order-preserving, one sweep: each
 * thread writes the hits (lbs_rng_hit) of its static block [lo, hi)
 * starting at idx + lo (a block keeps at most hi - lo of them, so blocks
 * never overlap), then the blocks are moved together in thread order.
 * The sweep is the kernel table's (core/kern: one draw per eight
 * elements, 64 compared per vector), so the mask is the same at every
 * level, thread count and on the GPU. */
size_t lbs_mask_bernoulli(uint64_t seed, long step, int layer, size_t n,
                          double k, uint32_t *idx)
{
    const uint64_t key = lbs_rng_key(seed, (uint64_t)step, (uint64_t)layer);
    const uint64_t thr = lbs_rng_thr61(k);
    const struct lbs_kern *K = lbs_kern();
    size_t cnt[256], los[256];
    int nblk = 1;
#pragma omp parallel
    {
        int nt = omp_get_num_threads(), t = omp_get_thread_num();
        if (nt > 256)
            nt = 256;   /* extra threads idle below */
        if (t < nt) {
            size_t lo = n * (size_t)t / (size_t)nt;
            size_t hi = n * (size_t)(t + 1) / (size_t)nt;
            los[t] = lo;
            cnt[t] = K->mask_hits(key, thr, lo, hi, idx + lo);
        }
        if (t == 0)
            nblk = nt;
    }
    size_t total = 0;
    for (int t = 0; t < nblk; t++) {   /* destinations only move left */
        memmove(idx + total, idx + los[t], cnt[t] * sizeof *idx);
        total += cnt[t];
    }
    return total;
}

size_t lbs_mask_cyclic_count(double k, size_t n)
{
    /* compared as doubles: a tiny k (1/k = 2.7e70, found by
     * tests/fuzz/fuzz_spec) must not be cast to size_t */
    double c = ceil(1.0 / k - 1e-12);
    return c < (double)n ? (size_t)c : n;
}

struct lbs_mask_cyclic {
    uint32_t *perm;     /* n indices, chunk by chunk, each chunk sorted */
    size_t n, chunks;
};

/* The schedule's permutation is Fisher-Yates driven by the counter
 * generator (the same on every rank): for i = n-1 down to 1, swap
 * positions i and j_i = lbs_rng_below(key, i, i + 1).  Its n swaps are
 * random accesses to the whole array, the cost of the construction, so
 * they are spread over threads without changing the result: the steps
 * are cut into S segments of consecutive steps, and segment s (steps
 * [b[s+1], b[s]), touching positions below b[s] only) runs on its own
 * identity array.  What a segment leaves there is the permutation its
 * swaps make of positions, so the whole shuffle is segment 0's array
 * read through the later segments' arrays, folded in by shuffle_fold. */
#define SEG_MAX 4           /* each segment past the first holds b[s]
                               indices: at most 1.5 n extra at S = 4 */
#define DRAW_AHEAD 2048     /* draws computed before their swaps */
#define PREFETCH 16         /* swaps the target line is fetched ahead */
#define PREFETCH_IDS 32     /* the ids' scatter: writes fetched ahead */

struct cyclic_shuffle {
    uint32_t *seg[SEG_MAX];     /* seg[0]: n entries; seg[s]: b[s] */
    size_t b[SEG_MAX + 1];      /* b[0] = n > b[1] > ... > b[S] = 1 */
    int owned[SEG_MAX];         /* seg[s] allocated here (not the caller's
                                   scratch) */
    int S;
};

/* The segment count for n elements on the current threads. */
static int shuffle_segments(size_t n)
{
    int S = n >= LBS_PAR_MIN_COMPRESS ? omp_get_max_threads() : 1;
    return S < 1 ? 1 : S > SEG_MAX ? SEG_MAX : S;
}

/* Fisher-Yates steps i = hi-1 down to lo on a: a block of targets is
 * drawn first so that each swap's far line can be fetched ahead. */
static void fy_steps(uint32_t *a, size_t lo, size_t hi, uint64_t key)
{
    uint32_t j[DRAW_AHEAD];
    void (*draws)(uint64_t, size_t, size_t, uint32_t *) = lbs_kern()->fy_draws;
    for (size_t i = hi; i > lo;) {
        size_t m = i - lo < DRAW_AHEAD ? i - lo : DRAW_AHEAD;
        draws(key, i, m, j);
        for (size_t s = 0; s < m; s++) {
            if (s + PREFETCH < m)
                __builtin_prefetch(&a[j[s + PREFETCH]], 1);
            uint32_t t = a[i - 1 - s];
            a[i - 1 - s] = a[j[s]];
            a[j[s]] = t;
        }
        i -= m;
    }
}

/* The segments: as many as threads (at most SEG_MAX), one when the layer
 * is small or the room for another is missing (the result is the same).
 * Their arrays come from room (room_n indices, may be NULL) while it
 * lasts, else they are allocated. */
static void shuffle_plan(struct cyclic_shuffle *sh, size_t n, uint32_t *a,
                         uint32_t *room, size_t room_n)
{
    int S = shuffle_segments(n);
    sh->seg[0] = a;
    sh->owned[0] = 0;
    sh->b[0] = n;
    for (int s = 1; s < S; s++) {
        sh->b[s] = n - n / (size_t)S * (size_t)s;
        sh->owned[s] = !room || room_n < sh->b[s];
        if (!sh->owned[s]) {
            sh->seg[s] = room;
            room += sh->b[s];
            room_n -= sh->b[s];
        } else if (!(sh->seg[s] = lbs_array_alloc(sh->b[s], sizeof *a))) {
            S = s;
            break;
        }
    }
    sh->b[S] = 1;
    sh->S = S;
}

static void shuffle_run(struct cyclic_shuffle *sh, uint64_t key)
{
    const size_t n = sh->b[0];
    uint32_t *a = sh->seg[0];
#pragma omp parallel if (sh->S > 1)
    {
#pragma omp for schedule(static)
        for (size_t i = 0; i < n; i++)
            a[i] = (uint32_t)i;
        int nt = omp_get_num_threads(), t = omp_get_thread_num();
        for (int s = t; s < sh->S; s += nt) {
            for (size_t i = 0; s > 0 && i < sh->b[s]; i++)
                sh->seg[s][i] = (uint32_t)i;
            fy_steps(sh->seg[s], sh->b[s + 1], sh->b[s], key);
        }
    }
}

/* Segment s's swaps applied after those before it: entry p < b[s] of the
 * shuffle so far becomes entry seg[s][p] of it (a gather into seg[s],
 * then copied back), segment by segment; seg[0] ends as the shuffle.
 * The other segments' arrays go, but seg[1]'s memory, when there is one
 * and it was allocated here, is handed back (*spare, 4 b[1] bytes) for
 * the caller's next array.  With low (the radix path, every segment
 * allocated here), the last segment's copy is left to the caller, who
 * reads its first entries from there: the shuffle is then *low's *low_n
 * entries followed by seg[0]'s above them, and *low (NULL when S = 1)
 * is the caller's to free.  That copy is a pass over up to half of the
 * layer the radix sort's first pass can read from *low instead. */
static void shuffle_fold(struct cyclic_shuffle *sh, uint32_t **low,
                         size_t *low_n, void **spare, size_t *spare_bytes)
{
    uint32_t *a = sh->seg[0];
    const int S = sh->S;
    if (low) {
        *low = NULL;
        *low_n = 0;
    }
    for (int s = 1; s < S; s++) {
        uint32_t *g = sh->seg[s];
        const size_t m = sh->b[s];
        const int copy = !low || s < S - 1;
#pragma omp parallel
        {
#pragma omp for schedule(static)
            for (size_t p = 0; p < m; p++) {
                if (p + PREFETCH < m)
                    __builtin_prefetch(&a[g[p + PREFETCH]]);
                g[p] = a[g[p]];
            }
#pragma omp for schedule(static)
            for (size_t p = 0; p < (copy ? m : 0); p++)
                a[p] = g[p];
        }
        if (!copy) {
            *low = g;
            *low_n = m;
        } else if (s > 1 && sh->owned[s]) {
            free(g);
        }
    }
    int keep = S > 1 && sh->owned[1] && (!low || S > 2);
    *spare = keep ? sh->seg[1] : NULL;
    *spare_bytes = keep ? sh->b[1] * sizeof *a : 0;
    sh->S = 1;
}

/* Chunk ids in the narrowest width that holds C: 1, 2 or 4 bytes. */
static size_t id_width(size_t C)
{
    return C <= 256 ? 1 : C <= 65536 ? 2 : 4;
}

static inline void id_set(void *q, size_t w, size_t i, size_t c)
{
    if (w == 1)
        ((uint8_t *)q)[i] = (uint8_t)c;
    else if (w == 2)
        ((uint16_t *)q)[i] = (uint16_t)c;
    else
        ((uint32_t *)q)[i] = (uint32_t)c;
}

static inline size_t id_get(const void *q, size_t w, size_t i)
{
    return w == 1 ? ((const uint8_t *)q)[i]
         : w == 2 ? ((const uint16_t *)q)[i] : ((const uint32_t *)q)[i];
}

/* q[v] = the chunk that holds v: each chunk's positions of the shuffle a
 * name their elements (one write each, chunks in parallel; the lines
 * written are fetched ahead: 0.8-0.9 of the CPU time without). */
static void chunk_ids(const uint32_t *a, size_t n, size_t C, void *q,
                      size_t w)
{
#pragma omp parallel for schedule(static) if (n >= LBS_PAR_MIN_COMPRESS)
    for (size_t c = 0; c < C; c++) {
        const size_t hi = n * (c + 1) / C;
        for (size_t p = n * c / C; p < hi; p++) {
            if (p + PREFETCH_IDS < hi)
                __builtin_prefetch((char *)q + w * a[p + PREFETCH_IDS], 1);
            id_set(q, w, a[p], c);
        }
    }
}

/* The chunks, each ascending, by one counting pass: v = 0, 1, ... goes
 * to the next free slot of chunk q[v].  Threads take consecutive ranges
 * of v; where the per-thread counts (T x C) would outweigh the pass, one
 * thread walks it with a cursor per chunk. */
static int chunks_bucket(const void *q, size_t w, size_t n, size_t C,
                         uint32_t *perm)
{
    size_t T = n >= LBS_PAR_MIN_COMPRESS ? (size_t)omp_get_max_threads() : 1;
    if (T < 1 || T * C > n / 8)
        T = 1;
    uint32_t *cur = malloc(T * C * sizeof *cur);
    if (!cur)
        return -ENOMEM;
    int nt = 1;
#pragma omp parallel num_threads((int)T) if (T > 1)
    {
        size_t t = (size_t)omp_get_thread_num();
        size_t lo = n * t / T, hi = n * (t + 1) / T;
        uint32_t *k = cur + t * C;
#pragma omp single
        nt = omp_get_num_threads();
        if ((size_t)nt == T) {          /* else the serial walk below */
            memset(k, 0, C * sizeof *k);
            for (size_t v = lo; v < hi; v++)
                k[id_get(q, w, v)]++;
#pragma omp barrier
#pragma omp single
            for (size_t c = 0; c < C; c++) {
                size_t o = n * c / C;
                for (size_t u = 0; u < T; u++) {
                    size_t x = cur[u * C + c];
                    cur[u * C + c] = (uint32_t)o;
                    o += x;
                }
            }
            for (size_t v = lo; v < hi; v++)
                perm[k[id_get(q, w, v)]++] = (uint32_t)v;
        }
    }
    if ((size_t)nt != T) {
        for (size_t c = 0; c < C; c++)
            cur[c] = (uint32_t)(n * c / C);
        for (size_t v = 0; v < n; v++)
            perm[cur[id_get(q, w, v)]++] = (uint32_t)v;
    }
    free(cur);
    return 0;
}

/* The shuffle of (seed, layer) in a (n entries), the segments in room as
 * far as it lasts (shuffle_plan); *spare, and low (room must then be
 * NULL), as in shuffle_fold. */
static void cyclic_shuffle(uint64_t seed, int layer, size_t n, uint32_t *a,
                           uint32_t *room, size_t room_n, uint32_t **low,
                           size_t *low_n, void **spare, size_t *spare_bytes)
{
    struct cyclic_shuffle sh;
    shuffle_plan(&sh, n, a, room, room_n);
    shuffle_run(&sh, lbs_rng_key(seed, UINT64_MAX, (uint64_t)layer));
    shuffle_fold(&sh, low, low_n, spare, spare_bytes);
}

/* Chunks of at least RADIX_MIN_CHUNK elements are sorted where they lie,
 * by least-significant-digit radix (counting passes over digits of at
 * most RADIX_BITS bits, in a cache-sized table): no random writes over
 * the whole layer, as the ids' scatter makes.  Smaller chunks (many of
 * them) take the ids and one counting pass. */
#define RADIX_MIN_CHUNK 4096
#define RADIX_BITS 11
#define RADIX_PASSES 3      /* 3 x 11 bits hold any uint32 */

/* x[0, m) := src[0, m) ascending (values below 2^bits); src may be x; t:
 * m entries of scratch.  The passes alternate between x and t and end in
 * x; only an in-place sort with an odd pass count ends with a copy. */
static void radix_chunk(uint32_t *x, const uint32_t *src, uint32_t *t,
                        size_t m, unsigned bits)
{
    unsigned passes = (bits + RADIX_BITS - 1) / RADIX_BITS;
    if (!passes || m < 2) {
        if (src != x)
            memcpy(x, src, m * sizeof *x);
        return;
    }
    unsigned d = (bits + passes - 1) / passes;
    const uint32_t mask = (1u << d) - 1;
    uint32_t cnt[RADIX_PASSES][1u << RADIX_BITS];
    memset(cnt, 0, sizeof cnt);
    for (size_t i = 0; i < m; i++)
        for (unsigned p = 0; p < passes; p++)
            cnt[p][(src[i] >> (p * d)) & mask]++;
    for (unsigned p = 0; p < passes; p++)
        for (uint32_t b = 0, o = 0; b <= mask; b++) {
            uint32_t c = cnt[p][b];
            cnt[p][b] = o;
            o += c;
        }
    const uint32_t *in = src;
    uint32_t *out = src != x && passes % 2 ? x : t;
    for (unsigned p = 0; p < passes; p++) {
        for (size_t i = 0; i < m; i++)
            out[cnt[p][(in[i] >> (p * d)) & mask]++] = in[i];
        in = out;
        out = out == x ? t : x;
    }
    if (in != x)
        memcpy(x, in, m * sizeof *x);
}

/* Every chunk of perm (n entries, C chunks) ascending, chunks in parallel,
 * the shuffle's first low_n entries read from low (shuffle_fold; low_n
 * may be 0); tmp: T x the largest chunk, T = the threads at most. */
static void chunks_radix(uint32_t *perm, const uint32_t *low, size_t low_n,
                         size_t n, size_t C, uint32_t *tmp, size_t mmax)
{
    unsigned bits = 0;
    while (bits < 32 && ((size_t)1 << bits) < n)
        bits++;
#pragma omp parallel if (n >= LBS_PAR_MIN_COMPRESS)
    {
        uint32_t *t = tmp + (size_t)omp_get_thread_num() * mmax;
#pragma omp for schedule(static)
        for (size_t c = 0; c < C; c++) {
            size_t lo = n * c / C, hi = n * (c + 1) / C;
            const uint32_t *src = perm + lo;
            if (hi <= low_n)
                src = low + lo;
            else if (lo < low_n)    /* the chunk across low's end */
                memcpy(perm + lo, low + lo, (low_n - lo) * sizeof *perm);
            radix_chunk(perm + lo, src, t, hi - lo, bits);
        }
    }
}

static int cyclic_check(size_t n, double k, struct lbs_err *err)
{
    if (!(k > 0 && k <= 1))
        return lbs_err_set(err, -EINVAL, "cyclic mask: k = %g not in (0, 1]",
                           k);
    if (n == 0 || n > UINT32_MAX)
        return lbs_err_set(err, -EINVAL, "cyclic mask: layer of %zu elements "
                           "(must be 1..2^32-1)", n);
    return 0;
}

int lbs_mask_cyclic_new(uint64_t seed, int layer, size_t n, double k,
                        struct lbs_mask_cyclic **out, struct lbs_err *err)
{
    int rc = cyclic_check(n, k, err);
    if (rc)
        return rc;
    struct lbs_mask_cyclic *m = calloc(1, sizeof *m);
    if (m)
        m->perm = lbs_array_alloc(n, sizeof *m->perm);
    if (!m || !m->perm) {
        free(m);
        return lbs_err_set(err, -ENOMEM, "cyclic mask: out of memory");
    }
    m->n = n;
    m->chunks = lbs_mask_cyclic_count(k, n);
    /* the chunks of the shuffle are sorted where they lie (radix: large
     * chunks, where the per-thread scratch is small beside the layer) or
     * laid out again from the ids; the scratch of either is the
     * shuffle's spare array where it fits */
    const size_t C = m->chunks, mmax = (n + C - 1) / C;
    const size_t T = n >= LBS_PAR_MIN_COMPRESS
        ? (size_t)omp_get_max_threads() : 1;
    const int radix = mmax >= RADIX_MIN_CHUNK && T * mmax <= n / 2;
    uint32_t *low = NULL;
    size_t low_n = 0, room;
    void *spare;
    cyclic_shuffle(seed, layer, n, m->perm, NULL, 0, radix ? &low : NULL,
                   &low_n, &spare, &room);
    if (radix) {
        uint32_t *tmp = room >= T * mmax * sizeof *tmp
            ? spare : lbs_array_alloc(T * mmax, sizeof *tmp);
        if (tmp)
            chunks_radix(m->perm, low, low_n, n, C, tmp, mmax);
        else if (low_n)     /* the ids' way below, on the whole shuffle */
            memcpy(m->perm, low, low_n * sizeof *low);
        free(low);
        if (tmp != spare)
            free(tmp);
        if (tmp) {
            free(spare);
            *out = m;
            return 0;
        }
    }
    const size_t w = id_width(C);
    void *q = room >= n * w ? spare : lbs_array_alloc(n, w);
    if (q != spare)
        free(spare);
    if (q)
        chunk_ids(m->perm, n, C, q, w);
    if (!q || chunks_bucket(q, w, n, C, m->perm)) {
        free(q);
        lbs_mask_cyclic_free(m);
        return lbs_err_set(err, -ENOMEM, "cyclic mask: out of memory");
    }
    free(q);
    *out = m;
    return 0;
}

/* The chunk ids without the shuffle: labels by position (q[p] = the chunk
 * of position p), then the shuffle's swaps in the opposite order.  Why
 * that is the ids: the shuffle a (position -> element) is the identity
 * with the swaps (i j_i) applied for i = n-1 down to 1, a = t_{n-1} o ...
 * o t_1 as maps, so a^-1 = t_1 o ... o t_{n-1}, and the ids, chunk o
 * a^-1, are the labels with the same swaps applied for i = 1 up to n-1.
 * One byte per element instead of a 4-byte index: a quarter of the
 * memory the random swaps touch, and no scatter pass after them.  The
 * swaps form one chain, so one thread runs it (SLAMB gives its layers to
 * threads side by side). */
static void ids_swaps(uint8_t *q, size_t n, size_t C, uint64_t key)
{
    for (size_t c = 0; c < C; c++)
        memset(q + n * c / C, (int)c, n * (c + 1) / C - n * c / C);
    uint32_t j[DRAW_AHEAD];
    void (*draws)(uint64_t, size_t, size_t, uint32_t *) = lbs_kern()->fy_draws;
    for (size_t lo = 1; lo < n;) {
        size_t m = n - lo < DRAW_AHEAD ? n - lo : DRAW_AHEAD;
        draws(key, lo + m, m, j);       /* j[s]: step lo + m - 1 - s */
        for (size_t s = m; s-- > 0;) {
            if (s >= PREFETCH)
                __builtin_prefetch(&q[j[s - PREFETCH]], 1);
            size_t i = lo + m - 1 - s;
            uint8_t t = q[i];
            q[i] = q[j[s]];
            q[j[s]] = t;
        }
        lo += m;
    }
}

int lbs_mask_cyclic_ids(uint64_t seed, int layer, size_t n, double k,
                        uint8_t *q, struct lbs_err *err)
{
    int rc = cyclic_check(n, k, err);
    if (rc)
        return rc;
    size_t C = lbs_mask_cyclic_count(k, n);
    if (C > 256)
        return lbs_err_set(err, -EINVAL, "cyclic mask: %zu chunks do not fit "
                           "in one-byte ids", C);
    ids_swaps(q, n, C, lbs_rng_key(seed, UINT64_MAX, (uint64_t)layer));
    return 0;
}

void lbs_mask_cyclic_get(const struct lbs_mask_cyclic *m, long step,
                         const uint32_t **idx, size_t *count)
{
    size_t c = (size_t)(step < 0 ? 0 : step) % m->chunks;
    size_t lo = m->n * c / m->chunks, hi = m->n * (c + 1) / m->chunks;
    *idx = m->perm + lo;
    *count = hi - lo;
}

size_t lbs_mask_cyclic_chunks(const struct lbs_mask_cyclic *m)
{
    return m->chunks;
}

void lbs_mask_cyclic_free(struct lbs_mask_cyclic *m)
{
    if (m)
        free(m->perm);
    free(m);
}
