/* results.h - results/<run-id>/ with meta.json and one JSONL per verb.
 *
 * Every file is written atomically (temporary file in the same directory,
 * fsync, rename), so an interrupted run leaves either the previous
 * complete file or the new complete file, never a truncated one.  A JSONL
 * file is rewritten whole after each appended row: rows are few and
 * small, and a crash loses at most the row being written.
 * Ownership: lbs_run_open allocates, lbs_run_close frees (rows included).
 */
#ifndef LBS_RESULTS_H
#define LBS_RESULTS_H

#include <jansson.h>

#include "lbscale/error.h"

struct lbs_run;

/* dir: an existing or new run directory; NULL = new one under the results
 * root ($LBSCALE_RESULTS or ./results) named <UTC>-<git rev>.  Writes
 * meta.json if the directory has none. */
int lbs_run_open(const char *dir, int argc, char **argv, struct lbs_run **out,
                 struct lbs_err *err);
const char *lbs_run_dir(const struct lbs_run *r);
/* Append row (reference stolen) to <verb>.jsonl and rewrite it atomically. */
int lbs_run_append(struct lbs_run *r, const char *verb, json_t *row,
                   struct lbs_err *err);
void lbs_run_close(struct lbs_run *r);

/* mkdir -p; 0 or -1 with errno set. */
int lbs_mkdir_p(const char *path);
/* Atomically write text to path. */
int lbs_write_atomic(const char *path, const char *text, size_t len,
                     struct lbs_err *err);
/* The machine description that meta.json holds (new reference). */
json_t *lbs_meta_collect(int argc, char **argv);

#endif
