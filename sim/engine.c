/* engine.c - one training step as events, per distinct step of a plan.
 *
 * Timeline of a step on every GPU (data parallel, identical ranks):
 *   micro-batches: accum - 1 of forward + backward with no communication
 *              (gradient accumulation), then the last one, F + B, whose
 *              backward the communication may overlap;
 *   forward:   layers 0..L-1, F = sum fwd_l;
 *   backward:  layers L-1..0; layer l's gradient is ready when its
 *              backward ends, R_l (JointSpar traces: a layer with no call
 *              in the step skips its weight gradient, so its backward is
 *              bwd_l (1 - wgrad_frac));
 *   comm:      one stream (NCCL's), one collective at a time, always the
 *              earliest-ready one next (ties: trace order);
 *   optimizer: params x bytes/elem / device memory bandwidth, after all
 *              communication.
 *   iteration = end of the optimizer; compute = accum (F + B) without
 *   slowdown; exposed communication = iteration - compute - optimizer
 *   (so it includes the compute slowdown that overlapping causes).
 *
 * When a call may start: when the data it needs exists, whatever its
 * position in the trace (the same rule for every optimizer):
 *   - a call on layer l that is the step's first call on l needs layer l's
 *     gradient: ready at R_l (gradients, SLAMB's masked momentum,
 *     JointSpar's kept layers, DmSGD/DecentLaM's per-layer neighbour
 *     exchange, which Bluefog also overlaps with the backward pass);
 *   - a later call on the same layer needs the earlier one's result (SLAMB's
 *     periodic parameter averaging): ready when that call ends;
 *   - a call on layer -1 is about the whole model (the finite-check flag,
 *     1-bit LAMB's fused compressed buffers): ready when the backward pass
 *     has ended and the previous layer -1 call has finished.
 * So a 4-byte flag first in the trace no longer holds every later call back
 * until the backward pass ends; it costs its own latency at the end.
 * With overlap off (--no-overlap: a framework that allreduces after the
 * backward, as NVIDIA's BERT recipe does after accumulating), every call
 * waits for the end of the backward pass.
 *
 * Buckets (PyTorch DDP): first-call allreduces are taken in backward order
 * (layer L-1 first) and fused until a bucket holds at least bucket_bytes
 * (25 MiB default); a bucket is ready when its last layer's gradient is.
 * Later-call allreduces are fused the same way in trace order (tensor
 * fusion); other collectives run alone.
 *
 * Compute slowdown: while a collective runs, overlapped compute proceeds
 * at 1/(1 + platform overlap.compute_slowdown) of its speed (NCCL's
 * kernels hold SMs and memory bandwidth).  The backward pass and the
 * communication stream are advanced together event by event, so the
 * slowdown delays the gradients and therefore the calls that wait for them.
 *
 * Cost: O((layers + calls) log calls) per distinct step (a counting sort
 * by layer and a binary heap of ready collectives).
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lbscale_sim.h"

#define NOCOST {0, LBS_SIM_NALGO, LBS_SIM_SIMPLE, 0}
#define NONE ((size_t)-1)

/* A fused group of calls that goes to the network as one collective. */
struct unit {
    enum lbs_coll coll;
    double bytes;
    int l0, l1, calls;          /* layers fused (first, last), call count */
    int post;                   /* not a first call (timeline) */
    int trigger;                /* released when this layer's backward
                                   ends; -1: by its predecessors only */
    int released;
    int ndeps;                  /* unfinished predecessors */
    double ready;               /* max(release, predecessors' ends) */
    size_t next_trig;           /* next unit released by the same layer */
    size_t succ, nsucc;         /* dependents: edge[succ .. succ+nsucc) */
    double nelem;               /* gradient elements of its layers */
    double end;                 /* when it finished */
};

struct work {
    double *bwd, *ready;
    long *stamp;
    size_t *cnt, *order, *last, *trig, *edge, *heap, *pred, *done;
    unsigned char *kind;        /* per call: 0 first, 1 later, 2 layer -1 */
    struct lbs_sim_call *at;    /* a step's calls at P (bytes rule) */
    struct unit *u;
    size_t nu, ne, nh, ndone;
    const struct lbs_sim_model *m;
};

static void work_free(struct work *w)
{
    free(w->bwd);
    free(w->ready);
    free(w->stamp);
    free(w->cnt);
    free(w->order);
    free(w->last);
    free(w->trig);
    free(w->edge);
    free(w->heap);
    free(w->pred);
    free(w->done);
    free(w->kind);
    free(w->at);
    free(w->u);
}

static int work_alloc(struct work *w, size_t L, size_t maxcalls)
{
    size_t n = maxcalls + 1;
    return (w->bwd = malloc(L * sizeof *w->bwd)) &&
           (w->ready = malloc(L * sizeof *w->ready)) &&
           (w->stamp = calloc(L, sizeof *w->stamp)) &&
           (w->cnt = calloc(L + 1, sizeof *w->cnt)) &&
           (w->order = malloc(n * sizeof *w->order)) &&
           (w->last = malloc(L * sizeof *w->last)) &&
           (w->trig = malloc(L * sizeof *w->trig)) &&
           (w->edge = malloc(2 * n * sizeof *w->edge)) &&
           (w->heap = malloc(n * sizeof *w->heap)) &&
           (w->pred = malloc(2 * n * sizeof *w->pred)) &&
           (w->done = malloc(n * sizeof *w->done)) &&
           (w->kind = malloc(n)) &&
           (w->at = malloc(n * sizeof *w->at)) &&
           (w->u = malloc(n * sizeof *w->u)) ? 0 : -ENOMEM;
}

/* ---- building the units of one step ---------------------------------- */

static size_t new_unit(struct work *w, const struct lbs_sim_call *x,
                       int post, int trigger)
{
    struct unit *u = &w->u[w->nu];
    *u = (struct unit){x->coll, x->bytes, x->layer, x->layer, 1, post,
                       trigger, 0, 0, 0, NONE, 0, 0,
                       x->layer >= 0 ? w->m->l[x->layer].n : 0, 0};
    return w->nu++;
}

/* Record "unit v waits for unit p" (pred list, turned into edges later).
 * A repeated pair is harmless (it is counted and released twice); only
 * the common case, consecutive members of one bucket, is folded. */
static void add_dep(struct work *w, size_t v, size_t p, size_t *np)
{
    if (p == NONE || p == v ||
        (*np && w->pred[*np - 2] == p && w->pred[*np - 1] == v))
        return;
    w->pred[(*np)++] = p;
    w->pred[(*np)++] = v;
}

/* Call x joins the open allreduce bucket v (DDP: one call per bucket). */
static void bucket_add(struct work *w, size_t v, const struct lbs_sim_call *x)
{
    w->u[v].bytes += x->bytes;
    w->u[v].l1 = x->layer;
    w->u[v].calls++;
    w->u[v].nelem += w->m->l[x->layer].n;
}

/* The units of step st, their release layers and dependencies. */
static void build_units(struct work *w, const struct lbs_sim_call *c,
                        size_t n, size_t L, long stampv, double cap,
                        int overlap)
{
    size_t np = 0;
    w->nu = 0;
    for (size_t i = 0; i < L; i++) {
        w->last[i] = NONE;
        w->trig[i] = NONE;
    }
    /* classify: the step's first call on a layer, a later one, layer -1 */
    for (size_t j = 0; j < n; j++) {
        int l = c[j].layer;
        if (l < 0) {
            w->kind[j] = 2;
        } else {
            w->kind[j] = w->stamp[l] == stampv;
            w->stamp[l] = stampv;
        }
    }
    /* first calls in backward order: counting sort by layer, descending */
    memset(w->cnt, 0, (L + 1) * sizeof *w->cnt);
    size_t nfirst = 0;
    for (size_t j = 0; j < n; j++)
        if (w->kind[j] == 0) {
            w->cnt[L - 1 - (size_t)c[j].layer]++;
            nfirst++;
        }
    for (size_t i = 0, acc = 0; i <= L; i++) {
        size_t k = w->cnt[i];
        w->cnt[i] = acc;
        acc += k;
    }
    for (size_t j = 0; j < n; j++)
        if (w->kind[j] == 0)
            w->order[w->cnt[L - 1 - (size_t)c[j].layer]++] = j;
    size_t open = NONE;           /* the bucket being filled */
    for (size_t k = 0; k < nfirst; k++) {
        const struct lbs_sim_call *x = &c[w->order[k]];
        size_t v;
        if (x->coll == LBS_COLL_ALLREDUCE && open != NONE) {
            v = open;
            bucket_add(w, v, x);
        } else {
            v = new_unit(w, x, 0, x->layer);
            if (x->coll == LBS_COLL_ALLREDUCE)
                open = v;
        }
        w->last[x->layer] = v;
        if (open == v) {
            w->u[v].trigger = x->layer;     /* ready with its last layer */
            if (w->u[v].bytes >= cap)
                open = NONE;
        }
    }
    /* later calls and layer -1 calls, in trace order */
    size_t prev_whole = NONE;
    open = NONE;
    for (size_t j = 0; j < n; j++) {
        const struct lbs_sim_call *x = &c[j];
        size_t v;
        if (w->kind[j] == 0)
            continue;
        if (w->kind[j] == 2) {
            v = new_unit(w, x, 1, 0);
            add_dep(w, v, prev_whole, &np);
            prev_whole = v;
            open = NONE;
            continue;
        }
        if (x->coll == LBS_COLL_ALLREDUCE && open != NONE) {
            v = open;
            bucket_add(w, v, x);
        } else {
            v = new_unit(w, x, 1, -1);
            open = x->coll == LBS_COLL_ALLREDUCE ? v : NONE;
        }
        add_dep(w, v, w->last[x->layer], &np);
        w->last[x->layer] = v;
        if (open == v && w->u[v].bytes >= cap)
            open = NONE;
    }
    /* release lists per layer; no overlap: everything at the end */
    for (size_t v = 0; v < w->nu; v++) {
        struct unit *u = &w->u[v];
        if (!overlap && u->trigger > 0)
            u->trigger = 0;
        if (u->trigger >= 0) {
            u->next_trig = w->trig[u->trigger];
            w->trig[u->trigger] = v;
        } else {
            u->released = 1;
        }
    }
    /* dependency edges grouped by predecessor (counting sort) */
    for (size_t v = 0; v < w->nu; v++)
        w->u[v].nsucc = 0;
    for (size_t k = 0; k < np; k += 2) {
        w->u[w->pred[k]].nsucc++;
        w->u[w->pred[k + 1]].ndeps++;
    }
    size_t acc = 0;
    for (size_t v = 0; v < w->nu; v++) {
        w->u[v].succ = acc;
        acc += w->u[v].nsucc;
        w->u[v].nsucc = 0;
    }
    for (size_t k = 0; k < np; k += 2) {
        struct unit *p = &w->u[w->pred[k]];
        w->edge[p->succ + p->nsucc++] = w->pred[k + 1];
    }
}

/* ---- the ready heap: earliest ready first, then trace order ------------ */

static int before(const struct work *w, size_t a, size_t b)
{
    double x = w->u[a].ready, y = w->u[b].ready;
    return x < y || (x == y && a < b);
}

static void heap_push(struct work *w, size_t v)
{
    size_t i = w->nh++;
    while (i > 0 && before(w, v, w->heap[(i - 1) / 2])) {
        w->heap[i] = w->heap[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    w->heap[i] = v;
}

static size_t heap_pop(struct work *w)
{
    size_t top = w->heap[0], v = w->heap[--w->nh], i = 0;
    for (;;) {
        size_t k = 2 * i + 1;
        if (k >= w->nh)
            break;
        if (k + 1 < w->nh && before(w, w->heap[k + 1], w->heap[k]))
            k++;
        if (!before(w, w->heap[k], v))
            break;
        w->heap[i] = w->heap[k];
        i = k;
    }
    if (w->nh)
        w->heap[i] = v;
    return top;
}

/* A unit whose release has come and whose predecessors are done. */
static void maybe_ready(struct work *w, size_t v)
{
    if (w->u[v].released && w->u[v].ndeps == 0)
        heap_push(w, v);
}

/* ---- simulating one step ------------------------------------------------ */

struct stepsim {
    const struct lbs_sim_net *net;
    const struct lbs_sim_plan *plan;
    const struct lbs_sim_opts *o;
    long step;
    int emit, bad;
    enum lbs_coll bad_coll;
    double bad_bytes;
    double busy, wire, nops;    /* results */
    double comm_end, bwd_end;
};

static struct lbs_sim_cost price(struct stepsim *s, const struct unit *u)
{
    struct lbs_sim_cost c = lbs_sim_coll_cost(s->net, u->coll, u->bytes,
                                              s->plan->topo, s->step);
    if (!isfinite(c.t)) {
        s->bad = 1;
        s->bad_coll = u->coll;
        s->bad_bytes = u->bytes;
        c.t = 0;
    }
    return c;
}

/* Backward from t0 (layers L-1..0, work w->bwd in seconds) and the comm
 * stream together.  Fills w->ready (R_l) and the stepsim results. */
static void run_step(struct stepsim *s, struct work *w, size_t L, double t0,
                     double slow)
{
    double t = t0, rem = L ? w->bwd[L - 1] : 0, end = 0, start = 0;
    size_t layer = L, running = NONE;   /* layer being computed + 1 */
    struct lbs_sim_cost cost = NOCOST;
    w->nh = 0;
    w->ndone = 0;
    for (size_t v = 0; v < w->nu; v++)
        if (w->u[v].trigger < 0)
            maybe_ready(w, v);
    for (;;) {
        if (running == NONE && w->nh && w->u[w->heap[0]].ready <= t) {
            running = heap_pop(w);
            cost = price(s, &w->u[running]);
            start = t;
            end = t + cost.t;
        }
        double rate = running != NONE ? 1 + slow : 1;
        double tc = layer ? t + rem * rate : INFINITY;
        double te = running != NONE ? end : INFINITY;
        double tr = running == NONE && w->nh ? w->u[w->heap[0]].ready
                                             : INFINITY;
        double tn = fmin(tc, fmin(te, tr));
        if (!isfinite(tn))
            break;
        if (layer)
            rem -= (tn - t) / rate;
        t = tn;
        if (layer && tn == tc) {                /* a gradient is ready */
            size_t i = --layer;
            w->ready[i] = t;
            for (size_t v = w->trig[i]; v != NONE; v = w->u[v].next_trig) {
                w->u[v].released = 1;
                if (t > w->u[v].ready)
                    w->u[v].ready = t;
                maybe_ready(w, v);
            }
            rem = layer ? w->bwd[layer - 1] : 0;
        }
        if (running != NONE && tn == te) {      /* a collective ended */
            struct unit *u = &w->u[running];
            s->busy += cost.t;
            s->wire += cost.wire;
            s->nops += 1;
            if (s->emit) {
                struct lbs_sim_event e = {LBS_SIM_EV_COMM, u->l0, u->l1,
                                          u->calls, u->post, u->ready, start,
                                          end, u->bytes, cost, u->coll};
                s->o->on_event(s->o->ctx, &e);
            }
            for (size_t k = 0; k < u->nsucc; k++) {
                struct unit *d = &w->u[w->edge[u->succ + k]];
                if (end > d->ready)
                    d->ready = end;
                d->ndeps--;
                maybe_ready(w, w->edge[u->succ + k]);
            }
            s->comm_end = end;
            u->end = end;
            w->done[w->ndone++] = running;
            running = NONE;
        }
    }
    s->bwd_end = L ? w->ready[0] : t0;
}

/* Seconds to compress (phase 0) or decompress (1) n gradient elements: the
 * measured rate when given, else the trace's bytes model at the device
 * memory bandwidth; decompression handles one payload per rank when they
 * were gathered. */
static double compress_s(const struct lbs_sim_platform *pl,
                         const struct lbs_sim_opts *o,
                         const struct lbs_sim_plan *plan, double n, int phase,
                         long P)
{
    double parts = phase && plan->decomp_per_rank ? (double)P : 1;
    double gbps = o ? (phase ? o->decompress_gbps : o->compress_gbps) : 0;
    if (gbps > 0)
        return parts * 4 * n / (gbps * 1e9);
    if (!phase)
        return n * plan->comp_bpe / pl->mem_bw;
    return n * (plan->decomp_once_bpe + parts * plan->decomp_bpe) /
           pl->mem_bw;
}

static void emit_compute(const struct lbs_sim_opts *o, size_t L,
                         const struct work *w, double F, double f0)
{
    for (size_t i = L; i-- > 0;) {
        double e = w->ready[i], b = i + 1 < L ? w->ready[i + 1] : f0 + F;
        struct lbs_sim_event ev = {LBS_SIM_EV_BWD, (int)i, (int)i, 0, 0, b,
                                   b, e, 0, NOCOST, 0};
        o->on_event(o->ctx, &ev);
    }
    struct lbs_sim_event ev = {LBS_SIM_EV_FWD, 0, (int)L - 1, 0, 0, f0, f0,
                               f0 + F, 0, NOCOST, 0};
    o->on_event(o->ctx, &ev);
}

double lbs_sim_expected_max_normal(long P)
{
    /* E[max] = integral of x P phi(x) Phi(x)^(P-1) dx, by the midpoint
     * rule on [-9, 9] (the integrand is below 1e-15 outside for every
     * P <= 1e8).  For a smooth, fast-decaying integrand the rule converges
     * spectrally: 360 points agree with 3,600 to 1e-7 from P = 2 to 1.3e5
     * (9e-7 at 1e8), and with tabulated values (Tippett 1925: 0.56419 at
     * 2, 1.53875 at 10, 3.24144 at 1000).  It runs once per lbs_sim_run. */
    if (P <= 1)
        return 0;
    const int n = 360;
    const double lo = -9, h = 18.0 / n;
    double sum = 0;
    for (int i = 0; i < n; i++) {
        double x = lo + (i + 0.5) * h;
        double Phi = 0.5 * erfc(-x / sqrt(2.0));
        if (Phi <= 0)
            continue;
        double lpdf = -0.5 * x * x - 0.5 * log(2 * M_PI);
        sum += x * exp(log((double)P) + lpdf + (double)(P - 1) * log(Phi));
    }
    return sum * h;
}

/* What every step of one lbs_sim_run shares. */
struct runctx {
    const struct lbs_sim_platform *pl;
    const struct lbs_sim_model *m;
    const struct lbs_sim_plan *plan;
    const struct lbs_sim_opts *o;
    struct lbs_sim_net net;
    long P, accum;
    double cap;             /* bucket cap, bytes */
    double opt;             /* optimizer step, s */
    double slow;            /* compute slowdown while overlapped */
    double F, Bfull;        /* forward, full backward of one micro-batch */
    double strag;           /* compute factor of the slowest of P ranks */
    double overhead;        /* s per step */
    size_t emit_si;         /* the distinct step whose events are emitted */
    int overlap;
};

/* Check the run's inputs and fill x; nothing allocated. */
static int run_setup(struct runctx *x, struct lbs_err *err)
{
    const struct lbs_sim_model *m = x->m;
    const struct lbs_sim_opts *o = x->o;
    int rc = lbs_sim_net_init(&x->net, x->pl, x->P, err);
    if (rc)
        return rc;
    if (x->plan->nlayers != m->nlayers)
        return lbs_err_set(err, -EINVAL, "plan %s: %zu layers, model %s has "
                           "%zu (bind the plan to the model first)",
                           x->plan->optim, x->plan->nlayers, m->name,
                           m->nlayers);
    x->cap = o && o->bucket_bytes > 0 ? o->bucket_bytes : m->bucket_bytes;
    if (x->cap > 4 * m->params)
        return lbs_err_set(err, -EINVAL, "bucket of %.4g MiB is larger than "
                           "model %s (%.4g MiB of fp32 gradients)",
                           x->cap / 1048576.0, m->name,
                           4 * m->params / 1048576.0);
    double bpe = o ? o->optim_bytes_per_elem : 0;
    if (!(bpe >= 0) || !isfinite(bpe))
        return lbs_err_set(err, -EINVAL, "optimizer bytes per element must "
                           "be >= 0");
    x->accum = o && o->accum > 0 ? o->accum : 1;
    if (x->accum > 1000000)
        return lbs_err_set(err, -EINVAL, "%ld micro-batches per step: at "
                           "most 1000000", x->accum);
    x->overlap = !(o && o->no_overlap);
    x->slow = o && o->no_slowdown ? 0 : x->pl->overlap_slowdown;
    /* a synchronous step waits for its slowest rank: compute times the
     * expected maximum of P draws of N(1, cv^2) */
    double cv = o && o->cv_set ? o->compute_cv : x->pl->compute_cv;
    x->strag = cv > 0 ? 1 + cv * lbs_sim_expected_max_normal(x->P) : 1;
    x->overhead = o && o->overhead_set ? o->overhead_s : x->pl->overhead;
    x->F = 0;
    x->Bfull = 0;
    for (size_t i = 0; i < m->nlayers; i++) {
        x->F += lbs_sim_layer_fwd(m, x->pl, i);
        x->Bfull += lbs_sim_layer_bwd(m, x->pl, i);
    }
    x->F *= x->strag;
    x->Bfull *= x->strag;
    x->opt = m->params * bpe / x->pl->mem_bw;
    return 0;
}

/* One distinct step si, its times added to r with the step's weight (and
 * its weights to W, FW). */
static int run_one(struct runctx *x, struct work *w, size_t si, long stampv,
                   struct lbs_sim_result *r, double *W, double *FW,
                   struct lbs_err *err)
{
    const struct lbs_sim_platform *pl = x->pl;
    const struct lbs_sim_model *m = x->m;
    const struct lbs_sim_plan *plan = x->plan;
    const struct lbs_sim_opts *o = x->o;
    const struct lbs_sim_step *st = &plan->step[si];
    size_t L = m->nlayers;
    long P = x->P;
    const struct lbs_sim_call *calls = lbs_sim_step_calls(plan, st, P, w->at);
    int emit = o && o->on_event && si == x->emit_si;
    build_units(w, calls, st->ncalls, L, stampv, x->cap, x->overlap);
    /* backward work (JointSpar: layers without a call skip wgrad;
     * compressed exchanges: compressing a layer follows its gradient
     * on the same stream) */
    double B = 0, comp = 0;
    for (size_t i = 0; i < L; i++) {
        double b = lbs_sim_layer_bwd(m, pl, i) * x->strag;
        if (plan->skip_wgrad && w->stamp[i] != stampv)
            b *= 1 - m->wgrad_frac;
        if (w->stamp[i] == stampv && plan->comp_bpe > 0) {
            double c = compress_s(pl, o, plan, m->l[i].n, 0, P);
            b += c;
            comp += c;
        }
        w->bwd[i] = b;
        B += b;
    }
    /* the accum - 1 earlier micro-batches: compute only */
    double F = x->F, f0 = (double)(x->accum - 1) * (F + x->Bfull);
    struct stepsim s = {&x->net, plan, o, st->first, emit, 0, 0, 0, 0, 0, 0,
                        0, 0};
    run_step(&s, w, L, f0 + F, x->slow);
    if (s.bad)
        return lbs_err_set(err, -EINVAL, "%s: no enabled algorithm can "
                           "run %s of %.0f bytes on %ld GPUs",
                           pl->name, lbs_coll_name(s.bad_coll),
                           s.bad_bytes, P);
    /* decompressing each exchange as it arrives, after the backward
     * pass, on the compute stream */
    double dec = 0, dec_end = s.bwd_end;
    for (size_t k = 0; k < w->ndone && plan->decomp_bpe > 0; k++) {
        const struct unit *u = &w->u[w->done[k]];
        double d = compress_s(pl, o, plan, u->nelem, 1, P);
        dec_end = fmax(dec_end, u->end) + d;
        dec += d;
    }
    /* an optimizer that compresses inside its step (1-bit LAMB) moves
     * more in that phase: priced at the memory bandwidth, after the
     * exchange that waits for it (serial with it either way) */
    double xbpe = P > 1 ? st->extra_bpe + st->extra_bpe_p / (double)P : 0;
    double xc = fmax(0, xbpe) * m->params / pl->mem_bw;
    comp += xc;
    double opt = x->opt,
           end = fmax(dec_end, s.comm_end) + xc + opt + x->overhead;
    if (emit) {
        emit_compute(o, L, w, F, f0);
        double oe = end - x->overhead;
        struct lbs_sim_event e = {LBS_SIM_EV_OPTIM, 0, (int)L - 1, 0, 1,
                                  oe - opt, oe - opt, oe, 0, NOCOST, 0};
        o->on_event(o->ctx, &e);
    }
    double bytes = 0;
    for (size_t j = 0; j < st->ncalls; j++)
        bytes += calls[j].bytes;
    /* compute counts what one rank computes; the wait for the slowest
     * rank is its own figure */
    double wt = st->weight, compute = (f0 + F + B - comp) / x->strag + comp +
                                      dec + xc;
    r->straggle += wt * (f0 + F + B - comp) * (1 - 1 / x->strag);
    r->overhead += wt * x->overhead;
    *W += wt;
    *FW += st->final_weight;
    r->iter += wt * end;
    r->compute += wt * compute;
    r->slowdown += wt * fmax(0, s.bwd_end - (f0 + F + B));
    r->compress += wt * (comp + dec);
    r->comm += wt * s.busy;
    r->bytes += wt * bytes;
    r->wire += wt * s.wire;
    r->calls += wt * s.nops;
    r->final_iter += st->final_weight * end;
    return 0;
}

/* The weighted sums of r turned into averages. */
static void run_average(struct lbs_sim_result *r, double W, double FW,
                        double opt)
{
    r->iter /= W;
    r->compute /= W;
    r->slowdown /= W;
    r->compress /= W;
    r->straggle /= W;
    r->overhead /= W;
    r->comm /= W;
    r->bytes /= W;
    r->wire /= W;
    r->calls /= W;
    r->optim = opt;
    r->exposed = r->iter - r->compute - r->optim - r->straggle - r->overhead;
    if (r->exposed < 0)
        r->exposed = 0;
    r->final_iter = FW > 0 ? r->final_iter / FW : r->iter;
}

int lbs_sim_run(const struct lbs_sim_platform *pl,
                const struct lbs_sim_model *m,
                const struct lbs_sim_plan *plan, long P,
                const struct lbs_sim_opts *o, struct lbs_sim_result *r,
                struct lbs_err *err)
{
    struct runctx x = {.pl = pl, .m = m, .plan = plan, .o = o, .P = P};
    struct work w = {0};
    memset(r, 0, sizeof *r);
    int rc = run_setup(&x, err);
    if (rc)
        return rc;
    size_t maxcalls = 0;
    for (size_t i = 0; i < plan->nsteps; i++)
        if (plan->step[i].ncalls > maxcalls)
            maxcalls = plan->step[i].ncalls;
    w.m = m;
    if (work_alloc(&w, m->nlayers, maxcalls)) {
        work_free(&w);
        return lbs_err_set(err, -ENOMEM, "out of memory");
    }
    double W = 0, FW = 0;
    r->P = P;
    r->final_from = plan->final_from;
    /* the timeline's step: the first, or the last of the final phase */
    for (size_t si = 0; o && o->emit_final && si < plan->nsteps; si++)
        if (plan->step[si].final_weight > 0)
            x.emit_si = si;
    for (size_t si = 0; si < plan->nsteps && !rc; si++)
        rc = run_one(&x, &w, si, (long)si + 1, r, &W, &FW, err);
    work_free(&w);
    if (rc)
        return rc;
    if (W <= 0)
        return lbs_err_set(err, -EINVAL, "plan %s has no steps", plan->optim);
    run_average(r, W, FW, x.opt);
    return 0;
}
