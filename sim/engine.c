/* engine.c - one training step as events, per distinct step of a plan.
 *
 * Timeline of a step on every GPU (data parallel, identical ranks):
 *   forward:   layers 0..L-1, F = sum fwd_l;
 *   backward:  layers L-1..0; layer l's gradient is ready at
 *              R_l = F + sum_{j >= l} bwd_j   (JointSpar traces: a layer
 *              with no call in the step skips its weight gradient, so its
 *              backward is bwd_l (1 - wgrad_frac));
 *   comm:      one stream, collectives in launch order, each starting at
 *              max(its launch time, the end of the previous one);
 *   optimizer: params x bytes/elem / device memory bandwidth, after all
 *              communication.
 *   iteration = end of the optimizer; compute = F + backward;
 *   exposed communication = iteration - compute - optimizer.
 *
 * Which calls overlap the backward pass.  The step's calls are read as
 * passes over the layers: the first pass (until a call on layer -1, or a
 * layer seen earlier in the pass comes back after another layer) holds
 * what depends only on each layer's gradient (gradients, SLAMB's masked
 * momentum, JointSpar's kept layers): such a call is ready at R_l.  The
 * rest (layer -1 calls such as the finite-check flag, 1-bit LAMB's fused
 * compressed buffers, SLAMB's periodic parameter averaging) runs after
 * the backward pass and the overlapped communication, in recorded order.
 *
 * Buckets (PyTorch DDP): first-pass allreduces are taken in backward
 * order (layer L-1 first) and fused into a bucket until it holds at least
 * bucket_bytes (25 MiB default); a full bucket launches when its last
 * layer's gradient is ready, the remainder when layer 0's is.  Other
 * collectives launch alone when ready.  After the backward pass,
 * consecutive allreduces are fused the same way (tensor fusion).
 *
 * Cost: O(layers + calls) per distinct step (a counting sort by layer,
 * no heap, no per-event allocation).
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lbscale_sim.h"

struct stream {
    const struct lbs_sim_net *net;
    const struct lbs_sim_plan *plan;
    long step;
    double free_at, busy, wire, nops;
    const struct lbs_sim_opts *o;
    int emit, bad;
    enum lbs_sim_coll bad_coll;
    double bad_bytes;
};

#define NOCOST {0, LBS_SIM_NALGO, LBS_SIM_SIMPLE, 0}

static void launch(struct stream *s, enum lbs_sim_coll coll, double bytes,
                   double ready, int l0, int l1, int calls, int post)
{
    struct lbs_sim_cost c = lbs_sim_coll_cost(s->net, coll, bytes,
                                              s->plan->topo, s->step);
    if (!isfinite(c.t)) {
        s->bad = 1;
        s->bad_coll = coll;
        s->bad_bytes = bytes;
        c.t = 0;
    }
    double start = ready > s->free_at ? ready : s->free_at;
    s->free_at = start + c.t;
    s->busy += c.t;
    s->wire += c.wire;
    s->nops += 1;
    if (s->emit) {
        struct lbs_sim_event e = {LBS_SIM_EV_COMM, l0, l1, calls, post, ready,
                                  start, s->free_at, bytes, c, coll};
        s->o->on_event(s->o->ctx, &e);
    }
}

struct work {
    double *bwd, *ready;
    long *stamp;
    size_t *cnt, *order;
    unsigned char *post;
    struct lbs_sim_call *at;    /* a step's calls at P (bytes rule) */
};

static void work_free(struct work *w)
{
    free(w->bwd);
    free(w->ready);
    free(w->stamp);
    free(w->cnt);
    free(w->order);
    free(w->post);
    free(w->at);
}

int lbs_sim_run(const struct lbs_sim_platform *pl,
                const struct lbs_sim_model *m,
                const struct lbs_sim_plan *plan, long P,
                const struct lbs_sim_opts *o, struct lbs_sim_result *r,
                struct lbs_err *err)
{
    struct lbs_sim_net net;
    struct work w = {0};
    memset(r, 0, sizeof *r);
    int rc = lbs_sim_net_init(&net, pl, P, err);
    if (rc)
        return rc;
    if (plan->nlayers != m->nlayers)
        return lbs_err_set(err, -EINVAL, "plan %s: %zu layers, model %s has "
                           "%zu (bind the plan to the model first)",
                           plan->optim, plan->nlayers, m->name, m->nlayers);
    double cap = o && o->bucket_bytes > 0 ? o->bucket_bytes : m->bucket_bytes;
    if (cap > 4 * m->params)
        return lbs_err_set(err, -EINVAL, "bucket of %.4g MiB is larger than "
                           "model %s (%.4g MiB of fp32 gradients)",
                           cap / 1048576.0, m->name,
                           4 * m->params / 1048576.0);
    double bpe = o ? o->optim_bytes_per_elem : 0;
    if (!(bpe >= 0) || !isfinite(bpe))
        return lbs_err_set(err, -EINVAL, "optimizer bytes per element must "
                           "be >= 0");
    size_t L = m->nlayers, maxcalls = 0;
    for (size_t i = 0; i < plan->nsteps; i++)
        if (plan->step[i].ncalls > maxcalls)
            maxcalls = plan->step[i].ncalls;
    if (!(w.bwd = malloc(L * sizeof *w.bwd)) ||
        !(w.ready = malloc(L * sizeof *w.ready)) ||
        !(w.stamp = calloc(L, sizeof *w.stamp)) ||
        !(w.cnt = calloc(L + 1, sizeof *w.cnt)) ||
        !(w.order = malloc((maxcalls + 1) * sizeof *w.order)) ||
        !(w.post = malloc(maxcalls + 1)) ||
        !(w.at = malloc((maxcalls + 1) * sizeof *w.at))) {
        work_free(&w);
        return lbs_err_set(err, -ENOMEM, "out of memory");
    }
    double F = 0;
    for (size_t i = 0; i < L; i++)
        F += lbs_sim_layer_fwd(m, pl, i);
    double opt = m->params * bpe / pl->mem_bw;
    double W = 0, FW = 0;
    r->P = P;
    r->final_from = plan->final_from;
    long stampv = 0;

    for (size_t si = 0; si < plan->nsteps; si++) {
        const struct lbs_sim_step *st = &plan->step[si];
        const struct lbs_sim_call *c = lbs_sim_step_calls(plan, st, P, w.at);
        size_t n = st->ncalls;
        int emit = o && o->on_event && si == 0;

        /* classify: first pass overlaps the backward pass */
        stampv++;
        int in_post = 0, prev = -2;
        for (size_t j = 0; j < n; j++) {
            int l = c[j].layer;
            if (!in_post && (l < 0 || (w.stamp[l] == stampv && prev != l)))
                in_post = 1;
            if (l >= 0)
                w.stamp[l] = stampv;
            w.post[j] = (unsigned char)in_post;
            prev = l;
        }
        /* backward times (JointSpar: dropped layers skip the wgrad) */
        double B = 0;
        for (size_t i = L; i-- > 0;) {
            double b = lbs_sim_layer_bwd(m, pl, i);
            if (plan->skip_wgrad && w.stamp[i] != stampv)
                b *= 1 - m->wgrad_frac;
            B += b;
            w.ready[i] = F + B;
            if (emit) {
                struct lbs_sim_event e = {LBS_SIM_EV_BWD, (int)i, (int)i, 0,
                                          0, w.ready[i] - b, w.ready[i] - b,
                                          w.ready[i], 0, NOCOST, 0};
                o->on_event(o->ctx, &e);
            }
        }
        if (emit) {
            struct lbs_sim_event e = {LBS_SIM_EV_FWD, 0, (int)L - 1, 0, 0, 0,
                                      0, F, 0, NOCOST, 0};
            o->on_event(o->ctx, &e);
        }
        /* counting sort of first-pass calls by layer, descending */
        memset(w.cnt, 0, (L + 1) * sizeof *w.cnt);
        size_t nfirst = 0;
        for (size_t j = 0; j < n; j++)
            if (!w.post[j]) {
                w.cnt[L - 1 - (size_t)c[j].layer]++;
                nfirst++;
            }
        for (size_t i = 0, acc = 0; i <= L; i++) {
            size_t k = w.cnt[i];
            w.cnt[i] = acc;
            acc += k;
        }
        for (size_t j = 0; j < n; j++)
            if (!w.post[j])
                w.order[w.cnt[L - 1 - (size_t)c[j].layer]++] = j;

        struct stream s = {&net, plan, st->first, 0, 0, 0, 0, o, emit, 0,
                           0, 0};
        double acc = 0, bready = 0;
        int bl0 = -1, bl1 = -1, bn = 0;
        for (size_t k = 0; k < nfirst; k++) {
            const struct lbs_sim_call *x = &c[w.order[k]];
            double ready = w.ready[x->layer];
            if (x->coll != LBS_SIM_ALLREDUCE) {
                launch(&s, x->coll, x->bytes, ready, x->layer, x->layer, 1, 0);
                continue;
            }
            if (!bn)
                bl0 = x->layer;
            acc += x->bytes;
            bl1 = x->layer;
            bready = ready;
            bn++;
            if (acc >= cap) {
                launch(&s, LBS_SIM_ALLREDUCE, acc, bready, bl0, bl1, bn, 0);
                acc = 0;
                bn = 0;
            }
        }
        if (bn)
            launch(&s, LBS_SIM_ALLREDUCE, acc, bready, bl0, bl1, bn, 0);

        /* after the backward pass: recorded order, allreduces fused */
        double t0 = F + B > s.free_at ? F + B : s.free_at;
        acc = 0;
        bn = 0;
        for (size_t j = 0; j < n; j++) {
            if (!w.post[j])
                continue;
            if (c[j].coll == LBS_SIM_ALLREDUCE) {
                if (!bn)
                    bl0 = c[j].layer;
                bl1 = c[j].layer;
                acc += c[j].bytes;
                bn++;
                if (acc >= cap) {
                    launch(&s, LBS_SIM_ALLREDUCE, acc, t0, bl0, bl1, bn, 1);
                    acc = 0;
                    bn = 0;
                }
                continue;
            }
            if (bn) {
                launch(&s, LBS_SIM_ALLREDUCE, acc, t0, bl0, bl1, bn, 1);
                acc = 0;
                bn = 0;
            }
            launch(&s, c[j].coll, c[j].bytes, t0, c[j].layer, c[j].layer, 1,
                   1);
        }
        if (bn)
            launch(&s, LBS_SIM_ALLREDUCE, acc, t0, bl0, bl1, bn, 1);
        if (s.bad) {
            work_free(&w);
            return lbs_err_set(err, -EINVAL, "%s: no enabled algorithm can "
                               "run %s of %.0f bytes on %ld GPUs",
                               pl->name, lbs_sim_coll_name(s.bad_coll),
                               s.bad_bytes, P);
        }
        double end = (F + B > s.free_at ? F + B : s.free_at) + opt;
        if (emit) {
            struct lbs_sim_event e = {LBS_SIM_EV_OPTIM, 0, (int)L - 1, 0, 1,
                                      end - opt, end - opt, end, 0, NOCOST,
                                      0};
            o->on_event(o->ctx, &e);
        }
        double bytes = 0;
        for (size_t j = 0; j < n; j++)
            bytes += c[j].bytes;
        double wt = st->weight;
        W += wt;
        FW += st->final_weight;
        r->iter += wt * end;
        r->compute += wt * (F + B);
        r->comm += wt * s.busy;
        r->bytes += wt * bytes;
        r->wire += wt * s.wire;
        r->calls += wt * s.nops;
        r->final_iter += st->final_weight * end;
    }
    work_free(&w);
    if (W <= 0)
        return lbs_err_set(err, -EINVAL, "plan %s has no steps", plan->optim);
    r->iter /= W;
    r->compute /= W;
    r->comm /= W;
    r->bytes /= W;
    r->wire /= W;
    r->calls /= W;
    r->optim = opt;
    r->exposed = r->iter - r->compute - r->optim;
    if (r->exposed < 0)
        r->exposed = 0;
    r->final_iter = FW > 0 ? r->final_iter / FW : r->iter;
    /* the readers' ranges keep every time finite; a hand-built model or
     * platform may not, and inf must never reach a table */
    if (!isfinite(r->iter) || !isfinite(r->final_iter) ||
        !isfinite(r->comm) || !isfinite(r->bytes) || !isfinite(r->wire))
        return lbs_err_set(err, -EDOM, "%s on %s at %ld GPUs: the step time "
                           "is not finite", m->name, pl->name, P);
    return 0;
}
