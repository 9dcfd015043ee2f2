/* mpi_compress.c - lbs_compress_exchange on real ranks (run under mpirun
 * by run_mpi.sh, e.g. 4 ranks).
 *
 * Every rank compresses its own gradient (different data per rank, and
 * for thresh a different payload size per rank, so allgatherv really
 * gathers unequal parts).  Checks per compressor, over two steps:
 *   - the exchanged g is identical (to float rounding) on all ranks;
 *   - it equals the mean over ranks q of D(C(x_q)), which every rank
 *     recomputes locally with a fresh compressor set to rank q (QSGD's and
 *     thresh's rank-private randomness included); PowerSGD's result, a
 *     projection of the mean gradient, is no longer than that mean;
 *     fp16 and bf16 sum in their own format, rounding after each of the
 *     P - 1 additions, so there the bound is g mean_q |D(C(x_q))| with
 *     g = (P-1)u / (1-(P-1)u), u = 2^-11 or 2^-8 (lbscale/comm.h);
 *   - with ef=1 the residual satisfies D_local + e == x on each rank.
 * Verdicts are combined with an int32 MIN allreduce; rank 0 prints one
 * TAP line per compressor.  Exit 0 when all passed, 1 otherwise, 77 when
 * this build has no MPI.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lbscale/lbscale.h"
#include "mpi_harness.h"

static float *grad(size_t n, uint64_t seed)
{
    float *x = malloc(n * sizeof *x);
    uint64_t key = lbs_rng_key(lbs_mix64(seed ^ 0xda7a5eedc0ffeeull), 0, 0);
    for (size_t i = 0; i < n; i++) {
        double u1 = lbs_rng_uniform(key, 2 * i),
               u2 = lbs_rng_uniform(key, 2 * i + 1);
        x[i] = (float)(sqrt(-2 * log(1 - u1)) *
                       cos(6.283185307179586 * u2) * (1 + (i % 97) / 20.0));
    }
    return x;
}

/* mean over ranks of D(C(x_q)) at (layer, step), computed locally, and
 * the mean of |D(C(x_q))| */
static int reference(const char *spec, size_t n, int P, long step,
                     float *ref, float *absref)
{
    float *d = malloc(n * sizeof *d);
    memset(ref, 0, n * sizeof *ref);
    memset(absref, 0, n * sizeof *absref);
    for (int q = 0; q < P; q++) {
        struct lbs_compressor *c;
        struct lbs_err e;
        if (lbs_compressor_new(spec, &c, &e))
            return -1;
        lbs_compressor_set_rank(c, q);
        float *x = grad(n, 100 + (uint64_t)q * 7 + (uint64_t)step);
        void *p = malloc(lbs_compress_max_bytes(c, n));
        size_t b;
        int rc = lbs_compress(c, x, n, 1, step, p, &b, &e);
        if (!rc)
            rc = lbs_decompress(c, p, b, n, 1, step, d, &e);
        for (size_t i = 0; !rc && i < n; i++) {
            ref[i] += d[i] / (float)P;
            absref[i] += fabsf(d[i]) / (float)P;
        }
        free(p);
        free(x);
        lbs_compressor_free(c);
        if (rc)
            return rc;
    }
    free(d);
    return 0;
}

int main(int argc, char **argv)
{
    int rc = mpi_start(argc, argv);
    if (rc >= 0)
        return rc;
    struct lbs_err e;
    const char *specs[] = {"none", "fp16", "bf16", "topk:k=0.02",
                           "thresh:k=0.02",
                           "randk:k=0.05", "cyclick:k=0.1", "sign",
                           "qsgd:s=15", "powersgd:r=2", "topk:k=0.05,ef=1",
                           "sign:ef=1"};
    const size_t n = 20011;
    float *ref = malloc(n * sizeof *ref), *all = malloc(n * sizeof *all),
          *absref = malloc(n * sizeof *absref);
    if (C->rank == 0)
        printf("1..%zu\n", sizeof specs / sizeof *specs);
    for (size_t t = 0; t < sizeof specs / sizeof *specs; t++) {
        int ok = 1;
        struct lbs_compressor *c;
        if (lbs_compressor_new(specs[t], &c, &e))
            return 1;
        int psgd = !strncmp(specs[t], "powersgd", 8);
        /* the half formats' rounding of the sum (see the top) */
        double u = !strcmp(specs[t], "fp16") ? 0x1p-11
                   : !strcmp(specs[t], "bf16") ? 0x1p-8 : 0;
        double gam = (C->size - 1) * u / (1 - (C->size - 1) * u);
        for (long step = 1; step <= 2 && ok; step++) {
            float *g = grad(n, 100 + (uint64_t)C->rank * 7 + (uint64_t)step);
            float *g0 = malloc(n * sizeof *g0);
            memcpy(g0, g, n * sizeof *g);
            if (lbs_compress_exchange(c, C, g, n, 1, step, &e)) {
                fprintf(stderr, "# rank %d %s: %s\n", C->rank, specs[t],
                        e.msg);
                ok = 0;
                free(g);
                free(g0);
                break;
            }
            /* identical on all ranks: compare with rank 0's copy */
            memcpy(all, g, n * sizeof *g);
            lbs_bcast(C, all, n, LBS_FLOAT32, 0, -1);
            for (size_t i = 0; i < n && ok; i++)
                if (fabsf(all[i] - g[i]) > 1e-6f * (fabsf(g[i]) + 1e-3f)) {
                    fprintf(stderr, "# rank %d %s: g[%zu] %g vs rank 0 %g\n",
                            C->rank, specs[t], i, g[i], all[i]);
                    ok = 0;
                }
            int ef = lbs_compressor_ef(c);
            if (!psgd && (step == 1 || !ef)) {   /* residual 0 at step 1 */
                if (reference(specs[t], n, C->size, step, ref, absref))
                    ok = 0;
                for (size_t i = 0; i < n && ok; i++)
                    if (fabsf(ref[i] - g[i]) >
                        1e-5f * (fabsf(ref[i]) + 1e-2f) + gam * absref[i]) {
                        fprintf(stderr, "# rank %d %s step %ld: g[%zu] %g vs "
                                "reference %g\n", C->rank, specs[t], step, i,
                                g[i], ref[i]);
                        ok = 0;
                    }
            }
            if (psgd) {   /* P P^T (mean x): no longer than the mean */
                lbs_allreduce_mean_f32(C, g0, n, -1);
                double d = 0, s = 0;
                for (size_t i = 0; i < n; i++) {
                    ok &= isfinite(g[i]);
                    s += (double)g0[i] * g0[i];
                    d += (double)g[i] * g[i];
                }
                if (!(d <= s * 1.0001)) {
                    fprintf(stderr, "# rank %d powersgd: ||g||^2 %g > "
                            "||mean||^2 %g\n", C->rank, d, s);
                    ok = 0;
                }
            }
            free(g);
            free(g0);
        }
        lbs_compressor_free(c);
        char desc[96];
        snprintf(desc, sizeof desc, "%s on %d ranks", specs[t], C->size);
        local_ok = ok;
        end(desc);
    }
    free(ref);
    free(all);
    free(absref);
    return mpi_finish(1);
}
