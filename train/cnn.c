/* cnn.c - the small CNN of `lbscale train --model cnn` (see cnn.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cblas.h>

#include "cnn.h"
#include "lbscale/mem.h"
#include "lbscale/rng.h"
#include "mlp.h"

enum { IMG = 28, C1 = 16, C2 = 32, H1 = 28, P1 = 14, H2 = 14, P2 = 7,
       F1 = 128, NCLS = 10, FIN = P2 * P2 * C2 };

/* tensor order in m->layers */
enum { L_C1W, L_C1B, L_C2W, L_C2B, L_F1W, L_F1B, L_F2W, L_F2B, NL };

struct cnn_state {
    size_t max_batch;
    float *col1, *z1, *p1, *col2, *z2, *p2, *h1;   /* forward */
    uint32_t *arg1, *arg2;                          /* max-pool winners */
    float *dcol, *dz1, *dp1, *dz2, *dp2, *dh1;      /* backward */
};

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static const size_t tensor_shape[NL][4] = {
    {C1, 3, 3, 1}, {C1}, {C2, 3, 3, C1}, {C2}, {F1, FIN}, {F1},
    {NCLS, F1}, {NCLS}};
static const int tensor_ndim[NL] = {4, 1, 4, 1, 2, 1, 2, 1};
static const char *const tensor_name[NL] = {
    "conv1.weight", "conv1.bias", "conv2.weight", "conv2.bias",
    "fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"};

int cnn_new(size_t max_batch, struct mlp **out, struct lbs_err *err)
{
    *out = NULL;
    if (!max_batch)
        return lbs_err_set(err, -EINVAL, "cnn: bad batch");
    struct mlp *m = calloc(1, sizeof *m);
    struct cnn_state *c = calloc(1, sizeof *c);
    if (!m || !c) {
        free(m);
        free(c);
        return lbs_err_set(err, -ENOMEM, "out of memory");
    }
    m->cnn = c;
    m->nd = 1;
    m->dims[0] = IMG * IMG;
    m->dims[1] = NCLS;
    m->max_batch = max_batch;
    m->nlayers = NL;
    size_t off = 0;
    for (int l = 0; l < NL; l++) {
        size_t n = 1;
        for (int d = 0; d < tensor_ndim[l]; d++)
            n *= tensor_shape[l][d];
        off += n;
    }
    m->nparams = off;
    size_t B = max_batch;
    m->w = lbs_array_alloc(off, sizeof(float));
    m->g = lbs_array_alloc(off, sizeof(float));
    m->act[1] = malloc(B * NCLS * sizeof(float));
    m->d0 = malloc(B * NCLS * sizeof(float));
    m->d1 = malloc(sizeof(float));
    c->max_batch = B;
    c->col1 = malloc(B * H1 * H1 * 9 * sizeof(float));
    c->z1 = malloc(B * H1 * H1 * C1 * sizeof(float));
    c->p1 = malloc(B * P1 * P1 * C1 * sizeof(float));
    c->arg1 = malloc(B * P1 * P1 * C1 * sizeof(uint32_t));
    c->col2 = malloc(B * H2 * H2 * 9 * C1 * sizeof(float));
    c->z2 = malloc(B * H2 * H2 * C2 * sizeof(float));
    c->p2 = malloc(B * FIN * sizeof(float));
    c->arg2 = malloc(B * FIN * sizeof(uint32_t));
    c->h1 = malloc(B * F1 * sizeof(float));
    c->dcol = malloc(B * H2 * H2 * 9 * C1 * sizeof(float));
    c->dz1 = malloc(B * H1 * H1 * C1 * sizeof(float));
    c->dp1 = malloc(B * P1 * P1 * C1 * sizeof(float));
    c->dz2 = malloc(B * H2 * H2 * C2 * sizeof(float));
    c->dp2 = malloc(B * FIN * sizeof(float));
    c->dh1 = malloc(B * F1 * sizeof(float));
    if (!m->w || !m->g || !m->act[1] || !m->d0 || !m->d1 || !c->col1 ||
        !c->z1 || !c->p1 || !c->arg1 || !c->col2 || !c->z2 || !c->p2 ||
        !c->arg2 || !c->h1 || !c->dcol || !c->dz1 || !c->dp1 || !c->dz2 ||
        !c->dp2 || !c->dh1) {
        mlp_free(m);
        return lbs_err_set(err, -ENOMEM, "cnn: out of memory");
    }
    memset(m->w, 0, off * sizeof(float));
    memset(m->g, 0, off * sizeof(float));
    off = 0;
    for (int l = 0; l < NL; l++) {
        struct lbs_layer *L = &m->layers[l];
        snprintf(m->names[l], sizeof m->names[0], "%s", tensor_name[l]);
        *L = (struct lbs_layer){.name = m->names[l], .w = m->w + off,
                                .g = m->g + off, .ndim = tensor_ndim[l]};
        L->n = 1;
        for (int d = 0; d < tensor_ndim[l]; d++) {
            L->shape[d] = tensor_shape[l][d];
            L->n *= tensor_shape[l][d];
        }
        off += L->n;
    }
    *out = m;
    return 0;
}

void cnn_free_state(struct mlp *m)
{
    struct cnn_state *c = m->cnn;
    if (!c)
        return;
    free(c->col1);
    free(c->z1);
    free(c->p1);
    free(c->arg1);
    free(c->col2);
    free(c->z2);
    free(c->p2);
    free(c->arg2);
    free(c->h1);
    free(c->dcol);
    free(c->dz1);
    free(c->dp1);
    free(c->dz2);
    free(c->dp2);
    free(c->dh1);
    free(c);
    m->cnn = NULL;
}

void cnn_init(struct mlp *m, uint64_t seed)
{
    for (int l = 0; l < NL; l++) {
        struct lbs_layer *L = &m->layers[l];
        if (L->ndim == 1) {
            memset(L->w, 0, L->n * sizeof(float));
            continue;
        }
        size_t fan_in = L->n / L->shape[0];
        double sd = sqrt(2.0 / (double)fan_in);
        uint64_t key = lbs_rng_key(seed, 0xc22, (uint64_t)l);
        for (size_t j = 0; j < L->n; j += 2) {
            double u1 = 1.0 - lbs_rng_uniform(key, j),
                   u2 = lbs_rng_uniform(key, j + 1);
            double r = sqrt(-2.0 * log(u1)), t = 2.0 * M_PI * u2;
            L->w[j] = (float)(sd * r * cos(t));
            if (j + 1 < L->n)
                L->w[j + 1] = (float)(sd * r * sin(t));
        }
    }
}

/* im2col of b NHWC maps (h x h x ci), 3x3, pad 1, stride 1. */
static void im2col(const float *in, size_t b, int h, int ci, float *col)
{
    size_t K = 9 * (size_t)ci;
    for (size_t s = 0; s < b; s++)
        for (int y = 0; y < h; y++)
            for (int x = 0; x < h; x++) {
                float *row = col + ((s * h + y) * h + x) * K;
                for (int ky = 0; ky < 3; ky++) {
                    int yy = y + ky - 1;
                    for (int kx = 0; kx < 3; kx++) {
                        int xx = x + kx - 1;
                        float *dst = row + (ky * 3 + kx) * ci;
                        if (yy < 0 || yy >= h || xx < 0 || xx >= h)
                            memset(dst, 0, (size_t)ci * sizeof(float));
                        else
                            memcpy(dst, in + ((s * h + yy) * h + xx) * ci,
                                   (size_t)ci * sizeof(float));
                    }
                }
            }
}

/* col2im: add the patch gradients back into din (zeroed here). */
static void col2im(const float *dcol, size_t b, int h, int ci, float *din)
{
    size_t K = 9 * (size_t)ci;
    memset(din, 0, b * h * h * (size_t)ci * sizeof(float));
    for (size_t s = 0; s < b; s++)
        for (int y = 0; y < h; y++)
            for (int x = 0; x < h; x++) {
                const float *row = dcol + ((s * h + y) * h + x) * K;
                for (int ky = 0; ky < 3; ky++) {
                    int yy = y + ky - 1;
                    if (yy < 0 || yy >= h)
                        continue;
                    for (int kx = 0; kx < 3; kx++) {
                        int xx = x + kx - 1;
                        if (xx < 0 || xx >= h)
                            continue;
                        float *dst = din + ((s * h + yy) * h + xx) * ci;
                        const float *src = row + (ky * 3 + kx) * ci;
                        for (int c = 0; c < ci; c++)
                            dst[c] += src[c];
                    }
                }
            }
}

/* z[rows][co] += bias, then ReLU in place. */
static void bias_relu(float *z, size_t rows, int co, const float *bias,
                      int relu)
{
    for (size_t r = 0; r < rows; r++) {
        float *zr = z + r * (size_t)co;
        for (int c = 0; c < co; c++) {
            float v = zr[c] + bias[c];
            zr[c] = relu && v < 0.0f ? 0.0f : v;
        }
    }
}

/* 2x2 max-pool of b NHWC maps h x h x c -> (h/2) x (h/2) x c, recording
 * the flat index of each winner in z. */
static void maxpool(const float *z, size_t b, int h, int c, float *p,
                    uint32_t *arg)
{
    int o = h / 2;
    for (size_t s = 0; s < b; s++)
        for (int y = 0; y < o; y++)
            for (int x = 0; x < o; x++)
                for (int ch = 0; ch < c; ch++) {
                    size_t best = ((s * h + 2 * y) * h + 2 * x) * c + ch;
                    for (int dy = 0; dy < 2; dy++)
                        for (int dx = 0; dx < 2; dx++) {
                            size_t i = ((s * h + 2 * y + dy) * h + 2 * x + dx)
                                       * c + ch;
                            if (z[i] > z[best])
                                best = i;
                        }
                    size_t q = ((s * o + y) * o + x) * c + ch;
                    p[q] = z[best];
                    arg[q] = (uint32_t)best;
                }
}

static size_t toff(const struct mlp *m, int l)
{
    return (size_t)(m->layers[l].w - m->w);
}

void cnn_forward(struct mlp *m, const float *w, const float *x, size_t b)
{
    struct cnn_state *c = m->cnn;
    const float *W1 = w + toff(m, L_C1W), *b1 = w + toff(m, L_C1B),
                *W2 = w + toff(m, L_C2W), *b2 = w + toff(m, L_C2B),
                *W3 = w + toff(m, L_F1W), *b3 = w + toff(m, L_F1B),
                *W4 = w + toff(m, L_F2W), *b4 = w + toff(m, L_F2B);
    double t0 = now();
    im2col(x, b, H1, 1, c->col1);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)(b * H1 * H1),
                C1, 9, 1.0f, c->col1, 9, W1, 9, 0.0f, c->z1, C1);
    double t1 = now();
    bias_relu(c->z1, b * H1 * H1, C1, b1, 1);
    maxpool(c->z1, b, H1, C1, c->p1, c->arg1);
    double t2 = now();
    im2col(c->p1, b, H2, C1, c->col2);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)(b * H2 * H2),
                C2, 9 * C1, 1.0f, c->col2, 9 * C1, W2, 9 * C1, 0.0f, c->z2,
                C2);
    double t3 = now();
    bias_relu(c->z2, b * H2 * H2, C2, b2, 1);
    maxpool(c->z2, b, H2, C2, c->p2, c->arg2);
    double t4 = now();
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)b, F1, FIN,
                1.0f, c->p2, FIN, W3, FIN, 0.0f, c->h1, F1);
    double t5 = now();
    bias_relu(c->h1, b, F1, b3, 1);
    double t6 = now();
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)b, NCLS, F1,
                1.0f, c->h1, F1, W4, F1, 0.0f, m->act[1], NCLS);
    double t7 = now();
    bias_relu(m->act[1], b, NCLS, b4, 0);
    double t8 = now();
    m->t_fwd[L_C1W] += t1 - t0;
    m->t_fwd[L_C1B] += t2 - t1;
    m->t_fwd[L_C2W] += t3 - t2;
    m->t_fwd[L_C2B] += t4 - t3;
    m->t_fwd[L_F1W] += t5 - t4;
    m->t_fwd[L_F1B] += t6 - t5;
    m->t_fwd[L_F2W] += t7 - t6;
    m->t_fwd[L_F2B] += t8 - t7;
}

/* Column sums of d[rows][co] into g (overwrite or add). */
static void colsum(const float *d, size_t rows, int co, float *g, int acc)
{
    if (!acc)
        memset(g, 0, (size_t)co * sizeof(float));
    for (size_t r = 0; r < rows; r++)
        for (int c = 0; c < co; c++)
            g[c] += d[r * (size_t)co + c];
}

/* dz (pre-pool map gradient, NHWC h x h x c) from the pooled gradient:
 * each winner gets its cell's gradient, masked by ReLU (z > 0). */
static void unpool_relu(const float *dp, const uint32_t *arg,
                        const float *z, size_t npooled, size_t nz, float *dz)
{
    memset(dz, 0, nz * sizeof(float));
    for (size_t q = 0; q < npooled; q++) {
        size_t i = arg[q];
        if (z[i] > 0.0f)
            dz[i] += dp[q];
    }
}

void cnn_backward(struct mlp *m, const float *x, size_t b,
                  const uint8_t *keep, int accumulate)
{
    (void)x;
    struct cnn_state *c = m->cnn;
    const float beta = accumulate ? 1.0f : 0.0f;
    struct lbs_layer *L = m->layers;
    const float *dlog = m->d0;
    double tw[NL] = {0}, tb[NL] = {0}, t0, t1;
    /* fc2 */
    if (!keep || keep[L_F2W]) {
        t0 = now();
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, NCLS, F1,
                    (int)b, 1.0f, dlog, NCLS, c->h1, F1, beta, L[L_F2W].g,
                    F1);
        tw[L_F2W] = now() - t0;
    }
    if (!keep || keep[L_F2B]) {
        t0 = now();
        colsum(dlog, b, NCLS, L[L_F2B].g, accumulate);
        tw[L_F2B] = now() - t0;
    }
    t0 = now();
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)b, F1, NCLS,
                1.0f, dlog, NCLS, L[L_F2W].w, F1, 0.0f, c->dh1, F1);
    for (size_t i = 0; i < b * F1; i++)
        if (c->h1[i] <= 0.0f)
            c->dh1[i] = 0.0f;
    t1 = now();
    tb[L_F2W] = t1 - t0;
    /* fc1 */
    if (!keep || keep[L_F1W]) {
        t0 = now();
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, F1, FIN, (int)b,
                    1.0f, c->dh1, F1, c->p2, FIN, beta, L[L_F1W].g, FIN);
        tw[L_F1W] = now() - t0;
    }
    if (!keep || keep[L_F1B]) {
        t0 = now();
        colsum(c->dh1, b, F1, L[L_F1B].g, accumulate);
        tw[L_F1B] = now() - t0;
    }
    t0 = now();
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)b, FIN, F1,
                1.0f, c->dh1, F1, L[L_F1W].w, FIN, 0.0f, c->dp2, FIN);
    unpool_relu(c->dp2, c->arg2, c->z2, b * FIN, b * H2 * H2 * C2, c->dz2);
    tb[L_F1W] = now() - t0;
    /* conv2 */
    size_t r2 = b * H2 * H2;
    if (!keep || keep[L_C2W]) {
        t0 = now();
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, C2, 9 * C1,
                    (int)r2, 1.0f, c->dz2, C2, c->col2, 9 * C1, beta,
                    L[L_C2W].g, 9 * C1);
        tw[L_C2W] = now() - t0;
    }
    if (!keep || keep[L_C2B]) {
        t0 = now();
        colsum(c->dz2, r2, C2, L[L_C2B].g, accumulate);
        tw[L_C2B] = now() - t0;
    }
    t0 = now();
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)r2, 9 * C1,
                C2, 1.0f, c->dz2, C2, L[L_C2W].w, 9 * C1, 0.0f, c->dcol,
                9 * C1);
    col2im(c->dcol, b, H2, C1, c->dp1);
    unpool_relu(c->dp1, c->arg1, c->z1, b * P1 * P1 * C1, b * H1 * H1 * C1,
                c->dz1);
    tb[L_C2W] = now() - t0;
    /* conv1 (no input gradient) */
    size_t r1 = b * H1 * H1;
    if (!keep || keep[L_C1W]) {
        t0 = now();
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, C1, 9, (int)r1,
                    1.0f, c->dz1, C1, c->col1, 9, beta, L[L_C1W].g, 9);
        tw[L_C1W] = now() - t0;
    }
    if (!keep || keep[L_C1B]) {
        t0 = now();
        colsum(c->dz1, r1, C1, L[L_C1B].g, accumulate);
        tw[L_C1B] = now() - t0;
    }
    for (int l = 0; l < NL; l++) {
        m->t_wgrad[l] += tw[l];
        m->t_bwd[l] += tw[l] + tb[l];
    }
}

void cnn_augment(float *x, size_t b, int pad, float fill, uint64_t seed,
                 uint64_t step, uint64_t first_sample)
{
    float tmp[IMG * IMG];
    for (size_t s = 0; s < b; s++) {
        uint64_t key = lbs_rng_key(seed, 0xa06 + step, first_sample + s);
        int span = 2 * pad + 1;
        int dy = (int)lbs_rng_below(key, 0, (uint64_t)span) - pad;
        int dx = (int)lbs_rng_below(key, 1, (uint64_t)span) - pad;
        int flip = lbs_rng_below(key, 2, 2) != 0;
        float *img = x + s * IMG * IMG;
        for (int y = 0; y < IMG; y++)
            for (int xx = 0; xx < IMG; xx++) {
                int sy = y + dy, sx = (flip ? IMG - 1 - xx : xx) + dx;
                tmp[y * IMG + xx] = sy < 0 || sy >= IMG || sx < 0 ||
                                    sx >= IMG ? fill : img[sy * IMG + sx];
            }
        memcpy(img, tmp, sizeof tmp);
    }
}
