/* onebit_lamb.c - 1-bit LAMB (Li et al. 2021, DeepSpeed's OnebitLamb),
 * SLAMB's main baseline.
 *
 * Warm-up, steps t <= freeze_step: dense LAMB.  The gradients are
 * averaged over the ranks here (.dense = 0 because the compressed phase
 * must not average them; the driver's finite check therefore sees the
 * local gradients and agrees on them with its 4-byte MAX allreduce), then
 *   m = b1 m + (1-b1) g;  v = b2 v + (1-b2) g^2
 *   u = (m/bc1) / (sqrt(v/bc2) + eps) + wd w
 *   phi = clamp(||w||/||u||, cmin, cmax)  (1 when a norm is 0);  w -= lr phi u
 *   coeff_freeze = coeff_beta coeff_freeze + (1-coeff_beta) phi
 *                                             (only when phi != 1, from 0)
 * At t == freeze_step a copy v_fresh of v starts; v itself is frozen.
 *
 * Compressed phase, t > freeze_step (gradients stay local):
 *   at the first such step, per layer scale_l = ||m_l||/sqrt(n_l) and
 *   sc_l = mean_l(scale_l) / scale_l (1 when scale_l = 0), fixed after;
 *   x = (b1 m + (1-b1) g) sc_l, all layers fused in one buffer of n_pad =
 *   8P ceil(n/(8P)) elements (zero padding), then the compressed allreduce:
 *     worker:  x += e_w;  a = ||x||/sqrt(n_pad);  e_w = x - a sign(x)
 *              signs packed 8 per byte (bit 1: x >= 0), chunk r (n_pad/P
 *              elements) to rank r with one alltoall; a to all (allgather)
 *     server:  y = sum_r a_r sign_r / P + e_s over my chunk;
 *              b = ||y||/sqrt(n_pad/P);  e_s = y - b sign(y)
 *              packed signs of y and b to all (two allgathers)
 *     x[chunk r] = b_r sign_r(y)                (identical on every rank)
 *   m_new = x / sc_l;  g~ = (m_new - b1 m)/(1-b1);  m = m_new
 *   v_fresh = b2 v_fresh + (1-b2) g~^2
 *   d = sqrt(v/bc2F) + eps (frozen v),  d' = sqrt(v_fresh/bc2) + eps
 *   p = (m/bc1)/d;  u = p + wd w
 *   f = max_i d_i/d'_i;  if wd > 0: r = min(1, ||p||/||u||), f = f r + 1 - r
 *   f = clamp(f, factor_min, factor_max), then within
 *       last (1 -/+ factor_threshold);  last = f   (last starts at 1)
 *   w -= lr (coeff_freeze f) u
 * With exclude_1d (default) a 1-D layer uses phi = 1 / coefficient 1 and
 * wd = 0 in both phases.
 *
 * Bias correction (bc = 1 - b^t; bc2F = 1 - b2^freeze_step) is off by
 * default, like DeepSpeed, whose 1-bit LAMB never divides by 1-b^t.  So
 * during the warm-up, "onebit_lamb:<shared keys>" equals
 * "lamb:<shared keys>,bias_correction=0,cmin=0.01,cmax=10" step for step
 * (lr, b1, b2, eps, wd, exclude_1d default as in lamb).  Defaults: the
 * keys shared with lamb as lamb (lr 0.01, eps 1e-6, wd 0.01; DeepSpeed's
 * are 1e-3, 1e-8, 0), the rest as DeepSpeed: cmin/cmax 0.01/10,
 * freeze_step 100000 (set it to 15-25% of the run), coeff_beta 0.9 (keep
 * 1/(1-coeff_beta) below freeze_step: the EMA starts from 0), factor in
 * [0.5, 4] moving at most 10% a step.
 *
 * Bytes per compressed step, per rank, P > 1, convention: the payload this
 * rank passes to each collective (count x element size, the whole send
 * buffer for alltoall, the send block for allgather):
 *   alltoall of signs  n_pad/8  +  allgather of a  4
 *   + allgather of server signs  n_pad/(8P)  +  allgather of b  4
 *   = n_pad/8 (1 + 1/P) + 8 bytes            (lbs_onebit_lamb_step_bytes)
 * plus the driver's 4-byte finite flag; vs 4n for a dense fp32 allreduce,
 * i.e. ~(1 + 1/P)/32 of it.  Counted on the receive side instead it is
 * n_pad/4 + 8P (each rank receives n_pad/8 from each phase): ~1/16 of 4n.
 * During the warm-up: 4n (one allreduce per layer, layer index) + 4.
 * On one rank nothing is sent and, as in DeepSpeed (which compresses only
 * when world size > 1), the momentum is not compressed.
 *
 * Differences from DeepSpeed, deliberate: no "initialization step" (its
 * first call only sets up buffers); the padding is to a multiple of 8P
 * (DeepSpeed: P lcm(P, 8)) and its momentum is +0 at every step, where
 * DeepSpeed's is not: its padding is a zero tensor (dummy_exp_avg) fused
 * into the flat momentum once, never scaled by b1 nor re-zeroed, so the
 * compressed allreduce writes the server's decoded values (+-b of the last
 * chunk) into it and they are the padding's x at the next step, entering
 * that step's scales a and b; here the padding's x is only its error
 * feedback e_w (worker_feed), which keeps the scales those of the real
 * momentum plus compression error (the difference shrinks as n_pad - n,
 * < 8P elements, against n); a layer whose momentum scale is 0 gets sc = 1
 * instead of inf; exclude_1d as in lamb.c (DeepSpeed leaves 1-D tensors'
 * wd to parameter groups and applies the coefficient to every tensor);
 * the sign exchanges carry LBS_LAYER_ALL (one fused buffer, as DeepSpeed:
 * its bytes grow with the whole model), the scale allgathers layer -1.
 *
 * Memory traffic per element: warm-up 40 (lamb.c's two passes, u kept in
 * a scratch of the largest layer).  Compressed, P > 1, four passes, no
 * fused momentum buffer:
 *   worker  (onebit_fill_feed) read g, m, e_w, write e_w: 16.  e_w holds
 *           the last step's x, its "- a sign(x)" deferred to this pass:
 *           x = (b1 m + c1 g) sc_l + (e_w - a' sign(e_w)) is formed in
 *           registers and stored over e_w, ||x||^2 and the packed signs
 *           (from L1, 1/8, not counted) in the same pass
 *   server  (onebit_server) over my n_pad/P: every worker's signs decoded
 *           and summed in L1, plus e_s - b' sign(e_s), stored over e_s,
 *           ||y||^2 and the packed signs: 8 per server element, 8/P per
 *           element of n
 *   update  (onebit_fresh_chunks) the server's signs decoded a block at a
 *           time in L1, 1/sc_l folded into their scale; read m, v,
 *           v_fresh, w, write m, v_fresh, u: 28
 *   apply   read u, w, write w: 12
 *   = 56 + 8/P (60 on two ranks; formerly 72 + 24/P: a fill into the
 *   buffer 12, x += e 12, keep/pack 8, and the server's sum, x += e and
 *   keep/pack 24 over n/P).  LAMB on P ranks moves 40 plus the dense
 *   allreduce of g, which through MPI's shared memory reads and writes g
 *   more than once (on two ranks at 100M elements it took about as long
 *   as LAMB's own 40 bytes).  Plus the driver's finite check (4) in both.
 * The deferral is exact: the subtraction is the same float operation a
 * pass later; lbs_onebit_lamb_errors shows copies with it done.
 * The decoders read 32 signs as one word (a blend per 16, not a gather
 * per bit).  On one rank there is no buffer: the update pass forms
 * x = (b1 m + c1 g) sc in registers (read g, m, v, v_fresh, w, write m,
 * v_fresh, u = 32) and the apply is 12: 44.  Every pass is a dispatched
 * kernel (core/kern/kern.h: onebit_*), elementwise the same arithmetic
 * at every level and as the former separate passes; only the worker's
 * ||x||^2 is grouped by layer chunks now, not by chunks of the buffer.
 * All norms are summed in fixed chunks (optim_impl.h): every rank computes
 * the same factors from the same data, so the replicas stay identical.
 */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kfam.h"
#include "lamb_kernel.h"
#include "optim_impl.h"
#include "slamb.h"

struct onebit_cfg {
    struct lbs_adam_cfg a;
    double cmin, cmax, exclude_1d, freeze_step, coeff_beta, factor_max,
        factor_min, factor_threshold;
};

#define K(f) offsetof(struct onebit_cfg, f)
static const struct lbs_param_spec onebit_params[] = {
    {"lr", LBS_P_REAL, 0.01, 0, INFINITY, 0, K(a.lr), "learning rate", NULL},
    {"b1", LBS_P_REAL, 0.9, 0, 1, LBS_P_MAX_OPEN, K(a.b1), "first-moment decay", NULL},
    {"b2", LBS_P_REAL, 0.999, 0, 1, LBS_P_MAX_OPEN, K(a.b2), "second-moment decay", NULL},
    {"eps", LBS_P_REAL, 1e-6, 0, 1, LBS_P_MIN_OPEN, K(a.eps), "added to sqrt(v)", NULL},
    {"wd", LBS_P_REAL, 0.01, 0, INFINITY, 0, K(a.wd), "decoupled weight decay", NULL},
    {"bias_correction", LBS_P_BOOL, 0, 0, 1, 0, K(a.bias_correction), "divide m, v by 1-b^t (DeepSpeed: off)", NULL},
    {"cmin", LBS_P_REAL, 0.01, 0, INFINITY, 0, K(cmin), "lower clamp of the warm-up trust ratio", NULL},
    {"cmax", LBS_P_REAL, 10, 0, INFINITY, LBS_P_MIN_OPEN, K(cmax), "upper clamp of the warm-up trust ratio", NULL},
    {"exclude_1d", LBS_P_BOOL, 1, 0, 1, 0, K(exclude_1d), "no trust ratio/wd for 1-D tensors", NULL},
    {"freeze_step", LBS_P_INT, 100000, 1, 1e15, 0, K(freeze_step), "warm-up steps of dense LAMB before compression", NULL},
    {"coeff_beta", LBS_P_REAL, 0.9, 0, 1, LBS_P_MAX_OPEN, K(coeff_beta), "EMA decay of the warm-up trust ratio", NULL},
    {"factor_max", LBS_P_REAL, 4.0, 1, INFINITY, 0, K(factor_max), "upper bound of the scaling factor", NULL},
    {"factor_min", LBS_P_REAL, 0.5, 0, 1, LBS_P_MIN_OPEN, K(factor_min), "lower bound of the scaling factor", NULL},
    {"factor_threshold", LBS_P_REAL, 0.1, 0, 1, LBS_P_MAX_OPEN, K(factor_threshold), "max relative change of the factor per step", NULL},
    {NULL, 0, 0, 0, 0, 0, 0, NULL, NULL},
};
#undef K

struct onebit_state {
    float **m, **v, **vf;         /* vf: v_fresh, from t == freeze_step */
    float *u;                     /* update direction, largest layer */
    double *coeff;                /* EMA of the trust ratio */
    double *last;                 /* last scaling factor */
    double *sc;                   /* momentum scaling, per layer */
    int scaled;                   /* sc computed */
    int ready;                    /* alloc_compression done */
    size_t ntot, npad, chunk;     /* elements: all layers, padded, per rank */
    size_t *off;                  /* layer offsets into werr */
    float *werr, *serr;           /* worker error (npad), server (chunk) */
    float wpend, spend;           /* their scales, subtraction deferred */
    double *part;                 /* worker_feed's sums, nlayers x chunks */
    float *zpad;                  /* zeros, npad - ntot */
    float *wview, *sview;         /* lbs_onebit_lamb_errors' copies */
    float *wsc, *ssc;             /* P worker / server scales */
    uint8_t *sbits, *rbits, *cbits;   /* npad/8, npad/8, chunk/8 */
};

/* ------------------------------------------------------------ warm-up */

/* The warm-up runs lamb.c's own passes (lamb_kernel.h), so it is
 * bit-identical to lamb; u goes to a scratch of the largest layer. */
static float **copy_layer_state(const struct lbs_optim *o, float **src)
{
    float **d = lbs_alloc_layer_state(o);
    if (d)
        for (size_t i = 0; i < o->nlayers; i++)
            memcpy(d[i], src[i], o->layers[i].n * sizeof(float));
    return d;
}

/* coeff_freeze: the EMA of the warm-up trust ratio, where it is not 1. */
static void track_coeff(struct lbs_optim *o, size_t i, double phi, int plain)
{
    const struct onebit_cfg *c = o->cfg;
    struct onebit_state *s = o->state;
    if (!plain && phi != 1.0)
        s->coeff[i] = c->coeff_beta * s->coeff[i] +
                      (1 - c->coeff_beta) * phi;
}

static int warmup_step(struct lbs_optim *o, struct lbs_err *err)
{
    const struct onebit_cfg *c = o->cfg;
    struct onebit_state *s = o->state;
    int rc = lbs_optim_average_grads(o, err);
    if (!rc)
        rc = lbs_lamb_layers(o, &c->a, c->cmin, c->cmax, c->exclude_1d, 1.0,
                             s->m, s->v, s->u, track_coeff, err);
    if (rc)
        return rc;
    if (o->t == (long)c->freeze_step && !s->vf &&
        !(s->vf = copy_layer_state(o, s->v)))
        return lbs_err_set(err, -ENOMEM, "onebit_lamb: out of memory for "
                           "v_fresh");
    return 0;
}

/* ------------------------------------------------ compressed allreduce */

/* Each kernel call packs the bytes wholly inside its range; a byte that
 * straddles two ranges is packed here, once they are all done: byte p/8
 * for a range boundary p off a byte boundary. */
static void pack_at(const float *x, uint8_t *bits, size_t p)
{
    const struct lbs_onebit_kern *K = lbs_kfam_cur(&lbs_onebit_kfam);
    if (p & 7)
        K->onebit_pack(x, bits, p / 8, p / 8 + 1);
}

/* The worker's error feedback, in place in s->werr (laid out as the fused
 * buffer): e = x + (e - wpend sign(e)) with x = (b1 m + c1 g) sc_l formed
 * in registers, layer by layer in fixed chunks in one parallel region
 * (lbs_sumsq_layers says why one), then the padding, where x = +0; the
 * signs into s->sbits.  Returns ||e||^2. */
static double worker_feed(struct lbs_optim *o,
                          const struct lbs_onebit_coef *k0)
{
    struct onebit_state *s = o->state;
    const struct lbs_onebit_kern *K = lbs_kfam_cur(&lbs_onebit_kfam);
#pragma omp parallel if (s->ntot >= LBS_PAR_MIN)
    {
        size_t T = (size_t)omp_get_num_threads(),
               t = (size_t)omp_get_thread_num(), c0, c1;
        for (size_t i = 0; i < o->nlayers; i++) {
            const size_t n = o->layers[i].n, off = s->off[i];
            if (!lbs_layer_share(n, i, t, T, &c0, &c1))
                continue;
            struct lbs_onebit_coef k = *k0;
            k.sc = (float)s->sc[i];
            const float *g = o->layers[i].g, *m = s->m[i];
            for (size_t c = c0; c < c1; c++) {
                size_t lo = lbs_chunk_lo(n, c), hi = lbs_chunk_lo(n, c + 1);
                s->part[i * LBS_CHUNKS + c] = K->onebit_fill_feed(
                    &k, g + lo, m + lo, s->werr + off + lo, s->wpend,
                    s->sbits, off + lo, hi - lo);
            }
        }
    }
    /* the padding: g = m = 0 make its momentum +0 at every step (unlike
     * DeepSpeed, whose padding keeps the last step's decoded values: see
     * the header's differences), so x there is e_w alone; before pack_at,
     * whose byte at ntot holds padding too */
    double sum = K->onebit_fill_feed(k0, s->zpad, s->zpad, s->werr + s->ntot,
                                     s->wpend, s->sbits, s->ntot,
                                     s->npad - s->ntot);
    for (size_t i = 0; i < o->nlayers; i++) {
        sum += lbs_sum_chunks(s->part + i * LBS_CHUNKS);
        for (size_t c = 0; c <= LBS_CHUNKS; c++)
            pack_at(s->werr, s->sbits,
                    s->off[i] + lbs_chunk_lo(o->layers[i].n, c));
    }
    return sum;
}

/* The server's error feedback over my chunk, in place in s->serr: the
 * average of every worker's signs decoded, plus e - spend sign(e); the
 * signs into s->cbits; ||.||^2 in fixed chunks. */
static double server_feed(struct lbs_optim *o)
{
    struct onebit_state *s = o->state;
    const struct lbs_onebit_kern *K = lbs_kfam_cur(&lbs_onebit_kfam);
    const size_t P = (size_t)o->comm->size, chunk = s->chunk;
    const float invP = 1.0f / (float)P;
    double part[LBS_CHUNKS];
#pragma omp parallel for schedule(static) if (chunk >= LBS_PAR_MIN)
    for (size_t c = 0; c < LBS_CHUNKS; c++)
        part[c] = K->onebit_server(s->rbits, chunk / 8, P, s->wsc, invP,
                                   s->serr, s->spend, s->cbits,
                                   lbs_chunk_lo(chunk, c),
                                   lbs_chunk_lo(chunk, c + 1));
    for (size_t c = 0; c <= LBS_CHUNKS; c++)
        pack_at(s->serr, s->cbits, lbs_chunk_lo(chunk, c));
    return lbs_sum_chunks(part);
}

/* out = e - scale sign(e): an error buffer with its deferred
 * subtraction done (the state itself is left as it is). */
static void settled(const float *e, size_t n, float scale, float *out)
{
    for (size_t j = 0; j < n; j++)
        out[j] = e[j] - (e[j] >= 0.0f ? scale : -scale);
}

/* DeepSpeed's compressed_allreduce (see the header); k: the fill's
 * coefficients. */
static int compressed_allreduce(struct lbs_optim *o,
                                const struct lbs_onebit_coef *k)
{
    struct onebit_state *s = o->state;
    struct lbs_comm *comm = o->comm;
    const size_t chunk = s->chunk, cb = chunk / 8;
    int rc;

    /* worker */
    double sum = worker_feed(o, k);
    float a = (float)sqrt(sum / (double)s->npad);
    s->wpend = a;
    if ((rc = lbs_alltoall(comm, s->sbits, s->rbits, cb, LBS_UINT8,
                               LBS_LAYER_ALL)) ||
        (rc = lbs_allgather(comm, &a, s->wsc, 1, LBS_FLOAT32, -1)))
        return rc;

    /* server: my chunk of every worker's signs */
    sum = server_feed(o);
    float b = (float)sqrt(sum / (double)chunk);
    s->spend = b;
    if ((rc = lbs_allgather(comm, s->cbits, s->sbits, cb, LBS_UINT8,
                                LBS_LAYER_ALL)) ||
        (rc = lbs_allgather(comm, &b, s->ssc, 1, LBS_FLOAT32, -1)))
        return rc;

    /* everyone decodes the same averaged momentum: s->sbits, s->ssc,
     * read by the update pass itself */
    return 0;
}

static int alloc_compression(struct lbs_optim *o, struct lbs_err *err)
{
    struct onebit_state *s = o->state;
    const size_t P = (size_t)o->comm->size;
    s->npad = (s->ntot + 8 * P - 1) / (8 * P) * (8 * P);
    s->chunk = s->npad / P;
    /* one rank: the update pass forms the momentum itself, no errors */
    if (P > 1 &&
        (!(s->werr = lbs_zalloc_f32(s->npad)) ||
         !(s->serr = lbs_zalloc_f32(s->chunk)) ||
         !(s->part = malloc(o->nlayers * LBS_CHUNKS * sizeof *s->part)) ||
         !(s->zpad = lbs_zalloc_f32(s->npad - s->ntot + 1)) ||
         !(s->wsc = lbs_zalloc_f32(P)) || !(s->ssc = lbs_zalloc_f32(P)) ||
         !(s->sbits = lbs_array_zalloc(s->npad / 8, 1)) ||
         !(s->rbits = lbs_array_zalloc(s->npad / 8, 1)) ||
         !(s->cbits = lbs_array_zalloc(s->chunk / 8, 1))))
        goto nomem;
    if (!s->vf && !(s->vf = copy_layer_state(o, s->v)))
        goto nomem;
    s->ready = 1;
    return 0;
nomem:
    return lbs_err_set(err, -ENOMEM, "onebit_lamb: out of memory for the "
                       "compression buffers");
}

/* DeepSpeed's per-layer momentum scaling from the end-of-warm-up m. */
static void compute_scaling(struct lbs_optim *o)
{
    struct onebit_state *s = o->state;
    double mean = 0;
    for (size_t i = 0; i < o->nlayers; i++) {
        s->sc[i] = sqrt(lbs_sumsq(s->m[i], o->layers[i].n) /
                        (double)o->layers[i].n);
        mean += s->sc[i];
    }
    mean /= (double)o->nlayers;
    for (size_t i = 0; i < o->nlayers; i++)
        s->sc[i] = (s->sc[i] > 0 && mean > 0) ? mean / s->sc[i] : 1.0;
    s->scaled = 1;
}

struct fresh_sums {
    double pp, uu;    /* ||p||^2, ||u||^2 */
    float fmax;       /* max d/d' */
};

/* m_new, g~, v_fresh, u and the sums the scaling factor needs, in fixed
 * chunks (onebit_fresh_chunks kernel).  g given: one rank, the fill
 * (b1 m + c1 g) sc is formed in registers instead of a buffer; else the
 * averaged momentum is decoded from k's bits block by block. */
static void compressed_pass1(const struct lbs_onebit_coef *k, const float *g,
                             float *m, const float *v, float *vf,
                             const float *w, float *u, size_t n,
                             struct fresh_sums *r)
{
    double part[LBS_CHUNKS][2];
    float fm[LBS_CHUNKS];
    const struct lbs_onebit_kern *K = lbs_kfam_cur(&lbs_onebit_kfam);
    LBS_KERN_CHUNKED(n, K->onebit_fresh_chunks(k, NULL, g, m, v, vf, w, u, n,
                                               c0, c1, part, fm));
    *r = (struct fresh_sums){0, 0, 0};
    for (size_t c = 0; c < LBS_CHUNKS; c++) {
        r->pp += part[c][0];
        r->uu += part[c][1];
        r->fmax = fm[c] > r->fmax ? fm[c] : r->fmax;
    }
}

/* DeepSpeed's scaling factor f of layer i from the pass-1 sums, clamped
 * and rate-limited; returns the step's coefficient coeff_freeze f. */
static double scaling_coeff(struct lbs_optim *o, size_t i, float wd,
                            const struct fresh_sums *r)
{
    const struct onebit_cfg *c = o->cfg;
    struct onebit_state *s = o->state;
    const double th = c->factor_threshold;
    double f = r->fmax;
    if (wd > 0 && r->uu > 0) {
        double ratio = sqrt(r->pp) / sqrt(r->uu);
        ratio = ratio < 1.0 ? ratio : 1.0;
        f = f * ratio + (1.0 - ratio);
    }
    f = f > c->factor_max ? c->factor_max : f;
    f = f < c->factor_min ? c->factor_min : f;
    double hi = s->last[i] * (1.0 + th), lo = s->last[i] * (1.0 - th);
    f = f > hi ? hi : f < lo ? lo : f;
    s->last[i] = f;
    return s->coeff[i] * f;
}

static int compressed_step(struct lbs_optim *o, struct lbs_err *err)
{
    const struct onebit_cfg *c = o->cfg;
    struct onebit_state *s = o->state;
    const int many = o->comm->size > 1;
    int rc;
    if (!s->ready && (rc = alloc_compression(o, err)))
        return rc;
    if (!s->scaled)
        compute_scaling(o);
    /* v_fresh is corrected for step t, the frozen v for freeze_step */
    struct lbs_onebit_coef k = {.k = lbs_adam_coef(&c->a, o->t, 1.0)};
    k.ibc2r = k.k.ibc2;
    if (c->a.bias_correction)
        k.k.ibc2 = (float)(1.0 / (1.0 - pow(c->a.b2, c->freeze_step)));
    k.bits = s->sbits;
    k.ssc = s->ssc;
    k.chunk = s->chunk;
    if (many) {   /* one rank: no exchange, pass 1 forms x itself */
        o->comm->err = err;
        if ((rc = compressed_allreduce(o, &k)))
            return rc;
    }
    const double lr = c->a.lr * o->lr_scale;
    for (size_t i = 0; i < o->nlayers; i++) {
        const struct lbs_layer *L = &o->layers[i];
        int plain = c->exclude_1d && lbs_layer_is_1d(o, i);
        k.k.wd = plain ? 0.0f : (float)c->a.wd;
        k.sc = (float)s->sc[i];
        k.off = s->off[i];
        struct fresh_sums r;
        compressed_pass1(&k, many ? NULL : L->g, s->m[i], s->v[i],
                         s->vf[i], L->w, s->u, L->n, &r);
        if ((rc = lbs_check_finite(o, i, r.uu, err)))
            return rc;
        double coeff = plain ? 1.0 : scaling_coeff(o, i, k.k.wd, &r);
        lbs_lamb_apply(s->u, L->w, L->n, (float)(lr * coeff));
    }
    return 0;
}

/* ------------------------------------------------------------ ops */

static int onebit_step(struct lbs_optim *o, struct lbs_err *err)
{
    const struct onebit_cfg *c = o->cfg;
    return (double)o->t <= c->freeze_step ? warmup_step(o, err)
                                          : compressed_step(o, err);
}

static void onebit_fini(struct lbs_optim *o)
{
    struct onebit_state *s = o->state;
    if (!s)
        return;
    lbs_free_layer_state(o, s->m);
    lbs_free_layer_state(o, s->v);
    lbs_free_layer_state(o, s->vf);
    free(s->u);
    free(s->coeff);
    free(s->last);
    free(s->sc);
    free(s->off);
    free(s->werr);
    free(s->serr);
    free(s->part);
    free(s->zpad);
    free(s->wview);
    free(s->sview);
    free(s->wsc);
    free(s->ssc);
    free(s->sbits);
    free(s->rbits);
    free(s->cbits);
    free(s);
    o->state = NULL;
}

static int onebit_check(const void *cfg, const char *name,
                        struct lbs_err *err)
{
    const struct onebit_cfg *c = cfg;
    return lbs_check_clamp(name, c->cmin, c->cmax, err);
}

static int onebit_init(struct lbs_optim *o, struct lbs_err *err)
{
    struct onebit_state *s = calloc(1, sizeof *s);
    if (!s)
        return lbs_err_set(err, -ENOMEM, "onebit_lamb: out of memory");
    o->state = s;
    s->m = lbs_alloc_layer_state(o);
    s->v = lbs_alloc_layer_state(o);
    s->coeff = calloc(o->nlayers, sizeof *s->coeff);
    s->last = malloc(o->nlayers * sizeof *s->last);
    s->sc = malloc(o->nlayers * sizeof *s->sc);
    s->off = malloc(o->nlayers * sizeof *s->off);
    size_t big = 0;
    for (size_t i = 0; i < o->nlayers; i++)
        big = o->layers[i].n > big ? o->layers[i].n : big;
    s->u = lbs_zalloc_f32(big);
    if (!s->m || !s->v || !s->u || !s->coeff || !s->last || !s->sc ||
        !s->off) {
        onebit_fini(o);
        return lbs_err_set(err, -ENOMEM, "onebit_lamb: out of memory");
    }
    for (size_t i = 0; i < o->nlayers; i++) {
        s->last[i] = 1.0;
        s->sc[i] = 1.0;
        s->off[i] = s->ntot;
        s->ntot += o->layers[i].n;
    }
    return 0;
}

static double onebit_bytes(const struct lbs_optim *o)
{
    const struct onebit_cfg *c = o->cfg;
    if ((double)o->t < c->freeze_step)
        return 40.0;
    const double P = o->comm->size;
    return P > 1 ? 56.0 + 8.0 / P : 44.0;
}

const struct lbs_optim_ops lbs_optim_onebit_lamb = {
    .name = "onebit_lamb",
    .summary = "1-bit LAMB (DeepSpeed): LAMB warm-up, then frozen v and "
               "1-bit momentum with two-sided error feedback",
    .params = onebit_params,
    .lr_rule = &lbs_lr_lamb,   /* untuned: LAMB's rate */
    .dense = 0,
    .adaptive = 1,
    /* DeepSpeed: warm-up for 15-25% of training; 20% as lbscale train
     * has used since issue 17 (a fixed step count a short run never
     * leaves would keep it dense) */
    .run_key = "freeze_step",
    .run_fraction = 0.2,
    .cfg_size = sizeof(struct onebit_cfg),
    .bytes_per_elem = onebit_bytes,
    .check = onebit_check,
    .init = onebit_init,
    .step = onebit_step,
    .fini = onebit_fini,
    .kern = &lbs_onebit_kfam,
    .exact = 0,
};

/* ------------------------------------------------------------ hooks */

static const struct onebit_state *ob_state(const struct lbs_optim *o)
{
    return (o && o->ops == &lbs_optim_onebit_lamb) ? o->state : NULL;
}

int lbs_onebit_lamb_compressing(const struct lbs_optim *o)
{
    if (!ob_state(o))
        return -1;
    return (double)o->t >= ((const struct onebit_cfg *)o->cfg)->freeze_step;
}

double lbs_onebit_lamb_step_bytes(const struct lbs_optim *o)
{
    const struct onebit_state *s = ob_state(o);
    if (!s || o->comm->size < 2)
        return 0;
    const double P = o->comm->size;
    const double npad = ceil((double)s->ntot / (8 * P)) * 8 * P;
    return npad / 8 * (1 + 1 / P) + 8;
}

double lbs_onebit_lamb_coeff_freeze(const struct lbs_optim *o, size_t layer)
{
    const struct onebit_state *s = ob_state(o);
    return s && layer < o->nlayers ? s->coeff[layer] : 0;
}

double lbs_onebit_lamb_factor(const struct lbs_optim *o, size_t layer)
{
    const struct onebit_state *s = ob_state(o);
    return s && layer < o->nlayers ? s->last[layer] : 0;
}

const float *lbs_onebit_lamb_momentum(const struct lbs_optim *o, size_t layer)
{
    const struct onebit_state *s = ob_state(o);
    return s && layer < o->nlayers ? s->m[layer] : NULL;
}

int lbs_onebit_lamb_errors(const struct lbs_optim *o, const float **worker,
                           const float **server, size_t *npad, size_t *chunk)
{
    /* copies, so that looking does not change the next step's path */
    struct onebit_state *s = (struct onebit_state *)ob_state(o);
    if (!s || !s->werr ||
        (!s->wview &&
         !(s->wview = lbs_array_alloc(s->npad, sizeof *s->wview))) ||
        (!s->sview &&
         !(s->sview = lbs_array_alloc(s->chunk, sizeof *s->sview))))
        return -1;
    settled(s->werr, s->npad, s->wpend, s->wview);
    settled(s->serr, s->chunk, s->spend, s->sview);
    *worker = s->wview;
    *server = s->sview;
    *npad = s->npad;
    *chunk = s->chunk;
    return 0;
}
