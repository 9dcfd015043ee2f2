/* record.c - the backend that logs every call: alone it moves nothing,
 * wrapped around another comm it forwards and times.
 *
 * Alone it stands for `size` ranks that all hold this rank's data (see
 * comm.h for the results each collective produces and the byte
 * convention), so an optimizer or compressor runs unchanged over it and
 * leaves behind the exact list of (collective, bytes, layer, step) it
 * would have sent: the communication plan the simulator replays.  Nothing
 * fails after construction except running out of memory for the log
 * (-ENOMEM).
 *
 * Wrapped (lbs_comm_record_wrap) each op forwards to the inner comm and
 * logs the same entry plus the call's wall time, so a real run's trace has
 * the same bytes as a recording of it.  Each op below computes its entry
 * once and then either forwards (fwd_*) or emulates the ranks.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lbscale/comm.h"
#include "lbscale/half.h"

struct record_impl {
    struct lbs_comm *inner;     /* borrowed; NULL: emulate `size` ranks */
    struct lbs_comm_record_entry *e;
    size_t n, cap;
};

static const struct lbs_comm_ops record_ops;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Append x (its step taken from the comm).  Running out of memory is an
 * error, not a shorter log: a trace missing calls would mislead the
 * simulator. */
static int log_entry(struct lbs_comm *c, struct lbs_comm_record_entry x)
{
    struct record_impl *r = c->impl;
    if (r->n == r->cap) {
        size_t cap = r->cap ? 2 * r->cap : 256;
        void *p = realloc(r->e, cap * sizeof *r->e);
        if (!p)
            return lbs_err_set(c->err, -ENOMEM, "record: out of memory for "
                               "the call log (%zu entries)", r->n);
        r->e = p;
        r->cap = cap;
    }
    x.step = c->step;
    r->e[r->n++] = x;
    return 0;
}

static struct lbs_comm_record_entry entry(enum lbs_coll kind,
                                          enum lbs_dtype t, size_t count,
                                          size_t bytes, int layer)
{
    return (struct lbs_comm_record_entry){
        .kind = kind, .dtype = t, .count = count, .bytes = bytes,
        .layer = layer};
}

/* The inner comm of a wrapping record comm (NULL: emulating), ready for a
 * call: failures land in the wrapper's err and a recording inner comm
 * sees the wrapper's step (the optimizer driver sets both on the
 * wrapper). */
static struct lbs_comm *fwd(struct lbs_comm *c)
{
    struct lbs_comm *in = ((struct record_impl *)c->impl)->inner;
    if (in) {
        in->err = c->err;
        in->step = c->step;
    }
    return in;
}

/* After a forwarded call begun at t0: log x with its time, unless the
 * call failed. */
static int fwd_done(struct lbs_comm *c, int rc, double t0,
                    struct lbs_comm_record_entry x)
{
    x.seconds = now() - t0;
    return rc ? rc : log_entry(c, x);
}

/* SUM over `size` identical contributions is size times the value. */
static void scale_by(void *buf, size_t count, enum lbs_dtype t, int k)
{
    switch (t) {
    case LBS_FLOAT32:
        for (size_t i = 0; i < count; i++) ((float *)buf)[i] *= (float)k;
        break;
    case LBS_FLOAT64:
        for (size_t i = 0; i < count; i++) ((double *)buf)[i] *= k;
        break;
    case LBS_INT32:   /* wrap like a two's-complement reduction would */
        for (size_t i = 0; i < count; i++)
            ((int32_t *)buf)[i] = (int32_t)((uint32_t)((int32_t *)buf)[i] *
                                            (uint32_t)k);
        break;
    case LBS_INT64:
        for (size_t i = 0; i < count; i++)
            ((int64_t *)buf)[i] = (int64_t)((uint64_t)((int64_t *)buf)[i] *
                                            (uint64_t)k);
        break;
    case LBS_UINT8:
        for (size_t i = 0; i < count; i++)
            ((uint8_t *)buf)[i] = (uint8_t)(((uint8_t *)buf)[i] * k);
        break;
    case LBS_FLOAT16:   /* one rounding, where P additions would round P - 1
                         * times: close to what the ranks would get, and
                         * inf where their sum would overflow */
        for (size_t i = 0; i < count; i++) {
            uint16_t *h = (uint16_t *)buf + i;
            *h = lbs_f32_to_f16_bits(lbs_f16_bits_to_f32(*h) * (float)k);
        }
        break;
    case LBS_BFLOAT16:
        for (size_t i = 0; i < count; i++) {
            uint16_t *h = (uint16_t *)buf + i;
            *h = lbs_f32_to_bf16_bits(lbs_bf16_bits_to_f32(*h) * (float)k);
        }
        break;
    }
}

static int rec_allreduce(struct lbs_comm *c, void *buf, size_t count,
                         enum lbs_dtype t, enum lbs_redop op, int layer)
{
    struct lbs_comm_record_entry x = entry(LBS_COLL_ALLREDUCE, t, count,
                                           count * lbs_dtype_size(t), layer);
    struct lbs_comm *in = fwd(c);
    if (in) {
        double t0 = now();
        return fwd_done(c, lbs_allreduce(in, buf, count, t, op, layer), t0,
                        x);
    }
    int rc = log_entry(c, x);
    if (!rc && op == LBS_SUM && c->size > 1)
        scale_by(buf, count, t, c->size);
    return rc;
}

/* Logged as the allreduce it is (same kind and bytes: trace-v1 has no
 * in/out-of-place distinction, the wire volume is the same). */
static int rec_allreduce_to(struct lbs_comm *c, const void *send, void *recv,
                            size_t count, enum lbs_dtype t, enum lbs_redop op,
                            int layer)
{
    struct lbs_comm_record_entry x = entry(LBS_COLL_ALLREDUCE, t, count,
                                           count * lbs_dtype_size(t), layer);
    struct lbs_comm *in = fwd(c);
    if (in) {
        double t0 = now();
        return fwd_done(c, lbs_allreduce_to(in, send, recv, count, t, op,
                                            layer), t0, x);
    }
    int rc = log_entry(c, x);
    if (rc)
        return rc;
    memmove(recv, send, count * lbs_dtype_size(t));
    if (op == LBS_SUM && c->size > 1)
        scale_by(recv, count, t, c->size);
    return 0;
}

static int rec_allgather(struct lbs_comm *c, const void *send, void *recv,
                         size_t count, enum lbs_dtype t, int layer)
{
    size_t b = count * lbs_dtype_size(t);
    struct lbs_comm_record_entry x = entry(LBS_COLL_ALLGATHER, t, count, b,
                                           layer);
    struct lbs_comm *in = fwd(c);
    if (in) {
        double t0 = now();
        return fwd_done(c, lbs_allgather(in, send, recv, count, t, layer),
                        t0, x);
    }
    int rc = log_entry(c, x);
    if (rc)
        return rc;
    /* block 0 last when send aliases it (in-place use) */
    for (int r = c->size - 1; r >= 0; r--)
        memmove((char *)recv + (size_t)r * b, send, b);
    return 0;
}

static int rec_allgatherv(struct lbs_comm *c, const void *send, size_t count,
                          void *recv, const size_t *counts,
                          const size_t *displs, enum lbs_dtype t, int layer)
{
    size_t es = lbs_dtype_size(t);
    struct lbs_comm_record_entry x = entry(LBS_COLL_ALLGATHERV, t, count,
                                           count * es, layer);
    struct lbs_comm *in = fwd(c);
    if (in) {
        double t0 = now();
        return fwd_done(c, lbs_allgatherv(in, send, count, recv, counts,
                                          displs, t, layer), t0, x);
    }
    int rc = log_entry(c, x);
    if (rc)
        return rc;
    for (int r = c->size - 1; r >= 0; r--) {
        size_t m = counts[r] < count ? counts[r] : count;
        memmove((char *)recv + displs[r] * es, send, m * es);
    }
    return 0;
}

static int rec_alltoall(struct lbs_comm *c, const void *send, void *recv,
                        size_t count, enum lbs_dtype t, int layer)
{
    size_t b = count * lbs_dtype_size(t);
    struct lbs_comm_record_entry x = entry(LBS_COLL_ALLTOALL, t, count,
                                           (size_t)c->size * b, layer);
    struct lbs_comm *in = fwd(c);
    if (in) {
        double t0 = now();
        return fwd_done(c, lbs_alltoall(in, send, recv, count, t, layer), t0,
                        x);
    }
    int rc = log_entry(c, x);
    if (rc)
        return rc;
    for (int r = c->size - 1; r >= 0; r--)
        memmove((char *)recv + (size_t)r * b, send, b);
    return 0;
}

static int rec_bcast(struct lbs_comm *c, void *buf, size_t count,
                     enum lbs_dtype t, int root, int layer)
{
    struct lbs_comm_record_entry x = entry(LBS_COLL_BCAST, t, count,
                                           count * lbs_dtype_size(t), layer);
    struct lbs_comm *in = fwd(c);
    if (in) {
        double t0 = now();
        return fwd_done(c, lbs_bcast(in, buf, count, t, root, layer), t0, x);
    }
    return log_entry(c, x);
}

static int rec_barrier(struct lbs_comm *c)
{
    struct lbs_comm_record_entry x = entry(LBS_COLL_BARRIER, LBS_UINT8, 0, 0,
                                           -1);
    struct lbs_comm *in = fwd(c);
    if (in) {
        double t0 = now();
        return fwd_done(c, lbs_barrier(in), t0, x);
    }
    return log_entry(c, x);
}

static int rec_neighbors(struct lbs_comm *c, const void *send, size_t count,
                         enum lbs_dtype t, const int *to, int nto,
                         const int *from, int nfrom, void *recv, int layer)
{
    size_t b = count * lbs_dtype_size(t);
    struct lbs_comm_record_entry x = entry(LBS_COLL_NEIGHBOR, t, count, b,
                                           layer);
    x.peers = nto;
    struct lbs_comm *in = fwd(c);
    if (in) {
        double t0 = now();
        return fwd_done(c, lbs_neighbor_exchange(in, send, count, t, to, nto,
                                                 from, nfrom, recv, layer),
                        t0, x);
    }
    int rc = log_entry(c, x);
    if (rc)
        return rc;
    for (int j = nfrom - 1; j >= 0; j--)
        memmove((char *)recv + (size_t)j * b, send, b);
    return 0;
}

static void rec_free(struct lbs_comm *c)
{
    struct record_impl *r = c->impl;
    free(r->e);
    free(r);
    free(c);
}

static const struct lbs_comm_ops record_ops = {
    .name = "record",
    .allreduce = rec_allreduce,
    .allreduce_to = rec_allreduce_to,
    .allgather = rec_allgather,
    .allgatherv = rec_allgatherv,
    .alltoall = rec_alltoall,
    .bcast = rec_bcast,
    .barrier = rec_barrier,
    .neighbors = rec_neighbors,
    .free = rec_free,
};

static int make(struct lbs_comm *inner, int size, struct lbs_comm **out,
                struct lbs_err *err)
{
    struct lbs_comm *c = calloc(1, sizeof *c);
    struct record_impl *r = calloc(1, sizeof *r);
    if (!c || !r) {
        free(c);
        free(r);
        return lbs_err_set(err, -ENOMEM, "out of memory");
    }
    r->inner = inner;
    c->ops = &record_ops;
    c->rank = inner ? inner->rank : 0;
    c->size = size;
    c->err = inner ? inner->err : NULL;
    c->impl = r;
    *out = c;
    return 0;
}

int lbs_comm_record_new(int size, struct lbs_comm **out, struct lbs_err *err)
{
    *out = NULL;
    if (size < 1)
        return lbs_err_set(err, -EINVAL, "record: size %d (must be >= 1)",
                           size);
    return make(NULL, size, out, err);
}

int lbs_comm_record_wrap(struct lbs_comm *inner, struct lbs_comm **out,
                         struct lbs_err *err)
{
    *out = NULL;
    if (!inner)
        return lbs_err_set(err, -EINVAL, "record: no comm to wrap");
    return make(inner, inner->size, out, err);
}

static struct record_impl *impl_of(const struct lbs_comm *c)
{
    return c && c->ops == &record_ops ? c->impl : NULL;
}

const struct lbs_comm_record_entry *lbs_comm_record_entries(
    const struct lbs_comm *c, size_t *count)
{
    struct record_impl *r = impl_of(c);
    *count = r ? r->n : 0;
    return r ? r->e : NULL;
}

void lbs_comm_record_totals(const struct lbs_comm *c,
                            size_t bytes[LBS_COLL_COUNT],
                            size_t calls[LBS_COLL_COUNT])
{
    struct record_impl *r = impl_of(c);
    for (int k = 0; k < LBS_COLL_COUNT; k++) {
        bytes[k] = 0;
        if (calls)
            calls[k] = 0;
    }
    for (size_t i = 0; r && i < r->n; i++) {
        bytes[r->e[i].kind] += r->e[i].bytes;
        if (calls)
            calls[r->e[i].kind]++;
    }
}

void lbs_comm_record_clear(struct lbs_comm *c)
{
    struct record_impl *r = impl_of(c);
    if (r)
        r->n = 0;
}

/* ---- bytes rule (comm.h): unit(P) = a + ceil(b / P) ---- */

static unsigned long long ceil_div(unsigned long long x, unsigned long long d)
{
    return x / d + (x % d != 0);
}

/* The bytes a call's rule is about: one destination's block for alltoall
 * (its send buffer holds P of them), the bytes otherwise. */
static unsigned long long unit_of(const struct lbs_comm_record_entry *e,
                                  int ranks)
{
    return e->kind == LBS_COLL_ALLTOALL ? e->bytes / (size_t)ranks
                                        : e->bytes;
}

/* b in (lo, hi] with ceil(b/pa) = ua - a and ceil(b/pb) = ub - a, as the
 * largest such b (0 when none).  Products past 2^64 are beyond any b the
 * trace can state, so they only shrink hi to the cap. */
static unsigned long long split_for(unsigned long long a,
                                    unsigned long long ua, long pa,
                                    unsigned long long ub, long pb)
{
    unsigned long long lo1, lo2, hi1, hi2;
    if (a >= ub)
        return 0;
    if (__builtin_mul_overflow(ua - a - 1, (unsigned long long)pa, &lo1) ||
        __builtin_mul_overflow(ub - a - 1, (unsigned long long)pb, &lo2))
        return 0;
    if (__builtin_mul_overflow(ua - a, (unsigned long long)pa, &hi1))
        hi1 = ~0ull;
    if (__builtin_mul_overflow(ub - a, (unsigned long long)pb, &hi2))
        hi2 = ~0ull;
    unsigned long long lo = lo1 > lo2 ? lo1 : lo2, hi = hi1 < hi2 ? hi1 : hi2;
    return lo < hi ? hi : 0;
}

/* The rule through (pa, ua) and (pb, ub), pa < pb: 0 and *b when one
 * exists, -1 when the unit grows with P or no integer rule fits. */
static int fit_rule(unsigned long long ua, long pa, unsigned long long ub,
                    long pb, unsigned long long *b)
{
    *b = 0;
    if (ua == ub)
        return 0;
    if (ua < ub)
        return -1;
    /* a = 0 first (a plain share of a split buffer), then every integer
     * the rounding allows around the exact solution ax of a + b/P through
     * both points: a is in (ax - pb/(pb-pa), ax + pa/(pb-pa)), within 2 of
     * ax when pb >= 2 pa (closer sizes leave more candidates; past 1024 of
     * them the fit gives up) */
    if ((*b = split_for(0, ua, pa, ub, pb)))
        return 0;
    double d = (double)(pb - pa);
    double ax = ((double)ub * (double)pb - (double)ua * (double)pa) / d;
    double lo = floor(ax - (double)pb / d), hi = ceil(ax + (double)pa / d);
    if (lo < 1)
        lo = 1;
    hi = fmin(hi, lo + 1024);
    hi = fmin(hi, (double)ub - 1);     /* ceil(b/P) >= 1 for b >= 1 */
    for (double a = lo; a <= hi; a++)
        if ((*b = split_for((unsigned long long)a, ua, pa, ub, pb)))
            return 0;
    return -1;
}

int lbs_comm_record_rule(const struct lbs_comm *at,
                         const struct lbs_comm *other,
                         unsigned long long *split, struct lbs_err *err)
{
    size_t n, m;
    const struct lbs_comm_record_entry *x = lbs_comm_record_entries(at, &n);
    const struct lbs_comm_record_entry *y = lbs_comm_record_entries(other,
                                                                    &m);
    if (!impl_of(at) || !impl_of(other))
        return lbs_err_set(err, -EINVAL, "bytes rule: both comms must be "
                           "record comms");
    if (at->size == other->size)
        return lbs_err_set(err, -EINVAL, "bytes rule: both recordings ran "
                           "on %d ranks (need two sizes)", at->size);
    if (n != m)
        return lbs_err_set(err, -EINVAL, "bytes rule: %zu calls on %d ranks "
                           "but %zu on %d (the optimizer's calls depend on "
                           "P beyond their sizes)", n, at->size, m,
                           other->size);
    int swap = at->size > other->size;
    long pa = swap ? other->size : at->size, pb = swap ? at->size
                                                       : other->size;
    for (size_t i = 0; i < n; i++) {
        const struct lbs_comm_record_entry *e = &x[i], *f = &y[i];
        if (e->step != f->step || e->layer != f->layer ||
            e->kind != f->kind)
            return lbs_err_set(err, -EINVAL, "bytes rule: call %zu is step "
                               "%ld, layer %d, %s on %d ranks but step %ld, "
                               "layer %d, %s on %d", i + 1, e->step,
                               e->layer, lbs_coll_name(e->kind), at->size,
                               f->step, f->layer, lbs_coll_name(f->kind),
                               other->size);
        unsigned long long ue = unit_of(e, at->size), uf = unit_of(f,
                                                                 other->size);
        if (fit_rule(swap ? uf : ue, pa, swap ? ue : uf, pb, &split[i]) ||
            split[i] > LBS_COMM_RULE_MAX)
            return lbs_err_set(err, -EINVAL, "bytes rule: call %zu (step %ld,"
                               " layer %d, %s) has %zu bytes on %d ranks and "
                               "%zu on %d: no rule a + ceil(b/P) fits",
                               i + 1, e->step, e->layer,
                               lbs_coll_name(e->kind), e->bytes, at->size,
                               f->bytes, other->size);
    }
    return 0;
}

unsigned long long lbs_comm_record_bytes_at(
    const struct lbs_comm_record_entry *e, int ranks,
    unsigned long long split, long P)
{
    if (!split || P == ranks || P < 1)
        return e->bytes;
    unsigned long long u = unit_of(e, ranks) - ceil_div(split,
                                                        (unsigned)ranks) +
                           ceil_div(split, (unsigned long long)P);
    return e->kind == LBS_COLL_ALLTOALL ? u * (unsigned long long)P : u;
}

/* ---- the trace-v1 call line (comm.h) ---- */

int lbs_trace_call_line(char *buf, size_t len,
                        const struct lbs_comm_record_entry *e,
                        unsigned long long split, unsigned flags)
{
    char sp[40] = "", ms[360] = "", peers[24] = "";
    if (split)
        snprintf(sp, sizeof sp, ",\"bytes_split\":%llu", split);
    if (flags & LBS_TRACE_TIMED) {
        snprintf(ms, sizeof ms, ",\"ms\":%.4f", e->seconds * 1e3);
        if (e->kind == LBS_COLL_NEIGHBOR)
            snprintf(peers, sizeof peers, ",\"peers\":%d", e->peers);
    }
    return snprintf(buf, len, "{\"step\":%ld,\"layer\":%d,\"coll\":\"%s\","
                    "\"bytes\":%zu%s%s%s}", e->step, e->layer,
                    lbs_coll_name(e->kind), e->bytes, sp, ms, peers);
}
