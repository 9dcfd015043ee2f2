/* mpi_cdp.c - compressed data parallelism on real ranks (run under mpirun
 * by run_mpi.sh, e.g. 4 ranks): lbs_optim_set_compressor with several
 * (optimizer, compressor) pairs, every rank with its own gradients.
 *
 * Checks, every step: a 64-bit checksum (FNV-1a over the bytes) of the
 * averaged gradient each rank applied, and of its weights, is the same on
 * all ranks (MIN == MAX allreduce), so the ranks never drift apart; the
 * applied gradient is finite and, at step 1 with more than one rank, not
 * this rank's own gradient (it really was exchanged).  thresh sends
 * payloads of different sizes per rank (allgatherv after a size exchange).
 * Rank 0 prints one TAP line per pair.  Exit 0 when all passed, 1
 * otherwise, 77 when this build has no MPI.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lbscale/lbscale.h"
#include "mpi_harness.h"

enum { NL = 3, STEPS = 4 };
static const size_t rows[NL] = {48, 1, 200}, cols[NL] = {200, 200, 150};

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 0x100000001b3ull;
    return h;
}

static void fill(float *g, size_t n, int rank, long step, int layer)
{
    uint64_t key = lbs_rng_key(lbs_mix64(0xcdb0 + (uint64_t)rank * 131 +
                                         (uint64_t)layer),
                               (uint64_t)step, 0);
    for (size_t i = 0; i < n; i++)
        g[i] = (float)(lbs_rng_uniform(key, i) - 0.5) * (1.0f + rank);
}

int main(int argc, char **argv)
{
    int rc = mpi_start(argc, argv);
    if (rc >= 0)
        return rc;
    struct lbs_err e;
    static const char *const pairs[][2] = {
        {"lamb", "topk:k=0.01,ef=1"}, {"sgd:momentum=0.9", "thresh:k=0.02,ef=1"},
        {"adamw", "sign:ef=1"},       {"lars", "qsgd:s=15,ef=1"},
        {"jointspar", "randk:k=0.1"}, {"lamb", "powersgd:r=2,ef=1"},
        {"lamb", "fp16"},             {"lamb", "none"},
        {"sgd:momentum=0.9", "bf16"},
    };
    enum { NP = sizeof pairs / sizeof *pairs };
    if (C->rank == 0)
        printf("1..%d\n", NP);
    for (int t = 0; t < NP; t++) {
        int ok = 1;
        struct lbs_layer l[NL];
        float *w[NL], *g[NL], *g0[NL];
        for (int i = 0; i < NL; i++) {
            size_t n = rows[i] * cols[i];
            w[i] = malloc(n * sizeof(float));
            g[i] = malloc(n * sizeof(float));
            g0[i] = malloc(n * sizeof(float));
            for (size_t j = 0; j < n; j++)
                w[i][j] = 0.01f * (float)((j * 37 + (size_t)i) % 101) - 0.5f;
            l[i] = (struct lbs_layer){.name = "l", .w = w[i], .g = g[i],
                                      .n = n, .ndim = rows[i] > 1 ? 2 : 1,
                                      .shape = {rows[i] > 1 ? rows[i] : n,
                                                rows[i] > 1 ? cols[i] : 0}};
        }
        struct lbs_optim *o = NULL;
        if (lbs_optim_new(pairs[t][0], l, NL, C, &o, &e) ||
            lbs_optim_set_compressor(o, pairs[t][1], &e)) {
            fprintf(stderr, "# rank %d %s + %s: %s\n", C->rank, pairs[t][0],
                    pairs[t][1], e.msg);
            ok = 0;
        }
        uint8_t keep[NL];
        for (long s = 1; s <= STEPS && ok; s++) {
            lbs_optim_next_keep(o, keep);
            for (int i = 0; i < NL; i++) {
                fill(g[i], l[i].n, C->rank, s, i);
                memcpy(g0[i], g[i], l[i].n * sizeof(float));
            }
            if (lbs_optim_step(o, &e) != 0) {
                fprintf(stderr, "# rank %d %s + %s step %ld: %s\n", C->rank,
                        pairs[t][0], pairs[t][1], s, e.msg);
                ok = 0;
                break;
            }
            uint64_t hg = 0xcbf29ce484222325ull, hw = hg;
            int same_as_own = 1;
            for (int i = 0; i < NL; i++) {
                hw = fnv(hw, w[i], l[i].n * sizeof(float));
                if (!keep[i])
                    continue;
                hg = fnv(hg, g[i], l[i].n * sizeof(float));
                for (size_t j = 0; j < l[i].n; j++)
                    ok &= isfinite(g[i][j]) && isfinite(w[i][j]);
                same_as_own &= !memcmp(g[i], g0[i], l[i].n * sizeof(float));
            }
            if (s == 1 && C->size > 1 && same_as_own) {
                fprintf(stderr, "# rank %d %s: gradient not exchanged\n",
                        C->rank, pairs[t][1]);
                ok = 0;
            }
            int64_t mn[2] = {(int64_t)(hg >> 1), (int64_t)(hw >> 1)};
            int64_t mx[2] = {mn[0], mn[1]};
            lbs_allreduce(C, mn, 2, LBS_INT64, LBS_MIN, -1);
            lbs_allreduce(C, mx, 2, LBS_INT64, LBS_MAX, -1);
            if (mn[0] != mx[0] || mn[1] != mx[1]) {
                if (C->rank == 0)
                    fprintf(stderr, "# %s + %s step %ld: ranks applied "
                            "different %s\n", pairs[t][0], pairs[t][1], s,
                            mn[0] != mx[0] ? "gradients" : "weights");
                ok = 0;
            }
            /* a rank that failed must not leave the others waiting */
            int32_t v = ok;
            lbs_allreduce(C, &v, 1, LBS_INT32, LBS_MIN, -1);
            ok = v;
        }
        char desc[160];
        snprintf(desc, sizeof desc, "%s + %s on %d ranks, %d steps, same "
                 "applied gradient on every rank", pairs[t][0], pairs[t][1],
                 C->size, STEPS);
        local_ok = ok;
        end(desc);
        lbs_optim_free(o);
        for (int i = 0; i < NL; i++) {
            free(w[i]);
            free(g[i]);
            free(g0[i]);
        }
    }
    return mpi_finish(1);
}
