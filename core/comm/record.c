/* record.c - the backend that moves nothing and logs every call.
 *
 * It stands for `size` ranks that all hold this rank's data (see comm.h
 * for the results each collective produces and the byte convention), so
 * an optimizer or compressor runs unchanged over it and leaves behind the
 * exact list of (collective, bytes, layer, step) it would have sent: the
 * communication plan the simulator replays.  Nothing fails after
 * construction except running out of memory for the log (-ENOMEM).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lbscale/comm.h"
#include "lbscale/half.h"

struct record_impl {
    struct lbs_comm_record_entry *e;
    size_t n, cap;
};

static const struct lbs_comm_ops record_ops;

static int logit_peers(struct lbs_comm *c, enum lbs_coll kind,
                       enum lbs_dtype t, size_t count, size_t bytes,
                       int layer, int peers)
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
    r->e[r->n++] = (struct lbs_comm_record_entry){
        .kind = kind, .dtype = t, .count = count, .bytes = bytes,
        .layer = layer, .peers = peers, .step = c->step};
    return 0;
}

static int logit(struct lbs_comm *c, enum lbs_coll kind, enum lbs_dtype t,
                 size_t count, size_t bytes, int layer)
{
    return logit_peers(c, kind, t, count, bytes, layer, 0);
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
    int rc = logit(c, LBS_COLL_ALLREDUCE, t, count,
                   count * lbs_dtype_size(t), layer);
    if (!rc && op == LBS_SUM && c->size > 1)
        scale_by(buf, count, t, c->size);
    return rc;
}

static int rec_allgather(struct lbs_comm *c, const void *send, void *recv,
                         size_t count, enum lbs_dtype t, int layer)
{
    size_t b = count * lbs_dtype_size(t);
    int rc = logit(c, LBS_COLL_ALLGATHER, t, count, b, layer);
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
    int rc = logit(c, LBS_COLL_ALLGATHERV, t, count, count * es, layer);
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
    int rc = logit(c, LBS_COLL_ALLTOALL, t, count, (size_t)c->size * b,
                   layer);
    if (rc)
        return rc;
    for (int r = c->size - 1; r >= 0; r--)
        memmove((char *)recv + (size_t)r * b, send, b);
    return 0;
}

static int rec_bcast(struct lbs_comm *c, void *buf, size_t count,
                     enum lbs_dtype t, int root, int layer)
{
    (void)buf; (void)root;
    return logit(c, LBS_COLL_BCAST, t, count, count * lbs_dtype_size(t),
                 layer);
}

static int rec_barrier(struct lbs_comm *c)
{
    return logit(c, LBS_COLL_BARRIER, LBS_UINT8, 0, 0, -1);
}

static int rec_neighbors(struct lbs_comm *c, const void *send, size_t count,
                         enum lbs_dtype t, const int *to, int nto,
                         const int *from, int nfrom, void *recv, int layer)
{
    (void)to; (void)from;
    size_t b = count * lbs_dtype_size(t);
    int rc = logit_peers(c, LBS_COLL_NEIGHBOR, t, count, b, layer, nto);
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
    .allgather = rec_allgather,
    .allgatherv = rec_allgatherv,
    .alltoall = rec_alltoall,
    .bcast = rec_bcast,
    .barrier = rec_barrier,
    .neighbors = rec_neighbors,
    .free = rec_free,
};

int lbs_comm_record_new(int size, struct lbs_comm **out, struct lbs_err *err)
{
    *out = NULL;
    if (size < 1)
        return lbs_err_set(err, -EINVAL, "record: size %d (must be >= 1)",
                           size);
    struct lbs_comm *c = calloc(1, sizeof *c);
    struct record_impl *r = calloc(1, sizeof *r);
    if (!c || !r) {
        free(c);
        free(r);
        return lbs_err_set(err, -ENOMEM, "out of memory");
    }
    c->ops = &record_ops;
    c->rank = 0;
    c->size = size;
    c->impl = r;
    *out = c;
    return 0;
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

const char *lbs_coll_name(enum lbs_coll k)
{
    static const char *const names[LBS_COLL_COUNT] = {
        "allreduce", "allgather", "allgatherv", "alltoall", "bcast",
        "barrier", "neighbor"};
    return (unsigned)k < LBS_COLL_COUNT ? names[k] : "?";
}
