/* kfam.h - kernel families: an algorithm's own hot loops, one table per
 * instruction-set level, beside the algorithm (internal to core).
 *
 * dav1d's layout: an optimizer or compressor with a fast path keeps its
 * loops in a template next to its own file (core/optim/NAME_tmpl.c,
 * core/compress/NAME_tmpl.c).  core/meson.build compiles every template
 * once per level (kern.h lists them) with that level's flags and
 * -DKERN_SFX=c|avx2|avx512 -DKERN_LEVEL=LBS_ISA_*, and -DKERN_REF at the
 * portable level, the reference.  A template starts with
 * #include "kern_tmpl.h", names its kernels F(name), fills its own small
 * table F(lbs_NAME_kern) and, under KERN_REF, defines the family with
 * LBS_KFAM(lbs_NAME, check): the three tables and the family's check.
 * The algorithm's ops table points at the family (.kern), which is how
 * tests/test_isa.c finds every family without a list; the algorithm
 * calls the level in use through lbs_kfam_cur().
 *
 * The check (checkasm's check_*): run every kernel of the table it is
 * given on inputs from lbs_kcheck_f32() and the like, and hand each
 * output to lbs_kcheck_bits (elementwise: must be bit for bit the
 * reference level's) or lbs_kcheck_sum (a sum: within its stated
 * relative bound), each call wrapped in LBS_KCALL so the bench mode can
 * time it.  kcheck.c runs a check at each level and compares.
 */
#ifndef LBS_KFAM_H
#define LBS_KFAM_H

#include <stddef.h>
#include <stdint.h>

#include "kern.h"

struct lbs_kcheck;

struct lbs_kfam {
    const char *name;
    const void *tab[LBS_ISA_COUNT];   /* [LBS_ISA_C]: the reference */
    void (*check)(const void *tab, struct lbs_kcheck *r);
};

/* The family's table at the level in use (isa.c). */
static inline const void *lbs_kfam_cur(const struct lbs_kfam *f)
{
    return f->tab[lbs_kern()->isa];
}

/* In a template under KERN_REF: the family lbs_NAME_kfam of the tables
 * lbs_NAME_kern_{c,avx2,avx512} of type struct lbs_NAME_kern. */
#define LBS_KFAM(fam, checkfn)                                              \
    extern const struct fam##_kern fam##_kern_c, fam##_kern_avx2,           \
        fam##_kern_avx512;                                                  \
    const struct lbs_kfam fam##_kfam = {                                    \
        #fam + 4, {&fam##_kern_c, &fam##_kern_avx2, &fam##_kern_avx512},     \
        checkfn}

/* The shared kernels of kern.h as a family (kern_tmpl.c), for the checks. */
extern const struct lbs_kfam lbs_kern_kfam;

/* The families of every registered optimizer (optim.c) and compressor
 * (compress.c), appended to out[n..cap) each once; returns the new n. */
size_t lbs_optim_kfams(const struct lbs_kfam **out, size_t n, size_t cap);
size_t lbs_compress_kfams(const struct lbs_kfam **out, size_t n, size_t cap);
static inline size_t lbs_kfam_add(const struct lbs_kfam **out, size_t n,
                                  size_t cap, const struct lbs_kfam *f)
{
    for (size_t i = 0; i < n; i++)
        if (out[i] == f)
            return n;
    if (f && n < cap)
        out[n++] = f;
    return n;
}

/* ---- the check's side (kcheck.c) ---- */

/* Deterministic inputs, the same at every level of one run: n floats
 * uniform in [-scale, scale] (|.| when positive), starting off any vector
 * alignment so heads and tails run; zeroed scratch; random bits.  Owned
 * by r until the run ends. */
float *lbs_kcheck_f32(struct lbs_kcheck *r, size_t n, float scale,
                      int positive);
void *lbs_kcheck_zalloc(struct lbs_kcheck *r, size_t bytes);
float *lbs_kcheck_dup(struct lbs_kcheck *r, const float *x, size_t n);
uint64_t lbs_kcheck_u64(struct lbs_kcheck *r);
/* An elementwise output: bit for bit the reference level's. */
void lbs_kcheck_bits(struct lbs_kcheck *r, const char *what, const void *x,
                     size_t bytes);
/* A sum: |x - ref| <= rel |ref| (rel 0: exact). */
void lbs_kcheck_sum(struct lbs_kcheck *r, const char *what, double x,
                    double rel);
/* A property at this level alone (a chunked form against its plain one). */
void lbs_kcheck_true(struct lbs_kcheck *r, const char *what, int ok);
/* Bench mode (LBSCALE_KBENCH, kcheck.c): 0 while checking. */
int lbs_kcheck_reps(const struct lbs_kcheck *r);
double lbs_kcheck_now(void);
void lbs_kcheck_timed(struct lbs_kcheck *r, const char *what, size_t n,
                      double t0, int reps);

/* Run call (a kernel over n elements) once; in bench mode then time it
 * reps more times (its outputs are no longer compared then). */
#define LBS_KCALL(r, what, n, call)                                         \
    do {                                                                    \
        call;                                                               \
        int reps_ = lbs_kcheck_reps(r);                                     \
        if (reps_) {                                                        \
            double t0_ = lbs_kcheck_now();                                  \
            for (int i_ = 0; i_ < reps_; i_++) {                            \
                call;                                                       \
            }                                                               \
            lbs_kcheck_timed(r, what, n, t0_, reps_);                       \
        }                                                                   \
    } while (0)

/* The bounds of sums taken in another order at another vector width: a
 * float sum of at most B positive terms is within gamma_B = B u / (1 -
 * B u) (u = 2^-24) of the exact one, so two orders differ by at most
 * 2 gamma_B relative: 1.25e-4 for the norms' blocks of B = 1024
 * (LBS_NORM_BLOCK), 5e-4 for the sign compressor's partials of 4096. */
#define LBS_KBOUND_NORM 1.25e-4
#define LBS_KBOUND_SIGN 5e-4

/* The runner (tests/test_isa.c): check f at level isa.  The reference
 * level records, the others compare with its record; bench > 0 times
 * each LBS_KCALL that many times and prints ns per element.  Returns the
 * number of mismatches, the first one described in msg. */
struct lbs_kcheck *lbs_kcheck_new(void);
int lbs_kcheck_run(struct lbs_kcheck *r, const struct lbs_kfam *f,
                   enum lbs_isa isa, int bench, char *msg, size_t cap);
void lbs_kcheck_free(struct lbs_kcheck *r);

#endif
