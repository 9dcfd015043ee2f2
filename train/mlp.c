/* mlp.c - the MLP classifier of `lbscale train` (see mlp.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cblas.h>

#include "lbscale/mem.h"
#include "lbscale/rng.h"
#include "cnn.h"
#include "mlp.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int mlp_parse(const char *spec, size_t *dims, int *nd, struct lbs_err *err)
{
    if (strncmp(spec, "mlp:", 4))
        return lbs_err_set(err, -EINVAL, "model '%s': expected "
                           "mlp:IN-H1-...-CLASSES (e.g. %s)", spec,
                           MLP_DEFAULT);
    const char *p = spec + 4;
    int n = 0;
    while (1) {
        char *end;
        if (*p < '0' || *p > '9')
            return lbs_err_set(err, -EINVAL, "model '%s': '%s' is not a "
                               "layer width", spec, p);
        unsigned long v = strtoul(p, &end, 10);
        if (v == 0 || v > 65536)
            return lbs_err_set(err, -EINVAL, "model '%s': width %lu not in "
                               "1..65536", spec, v);
        if (n > MLP_MAX_DENSE)
            return lbs_err_set(err, -EINVAL, "model '%s': more than %d "
                               "layers", spec, MLP_MAX_DENSE);
        dims[n++] = v;
        if (*end == '\0')
            break;
        if (*end != '-')
            return lbs_err_set(err, -EINVAL, "model '%s': unexpected '%c'",
                               spec, *end);
        p = end + 1;
    }
    if (n < 2)
        return lbs_err_set(err, -EINVAL, "model '%s': needs at least an "
                           "input and an output width", spec);
    if (dims[n - 1] < 2 || dims[n - 1] > 256)
        return lbs_err_set(err, -EINVAL, "model '%s': %zu classes (must be "
                           "2..256)", spec, dims[n - 1]);
    *nd = n - 1;
    return 0;
}

int mlp_new(const size_t *dims, int nd, size_t max_batch, struct mlp **out,
            struct lbs_err *err)
{
    *out = NULL;
    if (nd < 1 || nd > MLP_MAX_DENSE || max_batch == 0)
        return lbs_err_set(err, -EINVAL, "mlp: bad shape");
    struct mlp *m = calloc(1, sizeof *m);
    if (!m)
        return lbs_err_set(err, -ENOMEM, "out of memory");
    m->nd = nd;
    m->max_batch = max_batch;
    m->nlayers = 2 * (size_t)nd;
    size_t maxd = 0, off = 0;
    for (int i = 0; i <= nd; i++) {
        m->dims[i] = dims[i];
        maxd = dims[i] > maxd ? dims[i] : maxd;
    }
    for (int i = 0; i < nd; i++)
        off += dims[i + 1] * dims[i] + dims[i + 1];
    m->nparams = off;
    m->w = lbs_array_alloc(off, sizeof(float));
    m->g = lbs_array_alloc(off, sizeof(float));
    m->d0 = malloc(max_batch * maxd * sizeof(float));
    m->d1 = malloc(max_batch * maxd * sizeof(float));
    int ok = m->w && m->g && m->d0 && m->d1;
    for (int i = 1; i <= nd && ok; i++)
        ok = (m->act[i] = malloc(max_batch * dims[i] * sizeof(float))) != 0;
    if (!ok) {
        mlp_free(m);
        return lbs_err_set(err, -ENOMEM, "mlp: out of memory");
    }
    memset(m->w, 0, off * sizeof(float));
    memset(m->g, 0, off * sizeof(float));
    off = 0;
    for (int i = 0; i < nd; i++) {
        struct lbs_layer *W = &m->layers[2 * i], *B = &m->layers[2 * i + 1];
        snprintf(m->names[2 * i], sizeof m->names[0], "fc%d.weight", i + 1);
        snprintf(m->names[2 * i + 1], sizeof m->names[0], "fc%d.bias", i + 1);
        *W = (struct lbs_layer){.name = m->names[2 * i], .w = m->w + off,
                                .g = m->g + off, .n = dims[i + 1] * dims[i],
                                .ndim = 2, .shape = {dims[i + 1], dims[i]}};
        off += W->n;
        *B = (struct lbs_layer){.name = m->names[2 * i + 1], .w = m->w + off,
                                .g = m->g + off, .n = dims[i + 1], .ndim = 1,
                                .shape = {dims[i + 1]}};
        off += B->n;
    }
    *out = m;
    return 0;
}

void mlp_free(struct mlp *m)
{
    if (!m)
        return;
    cnn_free_state(m);
    free(m->w);
    free(m->g);
    free(m->d0);
    free(m->d1);
    for (int i = 1; i <= m->nd; i++)
        free(m->act[i]);
    free(m);
}

void mlp_init(struct mlp *m, uint64_t seed)
{
    if (m->cnn) {
        cnn_init(m, seed);
        return;
    }
    for (int i = 0; i < m->nd; i++) {
        struct lbs_layer *W = &m->layers[2 * i], *B = &m->layers[2 * i + 1];
        uint64_t key = lbs_rng_key(seed, 0x1417, (uint64_t)i);
        double sd = sqrt(2.0 / (double)m->dims[i]);
        for (size_t j = 0; j < W->n; j += 2) {
            /* Box-Muller on two counter draws */
            double u1 = 1.0 - lbs_rng_uniform(key, j), u2 =
                lbs_rng_uniform(key, j + 1);
            double r = sqrt(-2.0 * log(u1)), t = 2.0 * M_PI * u2;
            W->w[j] = (float)(sd * r * cos(t));
            if (j + 1 < W->n)
                W->w[j + 1] = (float)(sd * r * sin(t));
        }
        memset(B->w, 0, B->n * sizeof(float));
    }
}

void mlp_reset_times(struct mlp *m)
{
    memset(m->t_fwd, 0, sizeof m->t_fwd);
    memset(m->t_bwd, 0, sizeof m->t_bwd);
    memset(m->t_wgrad, 0, sizeof m->t_wgrad);
}

/* Offsets of layer i's W and b inside a parameter buffer. */
static size_t w_off(const struct mlp *m, int i)
{
    return (size_t)(m->layers[2 * i].w - m->w);
}

void mlp_forward(struct mlp *m, const float *w, const float *x, size_t b)
{
    if (m->cnn) {
        cnn_forward(m, w, x, b);
        return;
    }
    const float *in = x;
    for (int i = 0; i < m->nd; i++) {
        size_t ni = m->dims[i], no = m->dims[i + 1];
        const float *W = w + w_off(m, i), *bias = W + no * ni;
        float *z = m->act[i + 1];
        double t0 = now();
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)b, (int)no,
                    (int)ni, 1.0f, in, (int)ni, W, (int)ni, 0.0f, z, (int)no);
        double t1 = now();
        int relu = i + 1 < m->nd;
        for (size_t r = 0; r < b; r++) {
            float *zr = z + r * no;
            if (relu)
                for (size_t c = 0; c < no; c++) {
                    float v = zr[c] + bias[c];
                    zr[c] = v > 0.0f ? v : 0.0f;
                }
            else
                for (size_t c = 0; c < no; c++)
                    zr[c] += bias[c];
        }
        double t2 = now();
        m->t_fwd[2 * i] += t1 - t0;
        m->t_fwd[2 * i + 1] += t2 - t1;
        in = z;
    }
}

double mlp_loss(struct mlp *m, const uint8_t *y, size_t b, int grad,
                float scale, long *correct)
{
    size_t k = m->dims[m->nd];
    const float *z = m->act[m->nd];
    double loss = 0;
    long ok = 0;
    for (size_t r = 0; r < b; r++) {
        const float *zr = z + r * k;
        size_t arg = 0;
        float mx = zr[0];
        for (size_t c = 1; c < k; c++)
            if (zr[c] > mx) {
                mx = zr[c];
                arg = c;
            }
        ok += arg == y[r];
        double s = 0;
        for (size_t c = 0; c < k; c++)
            s += exp((double)(zr[c] - mx));
        double lse = (double)mx + log(s);
        loss += lse - (double)zr[y[r]];
        if (grad) {
            float *dr = m->d0 + r * k;
            for (size_t c = 0; c < k; c++) {
                double p = exp((double)zr[c] - lse);
                dr[c] = (float)(p - (c == y[r])) * scale;
            }
        }
    }
    *correct += ok;
    return loss;
}

void mlp_backward(struct mlp *m, const float *x, size_t b,
                  const uint8_t *keep, int accumulate)
{
    if (m->cnn) {
        cnn_backward(m, x, b, keep, accumulate);
        return;
    }
    float *dz = m->d0, *dx = m->d1;
    const float beta = accumulate ? 1.0f : 0.0f;
    for (int i = m->nd - 1; i >= 0; i--) {
        size_t ni = m->dims[i], no = m->dims[i + 1];
        struct lbs_layer *W = &m->layers[2 * i], *B = &m->layers[2 * i + 1];
        const float *in = i ? m->act[i] : x;
        /* dropped layers: no GEMM, no sum, and exactly 0 s recorded */
        double tw = 0, tb = 0;
        if (!keep || keep[2 * i]) {
            double t0 = now();
            cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)no,
                        (int)ni, (int)b, 1.0f, dz, (int)no, in, (int)ni, beta,
                        W->g, (int)ni);
            tw = now() - t0;
        }
        if (!keep || keep[2 * i + 1]) {
            double t0 = now();
            if (!accumulate)
                memset(B->g, 0, no * sizeof(float));
            for (size_t r = 0; r < b; r++) {
                const float *dr = dz + r * no;
                for (size_t c = 0; c < no; c++)
                    B->g[c] += dr[c];
            }
            tb = now() - t0;
        }
        double t2 = now();
        if (i > 0) {
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)b,
                        (int)ni, (int)no, 1.0f, dz, (int)no, W->w, (int)ni,
                        0.0f, dx, (int)ni);
            const float *a = m->act[i];   /* ReLU output of layer i-1 */
            for (size_t j = 0; j < b * ni; j++)
                if (a[j] <= 0.0f)
                    dx[j] = 0.0f;
            float *t = dz;
            dz = dx;
            dx = t;
        }
        double t3 = now();
        m->t_wgrad[2 * i] += tw;
        m->t_bwd[2 * i] += tw + (t3 - t2);
        m->t_wgrad[2 * i + 1] += tb;
        m->t_bwd[2 * i + 1] += tb;
    }
}
