/* loop.c - one training run (train.h): data, shard, model, optimizer, the
 * steps, the evaluations and the rows they give. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cnn.h"
#include "lbscale/param.h"
#include "lr.h"
#include "shards.h"
#include "train.h"

struct lbs_train {
    const struct lbs_train_config *t;
    struct lbs_comm *comm;      /* the real comm (mpi or self) */
    struct lbs_train_info info;
    struct dataset data;
    struct mlp *m;
    struct lbs_optim *o;
    size_t *shard, nshard, cursor;
    size_t *shard_counts;       /* dirichlet: ranks x classes, else NULL */
    long pass, last_epoch, steps;
    float *xb, *wavg;
    uint8_t *yb, *keep;
    size_t *bidx;
    char spec_eff[512], rule[128], note[300], warning[300];
    /* totals */
    double t_fwd, t_bwd, t_wgrad, t_optim, t_data, t_eval;
    double kept_w, all_w;       /* weight layers computed / possible */
    double tm[6];               /* lbs_train_totals: the above, averaged */
    double ep_loss, last_loss, best;
    long ep_correct, ep_samples;
    /* the last evaluation */
    double test_loss, test_acc, consensus, train_loss, train_acc;
    double val_loss, val_acc;   /* NaN without --val */
    /* --consensus-every: (step, rms) pairs and the time they took */
    double *cons;
    size_t ncons, cap_cons;
    double t_cons;
};

double lbs_train_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int lbs_train_parse_model(struct lbs_train_config *c, struct lbs_err *err)
{
    if (!strcmp(c->model, "mlp8"))
        c->model = MLP8_SPEC;
    c->is_cnn = !strcmp(c->model, CNN_SPEC);
    if (c->is_cnn) {
        c->dims[0] = 784;
        c->dims[1] = 10;
        c->nd = 1;
        return 0;
    }
    return mlp_parse(c->model, c->dims, &c->nd, err);
}

json_t *lbs_train_layers_json(const struct mlp *m)
{
    json_t *a = json_array();
    for (size_t l = 0; l < m->nlayers; l++) {
        const struct lbs_layer *L = &m->layers[l];
        json_t *sh = json_array();
        for (int d = 0; d < L->ndim; d++)
            json_array_append_new(sh, json_integer((json_int_t)L->shape[d]));
        json_array_append_new(a, json_pack("{s:s,s:I,s:i,s:o}", "name",
                                           L->name, "n", (json_int_t)L->n,
                                           "ndim", L->ndim, "shape", sh));
    }
    return a;
}

int lbs_train_new(const struct lbs_train_config *c, struct lbs_comm *comm,
                  struct lbs_train **out, struct lbs_err *err)
{
    struct lbs_train *r = calloc(1, sizeof *r);
    *out = r;
    if (!r)
        return lbs_err_set(err, -ENOMEM, "out of memory");
    r->t = c;
    r->comm = comm;
    r->info = (struct lbs_train_info){
        .rank = comm->rank, .ranks = comm->size, .data = &r->data,
        .note = r->note, .spec = r->spec_eff, .lr_rule = r->rule,
        .lr = NAN, .warning = r->warning};
    r->last_loss = NAN;
    return 0;
}

const struct lbs_train_info *lbs_train_info(const struct lbs_train *r)
{
    return &r->info;
}

/* Data set per --dataset/--data.  r->note gets a sentence when the
 * teacher fallback was taken without being asked for. */
static int load_data(struct lbs_train *r, struct lbs_err *err)
{
    const struct lbs_train_config *t = r->t;
    const size_t *dims = t->dims;
    int nd = t->nd;
    struct dataset *d = &r->data;
    const char *dir = t->data_dir ? t->data_dir : getenv("LBSCALE_DATA");
    if (!dir || !*dir)
        dir = DATA_FASHION_DIR;
    int want_teacher = !strcmp(t->dataset, "teacher");
    if (!strcmp(t->dataset, "auto") && !t->data_dir &&
        !data_idx_dir_present(dir)) {
        want_teacher = 1;
        snprintf(r->note, sizeof r->note, "Fashion-MNIST not found in %s "
                 "(install dataset-fashion-mnist); trained on the generated "
                 "teacher task instead", dir);
    }
    int rc;
    if (want_teacher) {
        /* the task is fixed (data seed 1); --seed varies init and order */
        rc = data_make_teacher(1, (t->subset ? (size_t)t->subset : 60000) +
                               (size_t)t->val, t->test_subset
                               ? (size_t)t->test_subset : 10000, dims[0],
                               dims[nd], d, err);
        if (!rc && t->val && (rc = data_hold_out(d, (size_t)t->val, err)))
            data_free(d);
    } else {
        rc = data_load_idx_dir(dir, d, err);
        /* the validation samples come off the end before --subset */
        if (!rc && t->val && (rc = data_hold_out(d, (size_t)t->val, err)))
            data_free(d);
        if (!rc)
            data_truncate(d, (size_t)t->subset, (size_t)t->test_subset);
    }
    if (rc)
        return rc;
    if (d->dim != dims[0] || d->classes > dims[nd]) {
        rc = lbs_err_set(err, -EINVAL, "--model: input width %zu / %zu "
                         "classes do not fit the %s data (%zu features, %zu "
                         "classes)", dims[0], dims[nd], d->name, d->dim,
                         d->classes);
        data_free(d);
    }
    return rc;
}

int lbs_train_load(struct lbs_train *r, struct lbs_err *err)
{
    const struct lbs_train_config *t = r->t;
    struct lbs_train_info *i = &r->info;
    i->local = (size_t)(t->global_batch / i->ranks);
    i->micro = t->micro_batch ? (size_t)t->micro_batch
                              : i->local < 512 ? i->local : 512;
    if (i->micro > i->local)
        i->micro = i->local;
    return load_data(r, err);
}

/* Dirichlet shards (shards.h): every rank computes the whole partition,
 * so all agree on n_used (all of n_train) and the step count even though
 * shard sizes differ. */
static int dirichlet_shard(struct lbs_train *r, struct lbs_err *err)
{
    struct lbs_train_info *i = &r->info;
    size_t K = r->data.classes;
    r->shard_counts = malloc((size_t)i->ranks * K * sizeof *r->shard_counts);
    if (!r->shard_counts)
        return lbs_err_set(err, -ENOMEM, "out of memory");
    int rc = shards_dirichlet(&r->data, (uint64_t)r->t->seed,
                              r->t->shard_alpha, i->rank, i->ranks,
                              &r->shard, &r->nshard, r->shard_counts, err);
    i->n_used = rc ? 0 : (double)r->data.n_train;
    return rc;
}

int lbs_train_shard(struct lbs_train *r, struct lbs_err *err)
{
    const struct lbs_train_config *t = r->t;
    struct lbs_train_info *i = &r->info;
    int rc;
    if (t->shard_alpha > 0) {
        rc = dirichlet_shard(r, err);
    } else {
        rc = data_shard(&r->data, (uint64_t)t->seed, i->rank, i->ranks,
                        &r->shard, &r->nshard, err);
        i->n_used = (double)r->nshard * i->ranks;
    }
    if (!rc)
        data_shuffle(r->shard, r->nshard, (uint64_t)t->seed, 0, i->rank);
    if (!(i->n_used > 0))
        i->n_used = 1;   /* a failed shard: the caller stops; no 0/0 */
    long total = (long)llround(t->epochs * i->n_used /
                               (double)t->global_batch);
    if (total < 1)
        total = 1;
    if (t->max_steps && total > t->max_steps)
        total = t->max_steps;
    i->total_steps = total;
    i->warmup_steps = (long)llround(t->warmup * (double)total);
    return rc;
}

/* DecentLaM's analysis assumes a symmetric doubly stochastic W: note when
 * the graph is directed (the caller prints it; the row records it). */
static void topology_warning(struct lbs_train *r)
{
    char topo_w[32];
    lbs_train_spec_value(r->spec_eff, "topology", topo_w, sizeof topo_w);
    if (!strncmp(r->spec_eff, "decentlam", 9) &&
        (!strcmp(topo_w, "exponential") || !strcmp(topo_w, "onepeer")))
        snprintf(r->warning, sizeof r->warning, "decentlam on the directed "
                 "'%s' graph: its mixing matrix is not symmetric, which "
                 "DecentLaM's analysis assumes (use ring, symexp or "
                 "full); such runs have diverged (10%% accuracy)",
                 topo_w);
}

int lbs_train_model(struct lbs_train *r, struct lbs_err *err)
{
    const struct lbs_train_config *t = r->t;
    struct lbs_train_info *i = &r->info;
    int rc = t->is_cnn ? cnn_new(i->micro, &r->m, err)
                       : mlp_new(t->dims, t->nd, i->micro, &r->m, err);
    if (rc)
        return rc;
    i->model = r->m;
    mlp_init(r->m, (uint64_t)t->seed);
    rc = lbs_train_effective_spec(t, i->total_steps, r->spec_eff,
                                  sizeof r->spec_eff, r->rule,
                                  sizeof r->rule, &i->lr, err);
    if (!rc)
        topology_warning(r);
    return rc;
}

int lbs_train_optim(struct lbs_train *r, struct lbs_comm *comm,
                    struct lbs_err *err)
{
    const struct lbs_train_config *t = r->t;
    struct lbs_train_info *i = &r->info;
    int rc = lbs_optim_new(r->spec_eff, r->m->layers, r->m->nlayers, comm,
                           &r->o, err);
    if (!rc && t->compress)
        rc = lbs_optim_set_compressor(r->o, t->compress, err);
    if (rc)
        return rc;
    i->optim = r->o;
    r->xb = malloc(i->micro * t->dims[0] * sizeof(float));
    r->yb = malloc(i->micro);
    r->bidx = malloc(i->local * sizeof *r->bidx);
    r->keep = malloc(r->m->nlayers);
    r->wavg = malloc(r->m->nparams * sizeof(float));
    if (!r->xb || !r->yb || !r->bidx || !r->keep || !r->wavg)
        return lbs_err_set(err, -ENOMEM, "out of memory");
    return 0;
}

void lbs_train_free(struct lbs_train *r)
{
    if (!r)
        return;
    lbs_optim_free(r->o);
    mlp_free(r->m);
    data_free(&r->data);
    free(r->shard);
    free(r->shard_counts);
    free(r->cons);
    free(r->xb);
    free(r->yb);
    free(r->bidx);
    free(r->keep);
    free(r->wavg);
    free(r);
}

/* The schedule's factor at step it. */
static double lr_factor(const struct lbs_train *r, long it)
{
    return lbs_train_lr_factor(r->t->decay, r->info.warmup_steps,
                               r->info.total_steps, it);
}

/* Next local batch indices (reshuffling the shard at each pass). */
static void next_batch(struct lbs_train *r)
{
    for (size_t i = 0; i < r->info.local; i++) {
        if (r->cursor == r->nshard) {
            r->pass++;
            data_shuffle(r->shard, r->nshard, (uint64_t)r->t->seed, r->pass,
                         r->comm->rank);
            r->cursor = 0;
        }
        r->bidx[i] = r->shard[r->cursor++];
    }
}

/* Forward and backward over the local batch in micro-batches (gradients
 * accumulated); the batch's summed loss, correct answers into *correct,
 * the data-gathering time into *t_data. */
static double forward_backward(struct lbs_train *r, long it, long *correct,
                               double *t_data)
{
    const struct lbs_train_config *t = r->t;
    struct mlp *m = r->m;
    size_t local = r->info.local, micro = r->info.micro;
    double loss = 0;
    const float scale = 1.0f / (float)local;
    for (size_t a = 0; a < local; a += micro) {
        size_t b = local - a < micro ? local - a : micro;
        double d0 = lbs_train_now();
        data_gather(&r->data, r->bidx + a, b, r->xb, r->yb);
        if (m->cnn && !t->no_augment)
            cnn_augment(r->xb, b, 2, r->data.lut[0], (uint64_t)t->seed,
                        (uint64_t)it, (uint64_t)r->comm->rank * local + a);
        *t_data += lbs_train_now() - d0;
        mlp_forward(m, m->w, r->xb, b);
        loss += mlp_loss(m, r->yb, b, 1, scale, correct);
        mlp_backward(m, r->xb, b, r->keep, a > 0);
    }
    return loss;
}

/* The step's times into the totals and into *st. */
static void step_totals(struct lbs_train *r, struct lbs_train_step *st)
{
    const struct mlp *m = r->m;
    double fw = 0, bw = 0, wg = 0;
    for (size_t l = 0; l < m->nlayers; l++) {
        fw += m->t_fwd[l];
        bw += m->t_bwd[l];
        wg += m->t_wgrad[l];
        if (m->layers[l].ndim >= 2) {
            r->all_w += 1;
            r->kept_w += r->keep[l] != 0;
        }
    }
    r->t_fwd += fw;
    r->t_bwd += bw;
    r->t_wgrad += wg;
    r->t_optim += st->optim_s;
    r->t_data += st->data_s;
    st->nlayers = m->nlayers;
    st->keep = r->keep;
    st->fwd_s = m->t_fwd;
    st->bwd_s = m->t_bwd;
    st->wgrad_s = m->t_wgrad;
}

int lbs_train_step(struct lbs_train *r, long it, struct lbs_train_step *st,
                   struct lbs_err *err)
{
    const struct lbs_train_config *t = r->t;
    struct mlp *m = r->m;
    *st = (struct lbs_train_step){.it = it};
    st->lr_scale = lr_factor(r, it);
    lbs_optim_set_lr_scale(r->o, st->lr_scale);
    lbs_optim_next_keep(r->o, r->keep);
    mlp_reset_times(m);
    next_batch(r);
    long correct = 0;
    double loss = forward_backward(r, it, &correct, &st->data_s);
    if (t->fault == LBS_TRAIN_FAULT_NAN && it == t->fault_step &&
        r->comm->rank == t->fault_rank)
        m->g[0] = NAN;
    double t1 = lbs_train_now();
    int rc = lbs_optim_step(r->o, err);
    st->optim_s = lbs_train_now() - t1;
    if (rc < 0)
        return rc;
    r->steps = it;
    r->ep_loss += loss;
    r->ep_correct += correct;
    r->ep_samples += (long)r->info.local;
    st->loss = r->last_loss = loss / (double)r->info.local;
    st->skipped = rc == 1;
    step_totals(r, st);
    long ep = (long)floor((double)it * (double)t->global_batch /
                          r->info.n_used);
    if (ep > r->last_epoch || it == r->info.total_steps) {
        st->evaluate = 1;
        r->last_epoch = ep;
    }
    return rc;
}

/* Summed loss and correct answers of model w over samples [lo, hi) of the
 * test set (val 0) or the validation set (val 1). */
static double score(struct lbs_train *r, const float *w, int val, size_t lo,
                    size_t hi, long *correct)
{
    size_t micro = r->info.micro;
    double loss = 0;
    for (size_t a = lo; a < hi; a += micro) {
        size_t b = hi - a < micro ? hi - a : micro;
        if (val)
            data_gather_val(&r->data, a, b, r->xb, r->yb);
        else
            data_gather_test(&r->data, a, b, r->xb, r->yb);
        mlp_forward(r->m, w, r->xb, b);
        loss += mlp_loss(r->m, r->yb, b, 0, 0, correct);
    }
    return loss;
}

/* The ranks' average model into r->wavg (an allreduce on the real comm,
 * not traced) and this rank's squared distance from it into *dist. */
static int average_model(struct lbs_train *r, double *dist,
                         struct lbs_err *err)
{
    struct mlp *m = r->m;
    size_t np = m->nparams;
    int P = r->comm->size;
    memcpy(r->wavg, m->w, np * sizeof(float));
    r->comm->err = err;
    if (P > 1) {
        int rc = lbs_allreduce(r->comm, r->wavg, np, LBS_FLOAT32, LBS_SUM, -1);
        if (rc)
            return rc;
        const float inv = 1.0f / (float)P;
        for (size_t i = 0; i < np; i++)
            r->wavg[i] *= inv;
    }
    double s = 0;
    for (size_t i = 0; i < np; i++) {
        double d = (double)m->w[i] - (double)r->wavg[i];
        s += d * d;
    }
    *dist = s;
    return 0;
}

/* Test accuracy of the ranks' average model; also the RMS distance of the
 * ranks' models from it.  Collectives on the real comm (not traced). */
static int evaluate(struct lbs_train *r, struct lbs_err *err)
{
    int P = r->comm->size, rank = r->comm->rank;
    double dist;
    int rc = average_model(r, &dist, err);
    if (rc)
        return rc;
    size_t nt = r->data.n_test, nv = r->data.n_val;
    long correct = 0, vcorrect = 0;
    double loss = score(r, r->wavg, 0, nt * (size_t)rank / (size_t)P,
                        nt * (size_t)(rank + 1) / (size_t)P, &correct);
    double vloss = score(r, r->wavg, 1, nv * (size_t)rank / (size_t)P,
                         nv * (size_t)(rank + 1) / (size_t)P, &vcorrect);
    double v[8] = {loss, (double)correct, dist, r->ep_loss,
                   (double)r->ep_correct, (double)r->ep_samples, vloss,
                   (double)vcorrect};
    if (P > 1 && (rc = lbs_allreduce(r->comm, v, 8, LBS_FLOAT64, LBS_SUM,
                                     -1)))
        return rc;
    r->val_loss = nv ? v[6] / (double)nv : NAN;
    r->val_acc = nv ? v[7] / (double)nv : NAN;
    r->test_loss = v[0] / (double)nt;
    r->test_acc = v[1] / (double)nt;
    r->consensus = sqrt(v[2] / P);
    r->train_loss = v[5] > 0 ? v[3] / v[5] : NAN;
    r->train_acc = v[5] > 0 ? v[4] / v[5] : NAN;
    r->ep_loss = 0;
    r->ep_correct = r->ep_samples = 0;
    return 0;
}

/* A number, or null when it is not finite (jansson refuses NaN). */
/* The rate the schedule scales: the one train chose (info.lr), else the
 * optimizer's own (the spec's lr); NaN (a null lr column, never the bare
 * schedule factor) for an optimizer without an lr key. */
static double base_lr(const struct lbs_train *r)
{
    double v;
    if (!isnan(r->info.lr))
        return r->info.lr;
    return lbs_optim_get(r->o, "lr", &v, NULL) ? NAN : v;
}

static void jset(json_t *o, const char *k, double x)
{
    json_object_set_new(o, k, isfinite(x) ? json_real(x) : json_null());
}

int lbs_train_evaluate(struct lbs_train *r, long it, json_t **row,
                       struct lbs_err *err)
{
    const struct lbs_train_config *t = r->t;
    double e0 = lbs_train_now();
    *row = NULL;
    int rc = evaluate(r, err);
    if (rc)
        return rc;
    r->t_eval += lbs_train_now() - e0;
    r->best = r->test_acc > r->best ? r->test_acc : r->best;
    json_t *o = json_pack("{s:s,s:s,s:o}", "bench", "train",
                          "event", "epoch", "compress",
                          t->compress ? json_string(t->compress)
                                      : json_null());
    jset(o, "epoch", (double)it * (double)t->global_batch / r->info.n_used);
    json_object_set_new(o, "step", json_integer((json_int_t)it));
    jset(o, "lr", base_lr(r) * lr_factor(r, it));
    jset(o, "train_loss", r->train_loss);
    jset(o, "train_accuracy", r->train_acc);
    jset(o, "test_loss", r->test_loss);
    jset(o, "test_accuracy", r->test_acc);
    jset(o, "val_loss", r->val_loss);
    jset(o, "val_accuracy", r->val_acc);
    jset(o, "consensus_rms", r->consensus);
    json_object_set_new(o, "skipped_steps",
                        json_integer(lbs_optim_skipped(r->o)));
    jset(o, "wall_s", lbs_train_now() - t->wall0);
    *row = o;
    return 0;
}

int lbs_train_consensus(struct lbs_train *r, long it, double *rms,
                        struct lbs_err *err)
{
    double c0 = lbs_train_now(), dist;
    int rc = average_model(r, &dist, err);
    if (!rc && r->comm->size > 1)
        rc = lbs_allreduce(r->comm, &dist, 1, LBS_FLOAT64, LBS_SUM, -1);
    if (rc)
        return rc;
    *rms = sqrt(dist / r->comm->size);
    if (r->ncons == r->cap_cons) {
        size_t cap = r->cap_cons ? 2 * r->cap_cons : 64;
        double *q = realloc(r->cons, 2 * cap * sizeof *q);
        if (!q)
            return lbs_err_set(err, -ENOMEM, "out of memory");
        r->cons = q;
        r->cap_cons = cap;
    }
    r->cons[2 * r->ncons] = (double)it;
    r->cons[2 * r->ncons + 1] = *rms;
    r->ncons++;
    r->t_cons += lbs_train_now() - c0;
    return 0;
}

int lbs_train_totals(struct lbs_train *r, struct lbs_err *err)
{
    double t6[6] = {r->t_fwd, r->t_bwd, r->t_wgrad, r->t_optim, r->t_data,
                    r->kept_w};
    memcpy(r->tm, t6, sizeof t6);
    r->comm->err = err;
    int P = r->comm->size, rc;
    if (P > 1 &&
        (rc = lbs_allreduce(r->comm, r->tm, 6, LBS_FLOAT64, LBS_SUM, -1)))
        return rc;
    for (int q = 0; q < 6; q++)
        r->tm[q] /= P;
    return 0;
}

/* The final row's head: the configuration. */
static json_t *final_config(const struct lbs_train *r)
{
    const struct lbs_train_config *t = r->t;
    const struct lbs_train_info *i = &r->info;
    char topo[32];
    lbs_train_spec_value(r->spec_eff, "topology", topo, sizeof topo);
    json_t *row = json_pack(
        "{s:s,s:s,s:s,s:s,s:s,s:s,s:s,s:s,s:i,s:s?,s:I,s:I,s:I,s:I,s:f,s:I,"
        "s:I,s:I,s:I,s:i,s:s,s:s}",
        "bench", "train", "event", "final", "optim", lbs_optim_name(r->o),
        "params", lbs_optim_params(r->o), "spec", t->spec, "model", t->model,
        "dataset", r->data.name, "dataset_source", r->data.source, "ranks",
        i->ranks, "topology", topo[0] ? topo : NULL, "global_batch",
        (json_int_t)t->global_batch, "local_batch", (json_int_t)i->local,
        "micro_batch", (json_int_t)i->micro, "accum_steps",
        (json_int_t)((i->local + i->micro - 1) / i->micro), "epochs",
        t->epochs, "steps", (json_int_t)r->steps, "skipped_steps",
        (json_int_t)lbs_optim_skipped(r->o), "warmup_steps",
        (json_int_t)i->warmup_steps, "seed", (json_int_t)t->seed, "threads",
        (int)t->threads, "decay", t->decay, "lr_rule", r->rule);
    if (!row)
        return NULL;
    json_object_set_new(row, "lr", isnan(i->lr) ? json_null()
                                                : json_real(i->lr));
    json_object_set_new(row, "compress", t->compress
                                             ? json_string(t->compress)
                                             : json_null());
    if (r->note[0])
        json_object_set_new(row, "dataset_note", json_string(r->note));
    json_object_set_new(row, "n_train", json_integer((json_int_t)i->n_used));
    json_object_set_new(row, "n_test",
                        json_integer((json_int_t)r->data.n_test));
    return row;
}

/* The final row's shards: their kind and, for Dirichlet shards, sizes and
 * label skew. */
static void final_shards(const struct lbs_train *r, json_t *row)
{
    const struct lbs_train_config *t = r->t;
    json_object_set_new(row, "shards", json_string(t->shards ? t->shards
                                                             : "iid"));
    if (!r->shard_counts)
        return;
    size_t K = r->data.classes, mn = (size_t)-1, mx = 0;
    for (int q = 0; q < r->info.ranks; q++) {
        size_t n = 0;
        for (size_t c = 0; c < K; c++)
            n += r->shard_counts[(size_t)q * K + c];
        mn = n < mn ? n : mn;
        mx = n > mx ? n : mx;
    }
    json_object_set_new(row, "shard_size_min", json_integer((json_int_t)mn));
    json_object_set_new(row, "shard_size_max", json_integer((json_int_t)mx));
    jset(row, "shard_label_tv", shards_label_tv(r->shard_counts,
                                                r->info.ranks, K));
}

/* The final row's consensus curve (--consensus-every): [[step, rms]...]
 * and the seconds its reductions took (rank 0's; every rank waits in the
 * same collectives). */
static void final_consensus(const struct lbs_train *r, json_t *row)
{
    json_object_set_new(row, "consensus_every",
                        json_integer(r->t->consensus_every));
    if (!r->t->consensus_every)
        return;
    json_t *a = json_array();
    for (size_t q = 0; q < r->ncons; q++)
        json_array_append_new(a, json_pack("[I,f]", (json_int_t)r->cons[2 * q],
                                           r->cons[2 * q + 1]));
    json_object_set_new(row, "consensus_curve", a);
    jset(row, "consensus_s", r->t_cons);
}

/* The final row's results: accuracies, divergence, the lr rule used. */
static void final_results(const struct lbs_train *r, json_t *row)
{
    const struct lbs_train_config *t = r->t;
    jset(row, "test_accuracy", r->test_acc);
    jset(row, "test_loss", r->test_loss);
    jset(row, "best_test_accuracy", r->best);
    jset(row, "val_accuracy", r->val_acc);
    jset(row, "val_loss", r->val_loss);
    json_object_set_new(row, "n_val",
                        json_integer((json_int_t)r->data.n_val));
    /* diverged: a NaN/Inf loss, or a final training loss above ten times
     * chance's (10 ln classes) */
    double chance = log((double)t->dims[t->nd]);
    json_object_set_new(row, "diverged", json_boolean(
        !isfinite(r->last_loss) || !isfinite(r->test_loss) ||
        !(r->train_loss <= 10 * chance)));
    char nm[64];
    const char *args;
    struct lbs_err e2;
    const char *sc = NULL;
    if (!lbs_spec_split(t->spec, nm, sizeof nm, &args, &e2))
        sc = lbs_train_lr_scaling(t, nm);
    json_object_set_new(row, "lr_scaling", sc ? json_string(sc)
                                              : json_null());
    json_object_set_new(row, "lr_base", sc ? json_real(t->lr_base)
                                           : json_null());
    json_object_set_new(row, "lr_ref_batch", sc
                        ? json_integer(t->lr_ref_batch) : json_null());
    json_object_set_new(row, "warmup", json_real(t->warmup));
    json_object_set_new(row, "warning", r->warning[0]
                                            ? json_string(r->warning)
                                            : json_null());
    jset(row, "train_loss", r->train_loss);
    jset(row, "train_accuracy", r->train_acc);
    jset(row, "consensus_rms", r->consensus);
    final_shards(r, row);
    final_consensus(r, row);
}

/* The final row's costs: times and bytes. */
static void final_costs(const struct lbs_train *r, json_t *row,
                        const struct lbs_train_costs *c)
{
    const double *tm = r->tm;
    jset(row, "wall_s", lbs_train_now() - r->t->wall0);
    jset(row, "train_s", c->train_s);
    jset(row, "eval_s", r->t_eval);
    jset(row, "fwd_s", tm[0]);
    jset(row, "bwd_s", tm[1]);
    jset(row, "wgrad_s", tm[2]);
    jset(row, "optim_s", tm[3]);
    jset(row, "comm_s", c->comm_s);
    jset(row, "data_s", tm[4]);
    json_object_set_new(row, "wgrad_kept_frac",
                        json_real(r->all_w > 0 ? tm[5] / r->all_w : 1));
    json_object_set_new(row, "comm_bytes_per_rank",
                        json_integer(c->comm_bytes));
    json_object_set_new(row, "sent_bytes_per_rank",
                        json_integer(c->sent_bytes));
    json_object_set_new(row, "dense_bytes_per_step",
                        json_integer((json_int_t)(4 * r->m->nparams)));
    json_object_set_new(row, "comm_calls_per_rank",
                        json_integer(c->comm_calls));
    json_object_set_new(row, "comm_by_kind", c->comm_by_kind);
}

json_t *lbs_train_final_row(struct lbs_train *r,
                            const struct lbs_train_costs *c)
{
    json_t *row = final_config(r);
    if (!row) {
        json_decref(c->comm_by_kind);
        return NULL;
    }
    final_results(r, row);
    final_costs(r, row, c);
    return row;
}
