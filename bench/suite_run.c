/* suite_run.c - `lbscale suite`'s second phase, one run of an entry at a
 * time (up to --jobs of them at once, suite.c's loop): start it under a
 * fresh attempt id, show progress, commit its row to RUN/suite.jsonl when
 * it ends, keep its output in RUN/logs/; and the summary. */
#include <limits.h>
#include <signal.h>
#include <sys/random.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "lbscale/optim.h"
#include "report.h"
#include "suite_int.h"

#define TAIL_BYTES 2000            /* stderr tail kept in suite.jsonl */

/* ------------------------------------------------------------------ */
/* running                                                              */

static void fmt_dur(double s, char *out, size_t len)
{
    long t = (long)(s + 0.5);
    if (t >= 3600)
        snprintf(out, len, "%ld:%02ld:%02ld", t / 3600, t / 60 % 60, t % 60);
    else
        snprintf(out, len, "%ld:%02ld", t / 60, t % 60);
}

/* Seconds left: what is still to run (its estimates, scaled by how the
 * finished runs compared with theirs, or their mean time) less what the
 * running ones have done (running: their seconds, summed), shared among
 * the runs that go at once; -1 when nothing is known yet. */
static double eta(const struct progress *p, double running)
{
    double left;
    if (p->done_est > 0 && p->todo_est > 0)
        left = p->todo_est * (p->done_s / p->done_est) - running;
    else if (p->done_n)
        left = (p->done_s / (double)p->done_n) * (double)p->todo_n - running;
    else if (p->todo_est > 0)
        left = p->todo_est - running;
    else
        return -1;
    size_t at_once = p->jobs < p->todo_n ? p->jobs : p->todo_n;
    return at_once > 1 ? left / (double)at_once : left;
}

/* Seconds between progress lines when stderr is not a terminal (CI logs):
 * often enough to show life, rare enough to stay readable. */
#define PROGRESS_EVERY_S 30.0

/* $LBSCALE_PROGRESS_S overrides the interval (tests), 0.1 .. 3600 s. */
static double progress_every(void)
{
    const char *e = getenv("LBSCALE_PROGRESS_S");
    double v = e ? atof(e) : 0;
    return v >= 0.1 && v <= 3600 ? v : PROGRESS_EVERY_S;
}

/* The progress line while runs go on (run[0..n-1]): on a terminal
 * rewritten in place every 0.5 s, else a line every progress_every().
 * One at a time it names the entry and its time so far; with --jobs,
 * how many run and which. */
void suite_progress(struct progress *p, const struct job *run, size_t n)
{
    if (!n || cli_now() - p->last < (p->tty ? 0.5 : progress_every()))
        return;
    p->last = cli_now();
    double running = 0;
    char names[96] = "";
    size_t len = 0;
    for (size_t k = 0; k < n; k++) {
        running += p->last - run[k].c.t0;
        if (len < sizeof names)
            len += (size_t)snprintf(names + len, sizeof names - len, "%s%s",
                                    k ? ", " : "", run[k].e->name);
    }
    if (len >= sizeof names)        /* cut: say so */
        memcpy(names + sizeof names - 4, "...", 4);
    char el[32], r[32], et[32] = "?", what[160];
    fmt_dur(cli_now() - p->t0, el, sizeof el);
    fmt_dur(running, r, sizeof r);
    double e = eta(p, running);
    if (e >= 0)
        fmt_dur(e, et, sizeof et);
    else if (e > -1e300 && (p->done_n || p->todo_est > 0))
        snprintf(et, sizeof et, "0:00");
    if (p->jobs > 1)
        snprintf(what, sizeof what, "%zu running: %s", n, names);
    if (p->tty && p->jobs > 1)
        fprintf(stderr, "\r\033[K[%zu/%zu] %s | elapsed %s | ETA %s",
                p->i, p->n, what, el, et);
    else if (p->tty)
        fprintf(stderr, "\r\033[K[%zu/%zu] %s  %s | elapsed %s | ETA %s",
                p->i, p->n, names, r, el, et);
    else if (p->jobs > 1)
        fprintf(stderr, "progress: [%zu/%zu] %s | elapsed %s | ETA %s\n",
                p->i, p->n, what, el, et);
    else
        fprintf(stderr, "progress: [%zu/%zu] %s running %s | elapsed %s | "
                "ETA %s\n", p->i, p->n, names, r, el, et);
    fflush(stderr);
}

/* {file.field}: the field in the last row of RUN/file.jsonl that has it. */
static int resolve_runtime(const char *run, const char *in, char **out,
                           char *why, size_t wlen)
{
    struct strbuf b = {0};
    sb_add(&b, "", 0);
    for (const char *p = in; *p;) {
        const char *q;
        if (p[0] == '{' && p[1] != '{' && (q = strchr(p, '}')) &&
            memchr(p, '.', (size_t)(q - p))) {
            char key[80], file[80];
            snprintf(key, sizeof key, "%.*s", (int)(q - p - 1), p + 1);
            char *dot = strchr(key, '.');
            *dot = '\0';
            snprintf(file, sizeof file, "%s", key);
            struct lbs_err le;
            json_t *rows = lbs_run_rows(run, file, &le);
            json_t *v = NULL;
            for (size_t i = rows ? json_array_size(rows) : 0; !v && i-- > 0;)
                v = lbs_row_field(json_array_get(rows, i), dot + 1);
            char val[512];
            if (!v || suite_var_text(v, val, sizeof val)) {
                snprintf(why, wlen, "no value for {%s.%s}: %s.jsonl in the "
                         "run has no row with '%s' (did an earlier entry "
                         "fail?)", file, dot + 1, file, dot + 1);
                json_decref(rows);
                free(b.p);
                return -ENOENT;
            }
            json_decref(rows);
            sb_add(&b, val, strlen(val));
            p = q + 1;
        } else if ((p[0] == '{' && p[1] == '{') || (p[0] == '}' && p[1] == '}')) {
            sb_add(&b, p, 2);
            p += 2;
        } else {
            sb_add(&b, p++, 1);
        }
    }
    suite_unescape(b.p);
    *out = b.p;
    return 0;
}

static json_t *argv_json(char *const *argv)
{
    json_t *a = json_array();
    for (; *argv; argv++)
        json_array_append_new(a, json_string(*argv));
    return a;
}

void suite_utc_now(char *buf, size_t len)
{
    time_t t = time(NULL);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* The last non-empty lines of s, at most TAIL_BYTES. */
static const char *tail_of(const struct strbuf *b)
{
    if (!b->p)
        return "";
    size_t n = b->len;
    while (n && (b->p[n - 1] == '\n' || b->p[n - 1] == ' '))
        n--;
    b->p[n] = '\0';
    return n > TAIL_BYTES ? b->p + n - TAIL_BYTES : b->p;
}

static const char *last_line(const char *s, char *out, size_t len)
{
    const char *nl = strrchr(s, '\n');
    snprintf(out, len, "%s", nl ? nl + 1 : s);
    return out;
}

/* Keys of completed (status ok) runs in RUN/suite.jsonl: "name#rep". */
json_t *suite_done_set(const char *run, struct lbs_err *err)
{
    char path[PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/suite.jsonl", run);
    json_t *rows = lbs_jsonl_load(path, err);
    if (!rows)
        return NULL;
    json_t *done = json_object();
    size_t i;
    json_t *r;
    json_array_foreach(rows, i, r) {
        const char *ev = json_string_value(json_object_get(r, "event"));
        const char *st = json_string_value(json_object_get(r, "status"));
        if (!ev || strcmp(ev, "entry") || !st)
            continue;
        char key[512];
        char *args = json_dumps(json_object_get(r, "args"), JSON_COMPACT);
        snprintf(key, sizeof key, "%s#%lld#%lld#%s",
                 json_string_value(json_object_get(r, "name")),
                 (long long)json_integer_value(json_object_get(r, "rep")),
                 (long long)json_integer_value(json_object_get(r, "ranks")),
                 args ? args : "");
        free(args);
        if (!strcmp(st, "ok"))
            json_object_set_new(done, key, json_true());
        else
            json_object_del(done, key);
    }
    json_decref(rows);
    return done;
}

void suite_entry_key(const struct entry *e, int rep, char *key, size_t len)
{
    char *args = json_dumps(e->args, JSON_COMPACT);
    snprintf(key, len, "%s#%d#%d#%s", e->name, rep, e->ranks, args ? args : "");
    free(args);
}

static void sanitize(const char *in, char *out, size_t len)
{
    size_t i = 0;
    for (; in[i] && i + 1 < len; i++)
        out[i] = strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXY"
                        "Z0123456789_.-", in[i]) ? in[i] : '_';
    out[i] = '\0';
}

/* A fresh id for one attempt at an entry: "<entry>.<rep>.<random>".  The
 * rows the attempt writes carry it and count once the suite's "ok" row
 * with the same id is appended (results.h). */
static void new_attempt(size_t idx, int rep, char *out, size_t len)
{
    uint64_t r = 0;
    if (getrandom(&r, sizeof r, 0) != (ssize_t)sizeof r)
        r = (uint64_t)getpid() << 32 ^ (uint64_t)(cli_now() * 1e9);
    snprintf(out, len, "%zu.%d.%016llx", idx + 1, rep, (unsigned long long)r);
}

/* An entry's status from how its child ended; why says more. */
static const char *child_status(const struct child *c, const struct entry *e,
                                const char *argv0, char *why, size_t wlen)
{
    if (c->spawn_errno) {
        snprintf(why, wlen, "cannot start %s: %s", argv0,
                 strerror(c->spawn_errno));
        return "failed";
    }
    if (c->interrupted) {
        snprintf(why, wlen, "interrupted after %.1f s", c->seconds);
        return "interrupted";
    }
    if (c->timed_out) {
        snprintf(why, wlen, "timed out after %.0f s (entry timeout_s)",
                 e->timeout_s);
        return "failed";
    }
    if (c->exit_code != 0) {
        if (c->signal)
            snprintf(why, wlen, "killed by signal %d", c->signal);
        else
            snprintf(why, wlen, "exit status %d", c->exit_code);
        return "failed";
    }
    return "ok";
}

/* RUN/logs/NNN-name.log: the child's output, kept whole (atomically);
 * row gets its "log". */
static void write_log(const struct suite *s, const struct entry *e, int rep,
                      size_t idx, const char *status, const struct child *c,
                      json_t *row)
{
    struct lbs_err le;
    char dir[PATH_MAX + 8], path[PATH_MAX + 128], nm[96];
    if (lbs_run_subdir(s->run, "logs", dir, sizeof dir, &le)) {
        cli_error(s->o->what, "%s", le.msg);
        suite_io_failed = 1;
        return;
    }
    sanitize(e->name, nm, sizeof nm);
    if (e->repeat > 1)
        snprintf(nm + strlen(nm), sizeof nm - strlen(nm), ".%d", rep);
    snprintf(path, sizeof path, "%s/%03zu-%s.log", dir, idx + 1, nm);
    struct strbuf lg = {0};
    sb_printf(&lg, "# entry %zu '%s': %s\n# stdout%s\n", idx + 1,
               e->name, status, c->out.dropped ? " (head dropped)" : "");
    if (c->out.p)
        sb_add(&lg, c->out.p, c->out.len);
    sb_printf(&lg, "\n# stderr%s\n", c->err.dropped ? " (head dropped)"
                                                    : "");
    if (c->err.p)
        sb_add(&lg, c->err.p, strlen(c->err.p));
    sb_add(&lg, "\n", 1);
    if (!lbs_write_atomic(path, lg.p, lg.len, &le)) {
        json_object_set_new(row, "log", json_string(path + strlen(s->run)
                                                    + 1));
    } else {
        cli_error(s->o->what, "log: %s", le.msg);
        suite_io_failed = 1;
    }
    free(lg.p);
}

/* Tallies, progress and the entry's line (JSON on stdout; the progress
 * line or the failure on stderr). */
static void account(const struct suite *s, const struct entry *e, size_t idx,
                    const char *status, double secs, const char *why,
                    const struct child *c, json_t *row, struct progress *pg,
                    struct tally *t)
{
    t->seconds += secs;
    if (!strcmp(status, "ok"))
        t->ok++;
    else if (!strcmp(status, "skipped"))
        t->skipped++;
    else
        t->failed++;
    pg->done_s += secs;
    pg->done_est += e->est_s;
    pg->todo_est -= e->est_s;
    pg->done_n++;
    pg->todo_n--;
    char d[32], el[32], et[32] = "0:00", ll[256];
    fmt_dur(secs, d, sizeof d);
    fmt_dur(cli_now() - pg->t0, el, sizeof el);
    double eta_s = eta(pg, 0);
    if (eta_s > 0)
        fmt_dur(eta_s, et, sizeof et);
    if (s->o->json) {
        char *txt = json_dumps(row, JSON_COMPACT | JSON_PRESERVE_ORDER);
        puts(txt);
        fflush(stdout);
        free(txt);
    }
    if (pg->tty) {
        fprintf(stderr, "[%zu/%zu] %-8s %-28s %7s   (elapsed %s, ETA %s)%s%s\n",
                pg->done_n, pg->n, status, e->name, d, el, et,
                why[0] ? "\n        " : "", why);
        if (strcmp(status, "ok") && c->err.p && c->err.p[0])
            fprintf(stderr, "        stderr: %s\n",
                    last_line(tail_of(&c->err), ll, sizeof ll));
    } else if (!strcmp(status, "failed")) {
        cli_error(s->o->what, "entry %zu '%s' failed: %s%s%s", idx + 1,
                  e->name, why, c->err.p && c->err.p[0] ? ": " : "",
                  c->err.p ? last_line(tail_of(&c->err), ll, sizeof ll) : "");
    }
}

/* Start one run (j->e, j->rep, j->idx set): its row, a fresh attempt id,
 * the argv with {file.field} resolved from the rows so far, the child.
 * Its row's place in rows is taken now, so the summary lists runs in the
 * order they started whatever the order they end in.  1 while its child
 * runs (suite_children_step, then suite_job_finish); 0 when it is
 * already over (skipped, a placeholder without a value, a child that
 * could not start): suite_job_finish at once. */
int suite_job_start(struct suite *s, struct job *j, struct progress *pg,
                    json_t *rows)
{
    const struct entry *e = j->e;
    char started[32], attempt[LBS_ATTEMPT_MAX + 1];
    suite_utc_now(started, sizeof started);
    new_attempt(j->idx, j->rep, attempt, sizeof attempt);
    json_t *row = json_pack("{s:s,s:i,s:s,s:s,s:i,s:i,s:i,s:O}", "event",
                            "entry", "index", (int)j->idx, "name", e->name,
                            "verb", e->verb, "rep", j->rep, "repeat",
                            e->repeat, "ranks", e->ranks, "args", e->args);
    json_object_set_new(row, "started_utc", json_string(started));
    /* side by side (--jobs): seconds after the suite started, so that a
     * reader of the rows' seconds sees which runs overlapped */
    if (pg->jobs > 1)
        json_object_set_new(row, "started_s", json_real(cli_now() - pg->t0));
    json_object_set_new(row, "attempt", json_string(attempt));
    j->row = row;
    j->status = NULL;
    j->why[0] = '\0';
    j->ran = 0;
    memset(&j->c, 0, sizeof j->c);
    j->slot = json_array_size(rows);
    json_array_append_new(rows, json_null());
    if (e->skip[0]) {
        j->status = "skipped";
        snprintf(j->why, sizeof j->why, "%s", e->skip);
        return 0;
    }
    /* argv: [mpirun flags -np N] exe verb args --out RUN */
    size_t na = json_array_size(e->args);
    char **argv = calloc(na + 16, sizeof *argv);
    char **own = calloc(na + 1, sizeof *own);
    char np[16];
    int n = 0, rc = 0;
    if (e->ranks > 1) {
        snprintf(np, sizeof np, "%d", e->ranks);
        argv[n++] = s->mpirun;
        if (s->openmpi) {
            argv[n++] = "--oversubscribe";
            if (geteuid() == 0)
                argv[n++] = "--allow-run-as-root";
        }
        argv[n++] = "-np";
        argv[n++] = np;
    }
    argv[n++] = s->exe;
    argv[n++] = e->verb;
    for (size_t i = 0; i < na && !rc; i++) {
        rc = resolve_runtime(s->run, json_string_value(
            json_array_get(e->args, i)), &own[i], j->why, sizeof j->why);
        argv[n++] = own[i];
    }
    argv[n++] = "--out";
    argv[n++] = s->run;
    argv[n] = NULL;
    json_object_set_new(row, "argv", rc ? json_null() : argv_json(argv));
    if (rc) {
        j->status = "failed";
    } else {
        j->ran = 1;
        j->argv0 = argv[0];     /* s->mpirun or s->exe: outlives argv */
        suite_child_start(argv, attempt, e->timeout_s, &j->c);
    }
    for (size_t i = 0; i < na; i++)
        free(own[i]);
    free(own);
    free(argv);
    return j->ran && !j->c.spawn_errno;
}

/* The end of a run: its status, its log, its row appended to
 * RUN/suite.jsonl (the commit) and put in its place in rows, tallies and
 * its line. */
void suite_job_finish(struct suite *s, struct lbs_run *run, struct job *j,
                      struct progress *pg, json_t *rows, struct tally *t)
{
    const struct entry *e = j->e;
    json_t *row = j->row;
    struct child *c = &j->c;
    if (j->ran) {
        if (pg->tty)
            fprintf(stderr, "\r\033[K");
        j->status = child_status(c, e, j->argv0, j->why, sizeof j->why);
    }
    json_object_set_new(row, "status", json_string(j->status));
    json_object_set_new(row, "exit_code", j->ran && c->exit_code >= 0
                        ? json_integer(c->exit_code) : json_null());
    if (c->signal)
        json_object_set_new(row, "signal", json_integer(c->signal));
    json_object_set_new(row, "seconds", json_real(j->ran ? c->seconds : 0));
    if (j->why[0])
        json_object_set_new(row, "note", json_string(j->why));
    json_object_set_new(row, "stderr_tail", json_string(tail_of(&c->err)));
    struct lbs_err le;
    if (j->ran)
        write_log(s, e, j->rep, j->idx, j->status, c, row);
    if (lbs_run_append(run, "suite", json_incref(row), &le)) {
        cli_error(s->o->what, "%s", le.msg);
        suite_io_failed = 1;
    }
    json_array_set(rows, j->slot, row);
    account(s, e, j->idx, j->status, j->ran ? c->seconds : 0, j->why, c, row,
            pg, t);
    json_decref(row);
    j->row = NULL;
    suite_child_free(c);
}

void suite_print_summary(struct suite *s, json_t *rows, const struct tally *t,
                         double wall, int plotted, int reported, FILE *f)
{
    char w[32];
    fmt_dur(wall, w, sizeof w);
    char runs[48] = "";
    if (json_array_size(rows) != s->n)
        snprintf(runs, sizeof runs, ", %zu run(s) now", json_array_size(rows));
    fprintf(f, "\n== suite %s: %zu entries%s: %d ok, %d failed, %d skipped"
            " (wall %s) ==\n", s->name, s->n, runs, t->ok, t->failed,
            t->skipped, w);
    if (t->done_before)
        fprintf(f, "   (%d run(s) completed earlier were not repeated)\n",
                t->done_before);
    size_t i;
    json_t *r;
    json_array_foreach(rows, i, r) {
        const char *st = json_string_value(json_object_get(r, "status"));
        char d[32];
        fmt_dur(json_real_value(json_object_get(r, "seconds")), d, sizeof d);
        const char *note = json_string_value(json_object_get(r, "note"));
        char nm[128];
        int rep = (int)json_integer_value(json_object_get(r, "rep"));
        int repeat = (int)json_integer_value(json_object_get(r, "repeat"));
        if (repeat > 1)
            snprintf(nm, sizeof nm, "%s #%d",
                     json_string_value(json_object_get(r, "name")), rep);
        else
            snprintf(nm, sizeof nm, "%s",
                     json_string_value(json_object_get(r, "name")));
        fprintf(f, "  %-11s %-30s %7s%s%s\n", st, nm, d, note ? "  " : "",
                note ? note : "");
        if (st && strcmp(st, "ok") && strcmp(st, "skipped")) {
            char ll[256];
            const char *tl = json_string_value(json_object_get(r,
                                                               "stderr_tail"));
            if (tl && *tl)
                fprintf(f, "  %-11s   stderr: %s\n", "",
                        last_line(tl, ll, sizeof ll));
        }
    }
    fputc('\n', f);
    report_summary_text(s->run, f);
    fprintf(f, "results: %s\n", s->run);
    if (plotted)
        fprintf(f, "figures: %s/plots/\n", s->run);
    if (reported)
        fprintf(f, "report:  %s/report.html\n", s->run);
    if (t->failed)
        fprintf(f, "resume:  lbscale %s%s%s --resume %s  (reruns what did "
                "not succeed)\n", s->o->what,
                strcmp(s->o->what, "suite") ? "" : " ",
                strcmp(s->o->what, "suite") ? "" : s->file, s->run);
}
