/* results.h - results/<run-id>/ with meta.json and one JSONL per verb.
 *
 * Whole files (meta.json, traces, logs, figures' data) are written
 * atomically: an O_EXCL temporary at an unpredictable private name in the
 * target's directory (never through a planted symlink), fsync, rename;
 * only over a regular file.  A JSONL row is appended with O_APPEND under
 * an exclusive flock, as one write of a whole line: concurrent writers
 * interleave rows and lose none; a write that fails part way (a full
 * disk) is truncated back, so a row is whole or absent; a row torn by a
 * writer killed inside write() is cut off by the next writer (readers
 * report an unterminated last line and skip it).
 *
 * Attempts.  `lbscale suite` runs every entry with $LBSCALE_ATTEMPT set to
 * a fresh id; rows appended under it carry "attempt": id, and a row counts
 * only once suite.jsonl holds an "ok" entry row with that id (the suite's
 * commit).  A killed attempt's rows are therefore never read
 * (lbs_run_rows) and are purged when the suite is resumed
 * (lbs_run_purge_uncommitted): every entry's rows appear exactly once.
 *
 * Ownership: lbs_run_open allocates, lbs_run_close frees.
 */
#ifndef LBS_RESULTS_H
#define LBS_RESULTS_H

#include <jansson.h>

#include "lbscale/error.h"

#define LBS_ATTEMPT_ENV "LBSCALE_ATTEMPT"
#define LBS_ATTEMPT_MAX 64

struct lbs_run;

/* The machine description for meta.json (a new object), called once per
 * new run directory with the command line (bench/meta.c: lbs_meta_collect). */
typedef json_t *lbs_meta_fn(int argc, char **argv);

/* dir: an existing or new run directory; NULL = new one under the results
 * root ($LBSCALE_RESULTS or ./results) named <UTC>-<git rev>.  Writes
 * meta.json if the directory has none, removes temporaries of dead
 * writers; meta makes meta.json's object (NULL: only {"command": argv}).
 * A bad path (empty, too long, a file, not creatable) is -EINVAL
 * with the path named; the machine failing is -EIO. */
int lbs_run_open(const char *dir, lbs_meta_fn *meta, int argc, char **argv,
                 struct lbs_run **out, struct lbs_err *err);
const char *lbs_run_dir(const struct lbs_run *r);
/* The attempt id rows are stamped with ("" outside a suite). */
const char *lbs_run_attempt(const struct lbs_run *r);
/* Append row (reference stolen) to <verb>.jsonl as one locked write. */
int lbs_run_append(struct lbs_run *r, const char *verb, json_t *row,
                   struct lbs_err *err);
/* Append every row of the array rows (borrowed) to <verb>.jsonl as one
 * locked write: all of them or none (a run that dies before calling this
 * leaves no rows that look complete). */
int lbs_run_append_rows(struct lbs_run *r, const char *verb, json_t *rows,
                        struct lbs_err *err);
void lbs_run_close(struct lbs_run *r);

/* 0 when dir is a results run (a directory with a meta.json object);
 * -ENOENT or -EINVAL with err naming the problem. */
int lbs_run_valid(const char *dir, struct lbs_err *err);
/* The rows of dir/<verb>.jsonl that count: those of no attempt and those
 * of committed attempts, the latter in the order their runs started
 * (suite --jobs appends them in the order runs end) among the places
 * they hold (new reference; empty array when the file is absent; NULL
 * with err set when a line is not JSON). */
json_t *lbs_run_rows(const char *dir, const char *verb, struct lbs_err *err);
/* The committed attempt ids of a run, as an object's keys, each with when
 * it started: [suite invocation, its "started_s" or the commit's line]
 * (new ref). */
json_t *lbs_run_committed(const char *dir, struct lbs_err *err);
/* Drop the rows and whole-file traces of uncommitted attempts. */
int lbs_run_purge_uncommitted(const char *dir, struct lbs_err *err);

/* Reading results back (report, check, plot, compare, suite --resume). */
/* Largest results file read back. */
#define LBS_JSONL_MAX_BYTES ((size_t)256 << 20)
/* Rows of a JSONL file (new reference; empty array when absent; NULL with
 * err set when a line is not JSON, or the file is not a regular file or is
 * larger than LBS_JSONL_MAX_BYTES).  Read under a shared lock, so no row
 * is half written; an unterminated last line that does not parse is a row
 * torn by a writer that died: skipped, and passed to the torn hook. */
json_t *lbs_jsonl_load(const char *path, struct lbs_err *err);
/* Called for each torn last row a reader skips (path, line number, its
 * length in bytes); the CLI prints it.  NULL: nothing is said. */
typedef void lbs_torn_fn(const char *path, long line, size_t bytes);
void lbs_jsonl_on_torn(lbs_torn_fn *fn);
/* Value of a dotted field path ("comm_by_kind.allreduce.bytes"). */
json_t *lbs_row_field(json_t *row, const char *path);
/* Number of a JSON value (integer or real); NAN when neither. */
double lbs_row_num(json_t *v);

/* Whether two training runs (train.jsonl final rows) may be set side by
 * side in a figure or finding: they must agree on every configuration
 * key both record - ranks, epochs, global_batch, model, dataset, n_train
 * (the data size).  0 when they do; else 1 with the first differing key
 * and both values in why ("ranks 4 vs 1"). */
int lbs_train_config_differs(json_t *a, json_t *b, char *why, size_t len);
/* The filter figures and findings use: the first run r seen becomes *ref;
 * a later one is kept when its configuration matches *ref's.  A run left
 * out counts in *left, and the first one's difference goes to why.  1 to
 * keep r, 0 to leave it out. */
int lbs_train_like_first(json_t **ref, json_t *r, size_t *left, char *why,
                         size_t len);

/* mkdir -p; 0 or -1 with errno set (ENOTDIR when path is a file). */
int lbs_mkdir_p(const char *path);
/* Prefix of every temporary lbscale makes (files and gnuplot's private
 * directories): ".lbscale-tmp.<pid>.<random>" in the target's directory. */
#define LBS_TMP_PREFIX ".lbscale-tmp."
/* 0 when path does not exist or is a regular file; -EINVAL naming what it
 * is otherwise (a device, FIFO, socket, directory or symlink is never
 * replaced).  Verbs call it on their output paths before any work. */
int lbs_out_file_check(const char *path, struct lbs_err *err);
/* Atomically write text to path: an exclusive temporary in path's
 * directory, fsync, rename; refused as lbs_out_file_check says. */
int lbs_write_atomic(const char *path, const char *text, size_t len,
                     struct lbs_err *err);
/* Candidate i (1, 2, ...) of a new file's name, into buf: 0 to try it,
 * 1 to skip it (taken in another form), -1 when it does not fit. */
typedef int lbs_name_fn(void *ctx, int dfd, int i, char *buf, size_t len);
/* path's directory ("." when it has none, "/" at the root) into dir, and
 * *base its last component; -ENAMETOOLONG when dir does not fit len. */
int lbs_path_split(const char *path, char *dir, size_t len,
                   const char **base);
/* Write text as a new file in dir under the first name of name's
 * candidates that does not exist yet, chosen atomically (a rename that
 * never replaces): concurrent writers each get their own name, into
 * chosen.  The file is whole or absent. */
int lbs_write_unique(const char *dir, lbs_name_fn *name, void *ctx,
                     const char *text, size_t len, char *chosen,
                     size_t clen, struct lbs_err *err);
/* Create a fresh temporary (dir: a directory, mode 0700) in dfd with
 * O_EXCL at an unpredictable LBS_TMP_PREFIX name written to name (len >=
 * 64); an open fd (a file) or 0 (a directory), -1 with errno set. */
int lbs_tmp_create(int dfd, char *name, size_t len, int dir);
/* run/name as a real directory of the run (created if absent) into out;
 * -EINVAL when it is a symlink or a file: nothing is written through a
 * link planted inside a run. */
int lbs_run_subdir(const char *run, const char *name, char *out, size_t len,
                   struct lbs_err *err);
/* Append len bytes (whole lines) to path under an exclusive lock. */
int lbs_append_line(const char *path, const char *line, size_t len,
                    struct lbs_err *err);
/* Remove LBS_TMP_PREFIX temporaries in dir whose writer is dead (only
 * those: a user's "notes.tmp.4000000.txt" is not ours to remove). */
void lbs_clean_stale_tmp(const char *dir);

#endif
