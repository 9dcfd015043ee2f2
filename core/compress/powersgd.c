/* powersgd.c - PowerSGD (Vogels et al. 2019): a rank-r approximation
 * P Q^T of the gradient viewed as a matrix, from one step of subspace
 * iteration warm-started with the previous Q.
 *
 *   P = M Q;  allreduce(P) (sum);  orthogonalise P (Householder QR);
 *   Q = M^T P;  allreduce(Q) / ranks;  result = P Q^T
 * P is not divided by the rank count: the orthogonalisation normalises it
 * anyway (as torch's powerSGD hook does).  Q is kept per layer and starts
 * the next step (warm=1, the paper's reuse); with warm=0 it is redrawn
 * every step.  The first Q of a layer is N(0, 1) from the counter
 * generator keyed by (seed, layer) (with warm=0: (seed, step, layer)), so
 * all ranks start alike without communicating.
 * Orthogonalisation: LAPACK's Householder QR (sgeqrf, then sorgqr for the
 * explicit Q; OpenBLAS ships both), as torch's hook does for r > 2.  Its
 * columns are orthonormal to rounding whatever P's rank: when the
 * gradient's rank is below r (a linear layer over fewer samples than r),
 * the columns past the rank are a complement of the range, not normalised
 * rounding noise, so P P^T M stays a projection and reproduces M (single
 * pass Gram-Schmidt in float left them far from orthogonal: relative
 * error 0.33 on a rank-2 64 x 100 matrix at r = 4).  A zero P gives the
 * first r unit vectors, so a zero gradient still decodes to 0, not NaN.
 *
 * Shape: lbs_compress sees n elements, not a shape.  rows=R views the
 * layer as R x ceil(n/R) (pass the layer's first dimension); rows=0 picks
 * the divisor of n closest to sqrt(n) from below (searching down to
 * sqrt(n)/4), else a sqrt(n) x ceil(n/sqrt(n)) matrix whose missing tail
 * counts as zeros.  The matrix is row-major over x, never copied.
 * Layers where r (rows + cols) >= n would not shrink and travel as plain
 * fp32 with one allreduce (torch's hook likewise skips small tensors).
 * Wire bytes: 4 r (rows + cols), in two allreduces of 4 r rows and
 * 4 r cols bytes.  lbs_compress alone (one rank) does the same with no
 * allreduce; its payload is [P | Q].
 * Products use OpenBLAS sgemm.  EF: see compress.h (the exchange keeps
 * torch's e = x - averaged approximation).
 *
 * Flops (lbs_compress_flops; the n elements as `full` complete rows of
 * `cols` plus `rem` of a partial row, n = full cols + rem):
 *   compress   = 2 n r (P = M Q) + 2 n r (Q = M^T P)
 *                + 2 (2 rows r^2 - 2 r^3 / 3) (sgeqrf and sorgqr,
 *                  LAPACK's operation counts for an m x n = rows x r
 *                  factor with k = r reflectors)
 *   decompress = 2 n r (P Q^T; the + out is not counted, as GEMM's 2 m n k)
 * Of these, 6 full cols r are the three sgemm calls (gemms() below, the
 * one home of their shapes); the partial row is done by hand.  Memory: x is
 * read twice in compress, out read and written in decompress; at small r
 * the products are bound by that traffic, not by arithmetic, so `lbscale
 * compress` compares them with cblas_sgemm on the same shapes.
 */
#include <cblas.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "compress_impl.h"
#include "lbscale/rng.h"

struct psgd_cfg {
    double r, rows, seed, warm;
};

#define K_(f) offsetof(struct psgd_cfg, f)
static const struct lbs_param_spec psgd_params[] = {
    {"r", LBS_P_INT, 2, 1, 1024, 0, K_(r), "approximation rank", NULL},
    {"rows", LBS_P_INT, 0, 0, 4294967295.0, 0, K_(rows),
     "matrix rows (0: divisor of n nearest sqrt(n))", NULL},
    {"seed", LBS_P_INT, 1, 0, 4294967295.0, 0, K_(seed),
     "seed of the initial Q (all ranks must agree)", NULL},
    {"warm", LBS_P_BOOL, 1, 0, 1, 0, K_(warm),
     "warm-start Q from the previous step", NULL},
    {NULL, 0, 0, 0, 0, 0, 0, NULL, NULL},
};
#undef K_

struct shape {
    size_t rows, cols, r;
    size_t full, rem;   /* complete rows inside n; elements of the next */
    int raw;            /* not worth compressing: plain fp32 */
};

struct psgd_layer {
    float *q;           /* cols x r, row-major */
    int init;
};

struct psgd_state {
    struct lbs_cslots layers;
    struct lbs_cbuf p;      /* exchange: the P factor */
};

static struct shape shape_of(const struct psgd_cfg *k, size_t n)
{
    struct shape s = {.r = (size_t)k->r};
    if (k->rows > 0) {
        s.rows = (size_t)k->rows < n ? (size_t)k->rows : n;
    } else {
        size_t sq = (size_t)sqrt((double)n), d;
        while ((sq + 1) * (sq + 1) <= n)
            sq++;
        for (d = sq; d >= 1 && d * 4 >= sq && n % d; d--)
            ;
        s.rows = d >= 1 && d * 4 >= sq ? d : sq;
    }
    s.cols = (n + s.rows - 1) / s.rows;
    s.full = n / s.cols;
    s.rem = n - s.full * s.cols;
    s.raw = s.r * (s.rows + s.cols) >= n;
    return s;
}

static size_t psgd_max(const struct lbs_compressor *c, size_t n)
{
    struct shape s = shape_of(c->cfg, n);
    return s.raw ? 4 * n : 4 * s.r * (s.rows + s.cols);
}

static size_t psgd_bytes(struct lbs_compressor *c, size_t n,
                         const struct lbs_cctx *ctx)
{
    (void)ctx;
    return psgd_max(c, n);
}

/* Box-Muller N(0, 1) for counter i. */
static float gauss(uint64_t key, uint64_t i)
{
    double u1 = lbs_rng_uniform(key, 2 * i), u2 = lbs_rng_uniform(key, 2 * i + 1);
    return (float)(sqrt(-2.0 * log(1.0 - u1)) * cos(6.283185307179586 * u2));
}

/* The layer's Q to multiply with this step (drawn when needed). */
static int get_q(struct lbs_compressor *c, const struct shape *s, size_t n,
                 const struct lbs_cctx *ctx, float **q, struct lbs_err *err)
{
    const struct psgd_cfg *k = c->cfg;
    struct psgd_state *st = c->state;
    void *p;
    int rc = lbs_cslot_get(&st->layers, ctx->layer, n, &p, err);
    if (rc)
        return rc;
    struct psgd_layer *L = p;
    if (!L) {
        L = calloc(1, sizeof *L);
        if (L)
            L->q = malloc(s->cols * s->r * sizeof *L->q);
        if (!L || !L->q || lbs_cslot_put(&st->layers, ctx->layer, n, L, err)) {
            if (L)
                free(L->q);
            free(L);
            return lbs_err_set(err, -ENOMEM, "powersgd: out of memory");
        }
    }
    if (!L->init || !k->warm) {
        uint64_t key = lbs_rng_key((uint64_t)k->seed,
                                   k->warm ? UINT64_MAX : (uint64_t)ctx->step,
                                   (uint64_t)ctx->layer);
        for (size_t i = 0; i < s->cols * s->r; i++)
            L->q[i] = gauss(key, i);
        L->init = 1;
    }
    *q = L->q;
    return 0;
}

/* The three sgemm calls (row-major): P = M Q, Q = M^T P over the full
 * rows, and out = alpha P Q^T + beta out. */
static void gemms(const struct shape *s, struct lbs_compress_gemm g[3])
{
    const size_t f = s->full, c = s->cols, r = s->r;
    g[0] = (struct lbs_compress_gemm){0, 0, f, r, c, c, r, r, 'x', 'q', 'p',
                                      0.0f, 0};
    g[1] = (struct lbs_compress_gemm){1, 0, c, r, f, c, r, r, 'x', 'p', 'q',
                                      0.0f, 0};
    g[2] = (struct lbs_compress_gemm){0, 1, f, c, r, r, r, c, 'p', 'q', 'o',
                                      1.0f, 1};
}

static void run_gemm(const struct lbs_compress_gemm *g, float alpha,
                     float beta, const float *a, const float *b, float *c)
{
    cblas_sgemm(CblasRowMajor, g->ta ? CblasTrans : CblasNoTrans,
                g->tb ? CblasTrans : CblasNoTrans, (int)g->m, (int)g->n,
                (int)g->k, alpha, a, (int)g->lda, b, (int)g->ldb, beta, c,
                (int)g->ldc);
}

/* P (rows x r) = M Q; the partial row and the zero padding by hand. */
static void mul_mq(const struct shape *s, const float *x, const float *q,
                   float *p)
{
    size_t r = s->r;
    struct lbs_compress_gemm g[3];
    gemms(s, g);
    memset(p, 0, s->rows * r * sizeof *p);
    if (s->full)
        run_gemm(&g[0], 1.0f, 0.0f, x, q, p);
    const float *xr = x + s->full * s->cols;
    for (size_t j = 0; j < s->rem; j++)
        for (size_t t = 0; t < r; t++)
            p[s->full * r + t] += xr[j] * q[j * r + t];
}

/* Q (cols x r) = M^T P. */
static void mul_mtp(const struct shape *s, const float *x, const float *p,
                    float *q)
{
    size_t r = s->r;
    struct lbs_compress_gemm g[3];
    gemms(s, g);
    if (s->full)
        run_gemm(&g[1], 1.0f, 0.0f, x, p, q);
    else
        memset(q, 0, s->cols * r * sizeof *q);
    const float *xr = x + s->full * s->cols;
    for (size_t j = 0; j < s->rem; j++)
        for (size_t t = 0; t < r; t++)
            q[j * r + t] += xr[j] * p[s->full * r + t];
}

/* out = alpha P Q^T + beta out, over the n elements only. */
static void mul_pqt(const struct shape *s, const float *p, const float *q,
                    float alpha, float beta, float *out)
{
    size_t r = s->r;
    struct lbs_compress_gemm g[3];
    gemms(s, g);
    if (s->full)
        run_gemm(&g[2], alpha, beta, p, q, out);
    float *o = out + s->full * s->cols;
    const float *pr = p + s->full * r;
    for (size_t j = 0; j < s->rem; j++) {
        float v = 0;
        for (size_t t = 0; t < r; t++)
            v += pr[t] * q[j * r + t];
        o[j] = alpha * v + (beta != 0.0f ? beta * o[j] : 0.0f);
    }
}

/* lbs_compress_flops: the model in the header comment. */
static int psgd_flops(const struct lbs_compressor *c, size_t n,
                      struct lbs_compress_flops *out)
{
    struct shape s = shape_of(c->cfg, n);
    if (s.raw || !s.full)
        return -ENOTSUP;
    const double r = (double)s.r, nn = (double)n;
    out->compress = 4 * nn * r +
                    2 * (2 * (double)s.rows * r * r - 2 * r * r * r / 3);
    out->decompress = 2 * nn * r;
    out->gemm = 6 * (double)s.full * (double)s.cols * r;
    out->p_elems = s.rows * s.r;
    out->q_elems = s.cols * s.r;
    out->ngemm = 3;
    gemms(&s, out->g);
    return 0;
}

/* LAPACK (in OpenBLAS; Debian ships no lapacke.h for it). */
void sgeqrf_(const int *m, const int *n, float *a, const int *lda, float *tau,
             float *work, const int *lwork, int *info);
void sorgqr_(const int *m, const int *n, const int *k, float *a,
             const int *lda, const float *tau, float *work, const int *lwork,
             int *info);

/* P (rows x r, row-major) := the Q factor of its Householder QR: r
 * orthonormal columns spanning P's range (and a complement of it when P's
 * rank is below r).  shape_of guarantees r < rows. */
static int orthogonalise(float *p, size_t rows, size_t r, struct lbs_err *err)
{
    if (rows > INT_MAX || rows * r > INT_MAX)
        return lbs_err_set(err, -EINVAL, "powersgd: a %zu x %zu factor is "
                           "beyond LAPACK's 32-bit sizes", rows, r);
    const int m = (int)rows, n = (int)r, query = -1;
    int info = 0, lwork;
    float w1 = 0, w2 = 0;
    sgeqrf_(&m, &n, NULL, &m, NULL, &w1, &query, &info);
    sorgqr_(&m, &n, &n, NULL, &m, NULL, &w2, &query, &info);
    lwork = (int)(w1 > w2 ? w1 : w2);
    lwork = lwork > n ? lwork : n;
    /* column-major copy (LAPACK's layout), the reflectors' scales, work */
    float *a = malloc((rows * r + r + (size_t)lwork) * sizeof *a);
    if (!a)
        return lbs_err_set(err, -ENOMEM, "powersgd: out of memory");
    float *tau = a + rows * r, *work = tau + r;
    for (size_t i = 0; i < rows; i++)
        for (size_t j = 0; j < r; j++)
            a[j * rows + i] = p[i * r + j];
    sgeqrf_(&m, &n, a, &m, tau, work, &lwork, &info);
    if (!info)
        sorgqr_(&m, &n, &n, a, &m, tau, work, &lwork, &info);
    if (!info)
        for (size_t i = 0; i < rows; i++)
            for (size_t j = 0; j < r; j++)
                p[i * r + j] = a[j * rows + i];
    free(a);
    return info ? lbs_err_set(err, -EIO, "powersgd: LAPACK QR failed "
                              "(info %d)", info) : 0;
}

static int psgd_compress(struct lbs_compressor *c, const float *x, size_t n,
                         const struct lbs_cctx *ctx, void *payload,
                         size_t *bytes, struct lbs_err *err)
{
    struct shape s = shape_of(c->cfg, n);
    if (s.raw) {
        memcpy(payload, x, n * 4);
        *bytes = 4 * n;
        return 0;
    }
    float *q0, *p = payload, *q = (float *)payload + s.rows * s.r;
    int rc = get_q(c, &s, n, ctx, &q0, err);
    if (rc)
        return rc;
    mul_mq(&s, x, q0, p);
    if ((rc = orthogonalise(p, s.rows, s.r, err)))
        return rc;
    mul_mtp(&s, x, p, q);
    memcpy(q0, q, s.cols * s.r * sizeof *q);   /* warm start */
    *bytes = 4 * s.r * (s.rows + s.cols);
    return 0;
}

static int psgd_decompress_add(struct lbs_compressor *c, const void *payload,
                               size_t bytes, size_t n,
                               const struct lbs_cctx *ctx, float alpha,
                               float *out, struct lbs_err *err)
{
    (void)ctx;
    struct shape s = shape_of(c->cfg, n);
    int rc = lbs_cmp_expect_bytes(c, bytes, psgd_max(c, n), err);
    if (rc)
        return rc;
    const float *p = payload;
    if (s.raw) {
#pragma omp parallel for simd schedule(static) if (n > LBS_PAR_MIN)
        for (size_t i = 0; i < n; i++)
            out[i] += alpha * p[i];
        return 0;
    }
    mul_pqt(&s, p, p + s.rows * s.r, alpha, 1.0f, out);
    return 0;
}

static int psgd_exchange(struct lbs_compressor *c, struct lbs_comm *comm,
                         float *x, float *out, size_t n,
                         const struct lbs_cctx *ctx, struct lbs_err *err)
{
    struct shape s = shape_of(c->cfg, n);
    struct psgd_state *st = c->state;
    if (s.raw) {
        if (x != out)
            memcpy(out, x, n * sizeof *out);
        return lbs_allreduce_mean_f32(comm, out, n, ctx->layer);
    }
    float *q, *p = lbs_cbuf_get(&st->p, s.rows * s.r * 4);
    if (!p)
        return lbs_err_set(err, -ENOMEM, "powersgd: out of memory");
    int rc = get_q(c, &s, n, ctx, &q, err);
    if (rc)
        return rc;
    mul_mq(&s, x, q, p);
    if ((rc = lbs_allreduce(comm, p, s.rows * s.r, LBS_FLOAT32, LBS_SUM,
                            ctx->layer)))
        return rc;
    if ((rc = orthogonalise(p, s.rows, s.r, err)))
        return rc;
    mul_mtp(&s, x, p, q);
    if ((rc = lbs_allreduce_mean_f32(comm, q, s.cols * s.r, ctx->layer)))
        return rc;
    mul_pqt(&s, p, q, 1.0f, 0.0f, out);   /* x no longer needed: may alias */
    return 0;
}

static void free_layer(void *v)
{
    struct psgd_layer *L = v;
    free(L->q);
    free(L);
}

static int psgd_init(struct lbs_compressor *c, struct lbs_err *err)
{
    c->state = calloc(1, sizeof(struct psgd_state));
    return c->state ? 0 : lbs_err_set(err, -ENOMEM, "out of memory");
}

static void psgd_reset(struct lbs_compressor *c)
{
    struct psgd_state *st = c->state;
    lbs_cslots_clear(&st->layers, free_layer);
}

static void psgd_fini(struct lbs_compressor *c)
{
    struct psgd_state *st = c->state;
    if (!st)
        return;
    lbs_cslots_clear(&st->layers, free_layer);
    free(st->layers.p);
    free(st->layers.n);
    lbs_cbuf_free(&st->p);
    free(st);
}

/* Invariant (lbs_compress_wrong): a rank-r projection never has more
 * energy in its error than the input, rel_err <= 1 (1e-5 slack). */
static long powersgd_wrong(const struct lbs_compressor *c,
                           struct lbs_compress_check *ck)
{
    (void)c;
    return ck->rel_err > 1 + 1e-5;
}

const struct lbs_compress_ops lbs_cmp_powersgd = {
    .name = "powersgd",
    .summary = "PowerSGD: rank-r P Q^T, warm-started Q, two allreduces",
    .params = psgd_params,
    .cfg_size = sizeof(struct psgd_cfg),
    .coll = LBS_COLL_ALLREDUCE,
    /* memory traffic (lbs_compress_traffic): at small r the products are
     * bound by memory, not arithmetic (header comment): compress reads x
     * twice (P = M Q, Q = M^T P), decompress reads and writes out (out +=
     * P Q^T) and reads the payload; the factors stay in cache */
    .traffic = {.comp = 8, .comp_w = 0, .dec_once = 0,
                .dec_part = 8, .dec_w = 1, .known = 1},
    .ef_ok = 1,
    .init = psgd_init,
    .fini = psgd_fini,
    .reset = psgd_reset,
    .wire_bytes = psgd_bytes,
    .max_bytes = psgd_max,
    .compress = psgd_compress,
    .decompress_add = psgd_decompress_add,
    .exchange = psgd_exchange,
    .wrong = powersgd_wrong,
    .flops = psgd_flops,
};
