/* suite_int.h - what the files of `lbscale suite` share (suite.c,
 * suite_parse.c, suite_child.c, suite_run.c); bench/suite.h is the
 * interface the other verbs use. */
#ifndef LBS_SUITE_INT_H
#define LBS_SUITE_INT_H

#include <limits.h>
#include <signal.h>
#include <sys/types.h>

#include "strbuf.h"
#include "suite.h"

/* Set when the suite's own bookkeeping could not be written (suite.c). */
extern int suite_io_failed;
/* The signal that interrupted the suite, 0 if none (suite_child.c). */
extern volatile sig_atomic_t suite_interrupted;

struct child {
    int exit_code;      /* -1 when killed by a signal */
    int signal;
    int timed_out;
    int interrupted;
    int spawn_errno;    /* fork or exec set-up failed */
    double seconds;
    struct strbuf out, err;
    /* while it runs (suite_child_start .. suite_children_step) */
    pid_t pid;
    int fd[2];          /* its stdout and stderr pipes; -1 once closed */
    int exited, killed, status;
    double t0, timeout_s, kill_at, drain_until;
};

struct entry {
    int src;              /* index in the file's "entries" (messages) */
    char *name;
    char *verb;
    json_t *args;         /* expanded strings; {file.field} kept */
    int ranks, repeat, optional;
    double timeout_s, est_s;
    int reads_rows;       /* an arg has a {file.field}: read at its start */
    char skip[256];       /* non-empty: skip with this note */
};

struct suite {
    const struct suite_opts *o;
    const char *file;     /* for messages */
    char *text;
    json_t *root;
    json_t *vars;         /* suite vars + --set (new reference) */
    char name[64];
    struct entry *e;
    size_t n, cap;
    char exe[PATH_MAX];
    char mpirun[PATH_MAX];
    int openmpi;
    json_t *help_cache;   /* "verb pos..." -> array of option names */
    json_t *built;        /* array of verb names this binary has */
    json_t *names;        /* entry name -> index in the file */
    char run[PATH_MAX];
    int lock_fd;          /* RUN/.lock, held while the suite runs */
    int interleave;       /* repeats in rounds (default), or entry by entry */
};

struct progress {
    int tty;
    size_t i, n;           /* runs started (1-based position), total runs */
    size_t jobs;           /* --jobs: runs at once */
    double t0;             /* suite start */
    double done_s, done_est, todo_est;   /* for the ETA */
    size_t done_n, todo_n;
    double last;
};

struct tally {
    int ok, failed, skipped, done_before;
    double seconds;
};

/* One run of an entry, from its start to its row (suite_run.c). */
struct job {
    const struct entry *e;
    int rep;
    size_t idx;           /* the entry's index in s->e */
    size_t slot;          /* its row's place in rows: the order of starts */
    json_t *row;
    const char *status;   /* NULL while its child runs */
    const char *argv0;    /* for "cannot start" */
    char why[600];
    int ran;
    struct child c;
};

/* suite_child.c */
void suite_on_signal(int sig);
void suite_child_free(struct child *c);
int suite_child_start(char *const argv[], const char *attempt,
                      double timeout_s, struct child *c);
int suite_children_step(struct child *const *c, size_t n);
void suite_child_run(char *const argv[], const char *attempt,
                     double timeout_s, struct child *c);

/* suite_parse.c */
int suite_var_text(json_t *v, char *out, size_t len);
void suite_unescape(char *s);
int suite_parse(struct suite *s);
int suite_probe_built(struct suite *s);
int suite_validate_entry(struct suite *s, struct entry *e);
int suite_entry_times(const struct entry *e);
void suite_find_mpirun(struct suite *s);
void suite_free(struct suite *s);

/* suite_run.c */
void suite_utc_now(char *buf, size_t len);
json_t *suite_done_set(const char *run, struct lbs_err *err);
void suite_entry_key(const struct entry *e, int rep, char *key, size_t len);
int suite_job_start(struct suite *s, struct job *j, struct progress *pg,
                    json_t *rows);
void suite_job_finish(struct suite *s, struct lbs_run *run, struct job *j,
                      struct progress *pg, json_t *rows, struct tally *t);
void suite_progress(struct progress *pg, const struct job *run, size_t n);
void suite_print_summary(struct suite *s, json_t *rows, const struct tally *t,
                         double wall, int plotted, int reported, FILE *f);

#endif
