/* train.c - `lbscale train`: the verb around train/'s training run
 * (train/train.h: data-parallel or decentralized training of an MLP or CNN
 * classifier with any registered optimizer): its options, the checks of
 * input, agreement across MPI ranks, the printed rows, the results row and
 * the per-step trace files.
 *
 * Every step's optimizer runs over a record comm wrapping the real comm
 * (lbs_comm_record_wrap: every collective logged: kind, bytes, layer,
 * duration); this verb meters it and writes the trace.
 *
 * Robustness: options are hashed and compared across ranks before
 * anything else (a mismatch is refused, exit 2); every collective error
 * path agrees across ranks; a watchdog (SIGALRM, --stall-timeout;
 * train/watchdog.h) ends a rank that made no progress for that long, so a
 * dead or hung peer can never hang the job; a NaN gradient on some rank
 * makes every rank skip that step (the optimizer driver), counted and
 * reported.
 *
 * Files: the command line is train_opts.c; agreement across ranks, the
 * printed rows and the trace files train_agree.c; this file sets the run
 * up, steps it and writes its results.  What they share is train_int.h.
 */
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <cblas.h>

#include "lbs_config.h"
#include "watchdog.h"
#include "train_int.h"

/* The model's dimensions, before MPI starts or anything is written: 0, or
 * EXIT_BAD_INPUT after one line (on rank 0). */
static int check_input(struct train_run *r)
{
    struct lbs_err e;
    if (lbs_train_parse_model(&r->t.c, &e))
        FAIL("--model", "%s", e.msg);
    return 0;
}

/* Reject a bad spec (and compressor) before MPI starts or anything is
 * written: 0, or EXIT_BAD_INPUT after one line (on rank 0). */
static int check_spec(struct lbs_train_config t)
{
    struct lbs_err e;
    /* Reject a bad spec before MPI starts or anything is written. */
    {
        char name[64];
        const char *args;
        int rc = lbs_spec_split(t.spec, name, sizeof name, &args, &e);
        if (!rc) {
            rc = lbs_optim_check(t.spec, NULL, &e);
            if (rc)
                FAIL("--optim", "%s", e.msg);
            rc = lbs_optim_check(t.spec, t.compress, &e);
            if (rc)
                FAIL("--compress", "%s", e.msg);
        }
        if (rc)
            FAIL("--optim", "%s", e.msg);
    }
    return 0;
}

/* Step 1: every rank got the same options.  0 or the code to exit with
 * (rank 0 printed why). */
static int options_agree(struct train_run *r)
{
    const char *const *names;
    int k = train_options_differ(r->comm, &r->t.c, &names);
    if (k < -1) {
        if (r->rank == 0)
            cli_error("train", "start-up option check failed: %s", r->e.msg);
        return -EIO;
    }
    if (k >= 0) {
        if (r->rank == 0)
            cli_error(names[k], "differs across ranks (every rank must get "
                      "the same options); refusing to start");
        return -EINVAL;
    }
    return 0;
}

/* Step 2a: the run, batch shapes that depend on the rank count, the data,
 * this rank's shard and the step count.  Returns a failure every rank
 * agreed on (printed); *pending: the shard's, agreed on after the model. */
static int setup_data(struct train_run *r, int *pending)
{
    const struct lbs_train_config *t = &r->t.c;
    struct lbs_err *e = &r->e;
    int rc = 0, who, P = r->P, rank = r->rank;
    if (t->global_batch % P)
        rc = lbs_err_set(e, -EINVAL, "%ld is not a multiple of the %d "
                         "ranks", t->global_batch, P);
    if ((rc = lbs_comm_agree(r->comm, rc, &who, NULL))) {
        if (who == rank)
            cli_error("--global-batch", "%s", e->msg);
        return rc;
    }
    rc = lbs_train_new(t, r->comm, &r->tr, e);
    if (!rc) {
        r->info = lbs_train_info(r->tr);
        rc = lbs_train_load(r->tr, e);
    }
    if ((rc = lbs_comm_agree(r->comm, rc, &who, NULL))) {
        if (who == rank)
            cli_error("train", "%s", e->msg);
        return rc;
    }
    if (r->info->note[0] && rank == 0)
        fprintf(stderr, "lbscale: train: note: %s\n", r->info->note);
    *pending = lbs_train_shard(r->tr, e);
    return 0;
}

/* A fault that can never fire would pass as a clean run. */
static int check_fault(const struct train_run *r, struct lbs_err *e)
{
    const struct lbs_train_config *t = &r->t.c;
    long total = r->info->total_steps;
    if (t->fault != LBS_TRAIN_FAULT_NONE && t->fault_rank >= r->P)
        return lbs_err_set(e, -EINVAL, "--fault %s: rank %ld is not one of "
                           "the %d ranks (0..%d)", t->fault_str,
                           t->fault_rank, r->P, r->P - 1);
    if (t->fault != LBS_TRAIN_FAULT_NONE && t->fault_step > total)
        return lbs_err_set(e, -EINVAL, "--fault %s: step %ld is past the "
                           "run's last step (%ld)", t->fault_str,
                           t->fault_step, total);
    return 0;
}

/* Step 2b: model, effective spec, optimizer (over the traced comm) and
 * the batch buffers; rc from setup_data goes in. */
static int setup_model(struct train_run *r, int rc)
{
    struct lbs_err *e = &r->e;
    int who;
    if (!rc)
        rc = check_fault(r, e);
    if (!rc)
        rc = lbs_train_model(r->tr, e);
    /* DecentLaM on a directed graph (recorded in the row as "warning") */
    if (!rc && r->info->warning[0] && r->rank == 0)
        fprintf(stderr, "lbscale: train: WARNING: %s\n", r->info->warning);
    if (!rc)
        rc = lbs_comm_record_wrap(r->comm, &r->tcomm, e);
    if (!rc)
        rc = lbs_train_optim(r->tr, r->tcomm, e);
    if ((rc = lbs_comm_agree(r->comm, rc, &who, NULL)) && who == r->rank)
        cli_error("train", "%s", e->msg);
    return rc;
}

/* Step 3: the run directory (rank 0), only now that the input is good,
 * and where the trace goes: every rank needs it with --trace-all-ranks. */
static int open_results(struct train_run *r)
{
    int rc = 0, who;
    if (r->rank == 0)
        rc = cli_open_run(&r->com, "train", r->argc, r->argv, &r->run);
    if ((rc = lbs_comm_agree(r->comm, rc, &who, NULL)))
        return rc;
    if (r->run) {
        snprintf(r->rundir, sizeof r->rundir, "%s", lbs_run_dir(r->run));
        train_pick_trace_base(r->info->spec, r->t.c.compress, r->trbase,
                              sizeof r->trbase);
    }
    /* the trace's final name is chosen by rank 0 when it writes it */
    if (r->P > 1 && r->t.trace_all && r->com.save &&
        (rc = lbs_bcast(r->comm, r->rundir, sizeof r->rundir, LBS_UINT8, 0,
                        -1)))
        return rc;
    return 0;
}

static void print_header(const struct train_run *r)
{
    const struct lbs_train_config *t = &r->t.c;
    const struct lbs_train_info *i = r->info;
    printf("# train %s on %s (%s%s), %d rank%s, global batch %ld = %d x "
           "%zu (micro %zu), %ld steps, lr rule: %s\n", i->spec,
           t->model, i->data->name, i->note[0] ? ", fallback" : "", r->P,
           r->P > 1 ? "s" : "", t->global_batch, r->P, i->local, i->micro,
           i->total_steps, i->lr_rule);
    printf("# %6s %7s %9s %9s %9s %9s %9s %7s %9s\n", "epoch", "step",
           "lr", "trn_loss", "trn_acc", "tst_loss", "tst_acc", "skipped",
           "wall(s)");
    fflush(stdout);
}

/* --fault: this rank at this step dies or hangs (NaN is the library's). */
static void inject_fault(const struct lbs_train_config *t, int rank, long it)
{
    if (t->fault != LBS_TRAIN_FAULT_NONE && it == t->fault_step &&
        rank == t->fault_rank) {
        if (t->fault == LBS_TRAIN_FAULT_KILL)
            raise(SIGKILL);
        if (t->fault == LBS_TRAIN_FAULT_HANG)
            for (;;)
                pause();
    }
}

/* The step's trace lines: its communication calls, then the step. */
static void trace_step(struct train_run *r, const struct lbs_train_step *st,
                       const struct lbs_comm_record_entry *e, size_t ne,
                       double comm,
                       double t0)
{
    struct strbuf *b = &r->tr_lines;
    long it = st->it;
    for (size_t i = 0; i < ne; i++) {
        struct lbs_comm_record_entry x = e[i];
        char line[LBS_TRACE_LINE_MAX];
        x.step = it;        /* the trainer's iteration */
        lbs_trace_call_line(line, sizeof line, &x, 0, LBS_TRACE_TIMED);
        sb_printf(b, "%s\n", line);
    }
    sb_printf(b, "{\"type\":\"step\",\"step\":%ld,\"skipped\":%d,"
              "\"lr_scale\":%.6g,\"loss\":%.6g,\"keep\":[", it, st->skipped,
              st->lr_scale, st->loss);
    for (size_t l = 0; l < st->nlayers; l++)
        sb_printf(b, "%s%d", l ? "," : "", st->keep[l]);
    sb_printf(b, "]");
    train_sb_ms_array(b, "fwd_ms", st->fwd_s, st->nlayers);
    train_sb_ms_array(b, "bwd_ms", st->bwd_s, st->nlayers);
    train_sb_ms_array(b, "wgrad_ms", st->wgrad_s, st->nlayers);
    sb_printf(b, ",\"data_ms\":%.4f,\"optim_ms\":%.4f,\"comm_ms\":%.4f,"
              "\"comm_calls\":%zu,\"step_ms\":%.4f}\n", st->data_s * 1e3,
              st->optim_s * 1e3, comm * 1e3, ne, (cli_now() - t0) * 1e3);
}

/* One step over the traced comm: its calls metered, traced when asked.
 * Returns lbs_train_step's code (0, 1 skipped, <0). */
static int traced_step(struct train_run *r, long it,
                       struct lbs_train_step *st)
{
    double t0 = cli_now();
    lbs_comm_record_clear(r->tcomm);
    int rc = lbs_train_step(r->tr, it, st, &r->e);
    if (rc < 0)
        return rc;
    size_t ne;
    const struct lbs_comm_record_entry *e =
        lbs_comm_record_entries(r->tcomm, &ne);
    double comm = 0;
    for (size_t i = 0; i < ne; i++) {
        comm += e[i].seconds;
        r->bytes[e[i].kind] += e[i].bytes;
        r->calls[e[i].kind]++;
        /* what this rank injects: a neighbour buffer goes to each peer */
        r->sent += e[i].kind == LBS_COLL_NEIGHBOR
                       ? e[i].bytes * (size_t)e[i].peers : e[i].bytes;
    }
    r->t_comm += comm;
    if (r->tracing)
        trace_step(r, st, e, ne, comm, t0);
    return rc;
}

/* The per-epoch row: evaluate, print (rank 0), append to the curve. */
static int epoch_row(struct train_run *r, long it)
{
    json_t *row;
    double e0 = cli_now();
    lbs_watchdog_pet(LBS_UNIT_EVAL);
    int rc = lbs_train_evaluate(r->tr, it, &row, &r->e);
    if (rc) {
        cli_error("train", "rank %d, evaluation: %s", r->rank, r->e.msg);
        return rc;
    }
    lbs_watchdog_took(LBS_UNIT_EVAL, cli_now() - e0);
    if (r->rank == 0)
        train_print_row(row, r->com.json);
    json_array_append_new(r->curve, row);
    return 0;
}

/* --consensus-every N: after every N-th step, the consensus distance. */
static int consensus_point(struct train_run *r, long it)
{
    long n = r->t.c.consensus_every;
    double rms;
    if (!n || it % n)
        return 0;
    int rc = lbs_train_consensus(r->tr, it, &rms, &r->e);
    if (rc)
        cli_error("train", "rank %d, consensus after step %ld: %s", r->rank,
                  it, r->e.msg);
    return rc;
}

/* Step 4: the steps, with an evaluation at every epoch's end and at the
 * last step. */
static int train_loop(struct train_run *r)
{
    double train0 = cli_now();
    long it;
    struct lbs_train_step st;
    for (it = 1; it <= r->info->total_steps; it++) {
        lbs_watchdog_pet(LBS_UNIT_STEP);
        double s0 = cli_now();
        inject_fault(&r->t.c, r->rank, it);
        int rc = traced_step(r, it, &st);
        if (rc < 0) {
            cli_error("train", "rank %d, step %ld: %s", r->rank, it,
                      r->e.msg);
            return rc;
        }
        if (rc == 1 && r->rank == 0)
            fprintf(stderr, "lbscale: train: %s\n", r->e.msg);
        lbs_watchdog_took(LBS_UNIT_STEP, cli_now() - s0);
        if ((rc = consensus_point(r, it)))
            return rc;
        if (st.evaluate && (rc = epoch_row(r, it)))
            return rc;
    }
    lbs_watchdog_pet(LBS_UNIT_EVAL);   /* the closing reductions and writes */
    r->train_s = cli_now() - train0;
    r->steps = it - 1;
    return 0;
}

/* Step 5a: totals over ranks: times averaged, bytes the maximum. */
static int reduce_totals(struct train_run *r)
{
    int64_t *by = r->by;
    for (int q = 0; q < LBS_COLL_COUNT; q++) {
        by[q] = (int64_t)r->bytes[q];
        by[LBS_COLL_COUNT + q] = (int64_t)r->calls[q];
    }
    by[2 * LBS_COLL_COUNT] = (int64_t)r->sent;
    double comm = r->t_comm;
    r->comm->err = &r->e;
    int rc = lbs_train_totals(r->tr, &r->e);
    if (!rc && r->P > 1 &&
        !(rc = lbs_allreduce(r->comm, &comm, 1, LBS_FLOAT64, LBS_SUM, -1)))
        rc = lbs_allreduce(r->comm, by, 2 * LBS_COLL_COUNT + 1, LBS_INT64,
                           LBS_MAX, -1);
    if (rc) {
        cli_error("train", "rank %d: %s", r->rank, r->e.msg);
        return rc;
    }
    r->comm_s = comm / r->P;
    return 0;
}

/* comm_by_kind of the final row; *bsum, *calls: the totals. */
static json_t *bytes_by_kind(const int64_t *by, long long *bsum,
                             long long *calls)
{
    json_t *bk = json_object();
    *bsum = *calls = 0;
    for (int q = 0; q < LBS_COLL_COUNT; q++) {
        *bsum += by[q];
        *calls += by[LBS_COLL_COUNT + q];
        if (by[LBS_COLL_COUNT + q])
            json_object_set_new(bk, lbs_coll_name((enum lbs_coll)q),
                                json_pack("{s:I,s:I}", "bytes",
                                          (json_int_t)by[q], "calls",
                                          (json_int_t)by[LBS_COLL_COUNT + q]));
    }
    return bk;
}

/* Step 5b: the final row: the run's, then the command line and the trace. */
static json_t *final_row(struct train_run *r)
{
    struct lbs_train_costs c = {.train_s = r->train_s, .comm_s = r->comm_s,
                                .sent_bytes = r->by[2 * LBS_COLL_COUNT]};
    c.comm_by_kind = bytes_by_kind(r->by, &c.comm_bytes, &c.comm_calls);
    json_t *row = lbs_train_final_row(r->tr, &c);
    if (!row)
        return NULL;
    json_t *av = json_array();
    for (int q = 0; q < r->argc; q++)
        json_array_append_new(av, json_string(r->argv[q]));
    json_object_set_new(row, "argv", av);
    json_object_set_new(row, "parameters",
                        json_integer((json_int_t)r->info->model->nparams));
    json_object_set_new(row, "trace", r->t.trace && r->com.save
                        ? json_sprintf(r->t.trace_all ? "%s.rank*.jsonl"
                                                      : "%s.jsonl",
                                       r->trbase)
                        : json_null());
    return row;
}

/* Step 6: traces and results; the row is consumed. */
static int write_results(struct train_run *r, json_t *row)
{
    const struct train_opts *t = &r->t;
    int rc = 0, who;
    int tracing = t->trace && r->com.save;
    if (tracing && r->rank == 0)
        rc = train_write_trace(r, &r->e);
    if (tracing && t->trace_all && r->P > 1) {
        /* rank 0's claimed name, then every other rank's file */
        int brc = lbs_bcast(r->comm, r->trbase, sizeof r->trbase, LBS_UINT8,
                            0, -1);
        if (!rc && brc)
            rc = lbs_err_set(&r->e, brc, "trace: broadcast failed");
        if (!rc && r->rank != 0)
            rc = train_write_trace(r, &r->e);
    }
    if (rc)
        cli_error("train", "rank %d: %s", r->rank, r->e.msg);
    if (tracing)
        json_object_set_new(row, "trace", json_sprintf(t->trace_all
                            ? "%s.rank*.jsonl" : "%s.jsonl", r->trbase));
    if (r->rank == 0) {
        train_print_row(row, r->com.json);
        if (r->run) {
            json_t *res = json_deep_copy(row);
            json_object_set(res, "curve", r->curve);
            if (rc)
                json_decref(res);
            else if ((rc = lbs_run_append(r->run, "train", res, &r->e)))
                cli_error("train", "%s", r->e.msg);
            else if (!r->com.json)
                fprintf(stderr, "results: %s/train.jsonl\n",
                        lbs_run_dir(r->run));
        }
    }
    json_decref(row);
    return lbs_comm_agree(r->comm, rc, &who, NULL);
}

static void train_run_free(struct train_run *r)
{
    lbs_watchdog_off();
    json_decref(r->curve);
    lbs_run_close(r->run);
    lbs_train_free(r->tr);
    lbs_comm_free(r->tcomm);
    free(r->tr_lines.p);
    lbs_comm_free(r->comm);
}

/* After the input checks: MPI, the run and its results. */
static int train_main(struct train_run *r)
{
    cli_threads(r->t.c.threads);
    openblas_set_num_threads((int)r->t.c.threads);

    r->t.c.wall0 = lbs_train_now();
    const char *backend = r->t.backend ? r->t.backend
                          : (LBS_HAVE_MPI && train_under_mpirun()) ? "mpi"
                                                                 : "self";
    int rc = lbs_comm_new(backend, &r->comm, &r->e);
    if (rc) {
        if (!train_quiet_rank)
            cli_error("--comm", "%s", r->e.msg);
        return cli_exit_code(rc);
    }
    r->comm->err = &r->e;
    r->rank = r->comm->rank;
    r->P = r->comm->size;
    train_quiet_rank = 0;
    lbs_watchdog_init(r->rank, r->t.stall);
    r->curve = json_array();
    snprintf(r->trbase, sizeof r->trbase, "train-trace");

    int pending = 0;
    if (!(rc = options_agree(r)) && !(rc = setup_data(r, &pending)) &&
        !(rc = setup_model(r, pending)) &&
        !(rc = open_results(r))) {
        if (r->rank == 0 && !r->com.json)
            print_header(r);
        r->tracing = r->t.trace && r->com.save &&
                     (r->t.trace_all || r->rank == 0);
        if (!(rc = train_loop(r)) && !(rc = reduce_totals(r))) {
            json_t *row = final_row(r);
            rc = row ? write_results(r, row)
                     : lbs_err_set(&r->e, -ENOMEM, "out of memory");
            if (!row)
                cli_error("train", "rank %d: %s", r->rank, r->e.msg);
        }
    }
    train_run_free(r);
    return cli_exit_code(rc);
}

int verb_train(int argc, char **argv)
{
    struct train_run r = {
        .argc = argc, .argv = argv, .com = {.save = 1},
        .t = {.c = {.model = MLP_DEFAULT, .dataset = "auto",
                    .decay = "cosine", .global_batch = 1024, .epochs = 10,
                    .warmup = 0.1, .seed = 1, .threads = 1,
                    .lr_ref_batch = 128, .lr_scaling = "auto"},
              .stall = LBS_STALL_AUTO, .trace = 1},
    };
    train_quiet_rank = train_env_rank() != 0;
    int prc = train_parse_args(argc, argv, &r.t, &r.com);
    if (prc)
        return prc == 1 ? 0 : prc;
    if ((prc = check_input(&r)))
        return prc;
    if (r.t.export_layers)
        return train_export_layers(&r.t);
    if ((prc = check_spec(r.t.c)))
        return prc;
    return train_main(&r);
}
