/* check_optim.c - the CUDA optimizer steps against the CPU reference, in
 * the style of dav1d's checkasm: the same layers, parameters and
 * gradients go through lbs_optim (the reference) and lbs_cuda_optim, the
 * results are compared, then both are timed.
 *
 * What must agree, and how closely:
 *   sgd, adamw  w after every step: bit-identical (element-wise math,
 *               every operation rounded as on the CPU, see optim.cu).
 *   slamb       m and the staleness counters c: bit-identical (they do
 *               not depend on any norm; this also proves the GPU drew the
 *               same cyclic / Bernoulli masks).  w: within the bound below.
 *   lamb, slamb w: |w_gpu - w_cpu| <= STEPS ulp(w) + REL * sum over steps
 *               of |w_t - w_t-1|.  The trust ratios come from ||w||, ||u||
 *               summed in another order: the CPU adds float squares in
 *               blocks of 1024 (relative error up to 1023 * 2^-24 = 6.1e-5
 *               per sum of squares, about half that in the norm, so up to
 *               about 6e-5 in the ratio of two norms), the GPU in blocks
 *               of 8 then in double.  REL = 1e-4 covers that; the extra
 *               ulps allow one rounding step per update to land
 *               differently.  With lamb:clip > 0 the clip factor (from
 *               the global norm) enters m and v too, within the same bound.
 *   all         a NaN gradient at step SKIP: both skip that step (CPU step
 *               returns 1, GPU sync returns 1) and agree afterwards; the
 *               GPU's bytes-per-element figure is its device hook's model
 *               (lbs_optim_config_device_bytes; how it compares with the
 *               CPU's model is a unit test, tests/test_optim.c).
 *
 * Output: one line per case with the measured maxima, then a timing table
 * (median step time on CPU and GPU, GPU GB/s by the CPU's bytes model).
 * Exit 0 when every case agrees, 1 otherwise, 77 (skipped) without a GPU
 * or without a CUDA build (a GPU that CUDA cannot use fails:
 * check_common.h).  --no-bench skips the timing table.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check_common.h"
#include "lbs_cuda.h"
#include "lbs_cuda_optim.h"
#include "lbscale/optim.h"
#include "slamb.h"

#define STEPS 6
#define SKIP 3            /* the step whose gradient holds a NaN */
#define REL 1e-4

static const struct {
    const char *name;
    int ndim;
    size_t d0, d1;
} shapes[] = {
    {"fc1.weight", 2, 300, 257},     /* several tiles; partial in slamb */
    {"fc1.bias", 1, 300, 0},         /* 1-D: no trust ratio / wd (lamb) */
    {"small.weight", 2, 64, 64},     /* below slamb's small: always synced */
    {"big.weight", 2, 1000, 1501},   /* 1.5M: many tiles per layer */
    {"ln.weight", 1, 7, 0},          /* shorter than a warp */
    {"fc2.weight", 2, 97, 101},      /* just above small, odd size */
};
#define NL (sizeof shapes / sizeof shapes[0])

/* The cases: every optimizer in the registry whose ops table has GPU
 * kernels, with the specs and exactness its table lists
 * (struct lbs_optim_device), so a new optimizer with a GPU hook is
 * checked here without a new test file. */

/* Values in [-scale, scale) from a hash of (a, b, i): reproducible. */
static float val(uint64_t a, uint64_t b, uint64_t i, float scale)
{
    uint64_t z = a * 0x9e3779b97f4a7c15ull ^ b * 0xbf58476d1ce4e5b9ull ^ i;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    return scale * ((float)(z >> 40) / (float)(1 << 23) - 1.0f);
}

static long ulps(float a, float b)
{
    int32_t x, y;
    memcpy(&x, &a, 4);
    memcpy(&y, &b, 4);
    if ((x < 0) != (y < 0))      /* opposite signs: distance through 0 */
        return (long)(x & 0x7fffffff) + (long)(y & 0x7fffffff);
    return labs((long)x - (long)y);
}

struct set {
    struct lbs_layer l[NL];
    size_t total;
};

static int set_make(struct set *s, const size_t (*dims)[2], const int *ndim,
                    size_t n)
{
    memset(s, 0, sizeof *s);
    for (size_t i = 0; i < n; i++) {
        struct lbs_layer *L = &s->l[i];
        L->name = i < NL ? shapes[i].name : "layer";
        L->ndim = ndim[i];
        L->shape[0] = dims[i][0];
        L->shape[1] = dims[i][1];
        L->n = ndim[i] == 1 ? dims[i][0] : dims[i][0] * dims[i][1];
        L->w = malloc(L->n * sizeof *L->w);
        L->g = malloc(L->n * sizeof *L->g);
        if (!L->w || !L->g)
            return -1;
        for (size_t j = 0; j < L->n; j++)
            L->w[j] = val(1, i, j, 0.1f);
        s->total += L->n;
    }
    return 0;
}

static void set_free(struct set *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(s->l[i].w);
        free(s->l[i].g);
    }
}

static void grads(struct set *s, size_t n, long step)
{
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < s->l[i].n; j++)
            s->l[i].g[j] = val(2 + (uint64_t)step, i, j, 0.01f);
}

/* Copy every layer's w and g to the GPU. */
static int upload(struct lbs_cuda_optim *h, const struct set *s, size_t n,
                  int with_w, struct lbs_err *e)
{
    int rc = 0;
    for (size_t i = 0; i < n && !rc; i++) {
        if (with_w)
            rc = lbs_cuda_optim_write(h, "w", i, s->l[i].w, e);
        if (!rc)
            rc = lbs_cuda_optim_write(h, "g", i, s->l[i].g, e);
    }
    return rc;
}

/* One case: STEPS steps on both sides, then the comparison.  0 = agrees. */
static int check_case(const char *spec, int exact)
{
    size_t dims[NL][2];
    int ndim[NL];
    for (size_t i = 0; i < NL; i++) {
        dims[i][0] = shapes[i].d0;
        dims[i][1] = shapes[i].d1;
        ndim[i] = shapes[i].ndim;
    }
    struct set s;
    struct lbs_err e;
    struct lbs_optim *o = NULL;
    struct lbs_cuda_optim *h = NULL;
    float *gw = NULL, *w0 = NULL, *acc = NULL, *buf = NULL;
    int bad = 0, is_slamb = !strncmp(spec, "slamb", 5);
    char why[LBS_ERR_MSG_MAX + 128] = "";
    if (set_make(&s, (const size_t (*)[2])dims, ndim, NL)) {
        printf("  %-52s out of memory\n", spec);
        return 1;
    }
    gw = malloc(s.total * sizeof *gw);
    w0 = malloc(s.total * sizeof *w0);
    acc = calloc(s.total, sizeof *acc);
    buf = malloc(s.total * sizeof *buf);
    if (!gw || !w0 || !acc || !buf) {
        snprintf(why, sizeof why, "out of memory");
        goto fail;
    }
    if (lbs_optim_new(spec, s.l, NL, NULL, &o, &e) ||
        lbs_cuda_optim_new(spec, s.l, NL, &h, &e) ||
        upload(h, &s, NL, 1, &e)) {
        snprintf(why, sizeof why, "setup: %s", e.msg);
        goto fail;
    }
    struct lbs_optim_config *conf;
    if (lbs_optim_config_new(spec, &conf, &e)) {
        snprintf(why, sizeof why, "config: %s", e.msg);
        goto fail;
    }
    double model = lbs_optim_config_device_bytes(conf, s.l, NL);
    lbs_optim_config_free(conf);
    if (lbs_cuda_optim_bytes_per_elem(h) != model || !(model > 4)) {
        snprintf(why, sizeof why, "bytes/elem %g, the device hook's model "
                 "says %g", lbs_cuda_optim_bytes_per_elem(h), model);
        goto fail;
    }
    for (long t = 1; t <= STEPS; t++) {
        grads(&s, NL, t);
        if (t == SKIP)
            s.l[3].g[5] = NAN;
        for (size_t i = 0, at = 0; i < NL; at += s.l[i++].n)
            memcpy(w0 + at, s.l[i].w, s.l[i].n * sizeof *w0);
        int rc_cpu = lbs_optim_step(o, &e);
        int rc_gpu = upload(h, &s, NL, 0, &e);
        if (!rc_gpu)
            rc_gpu = lbs_cuda_optim_step(h, &e);
        if (!rc_gpu)
            rc_gpu = lbs_cuda_optim_sync(h, &e);
        if (rc_cpu != (t == SKIP) || rc_gpu != rc_cpu) {
            snprintf(why, sizeof why, "step %ld: CPU returned %d, GPU %d (%s)",
                     t, rc_cpu, rc_gpu, e.msg);
            goto fail;
        }
        if (lbs_cuda_optim_steps(h) != lbs_optim_steps(o)) {
            snprintf(why, sizeof why, "step counters %ld (GPU) vs %ld",
                     lbs_cuda_optim_steps(h), lbs_optim_steps(o));
            goto fail;
        }
        for (size_t i = 0, at = 0; i < NL; at += s.l[i++].n)
            for (size_t j = 0; j < s.l[i].n; j++)
                acc[at + j] += fabsf(s.l[i].w[j] - w0[at + j]);
    }
    /* slamb: m and c bit-identical */
    long m_diff = 0, c_diff = 0;
    for (size_t i = 0; is_slamb && i < NL; i++) {
        const float *m = lbs_slamb_momentum(o, i);
        const uint32_t *c = lbs_slamb_staleness(o, i);
        if (lbs_cuda_optim_read(h, "m", i, buf, &e)) {
            snprintf(why, sizeof why, "read m: %s", e.msg);
            goto fail;
        }
        for (size_t j = 0; j < s.l[i].n; j++)
            m_diff += memcmp(&m[j], &buf[j], 4) != 0;
        if (lbs_cuda_optim_read(h, "c", i, buf, &e)) {
            snprintf(why, sizeof why, "read c: %s", e.msg);
            goto fail;
        }
        for (size_t j = 0; j < s.l[i].n; j++) {
            uint32_t gc;        /* the uint32 counters, read bytewise */
            memcpy(&gc, &buf[j], 4);
            c_diff += gc != (c ? c[j] : 0);
        }
    }
    /* w */
    long differ = 0, max_ulp = 0, over = 0;
    double worst = 0;           /* |diff| / tolerance */
    for (size_t i = 0, at = 0; i < NL; at += s.l[i++].n) {
        if (lbs_cuda_optim_read(h, "w", i, gw + at, &e)) {
            snprintf(why, sizeof why, "read w: %s", e.msg);
            goto fail;
        }
        for (size_t j = 0; j < s.l[i].n; j++) {
            float a = gw[at + j], b = s.l[i].w[j];
            if (!memcmp(&a, &b, 4))
                continue;
            differ++;
            long u = ulps(a, b);
            max_ulp = u > max_ulp ? u : max_ulp;
            double tol = STEPS * (nextafterf(fabsf(b), INFINITY) - fabsf(b)) +
                         REL * acc[at + j];
            double r = fabs((double)a - (double)b) / tol;
            worst = r > worst || isnan(r) ? r : worst;
            over += !(r <= 1.0);
        }
    }
    bad = m_diff || c_diff || (exact ? differ != 0 : over != 0);
    char res[200];
    int k = 0;
    if (is_slamb)
        k = snprintf(res, sizeof res, "m %s, c %s; ",
                     m_diff ? "DIFFER" : "bit-exact",
                     c_diff ? "DIFFER" : "bit-exact");
    if (!differ)
        snprintf(res + k, sizeof res - k, "w bit-exact");
    else
        snprintf(res + k, sizeof res - k, "w: %ld differ, max %ld ulp, "
                 "max %.2g of bound", differ, max_ulp, worst);
    printf("  %-52s %-50s %s\n", spec, res, bad ? "FAILED" : "ok");
    if (m_diff || c_diff)
        printf("    %ld m and %ld c elements differ\n", m_diff, c_diff);
    goto out;
fail:
    bad = 1;
    printf("  %-52s %-50s FAILED\n", spec, why);
out:
    lbs_optim_free(o);
    lbs_cuda_optim_free(h);
    free(gw);
    free(w0);
    free(acc);
    free(buf);
    set_free(&s, NL);
    return bad;
}

/* Errors come from the CPU's parser, unsupported optimizers are named. */
static int check_errors(void)
{
    struct lbs_err a, b;
    struct lbs_cuda_optim *h;
    int bad = 0;
    int rc = lbs_cuda_optim_check("lamb:lr=x", &a);
    float w = 0, g = 0;
    struct lbs_layer one = {.name = "p", .w = &w, .g = &g, .n = 1,
                            .ndim = 1, .shape = {1}};
    struct lbs_optim *o;
    int rc2 = lbs_optim_new("lamb:lr=x", &one, 1, NULL, &o, &b);
    if (rc != rc2 || strcmp(a.msg, b.msg)) {
        printf("  bad spec: GPU %d '%s', CPU %d '%s'   FAILED\n", rc, a.msg,
               rc2, b.msg);
        bad = 1;
    }
    rc = lbs_cuda_optim_new("lars", &one, 1, &h, &a);
    if (rc != -ENOTSUP || !strstr(a.msg, "lars")) {
        printf("  lars: %d '%s', expected -ENOTSUP naming it   FAILED\n", rc,
               a.msg);
        bad = 1;
    }
    printf("  %-52s %-50s %s\n", "bad specs", "same errors as the CPU parser",
           bad ? "FAILED" : "ok");
    return bad;
}

/* Median step time of the default spec of every optimizer in the
 * registry that has GPU kernels, on 16 layers of 1M elements, CPU (all
 * OpenMP threads) and GPU. */
static void bench(void)
{
    enum { NB = 16, CPU_IT = 3, GPU_IT = 20 };
    size_t dims[NB][2];
    int ndim[NB];
    for (size_t i = 0; i < NB; i++)
        dims[i][0] = 1000, dims[i][1] = 1000, ndim[i] = 2;
    printf("\ntiming: median step, %d layers x 1M fp32 elements\n"
           "  %-8s %10s %10s %9s %10s %8s\n", NB, "optim", "cpu ms",
           "gpu ms", "speedup", "gpu GB/s", "B/elem");
    for (const char *const *n = lbs_optim_names(); *n; n++) {
        struct lbs_optim_props p;
        if (lbs_optim_props(*n, &p, NULL) || !p.device)
            continue;   /* CPU only */
        const char *spec = *n;
        struct {
            struct lbs_layer l[NB];
            size_t total;
        } s;
        struct lbs_err e;
        struct lbs_optim *o = NULL;
        struct lbs_cuda_optim *h = NULL;
        double tc[CPU_IT], tg[GPU_IT];
        memset(&s, 0, sizeof s);
        int rc = 0;
        for (size_t i = 0; i < NB && !rc; i++) {
            struct lbs_layer *L = &s.l[i];
            L->name = "bench";
            L->ndim = ndim[i];
            L->shape[0] = dims[i][0];
            L->shape[1] = dims[i][1];
            L->n = dims[i][0] * dims[i][1];
            L->w = malloc(L->n * sizeof *L->w);
            L->g = malloc(L->n * sizeof *L->g);
            if (!L->w || !L->g) {
                rc = -1;
                break;
            }
            for (size_t j = 0; j < L->n; j++) {
                L->w[j] = val(1, i, j, 0.1f);
                L->g[j] = val(2, i, j, 0.01f);
            }
            s.total += L->n;
        }
        if (!rc)
            rc = lbs_optim_new(spec, s.l, NB, NULL, &o, &e) ||
                 lbs_cuda_optim_new(spec, s.l, NB, &h, &e);
        for (size_t i = 0; i < NB && !rc; i++)
            rc = lbs_cuda_optim_write(h, "w", i, s.l[i].w, &e) ||
                 lbs_cuda_optim_write(h, "g", i, s.l[i].g, &e);
        for (int i = 0; i < CPU_IT + 1 && !rc; i++) {   /* 1 warm-up */
            double t0 = check_now();
            rc = lbs_optim_step(o, &e) < 0;
            if (i)
                tc[i - 1] = 1e3 * (check_now() - t0);
        }
        if (!rc)
            rc = lbs_cuda_optim_time(h, 3, GPU_IT, tg, &e) != 0;
        if (rc) {
            printf("  %-8s failed: %s\n", spec, e.msg);
        } else {
            double c = check_median(tc, CPU_IT), g = check_median(tg, GPU_IT);
            double bpe = lbs_optim_bytes_per_elem(o);
            printf("  %-8s %10.3f %10.3f %9.1f %10.1f %8.1f\n", spec, c,
                   g, c / g, (double)s.total * bpe / (g * 1e-3) / 1e9, bpe);
        }
        lbs_optim_free(o);
        lbs_cuda_optim_free(h);
        for (size_t i = 0; i < NB; i++) {
            free(s.l[i].w);
            free(s.l[i].g);
        }
    }
}

int main(int argc, char **argv)
{
    char gpu[256];
    struct lbs_err e;
    int nb = argc > 1 && !strcmp(argv[1], "--no-bench");
    int prc = lbs_cuda_probe(gpu, sizeof gpu, &e);
    if (prc < 0) {
        /* skip only without CUDA or without any GPU (check_common.h) */
        if (prc == -ENOTSUP || !lbs_gpu_present()) {
            printf("SKIP: %s\n", e.msg);
            return 77;
        }
        printf("FAILED: an NVIDIA GPU is present but CUDA cannot use it: "
               "%s\n", e.msg);
        return 1;
    }
    size_t total = 0;
    for (size_t i = 0; i < NL; i++)
        total += shapes[i].ndim == 1 ? shapes[i].d0
                                     : shapes[i].d0 * shapes[i].d1;
    printf("check_optim: %s vs the CPU (lbs_optim), %zu layers, %zu "
           "elements, %d steps, NaN gradient at step %d\n", gpu, NL, total,
           STEPS, SKIP);
    int failed = check_errors();
    for (const char *const *n = lbs_optim_names(); *n; n++) {
        struct lbs_optim_props p;
        if (lbs_optim_props(*n, &p, NULL) || !p.device)
            continue;
        for (const char *const *c = p.device->checks; *c; c++)
            failed += check_case(*c, p.device->exact);
    }
    if (!nb)
        bench();
    printf("\n%s: %d case(s) failed\n", failed ? "FAILED" : "ok", failed);
    return failed ? 1 : 0;
}
