/* suite.c - `lbscale suite FILE.json`: run a declared list of benchmark
 * entries into one results run, resumable, with progress, figures, a
 * report and a plain-text summary.  The format is in bench/suites/README.md
 * and suite.h.
 *
 * Order of work: read and expand the file, validate every entry (verb
 * known and built into this binary, arguments strings, options the verb's
 * --help lists, optimizer/compressor specs parseable, mpirun present for
 * multi-rank entries) - all before anything runs or any file is written;
 * then run each entry as a child process (fork+exec, own process group,
 * ended when the suite dies, stdout/stderr through pipes, a timeout per
 * entry; up to --jobs of them at once) under a fresh attempt id, and
 * commit it when it ends by appending its row to RUN/suite.jsonl
 * (results.h: rows of uncommitted attempts never count); the child's
 * output is kept in RUN/logs/NNN-name.log (atomically).
 *
 * The phases live apart: suite_parse.c (read, expand, validate),
 * suite_child.c (the child processes), suite_run.c (one entry: run,
 * commit, log; the summary); this file holds the run directory and the
 * order of work.  What they share is suite_int.h.
 */
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <sys/file.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "lbscale/file.h"
#include "plot.h"
#include "report.h"
#include "suite_int.h"

/* Set when the suite's own bookkeeping could not be written (its rows,
 * a log, suite.json, the figures or the report: a full disk): the suite
 * then exits 1 even when every entry passed. */
int suite_io_failed;

/* A suite file is a page of JSON; 16 MiB is far beyond any plan, and the
 * bound (with lbs_read_file's regular-file check) keeps a FIFO or
 * /dev/zero named as the suite from hanging or eating the machine. */
#define SUITE_FILE_MAX_BYTES ((size_t)16 << 20)

static void dry_run_list(struct suite *s)
{
    printf("suite %s: %zu entries\n", s->name, s->n);
    const char *k;
    json_t *v;
    json_object_foreach(s->vars, k, v) {
        char val[512];
        suite_var_text(v, val, sizeof val);
        printf("  var %s = %s\n", k, val);
    }
    for (size_t i = 0; i < s->n; i++) {
        const struct entry *e = &s->e[i];
        printf("%3zu %-28s ", i + 1, e->name);
        if (e->ranks > 1)
            printf("mpirun -np %d ", e->ranks);
        printf("lbscale %s", e->verb);
        size_t j;
        json_t *a;
        json_array_foreach(e->args, j, a)
            printf(" %s", json_string_value(a));
        if (e->repeat > 1)
            printf("  (x%d)", e->repeat);
        if (e->skip[0])
            printf("  [skipped: %s]", e->skip);
        putchar('\n');
    }
}

/* Hold RUN/.lock for the suite's life.  The descriptor is inherited by
 * every child (no O_CLOEXEC), so the lock stays taken until the last
 * process of this suite is gone: a resume cannot start while an orphan of
 * a killed suite may still write.  0, or the exit code. */
static int lock_run(struct suite *s)
{
    char p[PATH_MAX + 16];
    snprintf(p, sizeof p, "%s/.lock", s->run);
    int fd = open(p, O_RDWR | O_CREAT | O_NOFOLLOW, 0644);
    if (fd < 0) {
        cli_error(s->o->what, "cannot open %s: %s", p, strerror(errno));
        return EXIT_RUNTIME;
    }
    /* orphans of a suite killed a moment ago get SIGTERM (PDEATHSIG) and
     * need a little while to end */
    for (int i = 0; flock(fd, LOCK_EX | LOCK_NB); i++) {
        if ((errno != EWOULDBLOCK && errno != EINTR) || i >= 100) {
            cli_error(s->o->what, "%s is in use by another suite or its "
                      "children (lock %s held for 10 s)", s->run, p);
            close(fd);
            return EXIT_BAD_INPUT;
        }
        poll(NULL, 0, 100);
    }
    s->lock_fd = fd;
    return 0;
}

/* An earlier suite in this run may have died inside an entry: drop what
 * its unfinished attempts wrote, so the rerun's rows are the only ones. */
static int purge_run(struct suite *s)
{
    char p[PATH_MAX + 32];
    snprintf(p, sizeof p, "%s/logs", s->run);
    lbs_clean_stale_tmp(p);     /* a log being written when it died */
    snprintf(p, sizeof p, "%s/suite.jsonl", s->run);
    if (access(p, F_OK))
        return 0;
    struct lbs_err e;
    if (lbs_run_purge_uncommitted(s->run, &e)) {
        cli_error(s->o->what, "%s", e.msg);
        return EXIT_RUNTIME;
    }
    return 0;
}

/* --jobs above 1 runs entries side by side: refused (one line, -EINVAL)
 * when an entry times kernels or the link, whose timings its neighbours
 * would disturb (suite_entry_times). */
static int check_jobs(struct suite *s)
{
    for (size_t i = 0; s->o->jobs > 1 && i < s->n; i++) {
        const struct entry *e = &s->e[i];
        if (suite_entry_times(e)) {
            cli_error(s->o->what, "%s: entry %d ('%s'): --jobs %ld runs "
                      "entries side by side, and '%s%s' is a timing (of "
                      "kernels, the link or the simulator) that its "
                      "neighbours would disturb; only train and sim "
                      "entries may run with --jobs above 1", s->file,
                      e->src + 1, e->name, s->o->jobs, e->verb,
                      strcmp(e->verb, "sim") ? "" : " speed");
            return -EINVAL;
        }
    }
    return 0;
}

/* Read, parse and validate the suite (nothing runs yet): 0, or the exit
 * code after one printed line. */
static int load_suite(struct suite *s)
{
    const struct suite_opts *o = s->o;
    if (o->text) {
        s->text = strdup(o->text);
    } else {
        size_t len;
        struct lbs_err fe;
        int frc = lbs_read_file(o->file, SUITE_FILE_MAX_BYTES, &s->text,
                                &len, &fe);
        if (frc) {
            cli_error(o->what, "%s", fe.msg);
            return cli_exit_code(frc);
        }
    }
    if (readlink("/proc/self/exe", s->exe, sizeof s->exe - 1) <= 0) {
        cli_error(o->what, "cannot find this binary (/proc/self/exe)");
        return EXIT_RUNTIME;
    }
    s->help_cache = json_object();
    if (suite_parse(s) || check_jobs(s))
        return EXIT_BAD_INPUT;
    int multi = 0;
    for (size_t i = 0; i < s->n; i++)
        multi |= s->e[i].ranks > 1;
    if (multi)
        suite_find_mpirun(s);
    if (suite_probe_built(s))
        return EXIT_RUNTIME;
    for (size_t i = 0; i < s->n; i++)
        if (suite_validate_entry(s, &s->e[i]))
            return EXIT_BAD_INPUT;
    return 0;
}

/* Where the suite will write, checked as the run would (so --dry-run
 * refuses what the run refuses): --resume names a suite run (its done
 * entries into *done when done is not NULL); --out, when it exists, is a
 * directory whose logs/ is not a planted link.  0, or EXIT_BAD_INPUT
 * after one line. */
static int check_target(const struct suite *s, json_t **done)
{
    const struct suite_opts *o = s->o;
    struct lbs_err le;
    struct stat st;
    char p[PATH_MAX + 32];
    if (o->resume) {
        snprintf(p, sizeof p, "%s/suite.jsonl", o->resume);
        if (access(p, R_OK)) {
            cli_error(o->what, "--resume %s: no suite.jsonl there (not a "
                      "suite run)", o->resume);
            return EXIT_BAD_INPUT;
        }
        json_t *d = suite_done_set(o->resume, &le);
        if (!d) {
            cli_error(o->what, "--resume: %s", le.msg);
            return EXIT_BAD_INPUT;
        }
        if (done)
            *done = d;
        else
            json_decref(d);
    }
    const char *dir = o->resume ? o->resume : o->out;
    if (dir && !stat(dir, &st) && !S_ISDIR(st.st_mode)) {
        cli_error(o->what, "%s: exists and is not a directory", dir);
        return EXIT_BAD_INPUT;
    }
    snprintf(p, sizeof p, "%s/logs", dir ? dir : ".");
    if (dir && !lstat(p, &st) && !S_ISDIR(st.st_mode)) {
        cli_error(o->what, "%s: not a directory of the run (a symbolic link "
                  "or a file); nothing is written through it", p);
        return EXIT_BAD_INPUT;
    }
    return 0;
}

/* The run directory (new, or --resume's with *done the entries already
 * ok there), locked and purged, with suite.json and the start row: 0, or
 * the exit code after one printed line (nothing left open). */
static int open_suite_run(struct suite *s, struct lbs_run **runp,
                          json_t **donep)
{
    const struct suite_opts *o = s->o;
    struct lbs_err le;
    struct lbs_run *run = NULL;
    json_t *done = NULL;
    int rc;
    if ((rc = check_target(s, &done)))
        return rc;
    if ((rc = lbs_run_open(o->resume ? o->resume : o->out, lbs_meta_collect,
                           o->argc, o->argv, &run, &le))) {
        cli_error(o->what, "%s", le.msg);
        json_decref(done);
        return cli_exit_code(rc);
    }
    snprintf(s->run, sizeof s->run, "%s", lbs_run_dir(run));
    char logs[PATH_MAX + 8];
    /* RUN/logs planted as a link elsewhere: refused before any entry */
    if (lbs_run_subdir(s->run, "logs", logs, sizeof logs, &le)) {
        cli_error(o->what, "%s", le.msg);
        lbs_run_close(run);
        json_decref(done);
        return EXIT_BAD_INPUT;
    }
    if ((rc = lock_run(s)) || (rc = purge_run(s))) {
        lbs_run_close(run);
        json_decref(done);
        return rc;
    }
    char p[PATH_MAX + 32], started[32];
    snprintf(p, sizeof p, "%s/suite.json", s->run);
    if (access(p, F_OK) &&
        lbs_write_atomic(p, s->text, strlen(s->text), &le)) {
        cli_error(o->what, "%s", le.msg);
        suite_io_failed = 1;
    }
    suite_utc_now(started, sizeof started);
    json_t *cmd = json_array();
    for (int i = 0; i < o->argc; i++)
        json_array_append_new(cmd, json_string(o->argv[i]));
    json_t *start = json_pack("{s:s,s:s,s:s,s:o,s:O,s:I,s:b,s:s}", "event",
        "start", "suite", s->name, "file", s->file, "command", cmd, "vars",
        s->vars, "entries", (json_int_t)s->n, "resume", o->resume != NULL,
        "started_utc", started);
    /* entries side by side: a reader of their seconds must know (absent:
     * one at a time, as before --jobs existed) */
    if (o->jobs > 1)
        json_object_set_new(start, "jobs", json_integer(o->jobs));
    if (lbs_run_append(run, "suite", start, &le)) {
        cli_error(o->what, "%s", le.msg);
        suite_io_failed = 1;
    }
    *runp = run;
    *donep = done;
    return 0;
}

/* One run to do: an entry and its repetition. */
struct planned {
    size_t idx;
    int rep;
};

/* The runs not done before, in the order they start: interleaved, round
 * r has the r-th repetition of every entry that has one, so an entry's
 * repeats alternate with its neighbours' and drift over the run lands on
 * all of them alike; else each entry's repeats back to back.  Counted
 * into pg and t; a new array of *n runs (NULL: out of memory). */
static struct planned *plan_runs(struct suite *s, json_t *done,
                                 struct progress *pg, struct tally *t,
                                 size_t *n)
{
    size_t total = 0;
    int rounds = 1;
    for (size_t i = 0; i < s->n; i++) {
        total += (size_t)s->e[i].repeat;
        if (s->interleave && s->e[i].repeat > rounds)
            rounds = s->e[i].repeat;
    }
    struct planned *plan = calloc(total ? total : 1, sizeof *plan);
    *n = 0;
    for (int round = 1; plan && round <= rounds; round++)
        for (size_t i = 0; i < s->n; i++) {
            int lo = s->interleave ? round : 1,
                hi = s->interleave ? round : s->e[i].repeat;
            for (int r = lo; r <= hi && r <= s->e[i].repeat; r++) {
                char key[1024];
                suite_entry_key(&s->e[i], r, key, sizeof key);
                if (done && json_object_get(done, key)) {
                    t->done_before++;
                    continue;
                }
                plan[(*n)++] = (struct planned){i, r};
                pg->n++;
                pg->todo_n++;
                pg->todo_est += s->e[i].est_s;
            }
        }
    return plan;
}

/* Every run not done before, up to pg->jobs at once, until interrupted
 * (SIGINT and SIGTERM end the running ones; none starts after).  A run
 * whose arguments read rows of the run ({file.field}) starts only when
 * nothing runs, so it reads every row of the runs before it, as one at a
 * time.  Returns whether the suite was interrupted. */
static int run_entries(struct suite *s, struct lbs_run *run, json_t *done,
                       struct progress *pg, json_t *rows, struct tally *t)
{
    struct sigaction sa = {0}, old_int, old_term;
    sa.sa_handler = suite_on_signal;
    sigaction(SIGINT, &sa, &old_int);
    sigaction(SIGTERM, &sa, &old_term);
    size_t n, next = 0, nrun = 0;
    struct planned *plan = plan_runs(s, done, pg, t, &n);
    /* the running ones, in the order they started */
    struct job running[SUITE_MAX_JOBS];
    struct child *children[SUITE_MAX_JOBS];
    if (!plan) {
        cli_error(s->o->what, "out of memory");
        suite_io_failed = 1;
        n = 0;
    }
    if (pg->tty)
        fprintf(stderr, "%s %s: %zu entries, %zu run(s)%s -> %s\n",
                s->o->what, s->name, s->n, pg->n,
                t->done_before ? " still to do" : "", s->run);
    while (nrun || (next < n && !suite_interrupted)) {
        while (nrun < pg->jobs && next < n && !suite_interrupted &&
               !(nrun && s->e[plan[next].idx].reads_rows)) {
            struct job *j = &running[nrun];
            *j = (struct job){.e = &s->e[plan[next].idx],
                              .rep = plan[next].rep, .idx = plan[next].idx};
            next++;
            pg->i++;
            if (suite_job_start(s, j, pg, rows))
                nrun++;
            else
                suite_job_finish(s, run, j, pg, rows, t);
        }
        for (size_t k = 0; k < nrun; k++)
            children[k] = &running[k].c;
        int k = nrun ? suite_children_step(children, nrun) : -1;
        if (k >= 0) {
            suite_job_finish(s, run, &running[k], pg, rows, t);
            nrun--;
            memmove(&running[k], &running[k + 1],
                    (nrun - (size_t)k) * sizeof *running);
        }
        suite_progress(pg, running, nrun);
    }
    free(plan);
    int was_interrupted = suite_interrupted != 0;
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGTERM, &old_term, NULL);
    return was_interrupted;
}

/* Figures, report and the summary (text, or end as JSON); end consumed. */
static void finish_suite(struct suite *s, json_t *end, json_t *rows,
                         const struct tally *t, double wall,
                         int was_interrupted)
{
    const struct suite_opts *o = s->o;
    struct lbs_err le;
    int plotted = 0, reported = 0;
    if (!o->no_plot && !was_interrupted) {
        int prc = plot_run(s->run, &le);
        if (prc)
            cli_error(o->what, "figures: %s", le.msg);
        else
            plotted = 1;
        /* no gnuplot on this machine is a notice; a figure that could not
         * be written (a full disk, a planted link) is a failure */
        suite_io_failed |= prc && prc != -ENOENT;
        if (report_write(s->run, &le)) {
            cli_error(o->what, "report: %s", le.msg);
            suite_io_failed = 1;
        } else {
            reported = 1;
        }
    }
    if (o->json) {
        json_object_set_new(end, "run", json_string(s->run));
        json_object_set_new(end, "suite", json_string(s->name));
        if (reported) {
            char rp[PATH_MAX + 16];
            snprintf(rp, sizeof rp, "%s/report.html", s->run);
            json_object_set_new(end, "report", json_string(rp));
        }
        char *txt = json_dumps(end, JSON_COMPACT | JSON_PRESERVE_ORDER);
        puts(txt);
        free(txt);
    } else {
        suite_print_summary(s, rows, t, wall, plotted, reported, stdout);
    }
    fflush(stdout);
    json_decref(end);
}

int suite_main(const struct suite_opts *o)
{
    struct suite s = {.o = o, .file = o->file, .lock_fd = -1};
    snprintf(s.name, sizeof s.name, "%s", o->what);
    struct lbs_run *run = NULL;
    json_t *done = NULL;
    suite_io_failed = 0;
    int rc = load_suite(&s);
    if (rc)
        goto out;
    if (o->dry_run) {
        /* the same refusals as the run, then the list */
        if (!(rc = check_target(&s, NULL)))
            dry_run_list(&s);
        goto out;
    }
    if ((rc = open_suite_run(&s, &run, &done)))
        goto out;
    struct progress pg = {.tty = isatty(2), .t0 = cli_now(),
                          .jobs = o->jobs > 1 ? (size_t)o->jobs : 1};
    pg.last = pg.t0;     /* non-tty: the first line after the interval */
    struct tally t = {0};
    json_t *rows = json_array();
    int was_interrupted = run_entries(&s, run, done, &pg, rows, &t);
    double wall = cli_now() - pg.t0;
    char ended[32];
    struct lbs_err le;
    suite_utc_now(ended, sizeof ended);
    json_t *end = json_pack("{s:s,s:i,s:i,s:i,s:i,s:f,s:s,s:b}", "event",
        "end", "ok", t.ok, "failed", t.failed, "skipped", t.skipped,
        "done_before", t.done_before, "wall_s", wall, "ended_utc", ended,
        "interrupted", was_interrupted);
    if (lbs_run_append(run, "suite", json_incref(end), &le)) {
        cli_error(o->what, "%s", le.msg);
        suite_io_failed = 1;
    }
    lbs_run_close(run);
    finish_suite(&s, end, rows, &t, wall, was_interrupted);
    json_decref(rows);
    json_decref(done);
    if (was_interrupted) {
        cli_error(o->what, "interrupted; resume with: lbscale %s%s%s "
                  "--resume %s", o->what, strcmp(o->what, "suite") ? "" : " ",
                  strcmp(o->what, "suite") ? "" : s.file, s.run);
        rc = 130;
    } else {
        rc = t.failed || suite_io_failed ? EXIT_RUNTIME : 0;
    }
out:
    suite_free(&s);
    return rc;
}

/* ------------------------------------------------------------------ */
/* the verb                                                             */

static const char suite_usage[] =
"usage: lbscale suite FILE.json [--out DIR | --resume RUN] [--set KEY=VALUE]\n"
"                     [--jobs N] [--dry-run] [--no-plot] [--json]";

static const char suite_about[] =
"Runs the suite's entries (benchmark verbs with arguments, rank counts for\n"
"mpirun, repetitions) as child processes into one results/<run-id>/, then\n"
"draws the figures (lbscale plot), writes report.html (lbscale report) and\n"
"prints a plain-text summary.  Every entry is validated before anything\n"
"runs (bad input: exit 2).  A failing entry is recorded as failed with its\n"
"stderr tail and the suite goes on; the exit status is then 1.\n"
"Each entry is recorded in RUN/suite.jsonl; its output in RUN/logs/.\n"
"Example suites: bench/suites/{quick,full,convergence,scaling,ci}.json;\n"
"the format is described in bench/suites/README.md.";

static const char suite_epilog[] =
"Progress (entry i of n, elapsed, ETA) goes to stderr when it is a\n"
"terminal; otherwise only failures are reported there.  Ctrl-C stops the\n"
"running entries and the suite (exit 130); --resume continues it.\n\n"
"--jobs N is for training grids on a many-core machine (hundreds of\n"
"`train --threads 1` entries): N entries run at once, each as alone (its\n"
"process group, timeout, log and row, committed when it ends; rows in the\n"
"order entries end).  A suite with a timing entry (stream, optim,\n"
"compress, coll, sim speed) is refused with --jobs above 1: entries side\n"
"by side would disturb each other's timings.";

int suite_set_opt(json_t *vars, const char *what, const char *v)
{
    const char *eq = v ? strchr(v, '=') : NULL;
    if (!eq || eq == v) {
        cli_error(what, "--set needs KEY=VALUE (got '%s')", v ? v : "");
        return -EINVAL;
    }
    char key[128];
    snprintf(key, sizeof key, "%.*s", (int)(eq - v), v);
    json_object_set_new(vars, key, json_string(eq + 1));
    return 0;
}

int suite_set_call(const char *opt, const char *value, void *dst)
{
    (void)opt;
    const struct suite_opts *o = dst;
    return suite_set_opt(o->vars, o->what, value);
}

int verb_suite(int argc, char **argv)
{
    json_t *vars = json_object();
    struct suite_opts o = {.what = "suite", .argc = argc, .argv = argv,
                           .vars = vars};
    const struct cli_opt opts[] = {
        SUITE_RUN_OPTS(&o),
        {.name = "jobs", .type = CLI_LONG, .dst = &o.jobs, .arg = "N",
         .lo = 1, .hi = SUITE_MAX_JOBS,
         .help = "run up to N entries at once (1-64, default 1);\n"
                 "train and sim entries only (see below)"},
        {0}};
    const struct cli_verb verb = {.name = "suite", .usage = suite_usage,
                                  .about = suite_about, .opts = opts,
                                  .epilog = suite_epilog};
    char **pos;
    int npos;
    /* getopt_long moves the file behind the options; meta.json records
     * the command line as typed, so the parser gets a copy */
    char **args = malloc(((size_t)argc + 1) * sizeof *args);
    int rc = EXIT_RUNTIME;
    if (!args)
        goto out;
    memcpy(args, argv, ((size_t)argc + 1) * sizeof *args);
    rc = cli_parse(&verb, argc, args, &pos, &npos);
    if (rc) {
        rc = rc < 0 ? EXIT_BAD_INPUT : 0;
        goto out;
    }
    rc = EXIT_BAD_INPUT;
    if (npos > 1) {
        cli_error("suite", "one suite file only (got '%s' and '%s')",
                  pos[0], pos[1]);
        goto out;
    }
    o.file = npos ? pos[0] : NULL;
    if (!o.file) {
        cli_error("suite", "a suite file is required (see --help)");
        goto out;
    }
    if (o.out && o.resume) {
        cli_error("suite", "--out and --resume exclude each other (--resume "
                  "RUN writes into RUN)");
        goto out;
    }
    rc = suite_main(&o);
out:
    free(args);
    json_decref(vars);
    return rc;
}
