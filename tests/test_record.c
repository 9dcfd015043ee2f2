/* test_record.c - the record backend's bytes rule (comm.h, trace-v1's
 * bytes_rule): per call, unit(P) = a + ceil(b/P) derived from two
 * recordings of the same run.
 *
 *  - 1-bit LAMB on a layer list whose fused buffer is padded differently
 *    at every P, recorded at 8, 32 and 128 ranks: the rule from two of the
 *    recordings reproduces the third call by call, exactly where the third
 *    is a multiple of the smaller of the two (the stated guarantee), and
 *    within the stated rounding bound otherwise;
 *  - optimizers whose bytes do not depend on P (slamb, lamb, jointspar,
 *    dmsgd, decentlam, 1-bit LAMB in its warm-up) get no rule on any call;
 *  - a call with a fixed part and a share (a > 0) is fitted too;
 *  - logs that differ beyond their sizes, bytes that grow with P, equal
 *    sizes and comms of another backend are refused with the call named;
 *  - the collective names round-trip, a record comm wrapping self forwards
 *    (self's results) and logs timed entries, and trace-v1 call lines
 *    come out as the schemas write them.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lbscale/comm.h"
#include "lbscale/optim.h"

/* Five tensors, 63,491 parameters: the fused buffer (8P-padded) has a
 * different size at every P, so the rule has rounding to get right. */
static const size_t shapes[][2] = {{1000, 37}, {333, 77}, {77, 0},
                                   {77, 10}, {3, 0}};
#define NL (sizeof shapes / sizeof shapes[0])

struct rec {
    struct lbs_layer l[NL];
    struct lbs_comm *comm;
};

/* Run `steps` steps of spec over a record comm of P ranks. */
static void record(struct rec *r, const char *spec, int P, int steps)
{
    static const char *const names[NL] = {"emb", "w1", "b1", "w2", "b2"};
    struct lbs_err e;
    struct lbs_optim *o;
    for (size_t i = 0; i < NL; i++) {
        size_t n = shapes[i][0] * (shapes[i][1] ? shapes[i][1] : 1);
        r->l[i] = (struct lbs_layer){.name = names[i], .n = n,
            .ndim = shapes[i][1] ? 2 : 1,
            .shape = {shapes[i][0], shapes[i][1]}};
        r->l[i].w = malloc(n * sizeof(float));
        r->l[i].g = malloc(n * sizeof(float));
        cr_assert(r->l[i].w && r->l[i].g);
        for (size_t j = 0; j < n; j++) {
            uint32_t h = (uint32_t)(j * 2654435761u + i * 97u);
            r->l[i].w[j] = 0.1f * ((float)(h % 2001) / 1000.0f - 1.0f);
            r->l[i].g[j] = 0.01f * ((float)((h >> 11) % 2001) / 1000.0f -
                                    1.0f);
        }
    }
    cr_assert_eq(lbs_comm_record_new(P, &r->comm, &e), 0, "%s", e.msg);
    r->comm->err = &e;
    cr_assert_eq(lbs_optim_new(spec, r->l, NL, r->comm, &o, &e), 0, "%s",
                 e.msg);
    for (int t = 0; t < steps; t++)
        cr_assert_geq(lbs_optim_step(o, &e), 0, "%s", e.msg);
    lbs_optim_free(o);
    for (size_t i = 0; i < NL; i++) {
        free(r->l[i].w);
        free(r->l[i].g);
    }
}

/* Rule from (x at Px, y at Py), applied to x's entries at z's size: the
 * largest difference in bytes per unit (alltoall: per block) against z,
 * and how many calls carry a rule. */
static unsigned long long predict(const struct rec *x, const struct rec *y,
                                  const struct rec *z, size_t *ruled)
{
    struct lbs_err e;
    size_t n, m, k;
    const struct lbs_comm_record_entry *ex = lbs_comm_record_entries(x->comm,
                                                                     &n);
    const struct lbs_comm_record_entry *ez = lbs_comm_record_entries(z->comm,
                                                                     &m);
    lbs_comm_record_entries(y->comm, &k);
    cr_assert_eq(n, m);
    cr_assert_eq(n, k);
    unsigned long long *b = calloc(n + 1, sizeof *b), worst = 0;
    cr_assert(b);
    cr_assert_eq(lbs_comm_record_rule(x->comm, y->comm, b, &e), 0, "%s",
                 e.msg);
    *ruled = 0;
    for (size_t i = 0; i < n; i++) {
        *ruled += b[i] != 0;
        unsigned long long got = lbs_comm_record_bytes_at(
            &ex[i], x->comm->size, b[i], z->comm->size);
        unsigned long long want = ez[i].bytes;
        unsigned long long d = got > want ? got - want : want - got;
        if (ez[i].kind == LBS_COLL_ALLTOALL)
            d /= (unsigned long long)z->comm->size;
        if (d > worst)
            worst = d;
        /* where it errs, the rule errs high (b rounded up) */
        cr_assert_geq(got, want, "call %zu: %llu < %llu", i, got, want);
    }
    free(b);
    return worst;
}

Test(bytes_rule, onebit_lamb_three_rank_counts)
{
    static const char spec[] = "onebit_lamb:freeze_step=3";
    struct rec r8, r32, r128;
    record(&r8, spec, 8, 7);
    record(&r32, spec, 32, 7);
    record(&r128, spec, 128, 7);
    size_t ruled;
    /* the rule's b is exact to a multiple of the smaller size: 128 and 32
     * are multiples of 8, so the rule through 8 predicts them exactly,
     * whichever recording carries it */
    cr_assert_eq(predict(&r32, &r8, &r128, &ruled), 0);
    cr_assert_eq(ruled, 8, "4 compressed steps x (alltoall + allgather)");
    cr_assert_eq(predict(&r8, &r32, &r128, &ruled), 0);
    cr_assert_eq(predict(&r128, &r8, &r32, &ruled), 0);
    cr_assert_eq(predict(&r8, &r128, &r32, &ruled), 0);
    /* 8 is no multiple of 32: b may be up to 31 bytes high, at most
     * ceil(31/8) = 4 bytes per unit (per block for the alltoall) */
    cr_assert_leq(predict(&r32, &r128, &r8, &ruled), 4);
    /* each recording is reproduced by its own rule */
    cr_assert_eq(predict(&r32, &r128, &r128, &ruled), 0);
    cr_assert_eq(predict(&r32, &r128, &r32, &ruled), 0);
    lbs_comm_free(r8.comm);
    lbs_comm_free(r32.comm);
    lbs_comm_free(r128.comm);
}

Test(bytes_rule, p_independent_optimizers_get_none)
{
    static const char *const specs[] = {
        "slamb", "lamb", "jointspar", "dmsgd", "decentlam",
        "onebit_lamb:freeze_step=100"};
    for (size_t s = 0; s < sizeof specs / sizeof specs[0]; s++) {
        struct rec a, b;
        size_t ruled;
        record(&a, specs[s], 8, 4);
        record(&b, specs[s], 64, 4);
        size_t n;
        lbs_comm_record_entries(a.comm, &n);
        cr_assert_gt(n, 0, "%s logged nothing", specs[s]);
        cr_assert_eq(predict(&a, &b, &b, &ruled), 0, "%s", specs[s]);
        cr_assert_eq(ruled, 0, "%s: %zu calls got a rule", specs[s], ruled);
        lbs_comm_free(a.comm);
        lbs_comm_free(b.comm);
    }
}

/* Log one allgather of `count` bytes per P in ps on a fresh comm each. */
static struct lbs_comm *gather(int P, size_t count, int layer)
{
    struct lbs_err e;
    struct lbs_comm *c;
    cr_assert_eq(lbs_comm_record_new(P, &c, &e), 0);
    c->err = &e;
    unsigned char *send = calloc(count + 1, 1);
    unsigned char *recv = calloc((count + 1) * (size_t)P, 1);
    cr_assert_eq(lbs_allgather(c, send, recv, count, LBS_UINT8, layer), 0);
    free(send);
    free(recv);
    c->err = NULL;
    return c;
}

static size_t ceil_div(size_t x, size_t d)
{
    return (x + d - 1) / d;
}

Test(bytes_rule, fixed_part_and_share)
{
    /* unit(P) = 5 + ceil(1000/P): recorded at 8 and 64, right at every
     * multiple of 8 */
    struct lbs_err e;
    struct lbs_comm *a = gather(8, 5 + ceil_div(1000, 8), 0);
    struct lbs_comm *b = gather(64, 5 + ceil_div(1000, 64), 0);
    unsigned long long split[1];
    cr_assert_eq(lbs_comm_record_rule(a, b, split, &e), 0, "%s", e.msg);
    cr_assert_eq(split[0], 1000);
    size_t n;
    const struct lbs_comm_record_entry *x = lbs_comm_record_entries(a, &n);
    for (long P = 8; P <= 16384; P += 8)
        cr_assert_eq(lbs_comm_record_bytes_at(x, 8, split[0], P),
                     5 + ceil_div(1000, (size_t)P), "P = %ld", P);
    cr_assert_eq(lbs_comm_record_bytes_at(x, 8, 0, 1024), x->bytes);
    lbs_comm_free(a);
    lbs_comm_free(b);
}

Test(bytes_rule, refusals_name_the_call)
{
    struct lbs_err e;
    unsigned long long split[2];
    /* bytes that grow with P */
    struct lbs_comm *a = gather(8, 100, 0), *b = gather(64, 101, 0);
    cr_assert_eq(lbs_comm_record_rule(a, b, split, &e), -EINVAL);
    cr_assert(strstr(e.msg, "call 1") && strstr(e.msg, "no rule"), "%s",
              e.msg);
    lbs_comm_free(b);
    /* another layer */
    b = gather(64, 50, 1);
    cr_assert_eq(lbs_comm_record_rule(a, b, split, &e), -EINVAL);
    cr_assert(strstr(e.msg, "call 1") && strstr(e.msg, "layer 1"), "%s",
              e.msg);
    lbs_comm_free(b);
    /* a unit that falls to 0: no b >= 1 gives ceil(b/P) = 0 */
    b = gather(64, 0, 0);
    cr_assert_eq(lbs_comm_record_rule(a, b, split, &e), -EINVAL);
    lbs_comm_free(b);
    /* another number of calls */
    b = gather(64, 50, 0);
    cr_assert_eq(lbs_barrier(b), 0);
    cr_assert_eq(lbs_comm_record_rule(a, b, split, &e), -EINVAL);
    cr_assert(strstr(e.msg, "1 calls on 8") && strstr(e.msg, "2 on 64"),
              "%s", e.msg);
    lbs_comm_free(b);
    /* the same size twice */
    b = gather(8, 100, 0);
    cr_assert_eq(lbs_comm_record_rule(a, b, split, &e), -EINVAL);
    cr_assert(strstr(e.msg, "8 ranks"), "%s", e.msg);
    lbs_comm_free(b);
    /* not a record comm */
    cr_assert_eq(lbs_comm_new("self", &b, &e), 0);
    cr_assert_eq(lbs_comm_record_rule(a, b, split, &e), -EINVAL);
    lbs_comm_free(b);
    lbs_comm_free(a);
}

/* ---- the one vocabulary: names, the wrapping record comm, call lines ---- */

Test(vocabulary, names_round_trip)
{
    for (int k = 0; k < LBS_COLL_COUNT; k++)
        cr_assert_eq(lbs_coll_from_name(lbs_coll_name((enum lbs_coll)k)), k);
    cr_assert_str_eq(lbs_coll_name(LBS_COLL_NEIGHBOR), "neighbor");
    cr_assert_str_eq(lbs_coll_name(LBS_COLL_COUNT), "?");
    cr_assert_eq(lbs_coll_from_name("allreduce "), -1);
}

/* Wrapped around self: the data is self's (no x size emulation), the
 * entries are the record convention's, each with its time. */
Test(vocabulary, wrap_forwards_and_logs)
{
    struct lbs_err e;
    struct lbs_comm *self, *w;
    cr_assert_eq(lbs_comm_self_new(&self, &e), 0, "%s", e.msg);
    cr_assert_eq(lbs_comm_record_wrap(self, &w, &e), 0, "%s", e.msg);
    cr_assert_eq(w->size, 1);
    float x[3] = {1, 2, 3};
    lbs_comm_set_step(w, 7);
    cr_assert_eq(lbs_allreduce(w, x, 3, LBS_FLOAT32, LBS_SUM, 2), 0);
    cr_assert_eq(x[2], 3.0f);
    int to = 0;
    float r[3];
    cr_assert_eq(lbs_neighbor_exchange(w, x, 3, LBS_FLOAT32, &to, 1, &to, 1,
                                       r, 4), 0);
    size_t n;
    const struct lbs_comm_record_entry *en = lbs_comm_record_entries(w, &n);
    cr_assert_eq(n, 2);
    cr_assert_eq(en[0].kind, LBS_COLL_ALLREDUCE);
    cr_assert_eq(en[0].bytes, 12);
    cr_assert_eq(en[0].step, 7);
    cr_assert(en[0].seconds >= 0);
    cr_assert_eq(en[1].peers, 1);
    char line[LBS_TRACE_LINE_MAX];
    struct lbs_comm_record_entry t = en[1];
    t.seconds = 0.0125;
    lbs_trace_call_line(line, sizeof line, &t, 0, LBS_TRACE_TIMED);
    cr_assert_str_eq(line, "{\"step\":7,\"layer\":4,\"coll\":\"neighbor\","
                     "\"bytes\":12,\"ms\":12.5000,\"peers\":1}");
    lbs_trace_call_line(line, sizeof line, &en[0], 96, 0);
    cr_assert_str_eq(line, "{\"step\":7,\"layer\":2,\"coll\":\"allreduce\","
                     "\"bytes\":12,\"bytes_split\":96}");
    lbs_comm_free(w);       /* leaves self alone */
    cr_assert_eq(lbs_barrier(self), 0);
    lbs_comm_free(self);
}

/* Out of place and in place (lbscale/comm.h): lbs_allreduce_to leaves
 * send alone and logs the allreduce it is, with the same bytes; the
 * record comm's emulated ranks and self agree with the in-place calls;
 * in-place allgather (send == recv + rank*count) and alltoall (send ==
 * recv) keep the rank's own data. */
Test(vocabulary, out_of_place_and_in_place)
{
    struct lbs_err e;
    struct lbs_comm *rec, *self;
    cr_assert_eq(lbs_comm_record_new(4, &rec, &e), 0, "%s", e.msg);
    cr_assert_eq(lbs_comm_self_new(&self, &e), 0, "%s", e.msg);
    float s[3] = {1, 2, 3}, r[3] = {0}, in[3] = {1, 2, 3};
    cr_assert_eq(lbs_allreduce_to(rec, s, r, 3, LBS_FLOAT32, LBS_SUM, 5), 0);
    cr_assert_eq(lbs_allreduce(rec, in, 3, LBS_FLOAT32, LBS_SUM, 5), 0);
    for (int i = 0; i < 3; i++) {
        cr_assert_eq(s[i], (float)(i + 1), "send changed");
        cr_assert_eq(r[i], in[i], "out of place %g, in place %g", r[i],
                     in[i]);
    }
    size_t n;
    const struct lbs_comm_record_entry *en = lbs_comm_record_entries(rec, &n);
    cr_assert_eq(n, 2);
    cr_assert_eq(en[0].kind, LBS_COLL_ALLREDUCE);
    cr_assert_eq(en[0].bytes, en[1].bytes);
    cr_assert(lbs_allreduce_to_native(rec) && lbs_allreduce_to_native(self));
    float r1[3] = {0};
    cr_assert_eq(lbs_allreduce_to(self, s, r1, 3, LBS_FLOAT32, LBS_SUM, -1),
                 0);
    cr_assert_eq(memcmp(r1, s, sizeof s), 0);
    /* in place on 4 emulated ranks: every block is the rank's own */
    float g[8] = {7, 8, 0, 0, 0, 0, 0, 0};
    cr_assert_eq(lbs_allgather(rec, g, g, 2, LBS_FLOAT32, -1), 0);
    cr_assert_eq(lbs_alltoall(rec, g, g, 2, LBS_FLOAT32, -1), 0);
    for (int i = 0; i < 8; i++)
        cr_assert_eq(g[i], (float)(7 + i % 2));
    float v[2] = {4, 5};
    size_t counts[1] = {2}, displs[1] = {0};
    cr_assert_eq(lbs_allgatherv(self, v, 2, v, counts, displs, LBS_FLOAT32,
                                -1), 0);
    cr_assert(v[0] == 4 && v[1] == 5);
    lbs_comm_free(rec);
    lbs_comm_free(self);
}
