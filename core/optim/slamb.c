/* slamb.c - SLAMB (Xu et al., ICML 2023): LAMB with sparse momentum sync.
 *
 * No gradient allreduce (.dense = 0).  At step t (1-based) on each of the
 * N ranks of o->comm, for every layer:
 *
 *   m = b1 m + (1-b1) g;  v = b2 v + (1-b2) g^2     (g: the LOCAL gradient)
 *   S = mask(t): all coordinates if the layer is 1-D or has n < small,
 *       else cyclic(k) chunk t mod ceil(1/k), or Bernoulli(k) drawn from
 *       (seed, t, layer) - lbscale/mask.h; identical on every rank
 *   m[S] = allreduce_sum(m[S]) / N   (one allreduce of the compacted
 *                                     values, written back; m[~S] stays)
 *   c = 0 on S, c + 1 elsewhere        (per-element staleness counters)
 *   u = (m/bc1) / (sqrt(v/bc2) + eps) + wd w      (bc = 1 - b^t)
 *   phi_max = ||w_S||/||u_S||,  phi_min = ||w_~S||/||u_~S||
 *                                                 (1 when a norm is 0)
 *   per element, s = beta3^c:
 *     lr_e  = s lr + (1-s) lr/sqrt(N)
 *     phi_e = clamp(s phi_max + (1-s) phi_min, cmin, cmax)
 *     w -= lr_e phi_e u
 *   a 1-D layer (always synced, s = 1) uses the plain LAMB ratio
 *   phi = ||w||/||u||, unclamped, with step size lr and wd as given - the
 *   authors' Slamb class.
 *
 * and after the layer loop, when t mod H == 1 (the authors' global_step %
 * local_steps == 1: after steps 1, H+1, 2H+1, ...; never for H = 1),
 * w = allreduce_sum(w)/N (dense parameter averaging, one allreduce per
 * layer).
 *
 * k warm-up (kwarm > 0; the authors' Cifar10/main.py, not their Slamb
 * class): step t uses density k_t = max(k, r[(t-1)/kwarm]) with
 * r = 0.5 0.5 0.2 0.1 0.1 0.05 0.04 0.03 0.02 0.01 0.008 0.008 0.006 0.006
 * 0.003 0.003 0.001 (held at its last entry), i.e. stages of kwarm steps
 * where the authors change compress_ratio once per epoch.  The cyclic
 * mask of a stage is chunk t mod ceil(1/k_t) of the layer's one
 * permutation (theirs: one randperm cut into int(1/k_t) chunks); the
 * staleness counters carry over from stage to stage.  The optimizer's
 * default is 0 (off, as their Slamb class); `lbscale train` sets it to
 * 1/200 of the run's steps, at least 1 (run_key below: their CIFAR run has
 * one stage per epoch of 200, so the stages above k = 0.1 cover 1.5% of
 * it); kwarm=0 turns it off there.  The CUDA kernels refuse kwarm > 0.
 *
 * lbscale's earlier variants stay available by name (optim --help slamb):
 *   exclude_1d=1   1-D layers get phi = 1 and no weight decay (as lamb's
 *                  key of that name);
 *   clamp_1d=1     the 1-D ratio clamped to [cmin, cmax];
 *   avg=lbscale    average when (t-1) mod H == 0 (every step for H = 1).
 *
 * Equivalence: with k=1 on one rank every coordinate is synced every step,
 * so c = 0, s = 1, lr_e = lr and phi_e = clamp(phi_max), so
 *   slamb:k=1,exclude_1d=1          == lamb:cmin=0.01,cmax=1000
 *   slamb:k=1,clamp_1d=1            == lamb:cmin=0.01,cmax=1000,exclude_1d=0
 *   slamb:k=1,cmin=0,cmax=1e9       == lamb:exclude_1d=0
 * step for step (same lr, b1, b2, eps, wd; lamb with bias_correction=1,
 * clip=0; H, beta3, small, mask, seed do not matter on one rank).  A layer
 * whose whole mask is synced computes u, the norms (same chunks, blocks
 * and kernel arithmetic) and the update as lamb.c does, so the result is
 * bit-identical to lamb's, not merely close (tests/test_slamb.c).
 *
 * Where this follows the authors' public code (hangxu0304/SLAMB, class
 * Slamb, the cyclic "randomk" variant; their fused Slamb_V2 draws a
 * Bernoulli mask per step but also leaves wd out of the norms, moves eps
 * to eps/sqrt(bc2) and marks the UNmasked coordinates fresh - we take the
 * Slamb class as the reference and only its mask schedule from V2):
 *   - m and v from the local gradient, masked momentum averaged and written
 *     back, v never communicated; 1-D tensors and tensors with fewer than
 *     grad_size_thr = 9000 elements always synced;
 *   - counter c reset on the mask, +1 elsewhere, s = beta3^c, the lr and
 *     phi blends above, clamp of the blended phi to [c_min, c_max] =
 *     [0.01, 1000]; phi_max/phi_min are 1 when a norm is 0; wd*w is part
 *     of u both for the norms and for the update; bias correction on;
 *   - 1-D tensors: the plain trust ratio, unclamped, lr; wd is left to the
 *     parameter groups there (0 for biases/LayerNorm in their recipes),
 *     here it is the wd key (give wd per run, or exclude_1d=1);
 *   - parameter averaging when global_step % local_steps == 1.
 * Where it follows DESIGN.md / the rest of lbscale instead:
 *   - masks per layer from lbscale/mask.h keyed by (seed, layer) rather
 *     than one torch.randperm over the flattened model; the cyclic mask
 *     has ceil(1/k) chunks (the authors' int(1/k) chunks; same for k = 1/C);
 *     Bernoulli(k) (the authors' Slamb_V2) draws a fresh mask per step;
 *   - one allreduce per layer (layer index in the trace) instead of one
 *     over the flattened model, so the record backend attributes bytes to
 *     layers and the simulator can bucket them as it likes;
 *   - no gradient pre-normalisation (the authors' default is off too).
 *
 * Staleness without counters: with the cyclic schedule of C <= 255 chunks
 * every element of chunk j was last synced at the last t' <= t with
 * t' mod C == j, so its staleness is a function of (j, t); the layer
 * keeps one byte per element (its chunk) instead of a uint32 counter read
 * and written every step, and the update takes one step size per chunk
 * from a table of C entries.  Bernoulli masks (and C > 255) keep the
 * counters.  lbs_slamb_staleness() materialises the counters on request.
 *
 * The synced values of a chunk-id layer travel in element order: every
 * rank holds the same q, so the elements with q == cur = t mod C are the
 * same everywhere and in the same order, and each parallel chunk's share
 * of them starts at a known offset (qoff).  Such a layer takes two passes
 * over its n elements and one over its k n synced ones
 * (slamb_layer_q; kernels slamb_q1/qfix/qupd_chunks):
 *   pass 1: m, v from g; u from them (every element) and the stale sums
 *     ||w_~S||^2, ||u_~S||^2; the synced new m, v, w appended to compact
 *     buffers while the block is in registers or L1;
 *   the compact m is allreduced;
 *   fix-up, over the compact values only: averaged m, u_S from it,
 *     ||w_S||^2, ||u_S||^2;
 *   update: w -= step(q) u, with u_S put in where q == cur.
 * The averaged m is not scattered back into m (a write to about 80% of
 * m's lines at k = 0.1): it stays compact in pm and the next step's
 * pass 1, which reads every line of m anyway, takes it from there
 * (lbs_slamb_momentum() puts it into m on request).  So one square root
 * and one division per element, as lamb's, and u is stored as lamb's; no
 * index list, no gather or scatter at random over m; once q is made the
 * permutation is freed.  phi_max comes from the synced sums, phi_min
 * from the stale ones, the split the counted layers make.
 *
 * Memory traffic per element (the bytes model, slamb_bytes below): a
 * cyclic layer with chunk ids - pass 1: read g, m, v, w, q and last
 * step's k n averages, write m, v, u and 3 k n compact values = 29 + 16k;
 * fix-up: read the 3 k n compact values, write the k n averages and k n
 * u_S = 20k; update: read u, w, q and the k n u_S, write w = 13 + 4k -
 * in all 42 + 40k (the compact buffers are counted as memory traffic
 * although at k n floats they may stay in cache).
 * With counters (Bernoulli, or over 255 chunks, or during a k warm-up and
 * C steps after it): moments + counters read g,m,v,c, write m,v,c = 28;
 * norms read m,v,w,c, write u = 20; update read u,c,w, write w = 16; sync
 * ~24 per synced element (c written too) = 64 + 24k, with k_t for k in a
 * warm-up; the model below uses k and the layers' current representation.
 * An always-synced layer moves 20 + 16 + 12 = 48.
 * Norms are summed in fixed chunks (optim_impl.h), so they do not depend
 * on the thread count.  State: m, v (8 bytes per element), q (1) and
 * the averages of the largest chunk (4k) for a chunk-id layer, or c (4)
 * and the cyclic permutation (4) for a counted one; scratch: u of the
 * largest layer, the compacted values (and Bernoulli indices) of the
 * largest partial layer, compact v and w of the largest chunk, and per
 * chunk-id layer C x 257 uint32 offsets.
 */
#include <limits.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lbscale/mask.h"
#include "kfam.h"
#include "slamb_kern.h"
#include "optim_impl.h"
#include "lamb_kernel.h"
#include "slamb.h"

enum { MASK_CYCLIC, MASK_BERNOULLI };
static const char *const mask_names[] = {"cyclic", "bernoulli", NULL};
enum { AVG_AUTHORS, AVG_LBSCALE };
static const char *const avg_names[] = {"authors", "lbscale", NULL};

struct slamb_cfg {
    double lr, b1, b2, eps, wd, k, beta3, H, cmin, cmax, small, mask, seed,
        exclude_1d, clamp_1d, avg, kwarm;
};

#define K(f) offsetof(struct slamb_cfg, f)
static const struct lbs_param_spec slamb_params[] = {
    {"lr", LBS_P_REAL, 0.01, 0, INFINITY, 0, K(lr), "learning rate", NULL},
    {"b1", LBS_P_REAL, 0.9, 0, 1, LBS_P_MAX_OPEN, K(b1), "first-moment decay", NULL},
    {"b2", LBS_P_REAL, 0.999, 0, 1, LBS_P_MAX_OPEN, K(b2), "second-moment decay", NULL},
    {"eps", LBS_P_REAL, 1e-6, 0, 1, LBS_P_MIN_OPEN, K(eps), "added to sqrt(v)", NULL},
    {"wd", LBS_P_REAL, 0.01, 0, INFINITY, 0, K(wd), "decoupled weight decay", NULL},
    {"k", LBS_P_REAL, 0.1, 0, 1, LBS_P_MIN_OPEN, K(k), "fraction of momentum coordinates synced per step", NULL},
    {"beta3", LBS_P_REAL, 0.99, 0, 1, LBS_P_MAX_OPEN, K(beta3), "staleness decay: s = beta3^c", NULL},
    {"H", LBS_P_INT, 100, 1, 1e12, 0, K(H), "average parameters every H steps", NULL},
    {"cmin", LBS_P_REAL, 0.01, 0, INFINITY, 0, K(cmin), "lower clamp of the blended trust ratio", NULL},
    {"cmax", LBS_P_REAL, 1000, 0, INFINITY, LBS_P_MIN_OPEN, K(cmax), "upper clamp of the blended trust ratio", NULL},
    {"small", LBS_P_INT, 9000, 0, 4294967295.0, 0, K(small), "layers with fewer elements are always synced", NULL},
    {"mask", LBS_P_ENUM, MASK_CYCLIC, 0, 0, 0, K(mask), "mask schedule", mask_names},
    {"seed", LBS_P_INT, 1, 0, 9007199254740992.0, 0, K(seed), "mask seed (shared by all ranks)", NULL},
    {"exclude_1d", LBS_P_BOOL, 0, 0, 1, 0, K(exclude_1d), "lbscale variant: 1-D tensors get phi = 1 and no wd (authors: plain trust ratio, wd as given)", NULL},
    {"clamp_1d", LBS_P_BOOL, 0, 0, 1, 0, K(clamp_1d), "lbscale variant: clamp the 1-D trust ratio to [cmin, cmax] (authors: unclamped)", NULL},
    {"avg", LBS_P_ENUM, AVG_AUTHORS, 0, 0, 0, K(avg), "when to average parameters: authors = t % H == 1 (never for H = 1), lbscale = (t-1) % H == 0", avg_names},
    {"kwarm", LBS_P_INT, 0, 0, 1e12, 0, K(kwarm), "k warm-up (the authors' CIFAR script): steps per stage of k_t = max(k, 0.5 0.5 0.2 0.1 0.1 0.05 0.04 0.03 0.02 0.01 0.008 0.008 0.006 0.006 0.003 0.003 0.001), one stage per epoch there; 0 = off (their Slamb class); lbscale train sets 1/200 of the run's steps, at least 1 (their 200-epoch run), kwarm=0 turns it off", NULL},
    {NULL, 0, 0, 0, 0, 0, 0, NULL, NULL},
};
#undef K

/* beta3^c for c below this comes from a table, above from powf */
#define SPOW_TABLE 4096

struct slamb_layer {
    int always;                   /* 1-D or small: synced every step */
    struct lbs_mask_cyclic *cyc;  /* cyclic schedule, partial layers (freed
                                     once q holds it) */
    uint32_t *c;                  /* staleness counters (Bernoulli, or
                                     cyclic with over 255 chunks) */
    uint8_t *q;                   /* chunk of each element (cyclic with at
                                     most 255 chunks: staleness follows
                                     from the chunk and the step) */
    size_t chunks;                /* of the cyclic schedule */
    uint32_t *qoff;               /* with q: qoff[j (LBS_CHUNKS + 1) + c]
                                     = elements of schedule chunk j in
                                     the layer's parallel chunks before
                                     c (c = LBS_CHUNKS: all of them) */
    struct lbs_mask_cyclic *wcyc; /* k warm-up: the cyclic schedule of
                                     density wk > k, made when its stage
                                     starts (same permutation as cyc) */
    double wk;
    float *pm;                    /* with q: the averaged momenta of chunk
                                     pmq (compact, element order), put
                                     into m by the next step's pass 1 */
    int pmq;                      /* -1: m holds them already */
    uint32_t *view;               /* counters made from q on request */
    size_t synced;                /* |S| at the last step */
};

struct slamb_state {
    float **m, **v;
    struct slamb_layer *L;
    float *u;                     /* update direction, largest layer */
    float *vals;                  /* compacted m[S], largest partial layer */
    float *cv, *cw;               /* chunk-id layers: compacted v[S] (then
                                     u_S) and w[S], cmax each */
    size_t cmax;
    uint32_t *idx;                /* Bernoulli indices, largest partial */
    float spow[SPOW_TABLE];       /* beta3^c */
    long warm_end;                /* last step of the k warm-up (k_t > k),
                                     0 without one, LONG_MAX if endless */
};

/* The authors' k warm-up (hangxu0304/SLAMB, Cifar10/main.py, "compression
 * warmup"): before each epoch compress_ratio = max(k, ratios[epoch]),
 * ratios held at its last entry after the list ends.  Here a stage lasts
 * kwarm steps instead of an epoch (the optimizer does not know epochs). */
static const double kwarm_ratios[] = {0.5, 0.5, 0.2, 0.1, 0.1, 0.05, 0.04,
                                      0.03, 0.02, 0.01, 0.008, 0.008,
                                      0.006, 0.006, 0.003, 0.003, 0.001};
#define NKWARM (sizeof kwarm_ratios / sizeof kwarm_ratios[0])

double lbs_slamb_k_at(double k, double kwarm, long t)
{
    if (!(kwarm >= 1) || t < 1)
        return k;
    double st = floor((double)(t - 1) / kwarm);
    double r = st < (double)NKWARM ? kwarm_ratios[(size_t)st]
                                   : kwarm_ratios[NKWARM - 1];
    return r > k ? r : k;
}

/* The last step with k_t > k: 0 without a warm-up (kwarm = 0, or k at
 * least the first stage's 0.5), LONG_MAX when the schedule never comes
 * down to k (k < 0.001: the authors' max() keeps 0.001 then). */
static long kwarm_end(double k, double kwarm)
{
    if (!(kwarm >= 1))
        return 0;
    for (size_t st = 0; st < NKWARM; st++)
        if (kwarm_ratios[st] <= k)
            return (long)((double)st * kwarm);
    return LONG_MAX;
}

/* Local moments; counters (when present) age by one step, saturating. */
static void slamb_moments(const struct lbs_slamb_coef *k, const float *g,
                          float *m, float *v, uint32_t *c, size_t n)
{
    const struct lbs_slamb_kern *K = lbs_kfam_cur(&lbs_slamb_kfam);
    if (n < LBS_PAR_MIN) {
        K->slamb_moments(k, g, m, v, c, n);
        return;
    }
#pragma omp parallel for schedule(static)
    for (size_t j = 0; j < LBS_CHUNKS; j++) {
        size_t lo = lbs_chunk_lo(n, j), hi = lbs_chunk_lo(n, j + 1);
        K->slamb_moments(k, g + lo, m + lo, v + lo, c ? c + lo : NULL,
                         hi - lo);
    }
}

/* Norms: chunked like lamb.c (see optim_impl.h) so they are the same for
 * any thread count - and, for a fully synced layer (c = q = NULL), with
 * lamb's arithmetic, so bit-identical to lamb's.  u is stored in a
 * scratch of the largest layer for the update. */
static void slamb_norms_full(const struct lbs_slamb_coef *k, const float *m,
                             const float *v, const float *w, float *u,
                             size_t n, double *wn, double *un)
{
    double part[LBS_CHUNKS][4];
    memset(part, 0, sizeof part);
    const struct lbs_slamb_kern *K = lbs_kfam_cur(&lbs_slamb_kfam);
    LBS_KERN_CHUNKED(n, K->slamb_split_chunks(k, m, v, w, NULL, u,
                                              n, c0, c1, part));
    double sw = 0, su = 0;
    for (size_t j = 0; j < LBS_CHUNKS; j++) {
        sw += part[j][0];
        su += part[j][1];
    }
    *wn = sqrt(sw);
    *un = sqrt(su);
}

/* The same split by synced and stale coordinates: synced where c == 0;
 * nrm = {||w_S||, ||u_S||, ||w_~S||, ||u_~S||} (chunk-id layers:
 * slamb_norms_q). */
static void slamb_norms_split(const struct lbs_slamb_coef *k, const float *m,
                              const float *v, const float *w,
                              const uint32_t *c, float *u, size_t n,
                              double nrm[4])
{
    double part[LBS_CHUNKS][4];
    memset(part, 0, sizeof part);
    const struct lbs_slamb_kern *K = lbs_kfam_cur(&lbs_slamb_kfam);
    LBS_KERN_CHUNKED(n, K->slamb_split_chunks(k, m, v, w, c, u, n,
                                              c0, c1, part));
    for (int i = 0; i < 4; i++) {
        double s = 0;
        for (size_t j = 0; j < LBS_CHUNKS; j++)
            s += part[j][i];
        nrm[i] = sqrt(s);
    }
}

static void slamb_update_split(const struct lbs_slamb_blend *b,
                               const float *spow, const float *u,
                               const uint32_t *c, float *w, size_t n)
{
    const struct lbs_slamb_kern *K = lbs_kfam_cur(&lbs_slamb_kfam);
#pragma omp parallel for schedule(static) if (n >= LBS_PAR_MIN)
    for (size_t j = 0; j < LBS_CHUNKS; j++) {
        size_t lo = lbs_chunk_lo(n, j), hi = lbs_chunk_lo(n, j + 1);
        K->slamb_update(b, spow, SPOW_TABLE, u + lo, c + lo, w + lo,
                        hi - lo);
    }
}

/* Staleness after step t of an element in chunk j of a cyclic schedule
 * of C chunks (chunk t mod C synced at step t, counters from 0, +1 per
 * step, 0 when synced): steps since the last t' <= t with t' mod C = j,
 * or t when there was none. */
static uint64_t chunk_staleness(long t, size_t C, size_t j)
{
    if (t <= 0)
        return 0;
    size_t d = ((size_t)t % C + C - j) % C;
    return (long)d <= t - 1 ? d : (uint64_t)t;
}

static void slamb_fini(struct lbs_optim *o)
{
    struct slamb_state *s = o->state;
    if (!s)
        return;
    lbs_free_layer_state(o, s->m);
    lbs_free_layer_state(o, s->v);
    if (s->L)
        for (size_t i = 0; i < o->nlayers; i++) {
            lbs_mask_cyclic_free(s->L[i].cyc);
            lbs_mask_cyclic_free(s->L[i].wcyc);
            free(s->L[i].c);
            free(s->L[i].q);
            free(s->L[i].qoff);
            free(s->L[i].pm);
            free(s->L[i].view);
        }
    free(s->L);
    free(s->u);
    free(s->vals);
    free(s->cv);
    free(s->cw);
    free(s->idx);
    free(s);
    o->state = NULL;
}

/* qoff of a chunk-id layer (struct slamb_layer): where each parallel
 * chunk of pass 1, the fix-up and the update starts in the compacted
 * values of each schedule chunk, so threads append and read back their
 * own share without a scan. */
static uint32_t *chunk_offsets(const uint8_t *q, size_t n, size_t C)
{
    const size_t S = LBS_CHUNKS + 1;
    uint32_t *off = calloc(C * S, sizeof *off);
    if (!off)
        return NULL;
    /* parallel chunk c counts into column c + 1 only */
#pragma omp parallel for schedule(static) if (n >= LBS_PAR_MIN)
    for (size_t c = 0; c < LBS_CHUNKS; c++)
        for (size_t i = lbs_chunk_lo(n, c); i < lbs_chunk_lo(n, c + 1); i++)
            off[q[i] * S + c + 1]++;
    for (size_t j = 0; j < C; j++)
        for (size_t c = 1; c < S; c++)
            off[j * S + c] += off[j * S + c - 1];
    return off;
}

/* The largest chunk of a chunk-id layer: how many values it compacts. */
static size_t chunk_max(const uint32_t *off, size_t C)
{
    size_t mx = 0;
    for (size_t j = 0; j < C; j++)
        if (off[j * (LBS_CHUNKS + 1) + LBS_CHUNKS] > mx)
            mx = off[j * (LBS_CHUNKS + 1) + LBS_CHUNKS];
    return mx;
}

/* Room for the compacted v and w of cnt synced elements (shared by the
 * layers, grown as chunk-id layers appear: at init, or after a warm-up). */
static int compact_room(struct slamb_state *s, size_t cnt)
{
    if (cnt <= s->cmax)
        return 0;
    float *cv = lbs_zalloc_f32(cnt), *cw = lbs_zalloc_f32(cnt);
    if (!cv || !cw) {
        free(cv);
        free(cw);
        return -ENOMEM;
    }
    free(s->cv);
    free(s->cw);
    s->cv = cv;
    s->cw = cw;
    s->cmax = cnt;
    return 0;
}

/* The offsets and the averaged-momenta store of chunk-id layer i, whose
 * ids sl->q hold (at most 255 chunks); with them the layer has all the
 * step needs of the schedule, so its permutation (4 bytes per element),
 * where a k warm-up made it, goes.  On failure q goes too. */
static int chunk_id_state(struct lbs_optim *o, size_t i, struct lbs_err *err)
{
    struct slamb_state *s = o->state;
    struct slamb_layer *sl = &s->L[i];
    const size_t n = o->layers[i].n;
    sl->pmq = -1;
    if (!(sl->qoff = chunk_offsets(sl->q, n, sl->chunks)))
        goto nomem;
    size_t mx = chunk_max(sl->qoff, sl->chunks);
    if (!(sl->pm = lbs_zalloc_f32(mx ? mx : 1)) || compact_room(s, mx))
        goto nomem;
    lbs_mask_cyclic_free(sl->cyc);
    sl->cyc = NULL;
    return 0;
nomem:
    free(sl->q);
    free(sl->qoff);
    free(sl->pm);
    sl->q = NULL;
    sl->qoff = NULL;
    sl->pm = NULL;
    return lbs_err_set(err, -ENOMEM, "slamb: out of memory for state");
}

/* The ids of every layer whose q is allocated and not yet made (no
 * qoff), layers side by side on the threads: each layer's ids are one
 * chain of dependent swaps (lbs_mask_cyclic_ids), the layers are
 * independent.  A failure is found again in order for its message. */
static int chunk_ids_all(struct lbs_optim *o, struct lbs_err *err)
{
    const struct slamb_cfg *c = o->cfg;
    struct slamb_layer *L = ((struct slamb_state *)o->state)->L;
    const long nl = (long)o->nlayers;
    int bad = 0;
#pragma omp parallel for schedule(dynamic, 1) reduction(| : bad)
    for (long i = 0; i < nl; i++)
        if (L[i].q && !L[i].qoff)
            bad |= lbs_mask_cyclic_ids((uint64_t)c->seed, (int)i,
                                       o->layers[i].n, c->k, L[i].q,
                                       NULL) != 0;
    for (long i = 0; bad && i < nl; i++) {
        int rc = L[i].q && !L[i].qoff
            ? lbs_mask_cyclic_ids((uint64_t)c->seed, (int)i, o->layers[i].n,
                                  c->k, L[i].q, err) : 0;
        if (rc)
            return rc;
    }
    return 0;
}

/* Chunk-id layer i made after a k warm-up (slamb_settle). */
static int make_chunk_ids(struct lbs_optim *o, size_t i, struct lbs_err *err)
{
    struct slamb_layer *sl = &((struct slamb_state *)o->state)->L[i];
    if (!(sl->q = lbs_array_alloc(o->layers[i].n, 1)))
        return lbs_err_set(err, -ENOMEM, "slamb: out of memory for state");
    int rc = chunk_ids_all(o, err);
    if (rc) {
        free(sl->q);
        sl->q = NULL;
        return rc;
    }
    return chunk_id_state(o, i, err);
}

static int slamb_check(const void *cfg, const char *name,
                       struct lbs_err *err)
{
    const struct slamb_cfg *c = cfg;
    return lbs_check_clamp(name, c->cmin, c->cmax, err);
}

static int slamb_init(struct lbs_optim *o, struct lbs_err *err)
{
    const struct slamb_cfg *c = o->cfg;
    int rc;
    struct slamb_state *s = calloc(1, sizeof *s);
    if (!s)
        return lbs_err_set(err, -ENOMEM, "slamb: out of memory for state");
    o->state = s;
    s->warm_end = kwarm_end(c->k, c->kwarm);
    s->m = lbs_alloc_layer_state(o);
    s->v = lbs_alloc_layer_state(o);
    s->L = calloc(o->nlayers, sizeof *s->L);
    if (!s->m || !s->v || !s->L)
        goto nomem;
    size_t maxn = 0, big = 0;
    for (size_t i = 0; i < o->nlayers; i++) {
        const struct lbs_layer *L = &o->layers[i];
        struct slamb_layer *sl = &s->L[i];
        big = L->n > big ? L->n : big;
        sl->always = lbs_layer_is_1d(o, i) || (double)L->n < c->small;
        if (sl->always)
            continue;
        if (L->n > UINT32_MAX) {
            rc = lbs_err_set(err, -EINVAL, "slamb: layer %zu ('%s') has %zu "
                             "elements (masks index with uint32)", i,
                             L->name ? L->name : "?", L->n);
            goto fail;
        }
        sl->chunks = (int)c->mask == MASK_CYCLIC
            ? lbs_mask_cyclic_count(c->k, L->n) : 0;
        /* during a k warm-up the schedule changes, so staleness is
         * counted (slamb_settle switches to chunk ids afterwards) */
        if (sl->chunks && sl->chunks <= 255 && !s->warm_end) {
            if (!(sl->q = lbs_array_alloc(L->n, 1)))
                goto nomem;
        } else {
            if (sl->chunks &&
                (rc = lbs_mask_cyclic_new((uint64_t)c->seed, (int)i, L->n,
                                          c->k, &sl->cyc, err)))
                goto fail;
            if (!(sl->c = lbs_array_zalloc(L->n, sizeof *sl->c)))
                goto nomem;
        }
        if (L->n > maxn)
            maxn = L->n;
    }
    if ((rc = chunk_ids_all(o, err)))
        goto fail;
    for (size_t i = 0; i < o->nlayers; i++)
        if (s->L[i].q && (rc = chunk_id_state(o, i, err)))
            goto fail;
    if (!(s->u = lbs_zalloc_f32(big)))
        goto nomem;
    if (maxn) {
        if (!(s->vals = lbs_zalloc_f32(maxn)))
            goto nomem;
        if ((int)c->mask == MASK_BERNOULLI &&
            !(s->idx = lbs_array_alloc(maxn, sizeof *s->idx)))
            goto nomem;
    }
    for (size_t j = 0; j < SPOW_TABLE; j++)
        s->spow[j] = (float)pow(c->beta3, (double)j);
    return 0;
nomem:
    rc = lbs_err_set(err, -ENOMEM, "slamb: out of memory for state");
fail:
    slamb_fini(o);
    return rc;
}

/* Trust ratio with SLAMB's convention: 1 when either norm is 0, unclamped
 * (only the blend is clamped). */
static double ratio(double wn, double un)
{
    return (wn > 0 && un > 0) ? wn / un : 1.0;
}

/* Average m over the mask S of layer i and reset the counters there
 * (layers with chunk ids sync in slamb_moments_sync). */
static int slamb_sync(struct lbs_optim *o, size_t i, const uint32_t *idx,
                      size_t cnt)
{
    struct slamb_state *s = o->state;
    float *m = s->m[i], *vals = s->vals;
    uint32_t *c = s->L[i].c;
    const struct lbs_kern *K = lbs_kern();
#pragma omp parallel for schedule(static) if (cnt >= LBS_PAR_MIN)
    for (size_t j = 0; j < LBS_CHUNKS; j++) {
        size_t lo = lbs_chunk_lo(cnt, j), hi = lbs_chunk_lo(cnt, j + 1);
        K->gather(vals + lo, m, idx + lo, hi - lo);
    }
    int rc = lbs_allreduce(o->comm, vals, cnt, LBS_FLOAT32, LBS_SUM, (int)i);
    if (rc)
        return rc;
    const float inv = 1.0f / (float)o->comm->size;
    const int scale = o->comm->size > 1;
#pragma omp parallel for schedule(static) if (cnt >= LBS_PAR_MIN)
    for (size_t j = 0; j < cnt; j++) {
        m[idx[j]] = scale ? vals[j] * inv : vals[j];
        if (c)
            c[idx[j]] = 0;
    }
    return 0;
}

/* The mask of partial layer i at step o->t for density kt (k_t of the
 * warm-up, else k): Bernoulli(kt), or chunk t mod C of the cyclic
 * schedule of density kt - the layer's own (kt = k) or the warm-up
 * stage's, made when the stage starts from the same permutation (the
 * authors cut one fixed permutation into int(1/k_t) chunks). */
static int slamb_mask(struct lbs_optim *o, size_t i, double kt,
                      const uint32_t **idx, size_t *cnt, struct lbs_err *err)
{
    const struct slamb_cfg *c = o->cfg;
    struct slamb_state *s = o->state;
    struct slamb_layer *sl = &s->L[i];
    const size_t n = o->layers[i].n;
    if ((int)c->mask == MASK_BERNOULLI) {
        *cnt = lbs_mask_bernoulli((uint64_t)c->seed, o->t, (int)i, n, kt,
                                  s->idx);
        *idx = s->idx;
        return 0;
    }
    const struct lbs_mask_cyclic *m = sl->cyc;
    if (kt != c->k) {
        if (!sl->wcyc || sl->wk != kt) {
            lbs_mask_cyclic_free(sl->wcyc);
            sl->wcyc = NULL;
            int rc = lbs_mask_cyclic_new((uint64_t)c->seed, (int)i, n, kt,
                                         &sl->wcyc, err);
            if (rc)
                return rc;
            sl->wk = kt;
        }
        m = sl->wcyc;
    } else if (sl->wcyc) {
        lbs_mask_cyclic_free(sl->wcyc);
        sl->wcyc = NULL;
    }
    lbs_mask_cyclic_get(m, o->t, idx, cnt);
    return 0;
}

/* After a k warm-up, once the layer's own cyclic schedule has visited all
 * its C chunks (steps warm_end+1 .. warm_end+C), every counter equals
 * chunk_staleness(): the layer switches to chunk ids, the path a run
 * without a warm-up takes from the start. */
static int slamb_settle(struct lbs_optim *o, size_t i, struct lbs_err *err)
{
    struct slamb_state *s = o->state;
    struct slamb_layer *sl = &s->L[i];
    if (!sl->c || !sl->chunks || sl->chunks > 255 || s->warm_end == LONG_MAX ||
        o->t <= s->warm_end + (long)sl->chunks)
        return 0;
    int rc = make_chunk_ids(o, i, err);
    if (rc)
        return rc;
    free(sl->c);
    sl->c = NULL;
    return 0;
}

/* Moments and momentum sync of layer i (not a chunk-id layer: those
 * take slamb_layer_q); *cnt = |S|.  The masked momenta are gathered and
 * scattered by index (slamb_sync). */
static int slamb_moments_sync(struct lbs_optim *o, size_t i,
                              const struct lbs_slamb_coef *k, double kt,
                              size_t *cnt, struct lbs_err *err)
{
    struct slamb_state *s = o->state;
    struct slamb_layer *sl = &s->L[i];
    const struct lbs_layer *L = &o->layers[i];
    slamb_moments(k, L->g, s->m[i], s->v[i], sl->c, L->n);
    *cnt = L->n;
    if (sl->always)
        return lbs_allreduce_mean_f32(o->comm, s->m[i], L->n, (int)i);
    const uint32_t *idx;
    int rc = slamb_mask(o, i, kt, &idx, cnt, err);
    return rc ? rc : slamb_sync(o, i, idx, *cnt);
}

/* The blended step of a partial layer from its split norms nrm =
 * {||w_S||, ||u_S||, ||w_~S||, ||u_~S||}: phi_max from the synced,
 * phi_min from the stale coordinates. */
static struct lbs_slamb_blend slamb_blend(const struct slamb_cfg *c,
                                          const double nrm[4], double lr,
                                          int N)
{
    double pmax = ratio(nrm[0], nrm[1]), pmin = ratio(nrm[2], nrm[3]);
    double smax = pmax < c->cmin ? c->cmin : pmax > c->cmax ? c->cmax : pmax;
    return (struct lbs_slamb_blend){
        .step_synced = (float)(lr * smax),
        .lr = (float)lr, .lr_min = (float)(lr / sqrt((double)N)),
        .phi_max = (float)pmax, .phi_min = (float)pmin,
        .cmin = (float)c->cmin, .cmax = (float)c->cmax,
        .beta3 = (float)c->beta3, .clamp = 1,
    };
}

/* The chunk-id layer i (cyclic, chunk cur = t mod C synced): pass 1
 * (last step's averages into m, moments, u, stale sums, synced m, v, w
 * compacted), the allreduce of the compact m, the fix-up over the k n
 * synced values (averaged m kept for the next step, u_S, synced sums),
 * and the update with one step per chunk. */
static int slamb_layer_q(struct lbs_optim *o, size_t i,
                         const struct lbs_slamb_coef *k, double lr,
                         struct lbs_err *err)
{
    const struct slamb_cfg *c = o->cfg;
    struct slamb_state *s = o->state;
    struct slamb_layer *sl = &s->L[i];
    const struct lbs_layer *L = &o->layers[i];
    const size_t n = L->n, S = LBS_CHUNKS + 1;
    const unsigned cur = (unsigned)((size_t)o->t % sl->chunks);
    const struct lbs_slamb_kern *K = lbs_kfam_cur(&lbs_slamb_kfam);
    const struct lbs_slamb_qbuf B = {
        .q = sl->q, .cur = cur, .off = sl->qoff + cur * S,
        .prev = sl->pmq < 0 ? 0 : (unsigned)sl->pmq,
        .poff = sl->pmq < 0 ? NULL : sl->qoff + (size_t)sl->pmq * S,
        .pm = sl->pmq < 0 ? NULL : sl->pm,
        .cm = s->vals, .cv = s->cv, .cw = s->cw,
    };
    double part[LBS_CHUNKS][4];
    LBS_KERN_CHUNKED(n, K->slamb_q1_chunks(k, L->g, s->m[i], s->v[i], L->w,
                                           s->u, &B, n, c0, c1, part));
    sl->pmq = -1;   /* m holds them now */
    const size_t cnt = B.off[LBS_CHUNKS];
    sl->synced = cnt;
    int rc = lbs_allreduce(o->comm, s->vals, cnt, LBS_FLOAT32, LBS_SUM,
                           (int)i);
    if (rc)
        return rc;
    /* slamb_sync's scaling: x 1/N (x 1, exact, on one rank) */
    const float inv = 1.0f / (float)o->comm->size;
    LBS_KERN_CHUNKED(n, K->slamb_qfix_chunks(k, &B, inv, sl->pm, c0, c1,
                                             part));
    sl->pmq = (int)cur;
    double nrm[4];
    for (int j = 0; j < 4; j++) {
        double sum = 0;
        for (size_t ch = 0; ch < LBS_CHUNKS; ch++)
            sum += part[ch][j];
        nrm[j] = sqrt(sum);
    }
    if ((rc = lbs_check_finite(o, i, nrm[1] + nrm[3], err)))
        return rc;
    const struct lbs_slamb_blend b = slamb_blend(c, nrm, lr, o->comm->size);
    /* every element of a chunk has the same staleness, so the same step:
     * one table entry per chunk */
    float tab[256] = {0};
    for (size_t j = 0; j < sl->chunks; j++)
        tab[j] = j == cur ? b.step_synced
                          : lbs_slamb_stale_step(
                                &b, s->spow, SPOW_TABLE,
                                chunk_staleness(o->t, sl->chunks, j));
    LBS_KERN_CHUNKED(n, K->slamb_qupd_chunks(tab, (unsigned)sl->chunks, &B,
                                             s->u, L->w, n, c0, c1));
    return 0;
}

static int slamb_step(struct lbs_optim *o, struct lbs_err *err)
{
    const struct slamb_cfg *c = o->cfg;
    struct slamb_state *s = o->state;
    const int N = o->comm->size;
    int rc;
    struct lbs_slamb_coef k = {
        .b1 = (float)c->b1, .b2 = (float)c->b2,
        .c1 = (float)(1 - c->b1), .c2 = (float)(1 - c->b2),
        .ibc1 = (float)(1.0 / (1.0 - pow(c->b1, (double)o->t))),
        .ibc2 = (float)(1.0 / (1.0 - pow(c->b2, (double)o->t))),
        .eps = (float)c->eps,
    };
    const double lr = c->lr * o->lr_scale;
    const double kt = lbs_slamb_k_at(c->k, c->kwarm, o->t);
    o->comm->err = err;
    for (size_t i = 0; i < o->nlayers; i++) {
        const struct lbs_layer *L = &o->layers[i];
        struct slamb_layer *sl = &s->L[i];
        const int is1d = lbs_layer_is_1d(o, i);
        if ((rc = slamb_settle(o, i, err)))
            return rc;
        const int plain = c->exclude_1d && is1d;
        k.wd = plain ? 0.0f : (float)c->wd;
        if (sl->q) {
            if ((rc = slamb_layer_q(o, i, &k, lr, err)))
                return rc;
            continue;
        }
        size_t cnt;
        if ((rc = slamb_moments_sync(o, i, &k, kt, &cnt, err)))
            return rc;
        sl->synced = cnt;

        if (cnt == L->n) {
            /* every coordinate synced: s = 1 everywhere, plain LAMB */
            double wn, un;
            slamb_norms_full(&k, s->m[i], s->v[i], L->w, s->u, L->n, &wn,
                             &un);
            if ((rc = lbs_check_finite(o, i, un, err)))
                return rc;
            /* 1-D: the authors' plain LAMB ratio, unclamped (clamp_1d:
             * lbscale's clamp; exclude_1d: phi = 1) */
            double phi = plain ? 1.0
                         : is1d && !c->clamp_1d ? ratio(wn, un)
                         : lbs_trust_ratio(wn, un, c->cmin, c->cmax);
            lbs_lamb_apply(s->u, L->w, L->n, (float)(lr * phi));
            continue;
        }
        double nrm[4];
        slamb_norms_split(&k, s->m[i], s->v[i], L->w, sl->c, s->u, L->n,
                          nrm);
        if ((rc = lbs_check_finite(o, i, nrm[1] + nrm[3], err)))
            return rc;
        const struct lbs_slamb_blend b = slamb_blend(c, nrm, lr, N);
        slamb_update_split(&b, s->spow, s->u, sl->c, L->w, L->n);
    }
    const long H = (long)c->H;
    if ((int)c->avg == AVG_AUTHORS ? o->t % H == 1 : (o->t - 1) % H == 0)
        for (size_t i = 0; i < o->nlayers; i++)
            if ((rc = lbs_allreduce_mean_f32(o->comm, o->layers[i].w,
                                             o->layers[i].n, (int)i)))
                return rc;
    return 0;
}

static double slamb_bytes(const struct lbs_optim *o)
{
    const struct slamb_cfg *c = o->cfg;
    const struct slamb_state *s = o->state;
    double bytes = 0, n = 0;
    for (size_t i = 0; i < o->nlayers; i++) {
        double ni = (double)o->layers[i].n;
        bytes += ni * (s->L[i].always ? 48.0
                       : s->L[i].q ? 42.0 + 40.0 * c->k
                                   : 64.0 + 24.0 * c->k);
        n += ni;
    }
    return n > 0 ? bytes / n : 0;
}

/* The GPU kernels (core/cuda/optim.cu) and the specs tests/gpu/
 * check_optim.c compares them with this file on. */
static const char *const slamb_gpu_checks[] = {
    "slamb:k=0.1",
    "slamb:k=0.3,mask=bernoulli,beta3=0.9",
    "slamb:k=1",
    "slamb:k=0.05,small=0,exclude_1d=0,mask=bernoulli",
    NULL,
};
static void slamb_gpu_hp(const void *cfg, struct lbs_optim_device_hp *hp)
{
    const struct slamb_cfg *c = cfg;
    hp->lr = c->lr;
    hp->b1 = c->b1;
    hp->b2 = c->b2;
    hp->eps = c->eps;
    hp->wd = c->wd;
    hp->k = c->k;
    hp->beta3 = c->beta3;
    hp->H = c->H;
    hp->cmin = c->cmin;
    hp->cmax = c->cmax;
    hp->small = c->small;
    hp->bernoulli = c->mask;      /* MASK_BERNOULLI = 1, MASK_CYCLIC = 0 */
    hp->seed = c->seed;
    hp->exclude_1d = c->exclude_1d;
    hp->clamp_1d = c->clamp_1d;
    hp->kwarm = c->kwarm;      /* the kernels refuse a warm-up (optim.cu) */
}
/* What the GPU kernels move (core/cuda/optim.cu).  They keep uint32
 * staleness counters for every partial layer, cyclic masks included (no
 * per-element chunk ids), so a partial layer costs 64 + 24k whatever the
 * mask, where this file's cyclic layers with chunk ids cost less
 * (slamb_bytes); always-synced layers move 48 on both.  The GPU's
 * partial rule is this file's: 2-D and at least `small` elements. */
static double slamb_gpu_bytes(const void *cfg, const struct lbs_layer *l,
                              size_t nl)
{
    const struct slamb_cfg *c = cfg;
    double bytes = 0, n = 0;
    for (size_t i = 0; i < nl; i++) {
        double ni = (double)l[i].n;
        int partial = l[i].ndim > 1 && ni >= c->small;
        bytes += ni * (partial ? 64.0 + 24.0 * c->k : 48.0);
        n += ni;
    }
    return n > 0 ? bytes / n : 0;
}
static const struct lbs_optim_device slamb_gpu = {
    .kernel = LBS_KERNEL_SLAMB,
    .exact = 0,
    .checks = slamb_gpu_checks,
    .hparams = slamb_gpu_hp,
    .bytes_per_elem = slamb_gpu_bytes,
};

const struct lbs_optim_ops lbs_optim_slamb = {
    .name = "slamb",
    .summary = "SLAMB: local LAMB moments, random-k momentum sync with "
               "staleness-blended lr and trust ratio, params averaged every H",
    .params = slamb_params,
    .lr_rule = &lbs_lr_lamb,   /* untuned: LAMB's rate */
    .dense = 0,
    .adaptive = 1,
    /* the authors' CIFAR run: one k warm-up stage per epoch of 200 */
    .run_key = "kwarm",
    .run_fraction = 1.0 / 200,
    .cfg_size = sizeof(struct slamb_cfg),
    .bytes_per_elem = slamb_bytes,
    .check = slamb_check,
    .init = slamb_init,
    .step = slamb_step,
    .fini = slamb_fini,
    .device = &slamb_gpu,
    .kern = &lbs_slamb_kfam,
    .exact = 0,
};

static const struct slamb_state *state_of(const struct lbs_optim *o,
                                          size_t layer)
{
    if (!o || o->ops != &lbs_optim_slamb || layer >= o->nlayers)
        return NULL;
    return o->state;
}

const float *lbs_slamb_momentum(const struct lbs_optim *o, size_t layer)
{
    const struct slamb_state *s = state_of(o, layer);
    if (!s)
        return NULL;
    /* a chunk-id layer's last averages wait in pm for the next pass 1 */
    struct slamb_layer *sl = &s->L[layer];
    if (sl->q && sl->pmq >= 0) {
        const struct lbs_slamb_kern *K = lbs_kfam_cur(&lbs_slamb_kfam);
        K->expand_eq(s->m[layer], sl->q, (uint8_t)sl->pmq, sl->pm, 1.0f,
                     o->layers[layer].n);
        sl->pmq = -1;
    }
    return s->m[layer];
}

const uint32_t *lbs_slamb_staleness(const struct lbs_optim *o, size_t layer)
{
    const struct slamb_state *s = state_of(o, layer);
    if (!s)
        return NULL;
    struct slamb_layer *sl = &s->L[layer];
    if (!sl->q)
        return sl->c;
    /* cyclic with chunk ids: the counters follow from chunk and step */
    size_t n = o->layers[layer].n;
    if (!sl->view && !(sl->view = lbs_array_alloc(n, sizeof *sl->view)))
        return NULL;
    uint32_t tab[256];
    for (size_t j = 0; j < sl->chunks; j++) {
        uint64_t c = chunk_staleness(o->t, sl->chunks, j);
        tab[j] = c < UINT32_MAX ? (uint32_t)c : UINT32_MAX;
    }
    for (size_t i = 0; i < n; i++)
        sl->view[i] = tab[sl->q[i]];
    return sl->view;
}

size_t lbs_slamb_synced(const struct lbs_optim *o, size_t layer)
{
    const struct slamb_state *s = state_of(o, layer);
    return s ? s->L[layer].synced : 0;
}
