/* sweep.c - scale lists and sweeps over P with scaling efficiency.
 *
 * Scaling efficiency (weak scaling, same per-GPU batch, DESIGN.md):
 *   E(P) = T(one node-equivalent) / T(P),
 * the node-equivalent being min(gpus_per_node, max_gpus) GPUs of the same
 * platform running the same plan. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lbscale/param.h"
#include "sim_internal.h"

static int parse_count(const char *s, size_t len, long *out)
{
    char buf[32];
    double v;
    if (len == 0 || len >= sizeof buf)
        return -EINVAL;
    memcpy(buf, s, len);
    buf[len] = '\0';
    if (lbs_parse_double(buf, &v) || v < 1 || v > 1e8 || v != (double)(long)v)
        return -EINVAL;
    *out = (long)v;
    return 0;
}

int lbs_sim_parse_gpus(const char *s, long **out, size_t *n,
                       struct lbs_err *err)
{
    long *v = NULL;
    size_t cnt = 0, cap = 0;
    *out = NULL;
    *n = 0;
    if (!s || !*s)
        return lbs_err_set(err, -EINVAL, "--gpus: empty list");
    for (const char *p = s; p;) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        const char *dots = NULL;
        for (size_t i = 0; i + 1 < len; i++)
            if (p[i] == '.' && p[i + 1] == '.') {
                dots = p + i;
                break;
            }
        long a, b;
        int rc;
        if (dots) {
            rc = parse_count(p, (size_t)(dots - p), &a);
            if (!rc)
                rc = parse_count(dots + 2, len - (size_t)(dots + 2 - p), &b);
            if (!rc && b < a)
                rc = -EINVAL;
        } else {
            rc = parse_count(p, len, &a);
            b = a;
        }
        if (rc) {
            free(v);
            return lbs_err_set(err, -EINVAL, "--gpus: '%.*s' is not a count "
                               "or a range A..B of counts >= 1",
                               (int)(len > 40 ? 40 : len), p);
        }
        for (long x = a; x <= b; x = x > b / 2 ? b : 2 * x) {
            if (cnt == cap) {
                cap = cap ? 2 * cap : 16;
                long *q = realloc(v, cap * sizeof *v);
                if (!q) {
                    free(v);
                    return lbs_err_set(err, -ENOMEM, "out of memory");
                }
                v = q;
            }
            v[cnt++] = x;
            if (x == b)
                break;
        }
        p = end ? end + 1 : NULL;
    }
    *out = v;
    *n = cnt;
    return 0;
}

int lbs_sim_sweep(const struct lbs_sim_platform *pl,
                  const struct lbs_sim_model *m,
                  const struct lbs_sim_plan *plan, const long *P, size_t n,
                  const struct lbs_sim_opts *o, struct lbs_sim_result *res,
                  double *eff, struct lbs_err *err)
{
    struct lbs_sim_result base;
    long b = pl->gpus_per_node < pl->max_gpus ? pl->gpus_per_node
                                              : pl->max_gpus;
    struct lbs_sim_opts q = o ? *o : (struct lbs_sim_opts){0};
    q.on_event = NULL;
    int rc = lbs_sim_run(pl, m, plan, b, &q, &base, err);
    for (size_t i = 0; i < n && !rc; i++) {
        rc = lbs_sim_run(pl, m, plan, P[i], &q, &res[i], err);
        eff[i] = rc ? 0 : base.iter / res[i].iter;
    }
    return rc;
}

void lbs_sim_set_node_gbps(struct lbs_sim_platform *pl,
                           const struct lbs_sim_platform *ref, double gbps)
{
    double nic = gbps * 1e9 / 8 / ref->nics_per_node;
    double f = nic / ref->nic_bw;
    pl->nic_bw = nic;
    pl->nccl.inter.bw = ref->nccl.inter.bw * f;
    pl->nccl.p2p_bw = ref->nccl.p2p_bw * f;
}

int lbs_sim_netsweep(const struct lbs_sim_platform *pl,
                     const struct lbs_sim_model *m,
                     const struct lbs_sim_entry *e, long P, long base_p,
                     const long *gbps, size_t n,
                     const struct lbs_sim_opts *o, struct lbs_sim_result *res,
                     double *eff, struct lbs_err *err)
{
    struct lbs_sim_platform work = *pl;
    struct lbs_sim_result base;
    int rc = lbs_sim_run(pl, m, lbs_sim_entry_plan(e, base_p), base_p, o,
                         &base, err);
    for (size_t i = 0; i < n && !rc; i++) {
        lbs_sim_set_node_gbps(&work, pl, (double)gbps[i]);
        rc = lbs_sim_run(&work, m, lbs_sim_entry_plan(e, P), P, o, &res[i],
                         err);
        if (!rc)
            eff[i] = base.iter / res[i].iter;
    }
    return rc;
}

double lbs_sim_eff_reaches(const double *gbps, const double *eff, size_t n,
                           double target)
{
    double prev_b = NAN, prev_e = NAN;
    for (size_t i = 0; i < n; i++) {
        double b = gbps[i], ef = eff[i];
        if (ef >= target)
            return isnan(prev_b) ? b : exp(log(prev_b) + (target - prev_e) /
                   (ef - prev_e) * (log(b) - log(prev_b)));
        prev_b = b;
        prev_e = ef;
    }
    return NAN;
}
