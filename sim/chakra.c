/* chakra.c - one simulated step as MLCommons Chakra execution traces
 * (lbscale_sim.h, "Chakra execution traces"), for the training simulators
 * that read them (ASTRA-sim, SimAI).
 *
 * The step is the engine's own timeline (lbs_sim_run's events), turned
 * into a dependency graph the way the engine ran it:
 *   forward        one COMP_NODE, its duration;
 *   backward l     one COMP_NODE per layer, L-1 .. 0, each after the last;
 *   collective     a COMM_COLL_NODE (comm_type, comm_size = the bytes this
 *                  rank passes, trace-v1's convention) whose data dependency
 *                  is the backward node that made it ready (the bucket's
 *                  last gradient), or the last backward node when it waits
 *                  for the whole pass; a control dependency on the previous
 *                  collective keeps NCCL's one stream in order;
 *   neighbours     no Chakra collective: per graph offset d a COMM_SEND_NODE
 *                  to rank + d and a COMM_RECV_NODE from rank - d (comm_src,
 *                  comm_dst, comm_tag, comm_size), so files differ by rank;
 *   optimizer      one COMP_NODE after every communication node.
 * Compression time is inside the backward nodes (the engine puts it on the
 * compute stream).  Times are whole microseconds, as the schema has them.
 *
 * Files: DIR/PREFIX.<rank>.et, each a varint32-length-delimited
 * GlobalMetadata (attr schema "1.0.2-chakra.1.0.0", as Chakra 1.0.0's own
 * converters write it, plus lbscale's provenance) followed by the Nodes in
 * id order (every dependency points to a smaller id).  Written with
 * protobuf-c from sim/chakra/chakra_et.proto.  Files are created with
 * O_EXCL | O_NOFOLLOW in a directory this call creates; on any failure the
 * directory and what was written are removed.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "chakra_et.pb-c.h"
#include "sim_internal.h"

#define SCHEMA "1.0.2-chakra.1.0.0"
#define MAX_RANK_FILES 100000

/* ---- the engine's events ------------------------------------------------ */

struct evlist {
    struct lbs_sim_event *e;
    size_t n, cap;
    int oom;
};

static void on_event(void *ctx, const struct lbs_sim_event *ev)
{
    struct evlist *l = ctx;
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 512;
        void *q = realloc(l->e, cap * sizeof *l->e);
        if (!q) {
            l->oom = 1;
            return;
        }
        l->e = q;
        l->cap = cap;
    }
    l->e[l->n++] = *ev;
}

/* ---- the graph ------------------------------------------------------------ */

struct cnode {
    char name[112];
    int type;                   /* ChakraProtoMsg__NodeType */
    uint64_t start, dur;        /* us */
    int comm_type;              /* COLL: CollectiveCommType */
    double size;                /* bytes */
    long peer;                  /* SEND/RECV: graph offset d */
    uint64_t ctrl;              /* one control dependency + 1 (0: none) */
    size_t dep0, ndeps;         /* data dependencies: pool[dep0 ..] */
};

struct graph {
    struct cnode *n;
    size_t nn;
    uint64_t *pool;
    size_t np, pcap;
};

static uint64_t us(double s)
{
    return s > 0 ? (uint64_t)llround(s * 1e6) : 0;
}

static int add_dep(struct graph *g, uint64_t id)
{
    if (g->np == g->pcap) {
        size_t cap = g->pcap ? 2 * g->pcap : 1024;
        void *q = realloc(g->pool, cap * sizeof *g->pool);
        if (!q)
            return -ENOMEM;
        g->pool = q;
        g->pcap = cap;
    }
    g->pool[g->np++] = id;
    return 0;
}

static struct cnode *add_node(struct graph *g, int type, const char *name,
                              double start, double end)
{
    struct cnode *c = &g->n[g->nn++];
    memset(c, 0, sizeof *c);
    snprintf(c->name, sizeof c->name, "%s", name);
    c->type = type;
    c->start = us(start);
    c->dur = us(end - start);
    c->dep0 = g->np;
    return c;
}

static int chakra_coll(enum lbs_coll k)
{
    switch (k) {
    case LBS_COLL_ALLREDUCE: return CHAKRA_PROTO_MSG__COLLECTIVE_COMM_TYPE__ALL_REDUCE;
    case LBS_COLL_ALLGATHER:
    case LBS_COLL_ALLGATHERV: return CHAKRA_PROTO_MSG__COLLECTIVE_COMM_TYPE__ALL_GATHER;
    case LBS_COLL_ALLTOALL: return CHAKRA_PROTO_MSG__COLLECTIVE_COMM_TYPE__ALL_TO_ALL;
    case LBS_COLL_BCAST: return CHAKRA_PROTO_MSG__COLLECTIVE_COMM_TYPE__BROADCAST;
    case LBS_COLL_BARRIER: return CHAKRA_PROTO_MSG__COLLECTIVE_COMM_TYPE__BARRIER;
    default: return -1;
    }
}

static int by_start(const void *a, const void *b)
{
    const struct lbs_sim_event *x = a, *y = b;
    return x->start < y->start ? -1 : x->start > y->start ? 1 : 0;
}

/* The nodes of the step whose events are l (any order), for model m. */
static int build(struct graph *g, struct evlist *l,
                 const struct lbs_sim_model *m, const struct lbs_sim_plan *plan,
                 long P)
{
    size_t L = m->nlayers, ncomm = 0;
    const struct lbs_sim_event *fwd = NULL, *opt = NULL;
    double *bs = calloc(L, sizeof *bs), *be = calloc(L, sizeof *be);
    long d[LBS_SIM_LOGMAX];
    int nd = lbs_sim_nb_offsets(plan->topo, P, 1, d);
    if (!bs || !be) {
        free(bs);
        free(be);
        return -ENOMEM;
    }
    for (size_t i = 0; i < l->n; i++) {
        const struct lbs_sim_event *e = &l->e[i];
        if (e->kind == LBS_SIM_EV_FWD)
            fwd = e;
        else if (e->kind == LBS_SIM_EV_OPTIM)
            opt = e;
        else if (e->kind == LBS_SIM_EV_BWD && e->layer >= 0 &&
                 (size_t)e->layer < L) {
            bs[e->layer] = e->start;
            be[e->layer] = e->end;
        } else if (e->kind == LBS_SIM_EV_COMM) {
            ncomm++;
        }
    }
    /* comm events in the order the stream ran them */
    qsort(l->e, l->n, sizeof *l->e, by_start);
    size_t cap = 2 + L + ncomm * (size_t)(2 * (nd > 0 ? nd : 1));
    int rc = (g->n = calloc(cap, sizeof *g->n)) ? 0 : -ENOMEM;
    if (!rc && (!fwd || !opt))
        rc = -EINVAL;
    if (rc)
        goto out;
    add_node(g, CHAKRA_PROTO_MSG__NODE_TYPE__COMP_NODE, "forward", fwd->start,
             fwd->end);
    for (size_t i = L; i-- > 0 && !rc;) {
        char nm[112];
        snprintf(nm, sizeof nm, "backward:%.90s", m->l[i].name);
        struct cnode *c = add_node(g, CHAKRA_PROTO_MSG__NODE_TYPE__COMP_NODE,
                                   nm, bs[i], be[i]);
        rc = add_dep(g, g->nn - 2);     /* the previous compute node */
        c->ndeps = 1;
    }
    /* node id of layer i's backward: 1 + (L - 1 - i) */
    uint64_t last_comm = 0;     /* id + 1 */
    size_t first_comm = g->nn;
    for (size_t i = 0; i < l->n && !rc; i++) {
        const struct lbs_sim_event *e = &l->e[i];
        if (e->kind != LBS_SIM_EV_COMM)
            continue;
        int lo = e->layer < e->layer_last ? e->layer : e->layer_last;
        uint64_t ready = e->post || lo < 0 ? (uint64_t)L
                                           : (uint64_t)(L - (size_t)lo);
        char nm[112];
        int sends = e->coll == LBS_COLL_NEIGHBOR && nd > 0;
        /* a "full" neighbour graph is priced as an allgather */
        int ct = e->coll == LBS_COLL_NEIGHBOR
                 ? CHAKRA_PROTO_MSG__COLLECTIVE_COMM_TYPE__ALL_GATHER
                 : chakra_coll(e->coll);
        for (int k = 0; k < (sends ? 2 * nd : 1) && !rc; k++) {
            int type = !sends ? CHAKRA_PROTO_MSG__NODE_TYPE__COMM_COLL_NODE
                       : k % 2 ? CHAKRA_PROTO_MSG__NODE_TYPE__COMM_RECV_NODE
                               : CHAKRA_PROTO_MSG__NODE_TYPE__COMM_SEND_NODE;
            snprintf(nm, sizeof nm, "%s:layers %d..%d%s", lbs_coll_name(e->coll),
                     e->layer, e->layer_last,
                     !sends ? "" : k % 2 ? ":recv" : ":send");
            struct cnode *c = add_node(g, type, nm, e->start, e->end);
            c->comm_type = ct;
            c->size = e->bytes;
            c->peer = sends ? d[k / 2] : 0;
            c->ctrl = last_comm;
            rc = add_dep(g, ready);
            c->ndeps = 1;
        }
        last_comm = g->nn;      /* the last node of this collective + 1 */
    }
    if (!rc) {
        struct cnode *c = add_node(g, CHAKRA_PROTO_MSG__NODE_TYPE__COMP_NODE,
                                   "optimizer", opt->start, opt->end);
        c->dep0 = g->np;
        rc = add_dep(g, L);     /* the end of the backward pass */
        for (size_t i = first_comm; i + 1 < g->nn && !rc; i++)
            rc = add_dep(g, i);
        c->ndeps = g->np - c->dep0;
    }
out:
    free(bs);
    free(be);
    return rc;
}

/* ---- writing ---------------------------------------------------------------- */

static int put_varint(FILE *f, size_t v)
{
    unsigned char b[10];
    int n = 0;
    do {
        b[n] = (unsigned char)(v & 0x7f);
        v >>= 7;
        if (v)
            b[n] |= 0x80;
        n++;
    } while (v);
    return fwrite(b, 1, (size_t)n, f) == (size_t)n ? 0 : -EIO;
}

/* One length-delimited message (protoio's encodeMessage framing). */
static int put_msg(FILE *f, const ProtobufCMessage *msg)
{
    size_t n = protobuf_c_message_get_packed_size(msg);
    uint8_t *buf = malloc(n ? n : 1);
    if (!buf)
        return -ENOMEM;
    protobuf_c_message_pack(msg, buf);
    int rc = put_varint(f, n);
    if (!rc && fwrite(buf, 1, n, f) != n)
        rc = -EIO;
    free(buf);
    return rc;
}

static void attr_i64(ChakraProtoMsg__AttributeProto *a, const char *name,
                     int64_t v)
{
    chakra_proto_msg__attribute_proto__init(a);
    a->name = (char *)name;
    a->value_case = CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_INT64_VAL;
    a->int64_val = v;
}

static void attr_str(ChakraProtoMsg__AttributeProto *a, const char *name,
                     const char *v)
{
    chakra_proto_msg__attribute_proto__init(a);
    a->name = (char *)name;
    a->value_case = CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_STRING_VAL;
    a->string_val = (char *)v;
}

static void attr_bool(ChakraProtoMsg__AttributeProto *a, const char *name,
                      int v)
{
    chakra_proto_msg__attribute_proto__init(a);
    a->name = (char *)name;
    a->value_case = CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_BOOL_VAL;
    a->bool_val = v != 0;
}

static int write_rank(FILE *f, const struct graph *g, long rank, long P,
                      const char *const meta[][2], size_t nmeta)
{
    ChakraProtoMsg__AttributeProto ma[16], *mp[16];
    ChakraProtoMsg__GlobalMetadata gm = CHAKRA_PROTO_MSG__GLOBAL_METADATA__INIT;
    size_t k;
    for (k = 0; k < nmeta && k < 16; k++) {
        attr_str(&ma[k], meta[k][0], meta[k][1]);
        mp[k] = &ma[k];
    }
    gm.n_attr = k;
    gm.attr = mp;
    int rc = put_msg(f, &gm.base);
    for (size_t i = 0; i < g->nn && !rc; i++) {
        const struct cnode *c = &g->n[i];
        ChakraProtoMsg__Node nd = CHAKRA_PROTO_MSG__NODE__INIT;
        ChakraProtoMsg__AttributeProto at[6], *ap[6];
        uint64_t ctrl = c->ctrl ? c->ctrl - 1 : 0;
        size_t na = 0;
        nd.id = i;
        nd.name = (char *)c->name;
        nd.type = (ChakraProtoMsg__NodeType)c->type;
        nd.n_data_deps = c->ndeps;
        nd.data_deps = g->pool + c->dep0;
        nd.n_ctrl_deps = c->ctrl ? 1 : 0;
        nd.ctrl_deps = &ctrl;
        nd.start_time_micros = c->start;
        nd.duration_micros = c->dur;
        attr_bool(&at[na++], "is_cpu_op", 0);
        if (c->type == CHAKRA_PROTO_MSG__NODE_TYPE__COMM_COLL_NODE) {
            attr_i64(&at[na++], "comm_type", c->comm_type);
            attr_i64(&at[na++], "comm_size", (int64_t)llround(c->size));
        } else if (c->type == CHAKRA_PROTO_MSG__NODE_TYPE__COMM_SEND_NODE ||
                   c->type == CHAKRA_PROTO_MSG__NODE_TYPE__COMM_RECV_NODE) {
            int send = c->type == CHAKRA_PROTO_MSG__NODE_TYPE__COMM_SEND_NODE;
            long other = ((rank + (send ? c->peer : -c->peer)) % P + P) % P;
            attr_i64(&at[na++], "comm_src", send ? rank : other);
            attr_i64(&at[na++], "comm_dst", send ? other : rank);
            attr_i64(&at[na++], "comm_tag", (int64_t)(i & 0x7fffffff));
            attr_i64(&at[na++], "comm_size", (int64_t)llround(c->size));
        }
        for (size_t j = 0; j < na; j++)
            ap[j] = &at[j];
        nd.n_attr = na;
        nd.attr = ap;
        rc = put_msg(f, &nd.base);
    }
    return rc;
}

/* Remove what an export wrote: PREFIX.<rank>.et for rank < n, then dir. */
static void remove_all(const char *dir, const char *prefix, long n)
{
    char path[4096];
    for (long r = 0; r < n; r++) {
        snprintf(path, sizeof path, "%s/%s.%ld.et", dir, prefix, r);
        unlink(path);
    }
    rmdir(dir);
}

static int write_all(const struct graph *g, const char *dir,
                     const char *prefix, long nranks, long P,
                     const char *const meta[][2], size_t nmeta,
                     struct lbs_err *err)
{
    char path[4096];
    long r;
    int rc = 0;
    for (r = 0; r < nranks && !rc; r++) {
        snprintf(path, sizeof path, "%s/%s.%ld.et", dir, prefix, r);
        int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW |
                      O_CLOEXEC, 0644);
        FILE *f = fd >= 0 ? fdopen(fd, "wb") : NULL;
        if (!f) {
            rc = lbs_err_set(err, -errno, "%s: %s", path, strerror(errno));
            if (fd >= 0)
                close(fd);
            break;
        }
        rc = write_rank(f, g, r, P, meta, nmeta);
        if (rc == -ENOMEM)
            rc = lbs_err_set(err, rc, "out of memory");
        else if (rc)
            rc = lbs_err_set(err, -EIO, "%s: write failed", path);
        if (fclose(f) && !rc)
            rc = lbs_err_set(err, -EIO, "%s: %s", path, strerror(errno));
    }
    if (rc)
        remove_all(dir, prefix, r);
    return rc;
}

int lbs_sim_chakra_export(const struct lbs_sim_platform *pl,
                          const struct lbs_sim_model *m,
                          const struct lbs_sim_plan *plan, long P,
                          const struct lbs_sim_opts *o, int final,
                          const char *dir, const char *prefix, long nranks,
                          struct lbs_err *err)
{
    struct evlist l = {0};
    struct graph g = {0};
    struct lbs_sim_result r;
    struct lbs_sim_opts q = o ? *o : (struct lbs_sim_opts){0};
    if (nranks < 1 || nranks > P || nranks > MAX_RANK_FILES)
        return lbs_err_set(err, -EINVAL, "--ranks %ld: 1 .. min(GPUs, %d)",
                           nranks, MAX_RANK_FILES);
    if (!*prefix || strchr(prefix, '/'))
        return lbs_err_set(err, -EINVAL, "--prefix '%s': a file name "
                           "without '/'", prefix);
    q.on_event = on_event;
    q.ctx = &l;
    q.emit_final = final;
    int rc = lbs_sim_run(pl, m, plan, P, &q, &r, err);
    if (!rc && l.oom)
        rc = lbs_err_set(err, -ENOMEM, "out of memory");
    if (!rc && (rc = build(&g, &l, m, plan, P)))
        rc = lbs_err_set(err, rc, rc == -ENOMEM ? "out of memory"
                         : "the step has no timeline to export");
    if (!rc && mkdir(dir, 0755))
        rc = lbs_err_set(err, errno == EEXIST ? -EINVAL : -errno,
                         "%s: %s%s", dir, strerror(errno), errno == EEXIST
                         ? " (give a directory that does not exist yet)" : "");
    if (!rc) {
        char gpus[32], step[32];
        snprintf(gpus, sizeof gpus, "%ld", P);
        snprintf(step, sizeof step, "%s", final ? "final phase" : "first");
        const char *const meta[][2] = {
            {"schema", SCHEMA}, {"producer", "lbscale sim export"},
            {"optim", plan->optim}, {"model", m->name},
            {"platform", pl->name}, {"gpus", gpus}, {"step", step}};
        rc = write_all(&g, dir, prefix, nranks, P, meta,
                       sizeof meta / sizeof *meta, err);
    }
    free(l.e);
    free(g.n);
    free(g.pool);
    return rc;
}

/* ---- reading: a Chakra trace's collectives as an lbscale trace ------------ */

/* One varint32 length at *pos of buf[0..len); -1 when truncated. */
static long get_varint(const uint8_t *buf, size_t len, size_t *pos)
{
    uint64_t v = 0;
    for (int shift = 0; shift < 35; shift += 7) {
        if (*pos >= len)
            return -1;
        uint8_t b = buf[(*pos)++];
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80))
            return v <= (uint64_t)LONG_MAX ? (long)v : -1;
    }
    return -1;
}

static const char *lbs_coll_of(int64_t ct)
{
    switch (ct) {
    case CHAKRA_PROTO_MSG__COLLECTIVE_COMM_TYPE__ALL_REDUCE: return "allreduce";
    case CHAKRA_PROTO_MSG__COLLECTIVE_COMM_TYPE__ALL_GATHER: return "allgather";
    case CHAKRA_PROTO_MSG__COLLECTIVE_COMM_TYPE__ALL_TO_ALL: return "alltoall";
    case CHAKRA_PROTO_MSG__COLLECTIVE_COMM_TYPE__BROADCAST: return "bcast";
    case CHAKRA_PROTO_MSG__COLLECTIVE_COMM_TYPE__BARRIER: return "barrier";
    default: return NULL;   /* reduce, gather, scatter, reduce-scatter */
    }
}

static const ChakraProtoMsg__AttributeProto *
attr_of(ChakraProtoMsg__AttributeProto **a, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (a[i]->name && !strcmp(a[i]->name, name))
            return a[i];
    return NULL;
}

static int64_t attr_int(const ChakraProtoMsg__AttributeProto *a, int *ok)
{
    *ok = 1;
    switch (a ? a->value_case : 0) {
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_INT64_VAL:
        return a->int64_val;
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_UINT64_VAL:
        return a->uint64_val <= INT64_MAX ? (int64_t)a->uint64_val : -1;
    default:
        *ok = 0;
        return -1;
    }
}

struct imported {
    ChakraProtoMsg__Node **n;
    size_t nn, cap;
    long ranks;                 /* from the metadata's "gpus", else 0 */
};

static void imported_free(struct imported *im)
{
    for (size_t i = 0; i < im->nn; i++)
        chakra_proto_msg__node__free_unpacked(im->n[i], NULL);
    free(im->n);
}

/* Every message of a Chakra file: the metadata first, then nodes. */
static int parse_et(const char *file, const uint8_t *buf, size_t len,
                    struct imported *im, struct lbs_err *err)
{
    size_t pos = 0;
    for (long k = 0; pos < len; k++) {
        long n = get_varint(buf, len, &pos);
        if (n < 0 || (size_t)n > len - pos)
            return lbs_err_set(err, -EINVAL, "%s: message %ld: truncated "
                               "(a Chakra trace is varint32-length-"
                               "delimited protobuf)", file, k);
        if (k == 0) {
            ChakraProtoMsg__GlobalMetadata *g =
                chakra_proto_msg__global_metadata__unpack(NULL, (size_t)n,
                                                          buf + pos);
            if (!g)
                return lbs_err_set(err, -EINVAL, "%s: not a Chakra "
                                   "execution trace (its first message is "
                                   "no GlobalMetadata)", file);
            const ChakraProtoMsg__AttributeProto *a =
                attr_of(g->attr, g->n_attr, "gpus");
            if (a && a->value_case ==
                         CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_STRING_VAL)
                im->ranks = strtol(a->string_val, NULL, 10);
            chakra_proto_msg__global_metadata__free_unpacked(g, NULL);
        } else {
            if (im->nn == im->cap) {
                size_t cap = im->cap ? 2 * im->cap : 256;
                void *q = cap < 100000000 ? realloc(im->n, cap * sizeof *im->n)
                                          : NULL;
                if (!q)
                    return lbs_err_set(err, -ENOMEM, "%s: out of memory",
                                       file);
                im->n = q;
                im->cap = cap;
            }
            ChakraProtoMsg__Node *nd =
                chakra_proto_msg__node__unpack(NULL, (size_t)n, buf + pos);
            if (!nd)
                return lbs_err_set(err, -EINVAL, "%s: message %ld: not a "
                                   "Chakra Node", file, k);
            im->n[im->nn++] = nd;
        }
        pos += (size_t)n;
    }
    if (!im->nn)
        return lbs_err_set(err, -EINVAL, "%s: no nodes (an empty or "
                           "metadata-only Chakra trace)", file);
    return 0;
}

/* The model layer a collective waits for: its data dependency on a node
 * named "backward:<layer name>" (what lbs_sim_chakra_export writes), else
 * -1 (not about one layer). */
static int layer_of(const struct imported *im, const ChakraProtoMsg__Node *c,
                    const struct lbs_sim_model *m)
{
    for (size_t d = 0; d < c->n_data_deps; d++)
        for (size_t i = 0; i < im->nn; i++) {
            const ChakraProtoMsg__Node *p = im->n[i];
            if (p->id != c->data_deps[d] || !p->name ||
                strncmp(p->name, "backward:", 9))
                continue;
            for (size_t l = 0; l < m->nlayers; l++)
                if (!strcmp(m->l[l].name, p->name + 9))
                    return (int)l;
        }
    return -1;
}

int lbs_sim_chakra_import(const char *path, const struct lbs_sim_model *m,
                          long ranks, FILE *out, size_t *ncalls,
                          size_t *skipped, struct lbs_err *err)
{
    char *text = NULL;
    size_t len = 0;
    *ncalls = *skipped = 0;
    int rc = sj_read_file(path, LBS_SIM_TRACE_MAX_BYTES, 1, &text, &len, err);
    if (!rc)
        rc = lbs_sim_chakra_import_mem(path, (const uint8_t *)text, len, m,
                                       ranks, out, ncalls, skipped, err);
    free(text);
    return rc;
}

static int import_lines(const char *path, const uint8_t *buf, size_t len,
                        const struct lbs_sim_model *m, long ranks, FILE *out,
                        size_t *ncalls, size_t *skipped, struct lbs_err *err);

/* The trace is written to memory first and read back by the trace-v1
 * reader: only a plan the simulator accepts reaches out (a barrier that
 * claims bytes, say, is refused naming the Chakra file). */
int lbs_sim_chakra_import_mem(const char *path, const uint8_t *buf,
                              size_t len, const struct lbs_sim_model *m,
                              long ranks, FILE *out, size_t *ncalls,
                              size_t *skipped, struct lbs_err *err)
{
    char *text = NULL;
    size_t tlen = 0;
    FILE *mem = open_memstream(&text, &tlen);
    if (!mem)
        return lbs_err_set(err, -ENOMEM, "out of memory");
    int rc = import_lines(path, buf, len, m, ranks, mem, ncalls, skipped,
                          err);
    if (fclose(mem) && !rc)
        rc = lbs_err_set(err, -ENOMEM, "out of memory");
    if (!rc) {
        struct lbs_sim_plan *p = NULL;
        struct lbs_err e2 = {{0}};
        if (lbs_sim_trace_parse(text, tlen, "import", &p, &e2))
            rc = lbs_err_set(err, -EINVAL, "%s: not a plan lbscale can "
                             "replay: %s", path, e2.msg);
        lbs_sim_plan_free(p);
    }
    if (!rc && fwrite(text, 1, tlen, out) != tlen)
        rc = lbs_err_set(err, -EIO, "writing the trace failed");
    free(text);
    return rc;
}

static int import_lines(const char *path, const uint8_t *buf, size_t len,
                        const struct lbs_sim_model *m, long ranks, FILE *out,
                        size_t *ncalls, size_t *skipped, struct lbs_err *err)
{
    struct imported im = {0};
    int rc = parse_et(path, buf, len, &im, err);
    long P = ranks > 0 ? ranks : im.ranks;
    if (!rc && P < 1)
        rc = lbs_err_set(err, -EINVAL, "%s: no \"gpus\" in its metadata: "
                         "give --ranks", path);
    *ncalls = *skipped = 0;
    /* the header: the model's layers, so the plan binds to it */
    if (!rc) {
        json_t *ls = json_array();
        for (size_t i = 0; ls && i < m->nlayers; i++)
            json_array_append_new(ls, json_pack("{s:s,s:I,s:i}", "name",
                                  m->l[i].name, "n", (json_int_t)m->l[i].n,
                                  "ndim", m->l[i].ndim));
        json_t *h = json_pack("{s:s,s:i,s:s,s:s,s:n,s:I,s:i,s:o}", "format",
                              "lbscale-trace", "version", 1, "optim",
                              "chakra", "params", "", "compress",
                              "ranks", (json_int_t)P, "steps", 1, "layers",
                              ls);
        char *s = h ? json_dumps(h, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
        if (!s || fprintf(out, "%s\n", s) < 0)
            rc = lbs_err_set(err, -EIO, "writing the trace failed");
        free(s);
        json_decref(h);
    }
    for (size_t i = 0; i < im.nn && !rc; i++) {
        const ChakraProtoMsg__Node *c = im.n[i];
        if (c->type == CHAKRA_PROTO_MSG__NODE_TYPE__COMM_SEND_NODE ||
            c->type == CHAKRA_PROTO_MSG__NODE_TYPE__COMM_RECV_NODE) {
            (*skipped)++;       /* point-to-point: no peer graph in trace-v1 */
            continue;
        }
        if (c->type != CHAKRA_PROTO_MSG__NODE_TYPE__COMM_COLL_NODE)
            continue;
        int ok1, ok2;
        int64_t ct = attr_int(attr_of(c->attr, c->n_attr, "comm_type"), &ok1);
        int64_t sz = attr_int(attr_of(c->attr, c->n_attr, "comm_size"), &ok2);
        const char *k = ok1 ? lbs_coll_of(ct) : NULL;
        if (!ok1 || !ok2 || sz < 0 || (double)sz > 9e15)
            rc = lbs_err_set(err, -EINVAL, "%s: node %llu: a collective "
                             "without an integer comm_type and comm_size "
                             "(0 .. 9e15)", path,
                             (unsigned long long)c->id);
        else if (!k)
            rc = lbs_err_set(err, -EINVAL, "%s: node %llu: comm_type %lld "
                             "has no lbscale collective (allreduce, "
                             "allgather, alltoall, bcast, barrier)", path,
                             (unsigned long long)c->id, (long long)ct);
        else if (fprintf(out, "{\"step\": 1, \"layer\": %d, \"coll\": \"%s\", "
                         "\"bytes\": %lld}\n", layer_of(&im, c, m), k,
                         (long long)sz) < 0)
            rc = lbs_err_set(err, -EIO, "writing the trace failed");
        else
            (*ncalls)++;
    }
    if (!rc && !*ncalls)
        rc = lbs_err_set(err, -EINVAL, "%s: no collective nodes to import",
                         path);
    imported_free(&im);
    return rc;
}
