/* kcheck.c - checkasm's runner for the kernel families (kfam.h): a
 * family's check runs once per level; the reference level's outputs are
 * recorded and every other level's compared with them, in call order.
 * Compiled for baseline x86-64 like isa.c. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kfam.h"

#define OFF 3   /* floats: off any vector alignment */

struct rec {
    char what[48];
    int sum;             /* a sum (val) or bytes (data, len) */
    double val;
    void *data;
    size_t len;
};

struct lbs_kcheck {
    struct rec *rec;
    size_t nrec, cap, pos;
    int record, reps, fails;
    const char *fam, *isa;
    char *msg;
    size_t msgcap;
    uint64_t rs;
    void **own;          /* this run's allocations */
    size_t nown, ownc;
};

struct lbs_kcheck *lbs_kcheck_new(void)
{
    return calloc(1, sizeof(struct lbs_kcheck));
}

static void drop_run(struct lbs_kcheck *r)
{
    for (size_t i = 0; i < r->nown; i++)
        free(r->own[i]);
    r->nown = 0;
}

static void drop_rec(struct lbs_kcheck *r)
{
    for (size_t i = 0; i < r->nrec; i++)
        free(r->rec[i].data);
    r->nrec = 0;
}

void lbs_kcheck_free(struct lbs_kcheck *r)
{
    if (!r)
        return;
    drop_run(r);
    drop_rec(r);
    free(r->own);
    free(r->rec);
    free(r);
}

static void *own(struct lbs_kcheck *r, void *p)
{
    if (!p)
        abort();   /* test inputs of a few hundred kB: not a user error */
    if (r->nown == r->ownc) {
        r->ownc = r->ownc ? 2 * r->ownc : 16;
        r->own = realloc(r->own, r->ownc * sizeof *r->own);
        if (!r->own)
            abort();
    }
    return r->own[r->nown++] = p;
}

uint64_t lbs_kcheck_u64(struct lbs_kcheck *r)
{
    r->rs ^= r->rs << 13;
    r->rs ^= r->rs >> 7;
    r->rs ^= r->rs << 17;
    return r->rs;
}

float *lbs_kcheck_f32(struct lbs_kcheck *r, size_t n, float scale,
                      int positive)
{
    float *p = own(r, malloc((n + OFF) * sizeof *p));
    for (size_t i = 0; i < n + OFF; i++) {
        float f = (float)((double)(lbs_kcheck_u64(r) >> 11) * 0x1.0p-53 * 2 -
                          1) * scale;
        p[i] = positive ? fabsf(f) : f;
    }
    return p + OFF;
}

void *lbs_kcheck_zalloc(struct lbs_kcheck *r, size_t bytes)
{
    return own(r, calloc(1, bytes ? bytes : 1));
}

float *lbs_kcheck_dup(struct lbs_kcheck *r, const float *x, size_t n)
{
    float *p = own(r, malloc((n + OFF) * sizeof *p));
    memcpy(p + OFF, x, n * sizeof *p);
    return p + OFF;
}

static void fail(struct lbs_kcheck *r, const char *fmt, const char *what,
                 double a, double b)
{
    if (!r->fails++ && r->msg)
        snprintf(r->msg, r->msgcap, "%s %s at %s: ", r->fam, what, r->isa),
        snprintf(r->msg + strlen(r->msg), r->msgcap - strlen(r->msg), fmt,
                 a, b);
}

/* The reference's record of the next output, or NULL (recording, or a
 * mismatch in order or kind, reported). */
static struct rec *next(struct lbs_kcheck *r, const char *what, int sum)
{
    if (r->record) {
        if (r->nrec == r->cap) {
            r->cap = r->cap ? 2 * r->cap : 32;
            r->rec = realloc(r->rec, r->cap * sizeof *r->rec);
            if (!r->rec)
                abort();
        }
        struct rec *e = &r->rec[r->nrec++];
        memset(e, 0, sizeof *e);
        snprintf(e->what, sizeof e->what, "%s", what);
        e->sum = sum;
        return e;
    }
    if (r->pos >= r->nrec || r->rec[r->pos].sum != sum ||
        strncmp(r->rec[r->pos].what, what, sizeof r->rec->what - 1)) {
        fail(r, "output %g of %g the reference did not make", what,
             (double)r->pos, (double)r->nrec);
        return NULL;
    }
    return &r->rec[r->pos++];
}

void lbs_kcheck_bits(struct lbs_kcheck *r, const char *what, const void *x,
                     size_t bytes)
{
    if (r->reps)
        return;
    struct rec *e = next(r, what, 0);
    if (!e)
        return;
    if (r->record) {
        e->data = malloc(bytes ? bytes : 1);
        if (!e->data)
            abort();
        memcpy(e->data, x, bytes);
        e->len = bytes;
        return;
    }
    if (e->len != bytes) {
        fail(r, "%g bytes, the reference %g", what, (double)bytes,
             (double)e->len);
        return;
    }
    const unsigned char *a = x, *b = e->data;
    for (size_t i = 0; i < bytes; i++)
        if (a[i] != b[i]) {
            fail(r, "first differing byte %g of %g", what, (double)i,
                 (double)bytes);
            return;
        }
}

void lbs_kcheck_sum(struct lbs_kcheck *r, const char *what, double x,
                    double rel)
{
    if (r->reps)
        return;
    struct rec *e = next(r, what, 1);
    if (!e)
        return;
    if (r->record) {
        e->val = x;
        return;
    }
    /* NaN never passes; equal values (0, inf) always do */
    if (!(x == e->val || fabs(x - e->val) <= rel * fabs(e->val)))
        fail(r, "%.17g vs the reference's %.17g", what, x, e->val);
}

void lbs_kcheck_true(struct lbs_kcheck *r, const char *what, int ok)
{
    if (r->reps || ok)
        return;
    if (!r->fails++ && r->msg)
        snprintf(r->msg, r->msgcap, "%s %s at %s: does not hold", r->fam,
                 what, r->isa);
}

int lbs_kcheck_reps(const struct lbs_kcheck *r)
{
    return r->reps;
}

double lbs_kcheck_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e9 + ts.tv_nsec;
}

void lbs_kcheck_timed(struct lbs_kcheck *r, const char *what, size_t n,
                      double t0, int reps)
{
    double ns = lbs_kcheck_now() - t0;
    printf("kbench %-12s %-26s %-7s %8.4f ns/elem\n", r->fam, what, r->isa,
           ns / ((double)reps * (double)(n ? n : 1)));
}

int lbs_kcheck_run(struct lbs_kcheck *r, const struct lbs_kfam *f,
                   enum lbs_isa isa, int bench, char *msg, size_t cap)
{
    static const char *const names[LBS_ISA_COUNT] = {"c", "avx2", "avx512"};
    r->record = isa == LBS_ISA_C && !bench;
    if (r->record)
        drop_rec(r);
    r->pos = 0;
    r->fails = 0;
    r->reps = bench;
    r->fam = f->name;
    r->isa = names[isa];
    r->msg = msg;
    r->msgcap = cap;
    if (msg && cap)
        msg[0] = 0;
    r->rs = 88172645463325252ull;   /* the same inputs at every level */
    f->check(f->tab[isa], r);
    if (!r->record && !bench && r->pos != r->nrec)
        fail(r, "made %g outputs, the reference %g", "check",
             (double)r->pos, (double)r->nrec);
    drop_run(r);
    return r->fails;
}
