/* compress.c - the driver: spec parsing, lifetime, the error-feedback
 * decorator around compress, and the exchange over a comm. */
#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "compress_impl.h"
#include "kfam.h"
#include "lbscale/half.h"
#include "lbscale/rng.h"

extern const struct lbs_compress_ops *const lbs_compress_registry[];

static void help_one(size_t i, FILE *f);

/* The registry as param.c's registry calls see it. */
static const char *entry_name(size_t i)
{
    return lbs_compress_registry[i] ? lbs_compress_registry[i]->name : NULL;
}

static int entry_device(size_t i)
{
    return lbs_compress_registry[i]->device != NULL;
}

static const struct lbs_spec_registry reg = {
    "compressor", "compress", entry_name, entry_device, help_one,
};

const char *const *lbs_compressor_names(void)
{
    static const char *names[64];
    return lbs_registry_names(&reg, names, 64);
}

/* ---- spec parsing: the compressor's keys + the common ones ---- */

/* Parsed into one block: common keys first, then the compressor's. */
struct common_cfg {
    double ef;
};
static const struct lbs_param_spec common_params[] = {
    {"ef", LBS_P_BOOL, 0, 0, 1, 0, offsetof(struct common_cfg, ef),
     "error feedback: x = g + e; e = x - D(C(x))", NULL},
    {NULL, 0, 0, 0, 0, 0, 0, NULL, NULL},
};

#define MAX_KEYS 32

/* The merged table with offsets shifted past struct common_cfg. */
static size_t merge_params(const struct lbs_compress_ops *ops,
                           struct lbs_param_spec *t)
{
    size_t m = 0;
    for (const struct lbs_param_spec *p = ops->params; p->key; p++) {
        t[m] = *p;
        t[m++].offset += sizeof(struct common_cfg);
    }
    for (const struct lbs_param_spec *p = common_params; p->key; p++)
        t[m++] = *p;
    t[m] = (struct lbs_param_spec){0};
    return m;
}

/* param.c's unknown-key message points at `lbscale optim`; point it at
 * the compress verb instead. */
static void fix_unknown_key_msg(struct lbs_err *err, const char *name)
{
    char *s = err ? strstr(err->msg, "(see lbscale optim") : NULL;
    if (s)
        snprintf(s, sizeof err->msg - (size_t)(s - err->msg),
                 "(see lbscale compress --help %s)", name);
}

static int parse_spec(struct lbs_compressor *c, const char *args,
                      struct lbs_err *err)
{
    const struct lbs_compress_ops *ops = c->ops;
    struct lbs_param_spec t[MAX_KEYS + 4];
    merge_params(ops, t);
    char *blk = calloc(1, sizeof(struct common_cfg) + ops->cfg_size);
    if (!blk)
        return lbs_err_set(err, -ENOMEM, "out of memory");
    int rc = lbs_params_parse(t, ops->name, args, blk, err);
    if (rc == -ENOENT)
        fix_unknown_key_msg(err, ops->name);
    if (!rc) {
        c->ef = ((struct common_cfg *)blk)->ef;
        memcpy(c->cfg, blk + sizeof(struct common_cfg), ops->cfg_size);
        rc = lbs_params_effective(t, ops->name, blk, c->params_str,
                                  sizeof c->params_str, err);
    }
    free(blk);
    if (!rc && c->ef && !ops->ef_ok)
        rc = lbs_err_set(err, -EINVAL, "%s: ef=1 makes no sense: %s",
                         ops->name, ops->ef_why);
    if (!rc && ops->check)
        rc = ops->check(c->cfg, err);
    return rc;
}

static int find(const char *spec, const struct lbs_compress_ops **ops,
                const char **args, struct lbs_err *err)
{
    size_t i;
    int rc = lbs_registry_find(&reg, spec, &i, args, err);
    if (!rc)
        *ops = lbs_compress_registry[i];
    return rc;
}

/* Find spec's compressor and parse its arguments into a zeroed c: sets
 * c->ops, allocates c->cfg (freed by the caller, also on failure). */
static int configure(struct lbs_compressor *c, const char *spec,
                     struct lbs_err *err)
{
    const char *args;
    int rc = find(spec, &c->ops, &args, err);
    if (rc)
        return rc;
    if (!(c->cfg = calloc(1, c->ops->cfg_size ? c->ops->cfg_size : 1)))
        return lbs_err_set(err, -ENOMEM, "out of memory");
    return parse_spec(c, args, err);
}

int lbs_compressor_new(const char *spec, struct lbs_compressor **out,
                       struct lbs_err *err)
{
    *out = NULL;
    struct lbs_compressor *c = calloc(1, sizeof *c);
    if (!c)
        return lbs_err_set(err, -ENOMEM, "out of memory");
    int rc = configure(c, spec, err);
    if (!rc)
        rc = c->ops->init ? c->ops->init(c, err) : 0;
    if (rc) {
        free(c->cfg);
        free(c);
        return rc;
    }
    *out = c;
    return 0;
}

/* Parse without allocating any state: the compressor object is only a
 * carrier for parse_spec's output. */
int lbs_compressor_check(const char *spec, struct lbs_err *err)
{
    struct lbs_compressor c = {0};
    int rc = configure(&c, spec, err);
    free(c.cfg);
    return rc;
}

int lbs_compressor_props(const char *spec, struct lbs_compressor_props *p,
                         struct lbs_err *err)
{
    const struct lbs_compress_ops *ops;
    const char *args;
    int rc = find(spec, &ops, &args, err);
    if (rc)
        return rc;
    *p = (struct lbs_compressor_props){
        .name = ops->name,
        .summary = ops->summary,
        .params = ops->params,
        .coll = ops->coll,
        .ef_ok = ops->ef_ok,
        .device = ops->device,
    };
    return 0;
}

int lbs_compressor_device(const struct lbs_compressor *c,
                          const struct lbs_compress_device **dev,
                          struct lbs_compress_device_hp *hp,
                          struct lbs_err *err)
{
    const struct lbs_compress_device *d = c->ops->device;
    if (!d || !d->hparams) {
        char have[256];
        lbs_registry_device_names(&reg, have, sizeof have);
        return lbs_err_set(err, -ENOTSUP, "compressor '%s' has no CUDA "
                           "kernel (%s)", c->ops->name, have);
    }
    *hp = (struct lbs_compress_device_hp){0, 0, 0};
    d->hparams(c->cfg, hp);
    *dev = d;
    return 0;
}

long lbs_compress_wrong(const struct lbs_compressor *c,
                        struct lbs_compress_check *ck)
{
    return c->ops->wrong ? c->ops->wrong(c, ck) : 0;
}

/* Sparse: out is 0 or x; no dropped |x| above the smallest kept one
 * (prefix: the kept ones are the largest).  Sets ck->min_kept. */
long lbs_cmp_sparse_wrong(struct lbs_compress_check *ck, int prefix)
{
    const float *x = ck->x, *out = ck->out;
    size_t n = ck->n;
    float mk = INFINITY, md = 0;
    long bad = 0;
#pragma omp parallel for reduction(min : mk) reduction(max : md) \
    reduction(+ : bad) schedule(static)
    for (size_t i = 0; i < n; i++) {
        if (out[i] != 0) {
            bad += out[i] != x[i];
            mk = fminf(mk, fabsf(x[i]));
        } else {
            md = fmaxf(md, fabsf(x[i]));
        }
    }
    ck->min_kept = mk;
    if (prefix && md > mk) {   /* count the offenders */
#pragma omp parallel for reduction(+ : bad) schedule(static)
        for (size_t i = 0; i < n; i++)
            bad += out[i] == 0 && fabsf(x[i]) > mk;
    }
    return bad;
}

void lbs_compressor_free(struct lbs_compressor *c)
{
    if (!c)
        return;
    if (c->ops->fini)
        c->ops->fini(c);
    lbs_cslots_clear(&c->resid, NULL);
    free(c->resid.p);
    free(c->resid.n);
    lbs_cbuf_free(&c->payload);
    lbs_cbuf_free(&c->recv);
    lbs_cbuf_free(&c->tmp);
    free(c->sizes);
    free(c->cfg);
    free(c);
}

const char *lbs_compressor_name(const struct lbs_compressor *c)
{
    return c->ops->name;
}

const char *lbs_compressor_params(const struct lbs_compressor *c)
{
    return c->params_str;
}

enum lbs_coll lbs_compressor_collective(const struct lbs_compressor *c)
{
    return c->ops->coll;
}

int lbs_compressor_ef(const struct lbs_compressor *c)
{
    return c->ef != 0;
}

int lbs_compress_traffic(const struct lbs_compressor *c, double w,
                         struct lbs_compress_traffic *out)
{
    const struct lbs_cmp_traffic *t = &c->ops->traffic;
    if (!t->known || !(w >= 0))
        return -ENOTSUP;
    enum lbs_coll k = c->ops->coll;
    double part = t->dec_part + t->dec_w * w;
    *out = (struct lbs_compress_traffic){
        .compress = t->comp + t->comp_w * w,
        .decompress_once = t->dec_once,
        .decompress_part = part,
        .per_rank = k == LBS_COLL_ALLGATHER || k == LBS_COLL_ALLGATHERV};
    if (c->ef)   /* ef.c: read g, read-modify-write e, decode its own */
        out->compress += 4 + 8 + t->dec_once + part;
    return 0;
}

double lbs_compress_cpu_bytes(const struct lbs_compressor *c, size_t n)
{
    /* error feedback reads g and the residual whole: the input model */
    if (c->ops->cpu_bytes && !c->ef)
        return c->ops->cpu_bytes(c, n);
    return 4.0 * (double)n;
}

int lbs_compress_flops(const struct lbs_compressor *c, size_t n,
                       struct lbs_compress_flops *out)
{
    memset(out, 0, sizeof *out);
    return c->ops->flops ? c->ops->flops(c, n, out) : -ENOTSUP;
}

int lbs_compressor_param(const struct lbs_compressor *c, const char *key,
                         double *value)
{
    if (!strcmp(key, "ef")) {
        *value = c->ef;
        return 0;
    }
    return lbs_params_get(c->ops->params, c->cfg, key, value);
}

void lbs_compressor_set_rank(struct lbs_compressor *c, int rank)
{
    c->rank = rank;
}

void lbs_compressor_reset(struct lbs_compressor *c)
{
    lbs_cslots_clear(&c->resid, NULL);
    if (c->ops->reset)
        c->ops->reset(c);
}

/* ---- shared helpers ---- */

int lbs_cslot_get(struct lbs_cslots *s, int layer, size_t n, void **p,
                  struct lbs_err *err)
{
    *p = NULL;
    if (layer < 0)
        return lbs_err_set(err, -EINVAL, "layer index %d (must be >= 0)",
                           layer);
    if ((size_t)layer >= s->cap || !s->p[layer])
        return 0;
    if (s->n[layer] != n)
        return lbs_err_set(err, -EINVAL, "layer %d changed size from %zu to "
                           "%zu elements", layer, s->n[layer], n);
    *p = s->p[layer];
    return 0;
}

int lbs_cslot_put(struct lbs_cslots *s, int layer, size_t n, void *p,
                  struct lbs_err *err)
{
    if ((size_t)layer >= s->cap) {
        size_t cap = s->cap ? s->cap : 16;
        while (cap <= (size_t)layer)
            cap *= 2;
        void **np = realloc(s->p, cap * sizeof *np);
        if (np)
            s->p = np;
        size_t *nn = np ? realloc(s->n, cap * sizeof *nn) : NULL;
        if (!nn)
            return lbs_err_set(err, -ENOMEM, "out of memory");
        s->n = nn;
        memset(s->p + s->cap, 0, (cap - s->cap) * sizeof *np);
        memset(s->n + s->cap, 0, (cap - s->cap) * sizeof *nn);
        s->cap = cap;
    }
    s->p[layer] = p;
    s->n[layer] = n;
    return 0;
}

void lbs_cslots_clear(struct lbs_cslots *s, void (*fn)(void *))
{
    for (size_t i = 0; i < s->cap; i++) {
        if (s->p[i])
            fn ? fn(s->p[i]) : free(s->p[i]);
        s->p[i] = NULL;
        s->n[i] = 0;
    }
}

void *lbs_cbuf_get(struct lbs_cbuf *b, size_t bytes)
{
    if (bytes <= b->cap && b->p)
        return b->p;
    size_t cap = (bytes + 63) / 64 * 64;
    if (cap == 0)
        cap = 64;
    void *p = lbs_array_alloc(cap, 1);
    if (!p)
        return NULL;
    free(b->p);
    b->p = p;
    b->cap = cap;
    return p;
}

void lbs_cbuf_free(struct lbs_cbuf *b)
{
    free(b->p);
    b->p = NULL;
    b->cap = 0;
}

size_t lbs_topk_count(double k, size_t n)
{
    double v = k * (double)n + 0.5;
    size_t K = v >= (double)n ? n : (size_t)v;
    return K ? K : 1;
}

/* The draws land on distinct pages of a large layer, each a TLB and cache
 * miss: a block's positions are drawn first, then the kernels' gather
 * loads them, prefetching ahead into L2 so that many misses are in
 * flight (a load per draw waited on each).  Threshold's call (100K draws
 * at 100M elements) took 0.95 and 0.94 of its time this way, medians of
 * two runs of 7 alternated rounds; top-k's (16K draws) did not change. */
#define SAMPLE_BLOCK 1024   /* draws per block: 8 KiB of stack */
void lbs_sample_mags(const float *x, size_t n, uint64_t key, uint32_t *smp,
                     size_t m)
{
    const struct lbs_kern *K = lbs_kern();
#pragma omp parallel for schedule(static) if (m >= 4 * SAMPLE_BLOCK)
    for (size_t b = 0; b < m; b += SAMPLE_BLOCK) {
        uint32_t ix[SAMPLE_BLOCK];
        float v[SAMPLE_BLOCK];
        size_t e = b + SAMPLE_BLOCK < m ? b + SAMPLE_BLOCK : m;
        for (size_t j = b; j < e; j++)
            ix[j - b] = (uint32_t)lbs_rng_below(key, j, n);
        K->gather(v, x, ix, e - b);
        for (size_t j = b; j < e; j++)
            smp[j] = lbs_mag(v[j - b]);
    }
}

void lbs_cmp_zero(float *out, size_t n)
{
#pragma omp parallel for simd schedule(static) if (n > LBS_PAR_MIN)
    for (size_t i = 0; i < n; i++)
        out[i] = 0.0f;
}

/* Static blocks per thread, so the conversion loops see long runs. */
#define BLOCK_RANGE(n, lo, hi)                                           \
    size_t lo = (n) * (size_t)omp_get_thread_num() /                     \
                (size_t)omp_get_num_threads();                           \
    size_t hi = (n) * (size_t)(omp_get_thread_num() + 1) /               \
                (size_t)omp_get_num_threads()

size_t lbs_cmp_half_bytes(struct lbs_compressor *c, size_t n,
                          const struct lbs_cctx *ctx)
{
    (void)c; (void)ctx;
    return 2 * n;
}

size_t lbs_cmp_half_max(const struct lbs_compressor *c, size_t n)
{
    (void)c;
    return 2 * n;
}

int lbs_cmp_half_compress(struct lbs_compressor *c, const float *x,
                          size_t n, const struct lbs_cctx *ctx,
                          void *payload, size_t *bytes, struct lbs_err *err)
{
    (void)ctx; (void)err;
    const int bf = c->ops->dtype == LBS_BFLOAT16;
    uint16_t *h = payload;
#pragma omp parallel if (n > LBS_PAR_MIN)
    {
        BLOCK_RANGE(n, lo, hi);
        if (bf)
            lbs_f32_to_bf16_array(x + lo, h + lo, hi - lo);
        else
            lbs_f32_to_f16_array(x + lo, h + lo, hi - lo);
    }
    *bytes = 2 * n;
    return 0;
}

/* Decoded a stack block at a time (it stays in L1), then one multiply
 * and one add per element, unfused, as the CUDA decoders compute it. */
int lbs_cmp_half_decompress_add(struct lbs_compressor *c,
                                const void *payload, size_t bytes, size_t n,
                                const struct lbs_cctx *ctx, float alpha,
                                float *out, struct lbs_err *err)
{
    (void)ctx;
    int rc = lbs_cmp_expect_bytes(c, bytes, 2 * n, err);
    if (rc)
        return rc;
    const int bf = c->ops->dtype == LBS_BFLOAT16;
    const uint16_t *h = payload;
#pragma omp parallel if (n > LBS_PAR_MIN)
    {
        BLOCK_RANGE(n, lo, hi);
        float v[512];
        for (size_t i = lo; i < hi; i += 512) {
            size_t m = hi - i < 512 ? hi - i : 512;
            if (bf)
                lbs_bf16_to_f32_array(h + i, v, m);
            else
                lbs_f16_to_f32_array(h + i, v, m);
            for (size_t j = 0; j < m; j++)
                out[i + j] += alpha * v[j];
        }
    }
    return 0;
}

long lbs_cmp_half_wrong(const struct lbs_compress_check *ck, int ulp_exp,
                        double tiny)
{
    long bad = 0;
#pragma omp parallel for reduction(+ : bad) schedule(static)
    for (size_t i = 0; i < ck->n; i++)
        bad += fabs((double)ck->out[i] - ck->x[i]) >
               ldexp(fabs((double)ck->x[i]), ulp_exp) + tiny;
    return bad;
}

const struct lbs_param_spec lbs_cmp_no_params[] = {
    {NULL, 0, 0, 0, 0, 0, 0, NULL, NULL},
};

int lbs_cmp_expect_bytes(const struct lbs_compressor *c, size_t got,
                         size_t want, struct lbs_err *err)
{
    if (got == want)
        return 0;
    return lbs_err_set(err, -EINVAL, "%s: payload of %zu bytes, expected "
                       "%zu", c->ops->name, got, want);
}

static int check_n(const struct lbs_compressor *c, size_t n,
                   struct lbs_err *err)
{
    if (n == 0 || n >= UINT32_MAX)
        return lbs_err_set(err, -EINVAL, "%s: layer of %zu elements (must be "
                           "1..2^32-2)", c->ops->name, n);
    return 0;
}

/* check_n, and a layer index the residuals can be kept under. */
static int check_layer(const struct lbs_compressor *c, size_t n, int layer,
                       struct lbs_err *err)
{
    int rc = check_n(c, n, err);
    if (!rc && layer < 0)
        rc = lbs_err_set(err, -EINVAL, "%s: layer index %d (must be >= 0)",
                         c->ops->name, layer);
    return rc;
}

/* ---- the public calls ---- */

size_t lbs_compress_wire_bytes(struct lbs_compressor *c, size_t n, int layer,
                               long step)
{
    struct lbs_cctx ctx = {layer, step, c->rank};
    return n ? c->ops->wire_bytes(c, n, &ctx) : 0;
}

size_t lbs_compress_max_bytes(const struct lbs_compressor *c, size_t n)
{
    return c->ops->max_bytes(c, n);
}

int lbs_compress(struct lbs_compressor *c, const float *g, size_t n,
                 int layer, long step, void *payload, size_t *bytes,
                 struct lbs_err *err)
{
    struct lbs_cctx ctx = {layer, step, c->rank};
    int rc = check_layer(c, n, layer, err);
    if (rc)
        return rc;
    if (!c->ef)
        return c->ops->compress(c, g, n, &ctx, payload, bytes, err);
    float *x;
    rc = lbs_ef_begin(c, g, n, layer, &x, err);
    if (!rc)
        rc = c->ops->compress(c, x, n, &ctx, payload, bytes, err);
    if (!rc)
        rc = lbs_ef_end(c, x, payload, *bytes, n, &ctx, err);
    return rc;
}

int lbs_decompress(struct lbs_compressor *c, const void *payload,
                   size_t bytes, size_t n, int layer, long step, float *out,
                   struct lbs_err *err)
{
    struct lbs_cctx ctx = {layer, step, c->rank};
    int rc = check_n(c, n, err);
    if (rc)
        return rc;
    lbs_cmp_zero(out, n);
    return c->ops->decompress_add(c, payload, bytes, n, &ctx, 1.0f, out, err);
}

const float *lbs_compress_residual(const struct lbs_compressor *c, int layer,
                                   size_t *n)
{
    *n = 0;
    if (layer < 0 || (size_t)layer >= c->resid.cap || !c->resid.p[layer])
        return NULL;
    *n = c->resid.n[layer];
    return c->resid.p[layer];
}

/* ---- exchange ---- */

/* Move the payload with the declared collective: *recv gets every rank's
 * payload, rank r's at c->sizes[P + r] with c->sizes[r] bytes. */
static int gather_payloads(struct lbs_compressor *c, struct lbs_comm *comm,
                           const void *p, size_t bytes, int layer,
                           const uint8_t **recv, struct lbs_err *err)
{
    size_t P = (size_t)comm->size;
    if (!c->sizes || c->sizes_cap < P) {
        free(c->sizes);
        c->sizes = malloc(2 * P * sizeof *c->sizes);
        c->sizes_cap = c->sizes ? P : 0;
        if (!c->sizes)
            return lbs_err_set(err, -ENOMEM, "out of memory");
    }
    size_t *cnt = c->sizes, *dsp = c->sizes + P;
    if (c->ops->coll == LBS_COLL_ALLGATHER) {
        for (size_t r = 0; r < P; r++) {
            cnt[r] = bytes;
            dsp[r] = r * bytes;
        }
    } else {
        int64_t *all = lbs_cbuf_get(&c->tmp, P * sizeof *all);
        int64_t mine = (int64_t)bytes;
        if (!all)
            return lbs_err_set(err, -ENOMEM, "out of memory");
        int rc = lbs_allgather(comm, &mine, all, 1, LBS_INT64, layer);
        if (rc)
            return rc;
        size_t o = 0;
        for (size_t r = 0; r < P; r++) {
            cnt[r] = (size_t)all[r];
            dsp[r] = o;
            o += (cnt[r] + 7) / 8 * 8;  /* keep every payload 8-aligned */
        }
    }
    uint8_t *buf = lbs_cbuf_get(&c->recv, dsp[P - 1] + cnt[P - 1] + 8);
    if (!buf)
        return lbs_err_set(err, -ENOMEM, "out of memory for %zu received "
                           "payloads", P);
    int rc = c->ops->coll == LBS_COLL_ALLGATHER
                 ? lbs_allgather(comm, p, buf, bytes, LBS_UINT8, layer)
                 : lbs_allgatherv(comm, p, bytes, buf, cnt, dsp, LBS_UINT8,
                                  layer);
    *recv = buf;
    return rc;
}

static int exchange_generic(struct lbs_compressor *c, struct lbs_comm *comm,
                            float *x, float *e, float *g, size_t n,
                            const struct lbs_cctx *ctx, struct lbs_err *err)
{
    const struct lbs_compress_ops *ops = c->ops;
    void *p = lbs_cbuf_get(&c->payload, ops->max_bytes(c, n));
    size_t bytes = 0;
    if (!p)
        return lbs_err_set(err, -ENOMEM, "%s: out of memory for the payload",
                           ops->name);
    int rc = ops->compress(c, x, n, ctx, p, &bytes, err);
    if (!rc && e)   /* before the collective overwrites the payload */
        rc = lbs_ef_end(c, e, p, bytes, n, ctx, err);
    if (rc)
        return rc;
    float inv = 1.0f / (float)comm->size;
    if (ops->coll == LBS_COLL_ALLREDUCE) {
        /* summed in the payload's own type (fp16/bf16: in half precision,
         * as NCCL's ncclHalf and Horovod's fp16 compression do), then
         * scaled by 1/P in float while decoding: no underflow of small
         * gradients, at the price of inf where a binary16 sum passes
         * 65504 (PyTorch's fp16 hook divides before the sum instead) */
        size_t es = lbs_dtype_size(ops->dtype);
        if (!es || bytes % es)
            return lbs_err_set(err, -EINVAL, "%s: payload of %zu bytes is "
                               "not a whole number of %zu-byte elements",
                               ops->name, bytes, es);
        rc = lbs_allreduce(comm, p, bytes / es, ops->dtype, LBS_SUM,
                           ctx->layer);
        if (!rc) {
            lbs_cmp_zero(g, n);
            rc = ops->decompress_add(c, p, bytes, n, ctx, inv, g, err);
        }
        return rc;
    }
    const uint8_t *recv = NULL;
    rc = gather_payloads(c, comm, p, bytes, ctx->layer, &recv, err);
    if (rc)
        return rc;
    lbs_cmp_zero(g, n);
    const size_t *cnt = c->sizes, *dsp = c->sizes + comm->size;
    for (int r = 0; r < comm->size && !rc; r++)
        rc = ops->decompress_add(c, recv + dsp[r], cnt[r], n, ctx, inv, g,
                                 err);
    return rc;
}

int lbs_compress_exchange(struct lbs_compressor *c, struct lbs_comm *comm,
                          float *g, size_t n, int layer, long step,
                          struct lbs_err *err)
{
    struct lbs_cctx ctx = {layer, step, comm->rank};
    int rc = check_layer(c, n, layer, err);
    if (rc)
        return rc;
    c->rank = comm->rank;
    lbs_comm_set_step(comm, step);
    comm->err = err;
    float *x = g, *e = NULL;
    if (c->ef && (rc = lbs_ef_begin(c, g, n, layer, &e, err)))
        return rc;
    if (e)
        x = e;
    if (!c->ops->exchange)
        return exchange_generic(c, comm, x, e, g, n, &ctx, err);
    rc = c->ops->exchange(c, comm, x, g, n, &ctx, err);
    if (!rc && e) {   /* torch's PowerSGD hook: e = x - mean approximation */
#pragma omp parallel for simd schedule(static) if (n > LBS_PAR_MIN)
        for (size_t i = 0; i < n; i++)
            e[i] -= g[i];
    }
    return rc;
}

/* ---- help ---- */

static void help_one(size_t i, FILE *f)
{
    const struct lbs_compress_ops *ops = lbs_compress_registry[i];
    struct lbs_param_spec t[MAX_KEYS + 4];
    merge_params(ops, t);
    fprintf(f, "  %s - %s\n    collective: %s%s\n", ops->name, ops->summary,
            lbs_coll_name(ops->coll),
            ops->ef_ok ? "" : "   (ef=1 refused)");
    lbs_params_print(t, f);
}

int lbs_compressor_help(const char *name, FILE *f)
{
    return lbs_registry_help(&reg, name, f);
}

void lbs_cmp_gather(float *p, const float *x, const uint32_t *idx, size_t m)
{
    const struct lbs_kern *K = lbs_kern();
    if (m <= LBS_PAR_MIN) {
        K->gather(p, x, idx, m);
        return;
    }
#pragma omp parallel for schedule(static)
    for (size_t c = 0; c < 256; c++) {
        size_t lo = m * c / 256, hi = m * (c + 1) / 256;
        K->gather(p + lo, x, idx + lo, hi - lo);
    }
}

void lbs_cmp_scatter_add(float *out, const uint32_t *idx, const float *p,
                         float a, size_t m)
{
    const struct lbs_kern *K = lbs_kern();
    if (m <= LBS_PAR_MIN) {
        K->scatter_add(out, idx, p, a, m);
        return;
    }
#pragma omp parallel for schedule(static)
    for (size_t c = 0; c < 256; c++) {
        size_t lo = m * c / 256, hi = m * (c + 1) / 256;
        K->scatter_add(out, idx + lo, p + lo, a, hi - lo);
    }
}

size_t lbs_compress_kfams(const struct lbs_kfam **out, size_t n, size_t cap)
{
    for (size_t i = 0; lbs_compress_registry[i]; i++)
        n = lbs_kfam_add(out, n, cap, lbs_compress_registry[i]->kern);
    return n;
}
