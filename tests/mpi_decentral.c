/* mpi_decentral.c - JointSpar, DmSGD and DecentLaM on several ranks (run
 * under mpirun by run_mpi.sh; registered with 4 ranks and with 3, a rank
 * count that is not a power of two).
 *
 * Every check runs on every rank; verdicts are combined with an int32 MIN
 * allreduce and rank 0 prints one TAP line per check (failing ranks say
 * why on stderr).  Exit status 0 when every check passed everywhere.
 *
 *  - JointSpar / JointSpar-LARS: every rank plans the same layers (compared
 *    through an allgather), dropped layers' gradients are NaN (a trainer
 *    skipped them) and never read, and after every step w and the keep
 *    probabilities are bit-identical on all ranks and to a one-process
 *    optimizer fed the average gradient.  Gradients are multiples of
 *    2^-10, so their sum over ranks is exact in any order and the
 *    reference can form the average exactly as lbs_allreduce_mean_f32.
 *  - DmSGD with the full topology equals momentum SGD on the averaged
 *    gradient after one step (and stays equal, to rounding, for more: all
 *    ranks hold the same x after every step, bit for bit); DecentLaM too.
 *  - Mixing over the wire: with no gradient and lr = 0 (DmSGD) or
 *    momentum 0 (DecentLaM), a step is x <- W_t x; each rank tracks the
 *    whole state in double with the dense W_t of its own topology object
 *    and compares, for every topology, over two periods (so one-peer's
 *    time variation is covered).
 *  - Consensus distance: equals the value computed from the known initial
 *    state, goes to ~0 under repeated mixing (exactly 0 after one full
 *    DmSGD step; ~0 after one period of one-peer when the rank count is a
 *    power of two), and bytes/degree report the neighbour traffic.
 */
#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lbscale/lbscale.h"
#include "mpi_harness.h"

/* ---- a small model -------------------------------------------------------- */

#define NL 4
static const size_t shp[NL][2] = {{4, 6}, {10, 0}, {8, 5}, {3, 0}};

struct model {
    struct lbs_layer l[NL];
};

static void model_init(struct model *m)
{
    static const char *names[NL] = {"w0", "b0", "w1", "b1"};
    for (int i = 0; i < NL; i++) {
        struct lbs_layer *L = &m->l[i];
        memset(L, 0, sizeof *L);
        L->name = names[i];
        L->ndim = shp[i][1] ? 2 : 1;
        L->shape[0] = shp[i][0];
        L->shape[1] = shp[i][1];
        L->n = shp[i][0] * (shp[i][1] ? shp[i][1] : 1);
        L->w = malloc(L->n * sizeof(float));
        L->g = malloc(L->n * sizeof(float));
        for (size_t j = 0; j < L->n; j++)
            L->w[j] = (float)(((j * 37 + (size_t)i * 11) % 29) - 14) / 32.0f;
    }
}

static void model_free(struct model *m)
{
    for (int i = 0; i < NL; i++) {
        free(m->l[i].w);
        free(m->l[i].g);
    }
}

/* Rank r's gradient: a multiple of 2^-10, scaled per layer so the layer
 * norms differ (JointSpar's p then differ too). */
static float grad(int r, int t, int layer, size_t j)
{
    int v = (int)((r * 7 + t * 3 + layer * 5 + (int)j * 13) % 23) - 11;
    return (float)v * (float)(1 << layer) / 1024.0f;
}

/* The average over the comm's ranks, formed as lbs_allreduce_mean_f32 does
 * (the float sum is exact, then one multiply by 1/size). */
static float grad_avg(int t, int layer, size_t j)
{
    float s = 0;
    for (int r = 0; r < C->size; r++)
        s += grad(r, t, layer, j);
    return C->size == 1 ? s : s * (1.0f / (float)C->size);
}

static uint64_t hash_bytes(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 0x100000001b3ull;
    return h;
}

/* Is x the same on every rank?  (allgather of a 64-bit value) */
static int same_everywhere(uint64_t x, const char *what)
{
    int64_t *all = malloc((size_t)C->size * sizeof *all), mine = (int64_t)x;
    struct lbs_err e;
    C->err = &e;
    int ok = 1;
    if (lbs_allgather(C, &mine, all, 1, LBS_INT64, -1)) {
        fail("allgather: %s", e.msg);
        ok = 0;
    } else {
        for (int r = 0; r < C->size; r++)
            if (all[r] != all[0]) {
                fail("%s differs between rank 0 and rank %d", what, r);
                ok = 0;
                break;
            }
    }
    free(all);
    return ok;
}

static struct lbs_optim *make(const char *spec, struct model *m,
                              struct lbs_comm *c)
{
    struct lbs_optim *o = NULL;
    struct lbs_err e;
    int rc = lbs_optim_new(spec, m->l, NL, c, &o, &e);
    if (rc)
        fail("%s: lbs_optim_new: %s", spec, e.msg);
    return o;
}

static int step(struct lbs_optim *o, const char *spec, int t)
{
    struct lbs_err e;
    int rc = lbs_optim_step(o, &e);
    if (rc)
        fail("%s: step %d returned %d: %s", spec, t, rc, e.msg);
    return rc;
}

static double stat(const struct lbs_optim *o, const char *name)
{
    double v = NAN;
    struct lbs_err e;
    if (lbs_optim_stat(o, name, &v, &e))
        fail("stat %s: %s", name, e.msg);
    return v;
}

/* ---- JointSpar ------------------------------------------------------------ */

static void test_jointspar(const char *spec)
{
    char desc[160];
    snprintf(desc, sizeof desc, "%s: same layers, same bits on every rank "
             "and as one process fed the average", spec);
    begin();
    struct model m, r;
    model_init(&m);
    model_init(&r);
    struct lbs_optim *o = make(spec, &m, C), *ref = make(spec, &r, NULL);
    long kept_total = 0;
    for (int t = 1; t <= 20 && o && ref && local_ok; t++) {
        uint8_t keep[NL], kref[NL];
        lbs_optim_next_keep(o, keep);
        lbs_optim_next_keep(ref, kref);
        if (memcmp(keep, kref, NL))
            fail("step %d: plan differs from the one-process plan", t);
        if (!same_everywhere(hash_bytes(1, keep, NL), "keep plan"))
            break;
        for (int i = 0; i < NL; i++) {
            kept_total += keep[i];
            for (size_t j = 0; j < m.l[i].n; j++) {
                m.l[i].g[j] = keep[i] ? grad(C->rank, t, i, j) : NAN;
                r.l[i].g[j] = keep[i] ? grad_avg(t, i, j) : NAN;
            }
        }
        if (step(o, spec, t) || step(ref, spec, t))
            break;
        uint64_t h = 1;
        for (int i = 0; i < NL; i++) {
            h = hash_bytes(h, m.l[i].w, m.l[i].n * sizeof(float));
            if (memcmp(m.l[i].w, r.l[i].w, m.l[i].n * sizeof(float)))
                fail("step %d: layer %d differs from the one-process run", t,
                     i);
            char name[16];
            snprintf(name, sizeof name, "p.%d", i);
            double p = stat(o, name), pr = stat(ref, name);
            if (p != pr)
                fail("step %d: p.%d = %.17g, one process %.17g", t, i, p, pr);
            h = hash_bytes(h, &p, sizeof p);
        }
        same_everywhere(h, "w and p");
    }
    if (kept_total == 0 || kept_total == 20 * NL)
        fail("kept %ld layer-steps of %d: sampling not exercised", kept_total,
             20 * NL);
    lbs_optim_free(o);
    lbs_optim_free(ref);
    model_free(&m);
    model_free(&r);
    end(desc);
}

/* ---- DmSGD / DecentLaM, full topology = parallel momentum SGD ------------ */

static void test_full_equals_sgd(const char *spec, const char *sgd, int steps,
                                 double tol)
{
    char desc[200];
    snprintf(desc, sizeof desc, "%s, %d step%s = %s on the averaged gradient",
             spec, steps, steps > 1 ? "s" : "", sgd);
    begin();
    struct model m, r;
    model_init(&m);
    model_init(&r);
    struct lbs_optim *o = make(spec, &m, C), *ref = make(sgd, &r, NULL);
    for (int t = 1; t <= steps && o && ref && local_ok; t++) {
        for (int i = 0; i < NL; i++)
            for (size_t j = 0; j < m.l[i].n; j++) {
                m.l[i].g[j] = grad(C->rank, t, i, j);
                r.l[i].g[j] = grad_avg(t, i, j);
            }
        if (step(o, spec, t) || step(ref, sgd, t))
            break;
        uint64_t h = 1;
        double worst = 0;
        for (int i = 0; i < NL; i++) {
            h = hash_bytes(h, m.l[i].w, m.l[i].n * sizeof(float));
            for (size_t j = 0; j < m.l[i].n; j++) {
                double x = m.l[i].w[j], y = r.l[i].w[j];
                double err = fabs(x - y) / fmax(1.0, fabs(y));
                worst = fmax(worst, err);
                if (err > tol) {
                    fail("step %d layer %d[%zu]: %.9g, sgd %.9g", t, i, j, x,
                         y);
                    break;
                }
            }
        }
        same_everywhere(h, "x after a full-topology step");
        if (C->rank == 0 && t == steps)
            printf("# %s: largest relative difference %.3g\n", spec, worst);
    }
    lbs_optim_free(o);
    lbs_optim_free(ref);
    model_free(&m);
    model_free(&r);
    end(desc);
}

/* ---- mixing over the wire ------------------------------------------------- */

/* Rank r's initial value of element j of layer i: distinct per rank. */
static double x0(int r, int i, size_t j)
{
    return (double)((r * 13 + i * 7 + (int)j * 3) % 31) / 8.0 - 2.0;
}

/* mean over ranks of ||x_r - x_bar|| for a full state X[r][k]. */
static double consensus_ref(double *const *X, int n, size_t len)
{
    double s = 0;
    for (int r = 0; r < n; r++) {
        double d2 = 0;
        for (size_t k = 0; k < len; k++) {
            double mean = 0;
            for (int q = 0; q < n; q++)
                mean += X[q][k];
            mean /= n;
            d2 += (X[r][k] - mean) * (X[r][k] - mean);
        }
        s += sqrt(d2);
    }
    return s / n;
}

static void test_mixing(const char *opt, enum lbs_topo kind)
{
    char spec[128], desc[200];
    int decentlam = !strcmp(opt, "decentlam");
    snprintf(spec, sizeof spec, "%s:topology=%s,%s", opt, lbs_topo_names[kind],
             decentlam ? "lr=0.5,momentum=0" : "lr=0,momentum=0.9");
    snprintf(desc, sizeof desc, "%s: x <- W_t x over the wire, consensus "
             "distance -> 0", spec);
    begin();
    int n = C->size;
    struct lbs_topology *topo = NULL;
    struct lbs_err e;
    if (lbs_topology_new(kind, n, &topo, &e)) {
        fail("topology: %s", e.msg);
        end(desc);
        return;
    }
    struct model m;
    model_init(&m);
    size_t len = 0, off[NL];
    for (int i = 0; i < NL; i++) {
        off[i] = len;
        len += m.l[i].n;
    }
    double **X = malloc((size_t)n * sizeof *X), **Y = malloc(n * sizeof *Y);
    double *W = malloc((size_t)n * n * sizeof *W);
    for (int r = 0; r < n; r++) {
        X[r] = malloc(len * sizeof(double));
        Y[r] = malloc(len * sizeof(double));
        for (int i = 0; i < NL; i++)
            for (size_t j = 0; j < m.l[i].n; j++)
                X[r][off[i] + j] = x0(r, i, j);
    }
    for (int i = 0; i < NL; i++)
        for (size_t j = 0; j < m.l[i].n; j++) {
            m.l[i].w[j] = (float)x0(C->rank, i, j);
            m.l[i].g[j] = 0;
        }
    struct lbs_optim *o = make(spec, &m, C);
    double d0 = o ? stat(o, "consensus_distance") : NAN;
    double want0 = consensus_ref(X, n, len);
    if (!(fabs(d0 - want0) <= 1e-12 * want0))
        fail("initial consensus distance %.17g, want %.17g", d0, want0);
    int period = lbs_topology_period(topo), steps = 2 * period + 1;
    int want_deg[LBS_TOPO_COUNT] = {n == 2 ? 1 : n > 2 ? 2 : 0,
                                    0, n > 1, n - 1};
    for (int t = 1; t <= steps && o && local_ok; t++) {
        if (step(o, spec, t))
            break;
        lbs_topology_matrix(topo, t, W);
        for (int r = 0; r < n; r++)
            for (size_t k = 0; k < len; k++) {
                double s = 0;
                for (int q = 0; q < n; q++)
                    s += W[r * n + q] * X[q][k];
                Y[r][k] = s;
            }
        for (int r = 0; r < n; r++)
            memcpy(X[r], Y[r], len * sizeof(double));
        for (int i = 0; i < NL && local_ok; i++)
            for (size_t j = 0; j < m.l[i].n; j++) {
                double x = m.l[i].w[j], y = X[C->rank][off[i] + j];
                if (fabs(x - y) > 1e-5 * fmax(1, fabs(y))) {
                    fail("step %d layer %d[%zu]: %.9g, W_t x gives %.9g", t,
                         i, j, x, y);
                    break;
                }
            }
        double deg = stat(o, "degree");
        if (kind != LBS_TOPO_EXPONENTIAL && kind != LBS_TOPO_SYMEXP &&
            deg != want_deg[kind])
            fail("step %d: degree %g, want %d", t, deg, want_deg[kind]);
        if (stat(o, "bytes") != deg * (double)len * sizeof(float))
            fail("step %d: bytes %g for degree %g and %zu floats", t,
                 stat(o, "bytes"), deg, len);
        /* dmsgd: every rank sums the same numbers in the same order;
         * decentlam: x_i - lr ((x_i - mix)/lr) is mix only to rounding */
        double dfull = kind == LBS_TOPO_FULL ? stat(o, "consensus_distance")
                                             : 0;
        if (dfull > (decentlam ? 1e-6 * d0 : 0))
            fail("full topology, step %d: consensus distance %g, want %s", t,
                 dfull, decentlam ? "~0" : "0");
        if (kind == LBS_TOPO_ONEPEER && (n & (n - 1)) == 0 && t == period &&
            !(stat(o, "consensus_distance") < 1e-5 * d0))
            fail("one-peer, %d ranks: distance %g after one period (start "
                 "%g), want exact averaging", n,
                 stat(o, "consensus_distance"), d0);
    }
    /* keep mixing: consensus */
    for (int t = steps + 1; t <= 40 && o && local_ok; t++)
        step(o, spec, t);
    double d = o ? stat(o, "consensus_distance") : NAN;
    if (!(d <= 1e-5 * d0))
        fail("consensus distance %.3g after 40 steps (start %.3g)", d, d0);
    if (C->rank == 0)
        printf("# %s: consensus distance %.3g -> %.3g\n", spec, d0, d);
    lbs_optim_free(o);
    for (int r = 0; r < n; r++) {
        free(X[r]);
        free(Y[r]);
    }
    free(X);
    free(Y);
    free(W);
    lbs_topology_free(topo);
    model_free(&m);
    end(desc);
}

int main(int argc, char **argv)
{
    int rc = mpi_start(argc, argv);
    if (rc >= 0)
        return rc;

    test_jointspar("jointspar:s=0.5,pmin=0.1,eta_p=0.05,seed=7,wd=0.001");
    test_jointspar("jointspar:s=0.5,pmin=0.1,eta_p=0.05,sampler=systematic");
    test_jointspar("jointspar_lars:s=0.5,pmin=0.2,eta_p=0.1,wd=0.001,lr=2");

    test_full_equals_sgd("dmsgd:topology=full,lr=0.1,momentum=0.9,wd=0.01",
                         "sgd:lr=0.1,momentum=0.9,wd=0.01", 1,
                         2 * FLT_EPSILON);
    test_full_equals_sgd("dmsgd:topology=full,lr=0.1,momentum=0.9,wd=0.01",
                         "sgd:lr=0.1,momentum=0.9,wd=0.01", 10,
                         20 * FLT_EPSILON);
    test_full_equals_sgd("decentlam:topology=full,lr=0.1,momentum=0.9",
                         "sgd:lr=0.1,momentum=0.9", 1, 8 * FLT_EPSILON);

    for (int k = 0; k < LBS_TOPO_COUNT; k++) {
        test_mixing("dmsgd", (enum lbs_topo)k);
        test_mixing("decentlam", (enum lbs_topo)k);
    }

    return mpi_finish(0);
}
