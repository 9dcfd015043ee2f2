/* sim_internal.h - helpers shared by the sim readers (sim/ only).
 *
 * Strict field readers over jansson values: every failure writes
 * "<file>: field '<path>': <why>" into the context's err and returns
 * -EINVAL, so each reader names the file and the field without repeating
 * the message code.  Numbers must be JSON numbers (strings are refused),
 * finite, within range; integers must be integral.
 */
#ifndef LBS_SIM_INTERNAL_H
#define LBS_SIM_INTERNAL_H

#include <jansson.h>

#include "lbscale_sim.h"

struct sj {
    const char *file;
    struct lbs_err *err;
};

#define SJ_REQ 1u        /* the field must be present */
#define SJ_INT 2u        /* the value must be integral */
#define SJ_LO_OPEN 4u    /* value > lo (else >= lo) */

/* obj[key] as a number in [lo, hi] (see flags); def when absent and not
 * required.  path prefixes key in messages ("node." + "gpus"). */
int sj_num(const struct sj *c, const json_t *obj, const char *path,
           const char *key, unsigned flags, double def, double lo, double hi,
           double *out);
/* obj[key] as a string copied into buf (len bytes, must fit); def when
 * absent and not required (def may be NULL: empty string). */
int sj_str(const struct sj *c, const json_t *obj, const char *path,
           const char *key, unsigned flags, const char *def, char *buf,
           size_t len);
/* Refuse keys of obj not in keys (NULL-terminated): typos must not
 * silently fall back to defaults. */
int sj_known(const struct sj *c, const json_t *obj, const char *path,
             const char *const *keys);
/* obj[key] as an object (NULL when absent and not required). */
int sj_obj(const struct sj *c, const json_t *obj, const char *path,
           const char *key, unsigned flags, json_t **out);
/* Error helper with the standard prefix. */
int sj_fail(const struct sj *c, const char *path, const char *key,
            const char *fmt, ...) __attribute__((format(printf, 4, 5)));
/* Check format/version fields of a document. */
int sj_header(const struct sj *c, const json_t *root, const char *format,
              int version);
/* Parse text as one JSON object, naming file (and line) on failure. */
int sj_load(const struct sj *c, const char *text, size_t len, json_t **out);
/* Read a whole regular file of at most cap bytes (NUL-terminated; caller
 * frees); with nul_ok == 0 a NUL byte inside is refused too (the JSON
 * documents are C strings). */
int sj_read_file(const char *path, size_t cap, int nul_ok, char **text,
                 size_t *len, struct lbs_err *err);
/* Parse the text of one file (len bytes, NUL-terminated) into *out (a
 * reader's own object pointer), naming file in messages. */
typedef int (*sj_parse_fn)(const char *text, size_t len, const char *file,
                           void *out, struct lbs_err *err);
/* The one way the readers open their files: sj_read_file (a regular file
 * of at most cap bytes; NUL bytes refused unless nul_ok), then parse;
 * the text is freed before returning. */
int sj_load_file(const char *path, size_t cap, int nul_ok,
                 sj_parse_fn parse, void *out, struct lbs_err *err);
/* qsort comparator of doubles (ascending), and the median of x[0..n-1]
 * (n >= 1; sorts x in place). */
int sj_cmp_double(const void *a, const void *b);
double sj_median(double *x, size_t n);
/* idx[0..m) dealt alternately: even positions to even[] (*ne), odd to
 * odd[] (*no); even may be idx itself (the held-out split of the fits:
 * every other message size). */
void sj_alternate(const size_t *idx, size_t m, size_t *even, size_t *ne,
                  size_t *odd, size_t *no);
/* calib.c, shared with calib_net.c: the bandwidth column of a fitted
 * collective (allreduce 0, allgather(v) 1, alltoall 2, bcast 3; -1 for
 * none, the barrier), and ceil(log2 x) for x >= 1. */
int sj_calib_col(enum lbs_coll c);
int sj_clog2(long x);
/* Gauss-Jordan elimination with partial pivoting of the m x (m + 1)
 * augmented system A (row-major, stride doubles a row), in place: after
 * it, row a holds A[a][a] x_a = A[a][m].  -1 when a pivot is below 1e-9
 * (singular: the fit cannot separate its unknowns).  The least-squares
 * fits of calib.c and calib_net.c share it. */
int sj_gauss_jordan(double *A, int m, int stride);
/* nccl.c: the time (s) of one call under NCCL's tuner model (platforms
 * with "nccl"), one function per family of algorithms, hung on coll.c's
 * algorithm table; *wire gets the bytes one GPU moves; INFINITY when the
 * algorithm/protocol does not apply. */
typedef double lbs_sim_nccl_fn(const struct lbs_sim_net *net,
                               enum lbs_sim_algo a, enum lbs_sim_proto p,
                               double bytes, enum lbs_topo topo, long step,
                               double *wire);
lbs_sim_nccl_fn lbs_sim_nccl_allreduce, lbs_sim_nccl_allgather,
    lbs_sim_nccl_bcast, lbs_sim_nccl_barrier, lbs_sim_nccl_alltoall,
    lbs_sim_nccl_neighbor;
/* coll.c, from sim/algos.h's nccl_as column: the algorithms a GPU
 * platform's nccl.algorithms item nccl_name ("ring") enables, as bits of
 * enum lbs_sim_algo (0: no such name); nccl_name NULL: those NCCL runs
 * always.  _names: the distinct names, "ring, tree, nvls", into buf. */
unsigned lbs_sim_nccl_algos(const char *nccl_name);
void lbs_sim_nccl_algo_names(char *buf, size_t len);
/* coll.c: the destinations of one rank (offsets, core's lbs_topo_offsets)
 * in a graph priced by direct sends (ring, exponential, onepeer) at
 * `step` (steps < 1 read as 1); 0 for any other graph (full is priced as
 * an allgather). */
int lbs_sim_nb_offsets(enum lbs_topo topo, long P, long step,
                       long d[LBS_SIM_LOGMAX]);
/* preset.c: 1 when s names a file rather than a preset (has a '/' or
 * ends in ext). */
int sim_is_path(const char *s, const char *ext);
/* Copy a path into a fixed buffer, keeping the tail when too long. */
void sj_copy_path(char *dst, size_t len, const char *path);
/* samples.c: append one sample (-ENOMEM). */
int lbs_sim_sample_add(struct lbs_sim_samples *set, struct lbs_sim_sample x,
                       struct lbs_err *err);
/* samples_ext.c: the readers of other tools' output (lbs_sim_samples_parse
 * picks one); each appends samples or fails naming path and the problem. */
int lbs_sim_nccl_json_is(const char *text, size_t len);
int lbs_sim_read_nccl_json(const char *path, const char *text, size_t len,
                           const struct lbs_sim_samples_in *in,
                           struct lbs_sim_samples *set, struct lbs_err *err);
int lbs_sim_read_nccl_text(const char *path, const char *text, size_t len,
                           const struct lbs_sim_samples_in *in,
                           struct lbs_sim_samples *set, struct lbs_err *err);
int lbs_sim_read_osu(const char *path, const char *text, size_t len,
                     const struct lbs_sim_samples_in *in,
                     struct lbs_sim_samples *set, struct lbs_err *err);

#endif
