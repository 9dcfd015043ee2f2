/* kernels.c - building blocks shared by the optimizer files. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kfam.h"
#include "optim_impl.h"

int lbs_optim_average_grads(struct lbs_optim *o, struct lbs_err *err)
{
    if (o->cmp) {
        for (size_t i = 0; i < o->nlayers; i++) {
            if (!o->keep[i])
                continue;
            int rc = lbs_compress_exchange(o->cmp, o->comm, o->layers[i].g,
                                           o->layers[i].n, (int)i, o->t + 1,
                                           err);
            if (rc)
                return rc;
        }
        return 0;
    }
    if (o->comm->size == 1)
        return 0;
    o->comm->err = err;
    for (size_t i = 0; i < o->nlayers; i++) {
        if (!o->keep[i])
            continue;
        int rc = lbs_allreduce_mean_f32(o->comm, o->layers[i].g,
                                        o->layers[i].n, (int)i);
        if (rc)
            return rc;
    }
    return 0;
}

double lbs_sumsq(const float *x, size_t n)
{
    double part[LBS_CHUNKS];
    const struct lbs_kern *K = lbs_kern();
    LBS_KERN_CHUNKED(n, K->sumsq_chunks(x, n, c0, c1, part));
    return lbs_sum_chunks(part);
}

void lbs_sumsq_layers(const struct lbs_layer *L, size_t nl,
                      const uint8_t *keep, double *part, double *out)
{
    const struct lbs_kern *K = lbs_kern();
#pragma omp parallel if (lbs_layers_total(L, nl) >= LBS_PAR_MIN)
    {
        size_t T = (size_t)omp_get_num_threads(),
               t = (size_t)omp_get_thread_num(), c0, c1;
        for (size_t i = 0; i < nl; i++)
            if (keep[i] && lbs_layer_share(L[i].n, i, t, T, &c0, &c1))
                K->sumsq_chunks(L[i].g, L[i].n, c0, c1,
                                part + i * LBS_CHUNKS);
    }
    for (size_t i = 0; i < nl; i++)
        out[i] = keep[i] ? lbs_sum_chunks(part + i * LBS_CHUNKS) : 0;
}

size_t lbs_layers_pass(const struct lbs_layer *L, size_t nl,
                       double (*chunk)(const void *ctx, size_t i, size_t lo,
                                       size_t hi),
                       const void *ctx)
{
    size_t first = nl;
#pragma omp parallel if (lbs_layers_total(L, nl) >= LBS_PAR_MIN) \
    reduction(min : first)
    {
        size_t T = (size_t)omp_get_num_threads(),
               t = (size_t)omp_get_thread_num(), c0, c1;
        for (size_t i = 0; i < nl; i++) {
            const size_t n = L[i].n;
            if (!lbs_layer_share(n, i, t, T, &c0, &c1))
                continue;
            for (size_t c = c0; c < c1; c++) {
                double s = chunk(ctx, i, lbs_chunk_lo(n, c),
                                 lbs_chunk_lo(n, c + 1));
                if (!isfinite(s) && i < first)
                    first = i;
            }
        }
    }
    return first;
}

struct momentum_ctx {
    const struct lbs_momentum_kern *K;
    const struct lbs_momentum *p;
    const struct lbs_layer *L;
    float *const *v;
};

/* chunk by chunk, as lbs_momentum_pass: the same sums */
static double momentum_chunk(const void *ctx, size_t i, size_t lo,
                             size_t hi)
{
    const struct momentum_ctx *x = ctx;
    const struct lbs_layer *L = &x->L[i];
    return x->K->momentum(x->p, L->g ? L->g + lo : NULL, x->v[i] + lo,
                          L->w + lo, hi - lo);
}

size_t lbs_momentum_layers(const struct lbs_momentum *p,
                           const struct lbs_layer *L, float *const *v,
                           size_t nl)
{
    const struct momentum_ctx x = {lbs_kfam_cur(&lbs_momentum_kfam), p, L,
                                   v};
    return lbs_layers_pass(L, nl, momentum_chunk, &x);
}

double lbs_momentum_pass(const struct lbs_momentum *p, const float *g,
                         float *v, float *w, size_t n)
{
    const struct lbs_momentum_kern *K = lbs_kfam_cur(&lbs_momentum_kfam);
    if (n < LBS_PAR_MIN)
        return K->momentum(p, g, v, w, n);
    double sum = 0;
#pragma omp parallel for schedule(static) reduction(+ : sum)
    for (size_t c = 0; c < LBS_CHUNKS; c++) {
        size_t lo = lbs_chunk_lo(n, c), hi = lbs_chunk_lo(n, c + 1);
        sum += K->momentum(p, g ? g + lo : NULL, v + lo, w + lo, hi - lo);
    }
    return sum;
}

int lbs_lars_local(const struct lbs_optim *o, size_t i, double eta, double wd,
                   int exclude_1d, double *local, double *wd_eff,
                   struct lbs_err *err)
{
    const struct lbs_layer *L = &o->layers[i];
    int plain = exclude_1d && lbs_layer_is_1d(o, i);
    double gn = sqrt(o->gsq[i]), wn = sqrt(lbs_sumsq(L->w, L->n));
    *wd_eff = plain ? 0.0 : wd;
    *local = 1.0;
    if (!plain && wn > 0 && gn > 0)
        *local = eta * wn / (gn + *wd_eff * wn);
    return lbs_check_finite(o, i, wn, err);
}

int lbs_check_finite(const struct lbs_optim *o, size_t layer, double x,
                     struct lbs_err *err)
{
    if (isfinite(x))
        return 0;
    return lbs_err_set(err, -EDOM, "%s: non-finite gradient or update in "
                       "layer %zu ('%s') at step %ld", o->ops->name, layer,
                       o->layers[layer].name ? o->layers[layer].name : "?",
                       o->t);
}

double lbs_clip_scale(const struct lbs_optim *o, double max_norm)
{
    return (max_norm > 0 && o->gnorm > max_norm) ? max_norm / o->gnorm : 1.0;
}

int lbs_check_clamp(const char *name, double cmin, double cmax,
                    struct lbs_err *err)
{
    if (cmin > cmax)
        return lbs_err_set(err, -EINVAL, "%s: cmin (%g) > cmax (%g)", name,
                           cmin, cmax);
    return 0;
}

double lbs_trust_ratio(double wnorm, double unorm, double lo, double hi)
{
    double r = (wnorm > 0 && unorm > 0) ? wnorm / unorm : 1.0;
    return r < lo ? lo : r > hi ? hi : r;
}

float *lbs_zalloc_f32(size_t n)
{
    return lbs_array_zalloc(n, sizeof(float));   /* also first-touches */
}

float **lbs_alloc_layer_state(const struct lbs_optim *o)
{
    float **s = calloc(o->nlayers, sizeof *s);
    if (!s)
        return NULL;
    for (size_t i = 0; i < o->nlayers; i++)
        if (!(s[i] = lbs_zalloc_f32(o->layers[i].n))) {
            lbs_free_layer_state(o, s);
            return NULL;
        }
    return s;
}

void lbs_free_layer_state(const struct lbs_optim *o, float **s)
{
    if (!s)
        return;
    for (size_t i = 0; i < o->nlayers; i++)
        free(s[i]);
    free(s);
}
