/* test_isa.c - every kernel level the CPU has against the portable one,
 * checkasm-style (core/kern/kern.h).
 *
 * Elementwise outputs (m, v, u, w, packed bits, levels, gathered values,
 * scan hits) must be bit-identical: every level is compiled with
 * -ffp-contract=off, and IEEE add/mul/div/sqrt are correctly rounded at any
 * width.  Sums change order with the vector width: a float sum of at most
 * B positive terms is within gamma_B = B u / (1 - B u) (u = 2^-24) of the
 * exact one, so two orders differ by at most 2 gamma_B relative: 1.25e-4
 * for the norms' blocks of B = 1024 (LBS_NORM_BLOCK) and 5e-4 for the sign
 * compressor's partials of B = 4096.  Lengths are odd and the arrays start
 * off any vector alignment, so heads and tails run too.  The ASan/UBSan CI
 * build runs this file like the others.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gossip.h"
#include "kfam.h"
#include "lamb_kernel.h"
#include "lbscale/lbscale.h"
#include "lbscale/rng.h"
#include "optim_impl.h"
#include "slamb_kern.h"

#define N 10007
#define OFF 3

static uint64_t rs = 88172645463325252ull;
static float frand(void)
{
    rs ^= rs << 13;
    rs ^= rs >> 7;
    rs ^= rs << 17;
    return (float)((double)(rs >> 11) * 0x1.0p-53 * 2 - 1);
}

static float *arr(size_t n, float scale, int positive)
{
    float *p = malloc((n + OFF) * sizeof *p);
    for (size_t i = 0; i < n + OFF; i++) {
        float f = frand() * scale;
        p[i] = positive ? fabsf(f) : f;
    }
    return p;
}
static float *dup(const float *a, size_t n)
{
    float *p = malloc((n + OFF) * sizeof *p);
    memcpy(p, a, (n + OFF) * sizeof *p);
    return p;
}

static void same_f(const float *a, const float *b, size_t n, const char *what,
                   const char *isa)
{
    for (size_t i = 0; i < n; i++)
        cr_assert(!memcmp(&a[i], &b[i], 4), "%s %s[%zu]: %.9g vs c %.9g",
                  isa, what, i, a[i], b[i]);
}
static void close_d(double a, double b, double rel, const char *what,
                    const char *isa)
{
    cr_assert(fabs(a - b) <= rel * fabs(b), "%s %s: %.17g vs c %.17g "
              "(rel %.3g > %.3g)", isa, what, a, b, fabs(a - b) / fabs(b),
              rel);
}

#define BOUND_NORM 1.25e-4

/* SLAMB's, DecentLaM's and 1-bit LAMB's family tables at K's level */
#define SL(K) ((const struct lbs_slamb_kern *)lbs_slamb_kfam.tab[(K)->isa])
#define DL(K) \
    ((const struct lbs_decentlam_kern *)lbs_decentlam_kfam.tab[(K)->isa])
#define OB(K) ((const struct lbs_onebit_kern *)lbs_onebit_kfam.tab[(K)->isa])

/* every level other than c that the CPU has */
static int levels(const struct lbs_kern *out[LBS_ISA_COUNT])
{
    int k = 0;
    for (int i = 1; i < LBS_ISA_COUNT; i++)
        if (lbs_kern_of((enum lbs_isa)i))
            out[k++] = lbs_kern_of((enum lbs_isa)i);
    return k;
}

Test(isa, portable_level_always_there)
{
    cr_assert(lbs_kern_of(LBS_ISA_C) == &lbs_kern_c);
    cr_assert_str_eq(lbs_kern_c.name, "c");
    struct lbs_err e = {{0}};
    cr_assert_eq(lbs_isa_select("avx1024", &e), -EINVAL);
    cr_assert(strstr(e.msg, "avx1024"), "%s", e.msg);
    cr_assert_eq(lbs_isa_select("c", &e), 0);
    cr_assert_str_eq(lbs_isa_name(), "c");
    cr_assert_eq(lbs_isa_select(lbs_isa_best(), &e), 0);
    cr_assert_str_eq(lbs_isa_name(), lbs_isa_best());
}

Test(isa, sumsq_and_axpy)
{
    const struct lbs_kern *L[LBS_ISA_COUNT];
    int nl = levels(L);
    float *x = arr(N, 3, 0), *u = arr(N, 1, 0);
    double ref = lbs_kern_c.sumsq(x + OFF, N);
    float *w0 = arr(N, 1, 0), *w1 = dup(w0, N);
    lbs_kern_c.axpy(w0 + OFF, u + OFF, 0.37f, N);
    for (int l = 0; l < nl; l++) {
        close_d(L[l]->sumsq(x + OFF, N), ref, BOUND_NORM, "sumsq",
                L[l]->name);
        float *w = dup(w1, N);
        L[l]->axpy(w + OFF, u + OFF, 0.37f, N);
        same_f(w + OFF, w0 + OFF, N, "axpy w", L[l]->name);
        free(w);
    }
    free(x); free(u); free(w0); free(w1);
}

/* The chunked forms (one call per thread): the same chunk partials as a
 * call per chunk at the c level, within the bound at the others. */
Test(isa, chunked_reductions)
{
    const struct lbs_slamb_coef ks = {
        .b1 = 0.9f, .b2 = 0.999f, .c1 = 0.1f, .c2 = 0.001f, .ibc1 = 3.1f,
        .ibc2 = 7.7f, .eps = 1e-6f, .wd = 0.01f};
    float *g = arr(N, 2, 0), *m = arr(N, 0.1f, 0), *v = arr(N, 0.01f, 1),
          *w = arr(N, 1, 0);
    uint32_t *q = malloc(N * sizeof *q);   /* staleness counters */
    for (size_t i = 0; i < N; i++)
        q[i] = (uint32_t)(i % 10);
    double ref[LBS_CHUNKS], refs[LBS_CHUNKS][4];
    float *us0 = arr(N, 1, 0);
    for (size_t c = 0; c < LBS_CHUNKS; c++) {
        size_t lo = lbs_chunk_lo(N, c), hi = lbs_chunk_lo(N, c + 1);
        ref[c] = lbs_kern_c.sumsq(w + lo, hi - lo);
        memset(refs[c], 0, sizeof refs[c]);
        SL(&lbs_kern_c)->slamb_split(&ks, m + lo, v + lo, w + lo, q + lo, us0 + lo,
                               hi - lo, refs[c]);
    }
    for (int lv = 0; lv < LBS_ISA_COUNT; lv++) {
        const struct lbs_kern *K = lbs_kern_of((enum lbs_isa)lv);
        if (!K)
            continue;
        double ps[LBS_CHUNKS][4], sq[LBS_CHUNKS];
        float *us = arr(N, 1, 0);
        /* two calls, as two threads would make them */
        for (int half = 0; half < 2; half++) {
            size_t c0 = half ? LBS_CHUNKS / 2 : 0,
                   c1 = half ? LBS_CHUNKS : LBS_CHUNKS / 2;
            SL(K)->slamb_split_chunks(&ks, m, v, w, q, us, N, c0, c1, ps);
            K->sumsq_chunks(w, N, c0, c1, sq);
        }
        same_f(us, us0, N, "slamb_split_chunks u", K->name);
        double bound = lv ? BOUND_NORM : 0;
        for (size_t c = 0; c < LBS_CHUNKS; c++) {
            close_d(sq[c], ref[c], bound + 1e-300, "sumsq_chunks", K->name);
            for (int j = 0; j < 4; j++)
                cr_assert(fabs(ps[c][j] - refs[c][j]) <=
                              (bound + 1e-15) * fabs(refs[c][j]),
                          "%s slamb_split_chunks chunk %zu part %d",
                          K->name, c, j);
        }
        free(us);
    }
    free(g); free(m); free(v); free(w); free(q); free(us0);
}

/* compact_eq / expand_eq against the scalar rule they state, with no,
 * some and every element selected, on odd lengths off alignment. */
Test(isa, compact_expand)
{
    float *x = arr(N, 1, 0);
    uint8_t *q = malloc(N + OFF);
    float *ref = malloc((N + OFF) * 4), *out = malloc((N + OFF) * 4);
    const uint8_t pats[][2] = {{10, 3}, {10, 200}, {1, 0}, {3, 2}};
    for (size_t p = 0; p < sizeof pats / sizeof pats[0]; p++) {
        const uint8_t C = pats[p][0], qc = pats[p][1];
        for (size_t i = 0; i < N + OFF; i++)
            q[i] = (uint8_t)((i * 7 + i / 13) % C);
        size_t nref = 0;
        for (size_t i = OFF; i < N + OFF; i++)
            if (q[i] == qc)
                ref[nref++] = x[i];
        for (int lv = 0; lv < LBS_ISA_COUNT; lv++) {
            const struct lbs_kern *K = lbs_kern_of((enum lbs_isa)lv);
            if (!K)
                continue;
            memset(out, 0xff, (N + OFF) * 4);
            size_t n = SL(K)->compact_eq(x + OFF, q + OFF, qc, out, N);
            cr_assert_eq(n, nref, "%s compact_eq count %zu, want %zu",
                         K->name, n, nref);
            same_f(out, ref, n, "compact_eq", K->name);
            uint32_t tail;
            memcpy(&tail, &out[n], 4);
            cr_assert_eq(tail, 0xffffffffu, "%s compact_eq wrote past %zu",
                         K->name, n);
            /* expand puts ref[j] * 0.5 back where q == qc, nothing else */
            float *y = dup(x, N);
            size_t e = SL(K)->expand_eq(y + OFF, q + OFF, qc, ref, 0.5f, N);
            cr_assert_eq(e, nref, "%s expand_eq count", K->name);
            size_t j = 0;
            for (size_t i = OFF; i < N + OFF; i++) {
                float want = q[i] == qc ? ref[j++] * 0.5f : x[i];
                cr_assert(!memcmp(&y[i], &want, 4), "%s expand_eq [%zu]",
                          K->name, i);
            }
            free(y);
        }
    }
    free(x); free(q); free(ref); free(out);
}

/* The scalar rules of SLAMB's chunk-id passes, from the c level's
 * elementwise kernels: x[i] = in[o++] where q[i] == qc; out = x where
 * q == qc; u of every element (slamb_split, all synced); sums of w^2 and
 * u^2 split by q == qc into p[0..1] (synced) and p[2..3]. */
static void q_expand(float *x, const uint8_t *q, unsigned qc, const float *in,
                     size_t n)
{
    for (size_t i = 0, o = 0; i < n; i++)
        if (q[i] == qc)
            x[i] = in[o++];
}
static size_t q_compact(const float *x, const uint8_t *q, unsigned qc,
                        float *out, size_t n)
{
    size_t o = 0;
    for (size_t i = 0; i < n; i++)
        if (q[i] == qc)
            out[o++] = x[i];
    return o;
}
static void q_sums(const struct lbs_slamb_coef *k, const float *m,
                   const float *v, const float *w, const uint8_t *q,
                   unsigned qc, float *u, double p[4], size_t n)
{
    double d[4];
    SL(&lbs_kern_c)->slamb_split(k, m, v, w, NULL, u, n, d);
    for (size_t i = 0; i < n; i++) {
        int j = q[i] == qc ? 0 : 2;
        p[j] += (double)w[i] * w[i];
        p[j + 1] += (double)u[i] * u[i];
    }
}

/* SLAMB's chunk-id passes (two calls each, as two threads make them)
 * against those rules: pass 1 puts last step's averages (chunk prev)
 * into m, takes the moments, u and the stale sums, and compacts the
 * synced m, v, w; the fix-up averages the compact m (kept), makes u_S
 * and the synced sums; the update takes u_S where q == cur. */
static void chunk_ids_case(size_t n)
{
    const struct lbs_slamb_coef k = {
        .b1 = 0.9f, .b2 = 0.999f, .c1 = 0.1f, .c2 = 0.001f, .ibc1 = 3.1f,
        .ibc2 = 7.7f, .eps = 1e-6f, .wd = 0.01f};
    const unsigned C = 7, cur = 4, prev = 3;
    const float inv = 0.25f;
    float *g = arr(n, 2, 0), *m0 = arr(n, 0.1f, 0), *v0 = arr(n, 0.01f, 1),
          *w0 = arr(n, 1, 0), *pm0 = arr(n, 0.3f, 0);
    uint8_t *q = malloc(n);
    uint32_t off[LBS_CHUNKS + 1] = {0}, poff[LBS_CHUNKS + 1] = {0};
    for (size_t c = 0; c < LBS_CHUNKS; c++) {
        off[c + 1] = off[c];
        poff[c + 1] = poff[c];
        for (size_t i = lbs_chunk_lo(n, c); i < lbs_chunk_lo(n, c + 1); i++) {
            q[i] = (uint8_t)((i * 5 + i / 17) % C);
            off[c + 1] += q[i] == cur;
            poff[c + 1] += q[i] == prev;
        }
    }
    float tab[256] = {0};
    for (unsigned j = 0; j < C; j++)
        tab[j] = 0.001f * (float)(j + 1);
    for (int with_pm = 0; with_pm < 2; with_pm++) {
        /* the reference */
        float *mr = dup(m0, n), *vr = dup(v0, n), *ur = arr(n, 1, 0),
              *wr = dup(w0, n), *sm = malloc(n * 4), *sv = malloc(n * 4),
              *sw = malloc(n * 4), *su = malloc(n * 4);
        if (with_pm)
            q_expand(mr + OFF, q, prev, pm0, n);
        SL(&lbs_kern_c)->slamb_moments(&k, g + OFF, mr + OFF, vr + OFF, NULL, n);
        double pr[4] = {0}, ps[4] = {0};
        q_sums(&k, mr + OFF, vr + OFF, w0 + OFF, q, cur, ur + OFF, pr, n);
        size_t cnt = q_compact(mr + OFF, q, cur, sm, n);
        q_compact(vr + OFF, q, cur, sv, n);
        q_compact(w0 + OFF, q, cur, sw, n);
        cr_assert_eq(cnt, off[LBS_CHUNKS]);
        float *m1 = dup(mr, n);   /* m after pass 1 */
        for (size_t j = 0; j < cnt; j++)
            sm[j] = sm[j] * 2 * inv;   /* "allreduce": x 2 */
        q_expand(mr + OFF, q, cur, sm, n);
        float *ua = arr(n, 1, 0);
        q_sums(&k, mr + OFF, vr + OFF, w0 + OFF, q, cur, ua + OFF, ps, n);
        q_compact(ua + OFF, q, cur, su, n);
        q_expand(ur + OFF, q, cur, su, n);
        for (size_t i = 0; i < n; i++)
            wr[OFF + i] -= tab[q[i]] * ur[OFF + i];
        for (int lv = 0; lv < LBS_ISA_COUNT; lv++) {
            const struct lbs_kern *K = lbs_kern_of((enum lbs_isa)lv);
            if (!K)
                continue;
            float *m = dup(m0, n), *v = dup(v0, n), *w = dup(w0, n),
                  *u = malloc(n * 4), *pm = malloc(n * 4),
                  *cm = malloc(n * 4), *cv = malloc(n * 4),
                  *cw = malloc(n * 4);
            const struct lbs_slamb_qbuf B = {
                .q = q, .cur = cur, .prev = prev, .off = off, .poff = poff,
                .cm = cm, .cv = cv, .cw = cw, .pm = with_pm ? pm0 : NULL};
            double part[LBS_CHUNKS][4], p[4] = {0};
            /* the second half first: a write past the first's share
             * would stay */
            for (int h = 1; h >= 0; h--)
                SL(K)->slamb_q1_chunks(&k, g + OFF, m + OFF, v + OFF, w + OFF, u,
                                   &B, n, h * LBS_CHUNKS / 2,
                                   (h + 1) * LBS_CHUNKS / 2, part);
            same_f(m + OFF, m1 + OFF, n, "slamb_q1_chunks m", K->name);
            same_f(v + OFF, vr + OFF, n, "slamb_q1_chunks v", K->name);
            same_f(cv, sv, cnt, "slamb_q1_chunks cv", K->name);
            same_f(cw, sw, cnt, "slamb_q1_chunks cw", K->name);
            for (size_t j = 0; j < cnt; j++)
                cm[j] *= 2;
            for (int h = 0; h < 2; h++)
                SL(K)->slamb_qfix_chunks(&k, &B, inv, pm, h * LBS_CHUNKS / 2,
                                     (h + 1) * LBS_CHUNKS / 2, part);
            same_f(pm, sm, cnt, "slamb_qfix_chunks pm", K->name);
            same_f(cv, su, cnt, "slamb_qfix_chunks u_S", K->name);
            for (size_t c = 0; c < LBS_CHUNKS; c++)
                for (int j = 0; j < 4; j++)
                    p[j] += part[c][j];
            for (int j = 0; j < 4; j++)
                close_d(p[j], j < 2 ? ps[j] : pr[j], BOUND_NORM,
                        "slamb chunk-id norm", K->name);
            for (int h = 0; h < 2; h++)
                SL(K)->slamb_qupd_chunks(tab, C, &B, u, w + OFF, n,
                                     h * LBS_CHUNKS / 2,
                                     (h + 1) * LBS_CHUNKS / 2);
            same_f(w + OFF, wr + OFF, n, "slamb_qupd_chunks w", K->name);
            free(m); free(v); free(w); free(u); free(pm);
            free(cm); free(cv); free(cw);
        }
        free(mr); free(vr); free(ur); free(wr); free(m1); free(ua);
        free(sm); free(sv); free(sw); free(su);
    }
    /* over 32 chunks the AVX-512 table lookup is not a permute (nothing
     * synced: u from u alone) */
    for (size_t i = 0; i < n; i++)
        q[i] = (uint8_t)(i * 11 % 40);
    for (int j = 0; j < 40; j++)
        tab[j] = 0.002f * (float)(j + 1);
    const struct lbs_slamb_qbuf B40 = {.q = q, .cur = 255, .off = off,
                                       .cv = g};
    float *w40 = dup(w0, n);
    for (size_t i = 0; i < n; i++)
        w40[OFF + i] -= tab[q[i]] * g[OFF + i];
    for (int lv = 0; lv < LBS_ISA_COUNT; lv++) {
        const struct lbs_kern *K = lbs_kern_of((enum lbs_isa)lv);
        if (!K)
            continue;
        float *w = dup(w0, n);
        SL(K)->slamb_qupd_chunks(tab, 40, &B40, g + OFF, w + OFF, n, 0,
                             LBS_CHUNKS);
        same_f(w + OFF, w40 + OFF, n, "slamb_qupd_chunks (40 chunks) w",
               K->name);
        free(w);
    }
    free(w40);
    free(g); free(m0); free(v0); free(w0); free(pm0); free(q);
}

/* N: 39 elements per parallel chunk; then 2500, so each chunk's pass 1
 * is three calls (LBS_NORM_BLOCK blocks) and its compact share fills
 * many whole vectors (the AVX-512 form stores whole aligned ones) */
Test(isa, slamb_chunk_ids)
{
    chunk_ids_case(N);
    chunk_ids_case((size_t)LBS_CHUNKS * 2500 + 37);
}

Test(isa, compressor_kernels)
{
    const struct lbs_kern *L[LBS_ISA_COUNT];
    int nl = levels(L);
    float *x = arr(N, 1, 0);
    x[OFF + 100] = -0.0f;
    x[OFF + 101] = 0.0f;
    /* gather / scatter over a sorted mask, scan over a threshold */
    uint32_t idx[N / 3];
    for (size_t j = 0; j < N / 3; j++)
        idx[j] = (uint32_t)(3 * j + j % 3);
    float gc[N / 3], *oc = arr(N, 1, 0), *o1 = dup(oc, N);
    lbs_kern_c.gather(gc, x + OFF, idx, N / 3);
    lbs_kern_c.scatter_add(oc + OFF, idx, gc, 0.25f, N / 3);
    uint32_t t = 0x3f600000u;   /* |x| >= 0.875 */
    uint32_t gic[N];
    float gvc[N];
    size_t hc = lbs_kern_c.scan_ge(x + OFF, 5, N, t, gic, gvc, N);
    size_t hsmall = lbs_kern_c.scan_ge(x + OFF, 5, N, t, gic, gvc, 10);
    cr_assert_eq(hc, hsmall);
    cr_assert(hc > 100 && hc < N / 4, "%zu hits", hc);
    for (int l = 0; l < nl; l++) {
        const char *nm = L[l]->name;
        float gv[N / 3], *o = dup(o1, N);
        L[l]->gather(gv, x + OFF, idx, N / 3);
        same_f(gv, gc, N / 3, "gather", nm);
        L[l]->scatter_add(o + OFF, idx, gv, 0.25f, N / 3);
        same_f(o + OFF, oc + OFF, N, "scatter_add", nm);
        uint32_t gi[N];
        float gvv[N];
        size_t h = L[l]->scan_ge(x + OFF, 5, N, t, gi, gvv, N);
        cr_assert_eq(h, hc, "%s scan hits", nm);
        cr_assert(!memcmp(gi, gic, h * 4), "%s scan indices", nm);
        same_f(gvv, gvc, h, "scan values", nm);
        /* a room that ends inside a vector group, and a small one: the
         * count is every hit, the stores the first `room` of them */
        for (size_t room = 10; room < hc; room = room == 10 ? hc - 3 : hc) {
            uint32_t gr[N];
            float gvr[N];
            cr_assert_eq(L[l]->scan_ge(x + OFF, 5, N, t, gr, gvr, room), hc);
            cr_assert(!memcmp(gr, gic, room * 4), "%s scan indices, room "
                      "%zu", nm, room);
            same_f(gvr, gvc, room, "scan values (room)", nm);
        }
        free(o);
    }
    free(x); free(oc); free(o1);
}

/* Whole optimizer steps at each level through the public API: the same
 * trajectory up to the norms' rounding (the trust ratio carries it into w). */
/* Five steps of one optimizer at every level: within 1e-5 of the c
 * level's weights, and bit for bit where its ops table says the CPU step
 * is exact (ops->exact). */
static void steps_agree(const char *spec, int exact)
{
    const size_t n = 70007;   /* above LBS_PAR_MIN: threads too */
    struct lbs_err e = {{0}};
    float *wr = NULL;
    for (int lv = 0; lv < LBS_ISA_COUNT; lv++) {
        if (!lbs_kern_of((enum lbs_isa)lv))
            continue;
        const char *names[] = {"c", "avx2", "avx512"};
        cr_assert_eq(lbs_isa_select(names[lv], &e), 0, "%s", e.msg);
        rs = 1234567;
        float *w = arr(n, 1, 0), *g = malloc(n * 4);
        struct lbs_layer lay = {.name = "w", .w = w + OFF, .g = g,
                                .n = n, .ndim = 2, .shape = {7, 10001}};
        struct lbs_optim *o;
        cr_assert_eq(lbs_optim_new(spec, &lay, 1, NULL, &o, &e), 0, "%s",
                     e.msg);
        for (int t = 0; t < 5; t++) {
            for (size_t i = 0; i < n; i++)
                g[i] = frand();
            cr_assert_eq(lbs_optim_step(o, &e), 0, "%s", e.msg);
        }
        lbs_optim_free(o);
        if (!wr) {
            wr = w;
        } else {
            if (exact)
                same_f(w + OFF, wr + OFF, n, spec, names[lv]);
            for (size_t i = 0; i < n; i++)
                cr_assert(fabsf(w[OFF + i] - wr[OFF + i]) <=
                              1e-5f * fmaxf(1e-3f, fabsf(wr[OFF + i])),
                          "%s at %s: w[%zu] %.9g vs c %.9g", spec,
                          names[lv], i, w[OFF + i], wr[OFF + i]);
            free(w);
        }
        free(g);
    }
    free(wr);
    cr_assert_eq(lbs_isa_select(lbs_isa_best(), &e), 0);
}

extern const struct lbs_optim_ops *const lbs_optim_registry[];

/* Every registered optimizer with its defaults, then the settings whose
 * branches the defaults skip (SLAMB's partial sync and mask, 1-bit
 * LAMB's compressed phase), each held to its optimizer's exact flag. */
Test(isa, optimizer_steps_agree)
{
    for (size_t i = 0; lbs_optim_registry[i]; i++)
        steps_agree(lbs_optim_registry[i]->name,
                    lbs_optim_registry[i]->exact);
    const char *more[] = {"slamb:k=0.25,small=0",
                          "slamb:k=0.25,mask=bernoulli",
                          "onebit_lamb:freeze_step=2"};
    for (size_t s = 0; s < sizeof more / sizeof *more; s++) {
        const struct lbs_optim_ops *ops = NULL;
        for (size_t i = 0; lbs_optim_registry[i]; i++)
            if (!strncmp(more[s], lbs_optim_registry[i]->name,
                         strcspn(more[s], ":")))
                ops = lbs_optim_registry[i];
        cr_assert(ops, "%s: no such optimizer", more[s]);
        steps_agree(more[s], ops->exact);
    }
}

/* ---- the kernel families (core/kern/kfam.h), checkasm's loop ---- */

/* The shared kernels, then every family a registered optimizer or
 * compressor brings, at every level the CPU has, against the portable level's outputs: no list here,
 * a new family is covered by its ops table's .kern.  LBSCALE_KBENCH=N
 * also times each kernel N times per level (ns per element on stdout). */
Test(isa, families)
{
    const struct lbs_kfam *f[64] = {&lbs_kern_kfam};   /* the shared ones */
    size_t nf = lbs_optim_kfams(f, 1, 64);
    nf = lbs_compress_kfams(f, nf, 64);
    cr_assert(nf >= 4 && nf < 64, "%zu families", nf);
    const char *b = getenv("LBSCALE_KBENCH");
    int bench = b ? atoi(b) : 0;
    struct lbs_kcheck *r = lbs_kcheck_new();
    char msg[256];
    for (size_t i = 0; i < nf; i++) {
        cr_assert(f[i]->tab[LBS_ISA_C] && f[i]->check, "%s", f[i]->name);
        for (int lv = 0; lv < LBS_ISA_COUNT; lv++)
            if (lbs_kern_of((enum lbs_isa)lv))
                cr_assert_eq(lbs_kcheck_run(r, f[i], (enum lbs_isa)lv, 0,
                                            msg, sizeof msg), 0, "%s", msg);
        for (int lv = 0; bench > 0 && lv < LBS_ISA_COUNT; lv++)
            if (lbs_kern_of((enum lbs_isa)lv))
                lbs_kcheck_run(r, f[i], (enum lbs_isa)lv, bench, NULL, 0);
    }
    lbs_kcheck_free(r);
}

/* The runner can fail: a table whose kernel differs from the reference
 * in one output bit, or makes a sum outside its bound, or an output the
 * reference did not, is caught. */
static int flip;
static void fake_check(const void *t, struct lbs_kcheck *r)
{
    float x[5] = {1, 2, 3, 4, 5};
    if (t != lbs_momentum_kfam.tab[LBS_ISA_C] && flip == 1)
        x[3] = nextafterf(x[3], 9);
    lbs_kcheck_bits(r, "x", x, sizeof x);
    double s = 1000;
    if (t != lbs_momentum_kfam.tab[LBS_ISA_C] && flip == 2)
        s *= 1 + 2 * LBS_KBOUND_NORM;
    lbs_kcheck_sum(r, "s", s, LBS_KBOUND_NORM);
    if (t != lbs_momentum_kfam.tab[LBS_ISA_C] && flip == 3)
        lbs_kcheck_sum(r, "extra", s, 0);
}
Test(isa, families_runner_catches_a_difference)
{
    struct lbs_kfam fake = lbs_momentum_kfam;
    fake.check = fake_check;
    fake.tab[LBS_ISA_AVX2] = &fake;   /* any pointer but the reference */
    struct lbs_kcheck *r = lbs_kcheck_new();
    char msg[256];
    for (flip = 0; flip < 4; flip++) {
        cr_assert_eq(lbs_kcheck_run(r, &fake, LBS_ISA_C, 0, msg, sizeof msg),
                     0);
        int bad = lbs_kcheck_run(r, &fake, LBS_ISA_AVX2, 0, msg, sizeof msg);
        cr_assert_eq(bad != 0, flip != 0, "flip %d: %d, %s", flip, bad, msg);
    }
    lbs_kcheck_free(r);
}

/* ---- decentralized optimizers: the gossip mix and DecentLaM ---- */

/* sum_k w[k] src[k][e] from 0 in ascending k, in double: the loops
 * dmsgd.c and decentlam.c ran before the kernels (gossip.h) */
static double ref_mix(const float *const *src, const double *w, int ns,
                      size_t e)
{
    double s = 0;
    for (int k = 0; k < ns; k++)
        s += w[k] * (double)src[k][e];
    return s;
}

/* Every level, c included, against the scalar loops, bit for bit; the
 * layer is cut at an odd point (two calls, as two chunks). */
Test(isa, gossip_mix_and_decentlam)
{
    const struct lbs_kern *K[LBS_ISA_COUNT];
    int nk = 0;
    for (int i = 0; i < LBS_ISA_COUNT; i++)
        if (lbs_kern_of((enum lbs_isa)i))
            K[nk++] = lbs_kern_of((enum lbs_isa)i);
    const size_t cut = 4099;
    const double w3[3] = {1.0 / 3, 0.3, 1 - 1.0 / 3 - 0.3};
    const struct lbs_decentlam_coef k = {.inv = 1.0 / 0.05, .wself = 0.7,
                                         .lr = 0.05f, .wd = 1e-4f,
                                         .mu = 0.9f};
    float *r0 = arr(N, 1, 0), *r1 = arr(N, 1, 0), *x0 = arr(N, 1, 0),
          *g = arr(N, 2, 0), *m0 = arr(N, 0.1f, 0);
    x0[OFF + 7] = -0.0f;
    /* references: mix in place of x (x is the middle source), z, the
     * update from the sources {r0, z, r1}, and alone (z, mix ws z) */
    float *xm = dup(x0, N), *z = arr(N, 1, 0), *xu = dup(x0, N),
          *mu_ = dup(m0, N), *xs = dup(x0, N), *ms = dup(m0, N);
    const float *srcx[3] = {r0 + OFF, x0 + OFF, r1 + OFF};
    for (size_t e = 0; e < N; e++)
        xm[OFF + e] = (float)ref_mix(srcx, w3, 3, e);
    for (size_t e = 0; e < N; e++)
        z[OFF + e] = x0[OFF + e] - k.lr * (g[OFF + e] + k.wd * x0[OFF + e]);
    const float *srcz[3] = {r0 + OFF, z + OFF, r1 + OFF};
    for (size_t e = 0; e < N; e++) {
        float gt = (float)((xu[OFF + e] - ref_mix(srcz, w3, 3, e)) * k.inv);
        float mi = k.mu * mu_[OFF + e] + gt;
        mu_[OFF + e] = mi;
        xu[OFF + e] -= k.lr * mi;
    }
    const float *srcs[1] = {z + OFF};
    for (size_t e = 0; e < N; e++) {
        float gt = (float)((xs[OFF + e] - ref_mix(srcs, &k.wself, 1, e)) *
                           k.inv);
        float mi = k.mu * ms[OFF + e] + gt;
        ms[OFF + e] = mi;
        xs[OFF + e] -= k.lr * mi;
    }
    for (int l = 0; l < nk; l++) {
        const char *nm = K[l]->name;
        float *x = dup(x0, N);
        const float *src[3] = {r0 + OFF, x + OFF, r1 + OFF};
        double s = K[l]->gossip_mix(src, w3, 3, x + OFF, 0, cut) +
                   K[l]->gossip_mix(src, w3, 3, x + OFF, cut, N);
        same_f(x + OFF, xm + OFF, N, "gossip_mix (in place)", nm);
        cr_assert(isfinite(s));
        float *zz = arr(N, 1, 0);
        DL(K[l])->decentlam_z(&k, g + OFF, x0 + OFF, zz + OFF, cut);
        DL(K[l])->decentlam_z(&k, g + OFF + cut, x0 + OFF + cut,
                          zz + OFF + cut, N - cut);
        same_f(zz + OFF, z + OFF, N, "decentlam z", nm);
        float *m = dup(m0, N);
        memcpy(x, x0, (N + OFF) * 4);
        const float *sz[3] = {r0 + OFF, zz + OFF, r1 + OFF};
        s = DL(K[l])->decentlam_update(&k, sz, w3, 3, NULL, m + OFF, x + OFF, 0,
                                   cut) +
            DL(K[l])->decentlam_update(&k, sz, w3, 3, NULL, m + OFF, x + OFF,
                                   cut, N);
        same_f(m + OFF, mu_ + OFF, N, "decentlam m", nm);
        same_f(x + OFF, xu + OFF, N, "decentlam x", nm);
        cr_assert(isfinite(s));
        /* alone: the fused pass equals z, then the one-source update */
        memcpy(m, m0, (N + OFF) * 4);
        memcpy(x, x0, (N + OFF) * 4);
        s = DL(K[l])->decentlam_update(&k, NULL, NULL, 0, g + OFF, m + OFF,
                                   x + OFF, 0, cut);
        s += DL(K[l])->decentlam_update(&k, NULL, NULL, 0, g + OFF, m + OFF,
                                    x + OFF, cut, N);
        same_f(m + OFF, ms + OFF, N, "decentlam alone m", nm);
        same_f(x + OFF, xs + OFF, N, "decentlam alone x", nm);
        /* its detector: 0 while every m is finite, else not finite; a
         * huge but finite m (whose float sum would overflow) is finite */
        cr_assert_eq(s, 0.0, "%s: alone detector %g", nm, s);
        m[OFF + 5] = m[OFF + 6] = 3e38f;
        cr_assert(isfinite(DL(K[l])->decentlam_update(&k, NULL, NULL, 0, g + OFF,
                                                  m + OFF, x + OFF, 0, 16)),
                  "%s: large m read as non-finite", nm);
        m[OFF + N - 2] = INFINITY;
        cr_assert(!isfinite(DL(K[l])->decentlam_update(&k, NULL, NULL, 0,
                                                   g + OFF, m + OFF, x + OFF,
                                                   cut, N)),
                  "%s: an infinite m passed", nm);
        free(x); free(zz); free(m);
    }
    free(r0); free(r1); free(x0); free(g); free(m0); free(xm); free(z);
    free(xu); free(mu_); free(xs); free(ms);
}

/* ---- 1-bit LAMB's compressed phase ---- */

static const struct lbs_kern *all_levels(const struct lbs_kern **K, int *nk)
{
    *nk = 0;
    for (int i = 0; i < LBS_ISA_COUNT; i++)
        if (lbs_kern_of((enum lbs_isa)i))
            K[(*nk)++] = lbs_kern_of((enum lbs_isa)i);
    return K[0];
}

/* Packing: bit 1 for x >= 0, so -0 packs as 1 and a NaN as 0. */
Test(isa, onebit_pack_signs)
{
    const struct lbs_kern *K[LBS_ISA_COUNT];
    int nk;
    all_levels(K, &nk);
    float x[40];
    for (int j = 0; j < 40; j++)
        x[j] = (j % 3 ? 1.0f : -1.0f) * (float)(j + 1);
    x[1] = -0.0f, x[2] = 0.0f, x[4] = NAN, x[17] = -NAN, x[33] = -INFINITY;
    uint8_t ref[5] = {0};
    for (int j = 0; j < 40; j++)
        ref[j / 8] |= (uint8_t)((x[j] >= 0.0f) << (j % 8));
    for (int l = 0; l < nk; l++) {
        uint8_t b[5];
        memset(b, 0xaa, 5);
        OB(K[l])->onebit_pack(x, b, 0, 3);   /* 16 at a time, and one left */
        OB(K[l])->onebit_pack(x, b, 3, 5);
        cr_assert(!memcmp(b, ref, 5), "%s onebit_pack", K[l]->name);
    }
}

/* The worker's error feedback (the fill, the last step's deferred
 * subtraction and the packing fused), the server's (its sum likewise),
 * and the decode, at every level against onebit_lamb.c's former scalar
 * loops.  Each call packs only the bytes wholly inside its range; the
 * byte across two calls is left to onebit_pack, as pack_at does. */
Test(isa, onebit_compressor_kernels)
{
    const struct lbs_kern *K[LBS_ISA_COUNT];
    int nk;
    all_levels(K, &nk);
    const size_t n8 = N / 8 * 8;   /* the fused buffer: a multiple of 8 */
    const struct lbs_onebit_coef k = {
        .k = {.b1 = 0.9f, .c1 = 0.1f}, .sc = 1.7f};
    float *g = arr(N, 2, 0), *m = arr(N, 0.1f, 0), *e0 = arr(N, 0.05f, 0);
    float *xe = arr(N, 1, 0);
    e0[OFF + 8] = -0.0f;
    e0[OFF + 9] = 0.0f;
    uint8_t *bits = calloc(n8 / 8, 1);
    const float a = 0.037f;   /* the last step's worker scale */
    double sref = 0;
    for (size_t j = 0; j < n8; j++) {
        float x = (k.k.b1 * m[OFF + j] + k.k.c1 * g[OFF + j]) * k.sc;
        float e = e0[OFF + j];
        xe[OFF + j] = x + (e - (e >= 0.0f ? a : -a));
        sref += (double)xe[OFF + j] * xe[OFF + j];
        bits[j / 8] |= (uint8_t)((xe[OFF + j] >= 0.0f) << (j % 8));
    }
    /* the server: P = 3 workers' bits of a chunk of cb bytes, added to
     * its error es0 less its deferred b; wsc[1] = 0 sums a -0 */
    const size_t P = 3, cb = n8 / 8 / P, ch = 8 * cb;
    const float wsc[3] = {0.5f, 0.0f, 2.25f}, invP = 1.0f / 3, b = 0.41f;
    float *es0 = arr(ch, 0.3f, 0), *yref = malloc(ch * 4),
          *dref = malloc(n8 * 4);
    uint8_t *cref = calloc(cb, 1);
    double yss[2] = {0, 0};
    for (size_t j = 0; j < ch; j++) {
        float acc = 0;
        for (size_t q = 0; q < P; q++)
            acc += (bits[q * cb + j / 8] >> (j % 8) & 1u) ? wsc[q] * invP
                                                          : -(wsc[q] * invP);
        yref[j] = acc + (es0[j] - (es0[j] >= 0.0f ? b : -b));
        yss[j >= 333] += (double)yref[j] * yref[j];
        cref[j / 8] |= (uint8_t)((yref[j] >= 0.0f) << (j % 8));
    }
    for (size_t j = 0; j < n8; j++)
        dref[j] = (bits[j / 8] >> (j % 8) & 1u) ? 0.75f : -0.75f;
    /* three calls, the first boundary off a byte boundary; blocks of
     * LBS_NORM_BLOCK then cross bytes inside the second */
    const size_t cut[4] = {0, 3001, 6000, n8};
    for (int l = 0; l < nk; l++) {
        const char *nm = K[l]->name;
        float *ex = dup(e0, N);
        uint8_t *bb = malloc(n8 / 8);
        memset(bb, 0x5a, n8 / 8);
        double s = 0;
        for (int r = 0; r < 3; r++)
            s += OB(K[l])->onebit_fill_feed(&k, g + OFF + cut[r],
                                        m + OFF + cut[r], ex + OFF + cut[r],
                                        a, bb, cut[r], cut[r + 1] - cut[r]);
        cr_assert_eq(bb[3001 / 8], 0x5a, "%s: a byte across two calls "
                     "packed by one", nm);
        OB(K[l])->onebit_pack(ex + OFF, bb, 3001 / 8, 3001 / 8 + 1);
        same_f(ex + OFF, xe + OFF, n8, "onebit x + e", nm);
        close_d(s, sref, BOUND_NORM, "onebit ||x + e||^2", nm);
        cr_assert(!memcmp(bb, bits, n8 / 8), "%s onebit packed bits", nm);
        float *y = dup(es0, ch), *d = malloc((n8 + 1) * 4);
        uint8_t *cbb = malloc(cb);
        memset(cbb, 0x5a, cb);
        /* an odd split: single bits, words and single bits again */
        double y0 = OB(K[l])->onebit_server(bits, cb, P, wsc, invP, y, b, cbb,
                                        0, 333);
        double y1 = OB(K[l])->onebit_server(bits, cb, P, wsc, invP, y, b, cbb,
                                        333, ch);
        cr_assert_eq(cbb[333 / 8], 0x5a, "%s: a server byte across two "
                     "calls packed by one", nm);
        OB(K[l])->onebit_pack(y, cbb, 333 / 8, 333 / 8 + 1);
        same_f(y, yref, ch, "onebit server sum + e", nm);
        close_d(y0, yss[0], BOUND_NORM, "onebit server ||.||^2", nm);
        close_d(y1, yss[1], BOUND_NORM, "onebit server ||.||^2", nm);
        cr_assert(!memcmp(cbb, cref, cb), "%s onebit server bits", nm);
        /* odd start and end, as a thread's range across a rank chunk */
        OB(K[l])->onebit_unpack(bits, 0, 0.75f, d + 1, 13);
        OB(K[l])->onebit_unpack(bits, 13, 0.75f, d + 1 + 13, n8 - 13 - 5);
        OB(K[l])->onebit_unpack(bits, n8 - 5, 0.75f, d + 1 + n8 - 5, 5);
        same_f(d + 1, dref, n8, "onebit decode", nm);
        free(ex); free(bb); free(y); free(d); free(cbb);
    }
    free(g); free(m); free(e0); free(xe); free(bits);
    free(es0); free(yref); free(dref); free(cref);
}

/* The update pass: from the buffer, one rank's form from g (the fill in
 * registers) and the decoding form - the same bits, against fresh_range's
 * former loop. */
Test(isa, onebit_update_pass)
{
    const struct lbs_kern *K[LBS_ISA_COUNT];
    int nk;
    all_levels(K, &nk);
    const struct lbs_onebit_coef k = {
        .k = {.b1 = 0.9f, .b2 = 0.999f, .c1 = 0.1f, .c2 = 0.001f,
              .ibc1 = 1.5f, .ibc2 = 3.3f, .eps = 1e-6f, .wd = 0.01f},
        .ibc2r = 2.1f, .sc = 0.8f};
    float *g = arr(N, 2, 0), *m0 = arr(N, 0.1f, 0), *v = arr(N, 0.01f, 1),
          *vf0 = arr(N, 0.01f, 1), *w = arr(N, 1, 0), *x = arr(N, 1, 0);
    for (size_t j = 0; j < N + OFF; j++)
        x[j] = (k.k.b1 * m0[j] + k.k.c1 * g[j]) * k.sc;
    float *mr = dup(m0, N), *vfr = dup(vf0, N), *ur = arr(N, 1, 0);
    double pr[LBS_CHUNKS][2];
    float fr[LBS_CHUNKS];
    const float ic1 = 1.0f / k.k.c1;
    for (size_t c = 0; c < LBS_CHUNKS; c++) {
        size_t lo = lbs_chunk_lo(N, c), hi = lbs_chunk_lo(N, c + 1);
        pr[c][0] = pr[c][1] = 0;
        fr[c] = 0;
        for (size_t i = OFF + lo; i < OFF + hi; i++) {
            float mn = x[i] / k.sc;
            float gr = (mn - k.k.b1 * mr[i]) * ic1;
            float f = k.k.b2 * vfr[i] + k.k.c2 * gr * gr;
            vfr[i] = f;
            mr[i] = mn;
            float d = sqrtf(v[i] * k.k.ibc2) + k.k.eps;
            float q = d / (sqrtf(f * k.ibc2r) + k.k.eps);
            fr[c] = q > fr[c] ? q : fr[c];
            float p = (mn * k.k.ibc1) / d;
            ur[i] = p + k.k.wd * w[i];
            pr[c][0] += (double)p * p;
            pr[c][1] += (double)ur[i] * ur[i];
        }
    }
    for (int l = 0; l < nk; l++)
        for (int fused = 0; fused < 2; fused++) {
            const char *nm = K[l]->name;
            float *m = dup(m0, N), *vf = dup(vf0, N), *u = arr(N, 1, 0);
            double part[LBS_CHUNKS][2];
            float fm[LBS_CHUNKS];
            for (int half = 0; half < 2; half++) {
                size_t c0 = half ? 101 : 0, c1 = half ? LBS_CHUNKS : 101;
                OB(K[l])->onebit_fresh_chunks(&k, fused ? NULL : x + OFF,
                                          fused ? g + OFF : NULL, m + OFF,
                                          v + OFF, vf + OFF, w + OFF,
                                          u + OFF, N, c0, c1, part, fm);
            }
            same_f(m + OFF, mr + OFF, N, fused ? "onebit m (g)" : "onebit m",
                   nm);
            same_f(vf + OFF, vfr + OFF, N, "onebit v_fresh", nm);
            same_f(u + OFF, ur + OFF, N, "onebit u", nm);
            for (size_t c = 0; c < LBS_CHUNKS; c++) {
                cr_assert(!memcmp(&fm[c], &fr[c], 4), "%s fmax chunk %zu",
                          nm, c);
                close_d(part[c][0], pr[c][0], BOUND_NORM, "onebit ||p||^2",
                        nm);
                close_d(part[c][1], pr[c][1], BOUND_NORM, "onebit ||u||^2",
                        nm);
            }
            free(m); free(vf); free(u);
        }
    /* P > 1: the update pass decodes the server's signs itself; the same
     * bits as the x form over the decoded buffer (rank chunks of 3001
     * elements, the layer at the odd offset 5: boundaries inside blocks) */
    struct lbs_onebit_coef kd = k;
    const size_t off = 5, tot = off + N + 8;
    uint8_t *bits = malloc(tot / 8 + 1);
    float ssc[8], *xd = malloc(N * 4);
    for (size_t b = 0; b < tot / 8 + 1; b++)
        bits[b] = (uint8_t)(frand() * 256);
    for (int r = 0; r < 8; r++)
        ssc[r] = 0.01f * (float)(r + 1);
    kd.bits = bits;
    kd.ssc = ssc;
    kd.chunk = 3001;
    kd.off = off;
    for (size_t i = 0; i < N; i++) {
        size_t j = off + i;
        xd[i] = (bits[j / 8] >> (j % 8) & 1u) ? ssc[j / 3001]
                                               : -ssc[j / 3001];
    }
    for (int l = 0; l < nk; l++) {
        float *ma = dup(m0, N), *va = dup(vf0, N), *ua = arr(N, 1, 0);
        float *mb = dup(m0, N), *vb = dup(vf0, N), *ub = arr(N, 1, 0);
        double pa[LBS_CHUNKS][2], pb[LBS_CHUNKS][2];
        float fa[LBS_CHUNKS], fb[LBS_CHUNKS];
        OB(K[l])->onebit_fresh_chunks(&k, xd, NULL, ma, v, va, w, ua, N, 0,
                                  LBS_CHUNKS, pa, fa);
        OB(K[l])->onebit_fresh_chunks(&kd, NULL, NULL, mb, v, vb, w, ub, N, 0,
                                  77, pb, fb);
        OB(K[l])->onebit_fresh_chunks(&kd, NULL, NULL, mb, v, vb, w, ub, N, 77,
                                  LBS_CHUNKS, pb, fb);
        same_f(mb, ma, N, "onebit m (decoded)", K[l]->name);
        same_f(vb, va, N, "onebit v_fresh (decoded)", K[l]->name);
        same_f(ub, ua, N, "onebit u (decoded)", K[l]->name);
        cr_assert(!memcmp(pa, pb, sizeof pa) && !memcmp(fa, fb, sizeof fa),
                  "%s onebit decoded sums", K[l]->name);
        free(ma); free(va); free(ua); free(mb); free(vb); free(ub);
    }
    free(bits); free(xd);
    free(g); free(m0); free(v); free(vf0); free(w); free(x); free(mr);
    free(vfr); free(ur);
}

/* The one-region passes over all layers (kernels.c) against the per-layer
 * calls they replace, bit for bit, at 1, 2 and 3 threads: layers below and
 * above LBS_PAR_MIN, a layer not kept (gsq 0, g never read: NaN there),
 * a layer without g, and the first non-finite layer named. */
#define NLAY 6
static const size_t lay_n[NLAY] = {100, 70001, 3, LBS_PAR_MIN, 200003, 1};

static void lay_make(struct lbs_layer *L, float **v)
{
    for (int i = 0; i < NLAY; i++) {
        L[i] = (struct lbs_layer){.n = lay_n[i], .w = arr(lay_n[i], 1, 0),
                                  .g = arr(lay_n[i], 2, 0)};
        v[i] = arr(lay_n[i], 0.5f, 0);
    }
}
static void lay_free(struct lbs_layer *L, float **v)
{
    for (int i = 0; i < NLAY; i++) {
        free(L[i].w); free(L[i].g); free(v[i]);
    }
}

Test(isa, sumsq_layers_one_region)
{
    struct lbs_layer L[NLAY];
    float *v[NLAY];
    lay_make(L, v);
    const uint8_t keep[NLAY] = {1, 1, 1, 1, 0, 1};
    L[4].g[7] = NAN;   /* not kept: must not be read into any result */
    double part[NLAY * LBS_CHUNKS], out[NLAY];
    for (int th = 1; th <= 3; th++) {
        omp_set_num_threads(th);
        lbs_sumsq_layers(L, NLAY, keep, part, out);
        for (int i = 0; i < NLAY; i++) {
            double ref = keep[i] ? lbs_sumsq(L[i].g, L[i].n) : 0;
            cr_assert(!memcmp(&out[i], &ref, sizeof ref), "%d threads, "
                      "layer %d: %.17g vs %.17g", th, i, out[i], ref);
        }
    }
    lay_free(L, v);
}

Test(isa, momentum_layers_one_region)
{
    for (int nest = 0; nest < 2; nest++)
        for (int th = 1; th <= 3; th++) {
            struct lbs_layer A[NLAY], B[NLAY];
            float *va[NLAY], *vb[NLAY];
            rs = 88172645463325252ull;
            lay_make(A, va);
            rs = 88172645463325252ull;
            lay_make(B, vb);
            free(A[2].g); free(B[2].g);
            A[2].g = B[2].g = NULL;   /* momentum only (JointSpar's form) */
            const struct lbs_momentum p = {.gs = 0.5f, .wd = 0.01f,
                .mu = 0.9f, .a = 1, .k = 0.1f, .nesterov = nest};
            omp_set_num_threads(th);
            cr_assert_eq(lbs_momentum_layers(&p, A, va, NLAY), NLAY);
            for (int i = 0; i < NLAY; i++)
                lbs_momentum_pass(&p, B[i].g, vb[i], B[i].w, B[i].n);
            for (int i = 0; i < NLAY; i++) {
                same_f(va[i], vb[i], lay_n[i], "momentum_layers v", "omp");
                same_f(A[i].w, B[i].w, lay_n[i], "momentum_layers w", "omp");
            }
            va[4][lay_n[4] - 1] = INFINITY;   /* last chunk of layer 4 */
            va[1][5] = NAN;
            cr_assert_eq(lbs_momentum_layers(&p, A, va, NLAY), 1,
                         "first non-finite layer, %d threads", th);
            va[1][5] = A[1].w[5] = 0;   /* the NaN went into w too */
            cr_assert_eq(lbs_momentum_layers(&p, A, va, NLAY), 4);
            lay_free(A, va);
            lay_free(B, vb);
        }
}

/* sgd, dmsgd and decentlam (one rank) step all layers in one region:
 * their w after 3 steps equals the per-layer kernel calls of the c level
 * (lbs_kern_c.momentum / decentlam_update, chunk by chunk), bit for bit,
 * at 1, 2 and 3 threads. */
Test(isa, one_region_steps_match_per_layer_kernels)
{
    const char *specs[] = {"sgd:lr=0.1,momentum=0.9,wd=0.01",
                           "dmsgd:lr=0.1,momentum=0.9,wd=0.01",
                           "decentlam:lr=0.1,momentum=0.9,wd=0.01"};
    struct lbs_err e = {{0}};
    const struct lbs_momentum_kern *mom_c =
        lbs_momentum_kfam.tab[LBS_ISA_C];
    const struct lbs_decentlam_kern *dl_c =
        lbs_decentlam_kfam.tab[LBS_ISA_C];
    for (int s = 0; s < 3; s++)
        for (int th = 1; th <= 3; th++) {
            struct lbs_layer A[NLAY], B[NLAY];
            float *va[NLAY], *mb[NLAY];
            rs = 99;
            lay_make(A, va);
            rs = 99;
            lay_make(B, mb);
            for (int i = 0; i < NLAY; i++) {
                A[i].name = B[i].name = "l";
                A[i].ndim = B[i].ndim = 1;
                A[i].shape[0] = B[i].shape[0] = (int64_t)lay_n[i];
                memset(mb[i], 0, lay_n[i] * sizeof(float));
            }
            struct lbs_optim *o;
            omp_set_num_threads(th);
            cr_assert_eq(lbs_optim_new(specs[s], A, NLAY, NULL, &o, &e), 0,
                         "%s", e.msg);
            const struct lbs_momentum p = {.gs = 1, .wd = 0.01f, .mu = 0.9f,
                                           .a = 1, .k = 0.1f};
            const struct lbs_decentlam_coef k = {.inv = 1.0 / 0.1,
                .wself = 1, .lr = 0.1f, .wd = 0.01f, .mu = 0.9f};
            const double ws = 1;
            for (int t = 0; t < 3; t++) {
                cr_assert_eq(lbs_optim_step(o, &e), 0, "%s", e.msg);
                for (int i = 0; i < NLAY; i++)
                    for (size_t c = 0; c < LBS_CHUNKS; c++) {
                        size_t n = lay_n[i], lo = lbs_chunk_lo(n, c),
                               hi = lbs_chunk_lo(n, c + 1);
                        if (s < 2)
                            mom_c->momentum(&p, B[i].g + lo, mb[i] + lo,
                                            B[i].w + lo, hi - lo);
                        else
                            dl_c->decentlam_update(&k, NULL, &ws, 1,
                                B[i].g, mb[i], B[i].w, lo, hi);
                    }
            }
            for (int i = 0; i < NLAY; i++)
                same_f(A[i].w, B[i].w, lay_n[i], specs[s], "one region");
            lbs_optim_free(o);
            lay_free(A, va);
            lay_free(B, mb);
        }
}

/* filter_ge (top-k's output pass): the pairs (vi[j], v[j]) with magnitude
 * bits >= t, in order, against a plain loop and at every level; v holds
 * ties and a NaN, vi is not the identity, thresholds include 0 (all), the
 * largest magnitude, one above it and 2^31 (none), and the stores stop at
 * a room that ends inside a vector group. */
Test(isa, filter_ge)
{
    float *v = arr(N, 1, 0);
    uint32_t *vi = malloc((N + OFF) * sizeof *vi);
    for (size_t j = 0; j < N + OFF; j++) {
        vi[j] = (uint32_t)(j * 7919u + 11u);
        if (j % 5 == 0)
            v[j] = (j & 2) ? -0.5f : 0.5f;   /* ties at |x| = 0.5 */
    }
    uint32_t nanb = 0x7fc00000u;
    memcpy(&v[OFF + 77], &nanb, 4);
    const uint32_t ts[] = {0, 0x3f000000u /* 0.5 */, 0x3f000001u,
                           0x3f600000u, 0x7fc00000u, 0x7fc00001u,
                           0x80000000u};
    const struct lbs_kern *L[LBS_ISA_COUNT + 1];
    int nl = levels(L + 1) + 1;
    L[0] = &lbs_kern_c;
    uint32_t *ri = malloc(N * sizeof *ri), *oi = malloc(N * sizeof *oi);
    float *rv = malloc(N * sizeof *rv), *ov = malloc(N * sizeof *ov);
    for (size_t k = 0; k < sizeof ts / sizeof *ts; k++) {
        size_t lo = 5, hi = N + OFF - 2, want = 0;
        for (size_t j = lo; j < hi; j++) {
            uint32_t a;
            memcpy(&a, &v[j], 4);
            if ((a & 0x7fffffffu) >= ts[k]) {
                ri[want] = vi[j];
                rv[want++] = v[j];
            }
        }
        for (int l = 0; l < nl; l++) {
            const char *nm = L[l]->name;
            size_t h = L[l]->filter_ge(v, vi, lo, hi, ts[k], oi, ov, N);
            cr_assert_eq(h, want, "%s filter t=%#x: %zu hits, want %zu", nm,
                         ts[k], h, want);
            cr_assert(!memcmp(oi, ri, h * 4), "%s filter indices", nm);
            same_f(ov, rv, h, "filter values", nm);
            size_t room = want > 20 ? want - 13 : want / 2;
            memset(oi, 0xee, N * sizeof *oi);
            h = L[l]->filter_ge(v, vi, lo, hi, ts[k], oi, ov, room);
            cr_assert_eq(h, want, "%s filter count, room %zu", nm, room);
            cr_assert(!memcmp(oi, ri, room * 4), "%s filter room", nm);
            cr_assert(room == want || oi[room] == 0xeeeeeeeeu,
                      "%s filter stored past its room", nm);
        }
    }
    free(v); free(vi); free(ri); free(oi); free(rv); free(ov);
}

/* The Bernoulli mask sweep at every level against lbs_rng_hit element by
 * element, over ranges that start and end inside a 64-element group and
 * thresholds whose top byte is 0 (every hit a tie), 2, 7 (about two hits
 * per group: the unconditional-write path), 76, 128 with no fine part
 * (ties never hit), nothing and everything. */
Test(isa, mask_hits)
{
    const uint64_t key = lbs_rng_key(5, 3, 1);
    const size_t M = 200003;
    const uint64_t thrs[] = {lbs_rng_thr61(0.001), lbs_rng_thr61(0.01),
                             lbs_rng_thr61(0.03), lbs_rng_thr61(0.3),
                             lbs_rng_thr61(0.5),
                             lbs_rng_thr61(0.0), lbs_rng_thr61(1.0)};
    const size_t ranges[][2] = {{0, M}, {5, M - 2}, {63, 65},
                                {130, 140}};
    const struct lbs_kern *L[LBS_ISA_COUNT + 1];
    int nl = levels(L + 1) + 1;
    L[0] = &lbs_kern_c;
    uint32_t *ref = malloc(M * 4), *got = malloc(M * 4);
    for (size_t t = 0; t < sizeof thrs / sizeof *thrs; t++)
        for (size_t r = 0; r < sizeof ranges / sizeof *ranges; r++) {
            size_t lo = ranges[r][0], hi = ranges[r][1], want = 0;
            for (size_t i = lo; i < hi; i++)
                if (lbs_rng_hit(key, i, thrs[t]))
                    ref[want++] = (uint32_t)i;
            for (int l = 0; l < nl; l++) {
                size_t h = L[l]->mask_hits(key, thrs[t], lo, hi, got);
                cr_assert_eq(h, want, "%s mask thr %#llx [%zu, %zu): %zu "
                             "hits, want %zu", L[l]->name,
                             (unsigned long long)thrs[t], lo, hi, h, want);
                cr_assert(!memcmp(got, ref, h * 4), "%s mask indices",
                          L[l]->name);
            }
        }
    free(ref);
    free(got);
}

/* The chunked optimizers step the same at any thread count, bit for bit
 * (each chunk's sums are its own, whichever thread runs it): LAMB,
 * SLAMB on chunk ids (2-D layers above its `small`, cyclic k = 0.1) and
 * 1-bit LAMB past its warm-up, 4 steps at 1, 2, 3 and 5 threads. */
Test(isa, chunked_steps_any_thread_count)
{
    const char *specs[] = {"lamb:lr=0.01,wd=0.01", "slamb:lr=0.01,k=0.1",
                           "onebit_lamb:lr=0.01,freeze_step=2"};
    struct lbs_err e = {{0}};
    for (int s = 0; s < 3; s++) {
        float *ref[NLAY] = {0};
        const int ths[] = {1, 2, 3, 5};
        for (int a = 0; a < 4; a++) {
            struct lbs_layer L[NLAY];
            float *v[NLAY];
            rs = 77;
            lay_make(L, v);
            for (int i = 0; i < NLAY; i++) {
                L[i].name = "l";
                L[i].ndim = 2;
                L[i].shape[0] = 1;
                L[i].shape[1] = (int64_t)lay_n[i];
            }
            struct lbs_optim *o;
            omp_set_num_threads(ths[a]);
            cr_assert_eq(lbs_optim_new(specs[s], L, NLAY, NULL, &o, &e), 0,
                         "%s: %s", specs[s], e.msg);
            for (int t = 0; t < 4; t++)
                cr_assert_eq(lbs_optim_step(o, &e), 0, "%s", e.msg);
            for (int i = 0; i < NLAY; i++) {
                if (!a)
                    ref[i] = dup(L[i].w, lay_n[i]);
                else
                    same_f(L[i].w, ref[i], lay_n[i], specs[s], "threads");
            }
            lbs_optim_free(o);
            lay_free(L, v);
        }
        for (int i = 0; i < NLAY; i++)
            free(ref[i]);
    }
}
