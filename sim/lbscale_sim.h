/* lbscale_sim.h - the simulator library: platforms, models, communication
 * plans (trace-v1 files or the data-parallel contract), alpha-beta
 * collective cost models and the per-step event engine.
 *
 * Layering: sim depends on libm, jansson and core: error.h, param.h,
 * file.h, the collectives of comm.h, the graphs of topology.h, and the
 * optimizer registry for an optimizer's properties and bytes per element
 * (entry.c); it never needs MPI, NCCL or CUDA.  The simulator owns its
 * data: presets, optimizer entries, the anchors, the speed benchmark and
 * the calibrated platform writer are here; bench/sim/ only parses
 * options and prints.
 *
 * Units: times are seconds, sizes bytes, bandwidths bytes/s inside the
 * library (the JSON files use GB/s, Gb/s, us and GFLOP as their field
 * names say; 1 GB = 1e9 bytes).
 *
 * Ownership: every *_load / *_parse / *_new allocates and the matching
 * *_free releases (NULL is fine).  Loaded objects are read-only afterwards
 * and may be shared between threads.  The structs are plain data so tests
 * and tools can read (and, for hand-made cases, fill) them; the readers
 * guarantee every documented invariant.
 *
 * Errors: 0 or a negative code (lbscale/error.h) with one line in err
 * that names the file and the field, e.g.
 *   "dgx.json: field 'node.nic_gbps': must be > 0 (got -200)".
 * Bad input is -EINVAL (unknown names: -ENOENT), so the CLI exits 2.
 */
#ifndef LBSCALE_SIM_H
#define LBSCALE_SIM_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "lbscale/comm.h"       /* enum lbs_coll */
#include "lbscale/error.h"
#include "lbscale/topology.h"   /* enum lbs_topo */

#include "algos.h"                /* the algorithm rows */

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------ */
/* Collectives, algorithms, protocols                                  */

/* The collectives are core's enum lbs_coll and its names (lbscale/comm.h:
 * lbs_coll_name, lbs_coll_from_name: the kinds of trace-v1, one table for
 * the record backend and the simulator). */

/* Algorithms: one row each in sim/algos.h (name, collective, cost
 * functions, constraints), the enum made from the same rows. */
#define LBS_SIM_ALGO_ENUM(id, name, coll, cost, nccl, nccl_as, needs) \
    LBS_SIM_##id,
enum lbs_sim_algo {
    LBS_SIM_ALGOS(LBS_SIM_ALGO_ENUM)
    LBS_SIM_NALGO
};
#undef LBS_SIM_ALGO_ENUM
const char *lbs_sim_algo_name(enum lbs_sim_algo a);
int lbs_sim_algo_from_name(const char *s);
/* Which collective an algorithm implements (allgather algorithms serve
 * allgatherv too, and a "full" neighbour graph). */
enum lbs_coll lbs_sim_algo_coll(enum lbs_sim_algo a);

/* NCCL's three protocols: LL (8-byte flag+data stores), LL128 (128-byte
 * lines, 120 of payload), Simple (bulk copies with fences). */
enum lbs_sim_proto { LBS_SIM_LL, LBS_SIM_LL128, LBS_SIM_SIMPLE,
                     LBS_SIM_NPROTO };
const char *lbs_sim_proto_name(enum lbs_sim_proto p);

struct lbs_sim_proto_params {
    int enabled;
    double base_lat;    /* s, once per call */
    double intra_hop;   /* s, per intra-node step */
    double inter_hop;   /* s, per inter-node step (plus fabric.lat_us) */
    double bw_factor;   /* fraction of link bandwidth reached, (0, 1] */
    double max_bytes;   /* largest step message it carries (MPI's eager
                           limit); 0 = any */
};

/* NCCL's own tuner model (sim/nccl.c), for GPU platforms: the platform's
 * "nccl" object.  The constant tables (base and hardware latencies,
 * per-channel caps, protocol factors) are NCCL 2.21.5's, in nccl.c; the
 * platform gives what NCCL's topology search would find on it. */
enum lbs_sim_gpu_arch { LBS_SIM_VOLTA, LBS_SIM_AMPERE, LBS_SIM_HOPPER };
struct lbs_sim_nccl_graph {
    int channels;           /* graph channels (NCCL's search result) */
    double bw;              /* per channel, B/s (bwInter across nodes) */
    double tree_bw_intra;   /* multi-node graph: the tree's bwIntra, which
                               the search raises up to 2 bwInter (search.cc
                               pass 2) and the tuner uses on 2 nodes */
    int tree_simple;        /* multi-node graph: the search fell back to
                               the plain TREE pattern (sm90): x0.85 */
};
struct lbs_sim_nccl {
    enum lbs_sim_gpu_arch arch;
    int cpu_amd;            /* network post overhead 2 us (AMD) else 1 us;
                               LL cap row for multi-node */
    int intra_pci;          /* GPUs talk over PCIe, not NVLink */
    int ll128_inter;        /* NCCL enables LL128 across nodes: NVLink
                               inside, the NIC at PXB or closer (PXN on
                               Hopper), compute capability 7.0/8.0/9.0 */
    int ll128_intra;        /* ... and inside one node (NVLink, cc) */
    struct lbs_sim_nccl_graph intra;   /* one node */
    struct lbs_sim_nccl_graph inter;   /* two or more nodes */
    struct lbs_sim_nccl_graph nvls;    /* NVLS graph (channels 0: none) */
    double p2p_bw;          /* B/s one GPU's point-to-point sends reach
                               through its NIC (alltoall, neighbours) */
};

/* ------------------------------------------------------------------ */
/* Platforms (sim/data/platforms/NAME.json, format "lbscale-platform" v1)  */

enum lbs_sim_fabric { LBS_SIM_FLAT, LBS_SIM_FAT_TREE };

#define LBS_SIM_NAME_MAX 64
#define LBS_SIM_FILE_MAX 256

struct lbs_sim_platform {
    char name[LBS_SIM_NAME_MAX];
    char file[LBS_SIM_FILE_MAX];   /* where it was read from (messages) */
    char gpu[LBS_SIM_NAME_MAX];
    double peak_flops;      /* per GPU, dense tensor peak, FLOP/s  > 0 */
    double mem_bw;          /* device memory bandwidth, B/s        > 0 */
    int gpus_per_node;      /* >= 1 */
    double intra_bw;        /* per GPU per direction inside a node, B/s */
    int nics_per_node;      /* >= 1 */
    double nic_bw;          /* per NIC per direction, B/s */
    double reduce_bw;       /* B/s a rank reduces received data at; 0 =
                               fused into the copy (NCCL on GPUs) */
    double coll_bw[LBS_COLL_COUNT];  /* bandwidth factor per collective
                               (allgatherv uses allgather's), (0, 1];
                               1 unless the platform says otherwise */
    enum lbs_sim_fabric fabric;
    int nodes_per_leaf;     /* fat-tree: nodes under one leaf switch */
    double oversub;         /* fat-tree: downlink/uplink ratio, >= 1 */
    double net_lat;         /* s, added to every inter-node step that
                               stays under one leaf switch */
    double spine_lat;       /* s, instead of net_lat for a step that
                               crosses the spine (fat-tree; = net_lat
                               unless the platform says otherwise) */
    double overlap_slowdown;/* compute runs 1 + this slower while a
                               collective overlaps it (0: not modelled) */
    int nccl_model;         /* collectives priced by NCCL's tuner model */
    struct lbs_sim_nccl nccl;
    long max_gpus;          /* largest P this platform describes: the
                               file's max_gpus, else what its fabric can
                               hold (lbs_sim_fabric_max_nodes) */
    int tiers;              /* fat-tree switch levels: 2 or 3 (1: flat) */
    int switch_radix;       /* ports per switch (0: not stated) */
    int rails;              /* rail-optimized: NIC i of every node on
                               plane i (each plane its own fat-tree) */
    int nodes_per_pod;      /* 3 tiers: nodes under one pod's spines */
    double core_lat;        /* s, a step that crosses pods (3 tiers) */
    /* A real job beyond its collectives ("job" object, or --compute RUN /
     * --compute-cv / --overhead-ms): per-rank compute time varies with
     * coefficient of variation compute_cv, and a synchronous step waits
     * for the slowest of P ranks; a fixed per-step overhead (data
     * loading, launch, framework) adds to every step. */
    double compute_cv;
    double overhead;        /* s per step */
    char job_source[600];   /* where both come from */
    struct lbs_sim_proto_params proto[LBS_SIM_NPROTO];
    unsigned algos;         /* bit (1u << enum lbs_sim_algo) = enabled */
};

/* Largest files the readers accept (regular files only; a FIFO, device
 * or directory is refused before anything is read).  Far above any real
 * file: the largest model preset is 45 KB, the largest trace 3.3 MB. */
#define LBS_SIM_PLATFORM_MAX_BYTES ((size_t)1 << 20)     /* 1 MiB */
#define LBS_SIM_MODEL_MAX_BYTES ((size_t)64 << 20)       /* 64 MiB */
#define LBS_SIM_TRACE_MAX_BYTES ((size_t)1 << 30)        /* 1 GiB */
#define LBS_SIM_SAMPLES_MAX_BYTES ((size_t)256 << 20)    /* sim calibrate */

/* Nodes a fabric can hold: a flat fabric one switch's ports (radix, per
 * NIC or per rail), a fat-tree of t tiers of radix-k switches 2 (k/2)^t
 * host ports (Al-Fares et al., SIGCOMM 2008: k^3/4 for t = 3), times the
 * leaf oversubscription r as 2r/(r+1) of a leaf's ports face down; one
 * node takes nics ports, or one per plane when rail-optimized.  0 when
 * the radix is not stated. */
double lbs_sim_fabric_max_nodes(const struct lbs_sim_platform *p);

/* Read a platform from path, or from text (file names it in messages). */
int lbs_sim_platform_load(const char *path, struct lbs_sim_platform **out,
                          struct lbs_err *err);
int lbs_sim_platform_parse(const char *text, const char *file,
                           struct lbs_sim_platform **out,
                           struct lbs_err *err);
void lbs_sim_platform_free(struct lbs_sim_platform *p);

/* ------------------------------------------------------------------ */
/* Models (sim/data/models/NAME.json, format "lbscale-model" v1)           */

struct lbs_sim_layer {
    char *name;
    double n;           /* parameters (product of shape) */
    int ndim;
    double fwd_flops;   /* at the model's per-GPU batch */
    double bwd_flops;
    double fwd_s, bwd_s;  /* measured times (s), < 0 when not given */
};

struct lbs_sim_model {
    char name[LBS_SIM_NAME_MAX];
    char file[LBS_SIM_FILE_MAX];
    size_t nlayers;
    struct lbs_sim_layer *l;   /* forward order; backward runs reversed */
    double params;             /* sum of n */
    double efficiency;         /* fraction of peak the kernels reach */
    double batch_per_gpu, seq_len;
    double bucket_bytes;       /* DDP bucket cap (default 25 MiB) */
    double wgrad_frac;         /* share of a layer's backward that is the
                                  weight gradient (skippable), default 0.5 */
    /* measured models (lbs_sim_model_from_trace) only, else -1: the
     * coefficient of variation of the per-step compute (sum of the layer
     * times) and the median per-step time outside the layers and the
     * optimizer (step_ms - fwd - bwd - optim_ms: data, framework) */
    double compute_cv, overhead_s;
    size_t measured_steps;
};

int lbs_sim_model_load(const char *path, struct lbs_sim_model **out,
                       struct lbs_err *err);
int lbs_sim_model_parse(const char *text, const char *file,
                        struct lbs_sim_model **out, struct lbs_err *err);
void lbs_sim_model_free(struct lbs_sim_model *m);
/* Run m at `batch` samples per GPU: every layer's FLOPs and measured times
 * scale linearly from the model's batch_per_gpu (a per-sample cost that
 * does not change with the batch: kernels that get faster at larger
 * batches are not modelled). */
int lbs_sim_model_set_batch(struct lbs_sim_model *m, double batch,
                            struct lbs_err *err);
/* Compute from measurement (measured.c): a model made from a training
 * trace (train-trace-v1: its layers, local batch, and per layer the median
 * measured forward and backward times over its steps); and a model's
 * layer times replaced by a measured model's (same layer count and sizes,
 * else -EINVAL naming both). */
int lbs_sim_model_from_trace(const char *path, struct lbs_sim_model **out,
                             struct lbs_err *err);
int lbs_sim_model_use_times(struct lbs_sim_model *m,
                            const struct lbs_sim_model *measured,
                            struct lbs_err *err);
/* Forward and backward seconds of layer i on platform pl. */
double lbs_sim_layer_fwd(const struct lbs_sim_model *m,
                         const struct lbs_sim_platform *pl, size_t i);
double lbs_sim_layer_bwd(const struct lbs_sim_model *m,
                         const struct lbs_sim_platform *pl, size_t i);

/* ------------------------------------------------------------------ */
/* Communication plans                                                  */

/* Neighbour graphs are core's (lbscale/topology.h); the sim prices ring,
 * exponential and onepeer by direct sends and full as an allgather. */

struct lbs_sim_call {
    int layer;                  /* -1: not about one layer */
    enum lbs_coll coll;
    double bytes;               /* trace-v1 convention, this rank, at the
                                   plan's ranks */
    double split;               /* the trace's bytes_split (b of the bytes
                                   rule, an integer); 0: bytes do not
                                   depend on P */
    double split_scale;         /* the model scaling the rule's change with
                                   P is multiplied by (lbs_sim_plan_bind) */
};

/* One distinct step: identical steps of a trace are stored once with
 * their count as weight. */
struct lbs_sim_step {
    size_t ncalls;
    struct lbs_sim_call *calls;
    long first;                 /* first step number with this content */
    double weight;              /* how many steps are like this one */
    double final_weight;        /* how many of them are in the final phase */
    unsigned kinds;             /* bit per collective kind used */
    double extra_bpe;           /* optimizer bytes per element this step
                                   moves beyond its first step's on P > 1
                                   ranks: extra_bpe + extra_bpe_p / P
                                   (core's model of this step: 1-bit
                                   LAMB's packing, error feedback and
                                   unpacking); priced as compression.  0
                                   unless an entry sets it */
    double extra_bpe_p;
};

struct lbs_sim_plan {
    char optim[LBS_SIM_NAME_MAX];
    char params[256];
    char file[LBS_SIM_FILE_MAX];    /* "" for the data-parallel contract */
    long ranks;                     /* P the trace was recorded at; 0: any */
    long steps;                     /* steps in the trace */
    long final_from;                /* first step of the final phase */
    size_t nlayers;
    double *layer_n;                /* trace's n per layer */
    char **layer_name;
    size_t nsteps;                  /* distinct steps */
    struct lbs_sim_step *step;
    enum lbs_topo topo;             /* neighbour graph (from params) */
    int skip_wgrad;                 /* JointSpar: no wgrad for dropped layers */
    int bytes_rule;                 /* some call has a split: bytes depend
                                       on P (lbs_sim_step_calls) */
    struct lbs_sim_call *pool;      /* owns every step's calls */
    /* compressed exchanges (header "compress_traffic"): device memory
     * bytes per gradient element that compressing and decompressing move;
     * decompression moves decomp_once_bpe once and decomp_bpe per payload
     * (P payloads when they were gathered, else one) */
    double comp_bpe, decomp_bpe, decomp_once_bpe;
    int decomp_per_rank;
    char compress[96];              /* the header's compressor spec, "" */
};

/* trace-v1 reader (validates everything, names file:line and field). */
int lbs_sim_trace_load(const char *path, struct lbs_sim_plan **out,
                       struct lbs_err *err);
int lbs_sim_trace_parse(const char *text, size_t len, const char *file,
                        struct lbs_sim_plan **out, struct lbs_err *err);
/* The data-parallel contract for sgd/lars/lamb/adamw: one step that
 * allreduces every layer's fp32 gradient (4 n bytes, its layer index);
 * the engine buckets them DDP-style. */
int lbs_sim_plan_dp(const struct lbs_sim_model *m, const char *optim,
                    struct lbs_sim_plan **out, struct lbs_err *err);
/* The same with elem_bytes per gradient element (2: fp16/bf16 gradients,
 * as mixed-precision baselines allreduce them; 4: fp32). */
int lbs_sim_plan_dp_bytes(const struct lbs_sim_model *m, const char *optim,
                          double elem_bytes, struct lbs_sim_plan **out,
                          struct lbs_err *err);
/* Apply the trace-v1 scaling rule to model m: a copy of plan whose bytes
 * are scaled by n_model/n_trace per layer (layer -1 as is; a bytes rule's
 * change with P is scaled alike, so a bound call on P GPUs carries the
 * scaling times what the recording would have sent on P).  -EINVAL when
 * the layer counts differ (naming both files). */
int lbs_sim_plan_bind(const struct lbs_sim_plan *plan,
                      const struct lbs_sim_model *m,
                      struct lbs_sim_plan **out, struct lbs_err *err);
void lbs_sim_plan_free(struct lbs_sim_plan *p);
/* The bytes call c of plan carries on P GPUs under trace-v1's bytes_rule
 * (unit(P) = a + ceil(b/P), alltoall's unit its block of bytes/P), times
 * the call's model scaling; c->bytes when it has no split or P is the
 * plan's ranks. */
double lbs_sim_call_bytes(const struct lbs_sim_plan *plan,
                          const struct lbs_sim_call *c, long P);
/* Step st's calls as they are on P GPUs: st->calls itself when the plan
 * has no bytes rule, else buf (st->ncalls entries) filled with copies
 * whose bytes are lbs_sim_call_bytes at P.  O(calls). */
const struct lbs_sim_call *lbs_sim_step_calls(const struct lbs_sim_plan *plan,
                                              const struct lbs_sim_step *st,
                                              long P,
                                              struct lbs_sim_call *buf);

/* ------------------------------------------------------------------ */
/* Collective costs                                                     */

/* Per-P derived network (node count, shares of the fat-tree uplinks).
 * Plain data, no allocation. */
#define LBS_SIM_LOGMAX 40
#define LBS_SIM_RING_CANDS 32
struct lbs_sim_net {
    const struct lbs_sim_platform *pl;
    long P, g, N;               /* GPUs, GPUs per node used, nodes */
    double Bi, Bn, Bg;          /* intra per GPU, node NIC total, Bn/g */
    double gpu_nic;             /* what one GPU alone can push out */
    double sh_ring, sh_tree, sh_a2a;
    double sh_xor[LBS_SIM_LOGMAX];    /* node distance 2^k, XOR partners */
    double sh_shift[LBS_SIM_LOGMAX];  /* node distance 2^k, shifts */
    /* Latency per fabric level (fat-tree): 1 when a step of the pattern
     * has a flow that leaves its leaf, so the step pays
     * fabric.lat_spine_us instead of fabric.lat_us (the step lasts as
     * long as its slowest flow). */
    unsigned char spine_xor[LBS_SIM_LOGMAX];    /* XOR partners, 2^k */
    unsigned char spine_shift[LBS_SIM_LOGMAX];  /* shifts, 2^k nodes */
    int spine_tree;             /* double binary tree levels that do */
    long spine_ring;            /* ring hops out of a leaf per round:
                                   ceil(N / nodes_per_leaf), 0 in one */
    /* The pipelined ring's critical path (coll.c, ring_crit): the window
     * shapes that can decide it, [0] for the allreduce's 2(P-1) steps, [1]
     * for the allgather's P-1: E node exits, c_i in [lo, hi] intra-node
     * hops, at most smax spine hops.  They depend on P and the fabric
     * only, so they are found once here. */
    int ring_nc[2];
    struct lbs_sim_ring_cand {
        long E, lo, hi, smax;
    } ring_c[2][LBS_SIM_RING_CANDS];
};
/* -EINVAL when P < 1, P > max_gpus, or P > g and not a multiple of it. */
int lbs_sim_net_init(struct lbs_sim_net *net,
                     const struct lbs_sim_platform *pl, long P,
                     struct lbs_err *err);

struct lbs_sim_cost {
    double t;                   /* seconds */
    enum lbs_sim_algo algo;
    enum lbs_sim_proto proto;
    double wire;                /* bytes the busiest GPU sends */
};
/* Time of one call with a given algorithm and protocol; +INFINITY when it
 * does not apply (wrong collective, P not a power of two where needed,
 * disabled).  topo/step matter for neighbour exchanges only. */
double lbs_sim_algo_time(const struct lbs_sim_net *net, enum lbs_sim_algo a,
                         enum lbs_sim_proto p, double bytes,
                         enum lbs_topo topo, long step, double *wire);
/* The message one step of the collective's ring form carries (allreduce
 * and alltoall n/P, allgather and bcast n, neighbour n): what a
 * protocol's max_bytes is compared with, here and in calibration. */
double lbs_sim_step_bytes(enum lbs_coll c, long P, double bytes);
/* NCCL-model platforms: the channels algorithm a runs with on net (its
 * graph's) and NCCL's number for it (tree 0, ring 1, NVLS 4, NVLS_TREE 5;
 * -1 for point-to-point sends, which NCCL's tuner does not choose). */
int lbs_sim_nccl_channels(const struct lbs_sim_net *net, enum lbs_sim_algo a,
                          int *nccl_algo);
/* The fastest enabled (algorithm, protocol) for the call, as NCCL's tuner
 * picks per call.  Zero time when P == 1. */
struct lbs_sim_cost lbs_sim_coll_cost(const struct lbs_sim_net *net,
                                      enum lbs_coll c, double bytes,
                                      enum lbs_topo topo, long step);

/* ------------------------------------------------------------------ */
/* The engine                                                           */

enum lbs_sim_ev_kind { LBS_SIM_EV_FWD, LBS_SIM_EV_BWD, LBS_SIM_EV_COMM,
                       LBS_SIM_EV_OPTIM };
struct lbs_sim_event {
    enum lbs_sim_ev_kind kind;
    int layer;                  /* first layer (comm: last layer fused) */
    int layer_last;             /* comm: the other end of the bucket */
    int calls;                  /* comm: trace calls fused */
    int post;                   /* comm: after backward (not overlapped) */
    double ready, start, end;   /* s */
    double bytes;
    struct lbs_sim_cost cost;
    enum lbs_coll coll;
};
typedef void (*lbs_sim_event_fn)(void *ctx, const struct lbs_sim_event *e);

struct lbs_sim_opts {
    double bucket_bytes;        /* <= 0: the model's (25 MiB default) */
    double optim_bytes_per_elem;/* optimizer memory traffic per param */
    lbs_sim_event_fn on_event;  /* optional timeline of one distinct step:
                                   the first, or with emit_final the last
                                   one of the final phase */
    int emit_final;
    void *ctx;
    long accum;                 /* micro-batches per step (<= 1: one) */
    double compress_gbps;       /* measured compress and decompress rates */
    double decompress_gbps;     /* (input fp32 bytes/s); 0: the trace's
                                   bytes model at the memory bandwidth */
    int no_overlap;             /* every call waits for the backward end */
    int no_slowdown;            /* ignore the platform's compute slowdown */
    /* the job's compute spread and per-step overhead: with cv_set /
     * overhead_set they replace the platform's "job" values */
    int cv_set, overhead_set;
    double compute_cv;          /* coefficient of variation, >= 0 */
    double overhead_s;          /* s per step, >= 0 */
};
/* E[max of P independent standard normal draws] (0 for P = 1): how many
 * standard deviations the slowest of P ranks lies above the mean. */
double lbs_sim_expected_max_normal(long P);

struct lbs_sim_result {
    long P;
    double iter, compute, optim, comm, exposed;   /* s, averaged */
    double slowdown;            /* s the overlapped compute lost (in
                                   exposed) */
    double compress;            /* s of compression and decompression on
                                   the GPU per step (in compute) */
    double straggle;            /* s the step waits for its slowest rank */
    double overhead;            /* s of per-step overhead */
    double bytes;               /* payload bytes per GPU per step */
    double wire;                /* bytes the chosen algorithms send */
    double final_iter;          /* average over the final phase */
    long final_from;
    double calls;               /* collectives per step after fusion */
};

/* Simulate plan (bound to m with lbs_sim_plan_bind, or made by
 * lbs_sim_plan_dp) on P GPUs of pl: every distinct step once, averaged
 * with the steps' weights.  O(layers + calls) per distinct step.
 * -EDOM when a time comes out non-finite (never for what the readers
 * accept; hand-built structs may get there). */
int lbs_sim_run(const struct lbs_sim_platform *pl,
                const struct lbs_sim_model *m,
                const struct lbs_sim_plan *plan, long P,
                const struct lbs_sim_opts *o, struct lbs_sim_result *r,
                struct lbs_err *err);

/* Scale lists: "8..16384" (powers of two from 8, and 16384), "8,64,512",
 * or a mix ("8..64,1000"); counts >= 1.  *out is malloc'ed. */
int lbs_sim_parse_gpus(const char *s, long **out, size_t *n,
                       struct lbs_err *err);
/* lbs_sim_run at every P[i] into res[i], and eff[i] = T(node) / T(P[i]),
 * T(node) at min(gpus_per_node, max_gpus) GPUs (weak scaling). */
int lbs_sim_sweep(const struct lbs_sim_platform *pl,
                  const struct lbs_sim_model *m,
                  const struct lbs_sim_plan *plan, const long *P, size_t n,
                  const struct lbs_sim_opts *o, struct lbs_sim_result *res,
                  double *eff, struct lbs_err *err);

/* ------------------------------------------------------------------ */
/* Calibration: least-squares alpha-beta fit of measured collectives    */

struct lbs_sim_sample {
    enum lbs_coll coll;
    long ranks;
    double bytes;               /* trace-v1 convention */
    double t;                   /* measured seconds */
    long nodes;                 /* hosts the ranks ran on (0: unknown, as
                                   1: one node) */
    long rpn;                   /* most ranks on one host (0: unknown) */
};
struct lbs_sim_heldout {
    size_t n;                   /* samples predicted */
    double med, max;            /* relative errors (-1: n/a) */
};
struct lbs_sim_fit {
    double base_lat, hop_lat;   /* s */
    double rndv_lat;            /* s per step above eager_max */
    double eager_max;           /* bytes; 0 = no eager limit fitted */
    double bw;                  /* B/s per rank link: the fastest
                                   collective's */
    double coll_bw[LBS_COLL_COUNT];  /* B/s per collective fitted, else 0 */
    double reduce_bw;           /* B/s; 0 = no reduction cost fitted */
    size_t used;                /* samples in the fit */
    struct lbs_sim_heldout sizes;   /* fit every other size, predict rest */
    struct lbs_sim_heldout ranks;   /* fit other rank counts, predict P */
};
/* Fit t = base + steps(P) (hop + [step > eager_max] rndv)
 *       + volume(P, bytes) / bw(coll) + [allreduce] (P-1)/P bytes / reduce_bw
 * over the samples (ring forms: allreduce 2(P-1) steps and 2(P-1)/P
 * bytes, allgather P-1 and (P-1) bytes, alltoall P-1 and (P-1)/P bytes,
 * bcast P-1 and bytes), and report two held-out errors: every other
 * message size, and each rank count from the others (needs two or more).
 * -EINVAL when the data cannot determine the fit. */
int lbs_sim_fit(const struct lbs_sim_sample *s, size_t n,
                struct lbs_sim_fit *fit, struct lbs_err *err);

/* The network's constants from samples of several nodes (nodes, rpn),
 * given the fit of one node's samples `in` (calib_net.c): net is `in` with
 * hop_lat the inter-node step latency and bw / coll_bw the node's exit
 * bandwidth per collective, in the form coll.c prices; held-out sizes as
 * lbs_sim_fit.  -EINVAL when the data cannot determine them. */
int lbs_sim_fit_net(const struct lbs_sim_sample *s, size_t n,
                    const struct lbs_sim_fit *in, struct lbs_sim_fit *net,
                    struct lbs_err *err);

/* A GPU platform's NCCL-model bandwidths fitted to measured collectives
 * (calib_nccl.c): factors x on the node's links (intra graph, intra_bw,
 * NVLS) from one-node rows and y on the network (inter graph, its tree's
 * bwIntra, p2p, the NICs) from rows of several nodes, over a base GPU
 * preset; NCCL's latencies are kept.  Errors are relative, of the
 * simulator's price against each measured time. */
struct lbs_sim_nccl_fit {
    double x, y;                /* 1: not measured (no rows) */
    long g;                     /* GPUs per node of the rows */
    size_t n_intra, n_inter;    /* rows used */
    struct lbs_sim_heldout held_intra, held_inter;  /* every other size */
    struct lbs_sim_heldout base_err, fit_err;       /* all rows */
};
int lbs_sim_fit_nccl(const struct lbs_sim_sample *s, size_t n,
                     const struct lbs_sim_platform *base,
                     struct lbs_sim_nccl_fit *fit, struct lbs_err *err);
/* The platform document of such a fit: base_text (the base preset's
 * file, named base) with its bandwidths scaled, c's name, inputs and
 * cluster note, read back before it is handed out. */
struct lbs_sim_calibrated;
int lbs_sim_platform_nccl_calibrated(const char *base_text, const char *base,
                                     const struct lbs_sim_nccl_fit *f,
                                     const struct lbs_sim_calibrated *c,
                                     const char *file, char **text,
                                     size_t *len, struct lbs_err *err);
/* base with g GPUs per node (g > 0), links x and network y. */
void lbs_sim_nccl_scaled(const struct lbs_sim_platform *base, long g,
                         double x, double y, struct lbs_sim_platform *out);

/* ------------------------------------------------------------------ */
/* Presets (preset.c)                                                   */

/* Where presets live: $LBSCALE_SIM_DATA, else the source tree's sim/data,
 * else the installed copy.  Holds platforms/NAME.json, models/NAME.json
 * and traces/OPTIM-MODEL*.jsonl. */
const char *lbs_sim_data_dir(void);
/* kind "platform" or "model": arg as it is when it is a path (has a '/'
 * or ends in .json), else <data>/KINDs/ARG.json, which must exist
 * (-ENOENT naming the presets there; 'local' says how to make it). */
int lbs_sim_preset_path(const char *kind, const char *arg, char *buf,
                        size_t len, struct lbs_err *err);
/* A platform or model by preset name or file (lbs_sim_preset_path, then
 * the reader); the caller frees *out. */
int lbs_sim_platform_find(const char *arg, struct lbs_sim_platform **out,
                          struct lbs_err *err);
int lbs_sim_model_find(const char *arg, struct lbs_sim_model **out,
                       struct lbs_err *err);
/* The names in <data>/DIR_NAME whose file name ends in ext, less ext,
 * sorted (strcmp): a NULL-terminated malloc'ed array (empty when the
 * directory is missing; NULL only without memory), freed with
 * lbs_sim_names_free. */
char **lbs_sim_preset_names(const char *dir_name, const char *ext);
void lbs_sim_names_free(char **names);

/* ------------------------------------------------------------------ */
/* Optimizer entries (entry.c): what --optim LIST names                 */

/* One item of the list: a trace-v1 file, a preset name with traces
 * <data>/traces/NAME-MODEL*.jsonl (one per recorded rank count), or for
 * sgd, lars, lamb and adamw without a trace the data-parallel contract.
 * Owns its plans, each bound to the model it was loaded for. */
struct lbs_sim_entry {
    char name[LBS_SIM_NAME_MAX];    /* "lamb", "lamb+topk:k=0.01" */
    char source[LBS_SIM_FILE_MAX];  /* "data-parallel" or trace file(s) */
    struct lbs_sim_plan **plans;
    size_t nplans;
    double bpe;                     /* optimizer bytes per element, from
                                       core's model of the optimizer */
    int bpe_assumed;                /* 1: this build does not know it (44,
                                       LAMB's, assumed) */
};
/* Load every item of the comma list for model m; grad_bytes (4 or 2) is
 * what the data-parallel contract allreduces per element.  *out is
 * malloc'ed: lbs_sim_entries_free(*out, *n). */
int lbs_sim_entries_load(const char *list, const struct lbs_sim_model *m,
                         double grad_bytes, struct lbs_sim_entry **out,
                         size_t *n, struct lbs_err *err);
void lbs_sim_entries_free(struct lbs_sim_entry *e, size_t n);
/* Is optimizer `name` planned without a trace (the data-parallel
 * contract)?  Core's properties decide: dense and every layer. */
int lbs_sim_is_data_parallel(const char *name);
/* The plan recorded at P ranks, else the nearest rank count (log
 * scale); any-P plans (the contract) always. */
const struct lbs_sim_plan *lbs_sim_entry_plan(const struct lbs_sim_entry *e,
                                              long P);
/* lbs_sim_run of e at base_p, then at every P[i] into res[i], with
 * eff[i] = T(base_p) / T(P[i]) (1 when T(P[i]) is 0): one sweep line. */
int lbs_sim_entry_sweep(const struct lbs_sim_platform *pl,
                        const struct lbs_sim_model *m,
                        const struct lbs_sim_entry *e, const long *P,
                        size_t n, long base_p, const struct lbs_sim_opts *o,
                        struct lbs_sim_result *res, double *eff,
                        struct lbs_err *err);

/* ------------------------------------------------------------------ */
/* Network sweeps (sweep.c)                                             */

/* pl (a copy of ref) with its NICs at gbps Gb/s per node; NCCL's
 * multi-node graph and point-to-point rate move in proportion to the
 * line rate; latencies, NVLink and the fabric stay. */
void lbs_sim_set_node_gbps(struct lbs_sim_platform *pl,
                           const struct lbs_sim_platform *ref, double gbps);
/* e at P GPUs with every node bandwidth gbps[i] into res[i], and
 * eff[i] = T(base_p on pl) / T(P at gbps[i]). */
int lbs_sim_netsweep(const struct lbs_sim_platform *pl,
                     const struct lbs_sim_model *m,
                     const struct lbs_sim_entry *e, long P, long base_p,
                     const long *gbps, size_t n,
                     const struct lbs_sim_opts *o, struct lbs_sim_result *res,
                     double *eff, struct lbs_err *err);
/* The lowest bandwidth at which eff first reaches target, interpolated
 * log-linearly between the points (ascending gbps); NAN when it never
 * does. */
double lbs_sim_eff_reaches(const double *gbps, const double *eff, size_t n,
                           double target);

/* ------------------------------------------------------------------ */
/* Anchors (anchors.c): published figures beside the predictions        */

/* band > 0: the prediction must lie within published x (1 +- band)
 * (kind 'r'), published +- band ('a'), or a factor of band ('f');
 * band 0: shown, not gated.  Strings are static. */
struct lbs_sim_anchor {
    const char *what, *source;
    double published, predicted;    /* NAN: none */
    const char *unit;
    char kind;
    double band;
    const char *note;
    /* where `lbscale plot` marks it (model NULL: nowhere): the scaling
     * figure of model on platform, at gpus, beside optim's line; setup
     * says how it differs from the figure's lines */
    const char *model, *platform, *optim;
    long gpus;
    const char *setup;
};
#define LBS_SIM_ANCHORS_MAX 20
/* Every anchor into an[LBS_SIM_ANCHORS_MAX], from the presets; slamb: a
 * SLAMB trace of bert-xl to use (NULL: the preset lookup, and no trace
 * leaves that prediction NAN; a named one must load). */
int lbs_sim_anchors(const char *slamb, struct lbs_sim_anchor *an, int *n,
                    struct lbs_err *err);
int lbs_sim_anchor_in_band(const struct lbs_sim_anchor *a);

/* ------------------------------------------------------------------ */
/* Validation (validate.c): published end-to-end figures, none fitted   */

struct lbs_sim_vrow {
    char id[24], what[200], source[400];
    double published, predicted;
    double warmup;              /* 0, or the end-to-end warm-up share */
    double num_s, den_s;        /* the two simulated iteration times */
};
struct lbs_sim_validation {
    struct lbs_sim_vrow *row;   /* malloc'ed */
    size_t n;
    double gmean;               /* geometric mean of |pred/pub - 1| */
    double worst;               /* largest |pred/pub - 1| ... */
    size_t worst_row;           /* ... and its row */
};
/* Simulate every row of manifest (NULL: <data>/validation/
 * validation.json); errors name the file and the row's field.  Free with
 * lbs_sim_validation_free. */
int lbs_sim_validate(const char *manifest, struct lbs_sim_validation *out,
                     struct lbs_err *err);
void lbs_sim_validation_free(struct lbs_sim_validation *v);

/* ------------------------------------------------------------------ */
/* Chakra execution traces (chakra.c; built with protobuf-c)           */

/* Write one simulated step of plan on P GPUs of pl as MLCommons Chakra
 * execution traces (schema 1.0.2-chakra.1.0.0, the subset in
 * sim/chakra/chakra_et.proto): DIR/PREFIX.<rank>.et for ranks 0..nranks-1,
 * each a varint32-length-delimited GlobalMetadata then Nodes.  The step is
 * the plan's first distinct step, or with final the last of its final
 * phase.  dir must not exist (it is created; on any failure it is removed
 * again).  -ENOTSUP when this build has no protobuf-c. */
int lbs_sim_chakra_export(const struct lbs_sim_platform *pl,
                          const struct lbs_sim_model *m,
                          const struct lbs_sim_plan *plan, long P,
                          const struct lbs_sim_opts *o, int final,
                          const char *dir, const char *prefix, long nranks,
                          struct lbs_err *err);

/* Read the collectives of one rank's Chakra trace (path, a regular file
 * of at most LBS_SIM_TRACE_MAX_BYTES) as a trace-v1 plan written to out:
 * the header carries model m's layers (so the plan binds to it) and ranks
 * (the metadata's "gpus" unless ranks > 0), one step; every
 * COMM_COLL_NODE is a call of its comm_type and comm_size, on the layer
 * whose "backward:<name>" node it depends on, else -1.  Point-to-point
 * nodes are counted in *skipped (trace-v1 has no peer list).  -EINVAL
 * naming the file and the node for anything else. */
int lbs_sim_chakra_import(const char *path, const struct lbs_sim_model *m,
                          long ranks, FILE *out, size_t *ncalls,
                          size_t *skipped, struct lbs_err *err);
/* The same from len bytes in memory (path names them in messages). */
int lbs_sim_chakra_import_mem(const char *path, const uint8_t *buf,
                              size_t len, const struct lbs_sim_model *m,
                              long ranks, FILE *out, size_t *ncalls,
                              size_t *skipped, struct lbs_err *err);

/* ------------------------------------------------------------------ */
/* A model from a PyTorch profiler trace (torch_import.c)              */

struct lbs_sim_torch_opts {
    const char *trace;          /* the Chrome trace JSON (names it) */
    const char *params;         /* or NULL: names and shapes, in
                                   model.parameters() order */
    const char *name;           /* the model's name */
    double batch_per_gpu;       /* the batch the profile ran */
    double bucket_mb;           /* DDP's bucket cap */
    const char *trace_sum, *params_sum;   /* provenance ("crc32:...") */
    size_t trace_bytes;
};
struct lbs_sim_torch_info {
    size_t steps_total, steps_used, grads;
    double params, fwd_ms, bwd_ms;    /* elements; medians over steps */
    double bucket_mb;           /* written: o's, at most the model's size */
    int kineto;                 /* Kineto layout (else legacy) */
};
/* The "lbscale-model" text (malloc'd, NUL-terminated) of the trace o names
 * (see torch_import.c for what is read and how); -EINVAL naming the file
 * and what is wrong for anything it cannot use. */
int lbs_sim_torch_import(const struct lbs_sim_torch_opts *o, char **model,
                         struct lbs_sim_torch_info *info,
                         struct lbs_err *err);
/* The same from len bytes of trace in memory (o->trace names them). */
int lbs_sim_torch_import_mem(const struct lbs_sim_torch_opts *o,
                             const char *text, size_t len, char **model,
                             struct lbs_sim_torch_info *info,
                             struct lbs_err *err);

/* ------------------------------------------------------------------ */
/* The simulator's own speed (speed.c)                                  */

#define LBS_SIM_SPEED_STEPS 51      /* timed steps at 1,024 GPUs */
#define LBS_SIM_SPEED_SWEEPS 5      /* timed sweeps over 8..131072 */
#define LBS_SIM_SPEED_MAX_GPUS 131072   /* the sweep's largest scale */
struct lbs_sim_speed_in {
    const char *model, *platform, *optims;   /* names or files */
};
struct lbs_sim_speed_cost {
    long gpus;
    double net_init;                /* s per lbs_sim_net_init */
    double coll[4];                 /* s per lbs_sim_coll_cost: allreduce,
                                       allgather, alltoall, neighbor */
};
struct lbs_sim_speed {
    char model[LBS_SIM_NAME_MAX], platform[LBS_SIM_NAME_MAX];
    char step_optim[LBS_SIM_NAME_MAX];  /* lamb, else the first entry */
    double step_s[LBS_SIM_SPEED_STEPS];
    double sweep_s[LBS_SIM_SPEED_SWEEPS];   /* loading included */
    size_t nent;                    /* optimizers in a sweep */
    struct lbs_sim_speed_cost *cost;    /* one per scale, best of 7 */
    size_t ncost;                   /* scales (8..131072: 15) */
    long top_gpus;                  /* the largest (the platform's limit
                                       may stop it below 131,072) */
};
/* Load and check every point, then time: one step (lamb's plan or the
 * first entry's) at 1,024 GPUs, a sweep of every entry over 8..16384
 * with loading, and one collective's cost per scale.  Raw seconds;
 * lbs_sim_speed_free releases out->cost. */
int lbs_sim_speed(const struct lbs_sim_speed_in *in,
                  struct lbs_sim_speed *out, struct lbs_err *err);
void lbs_sim_speed_free(struct lbs_sim_speed *s);

/* ------------------------------------------------------------------ */
/* Calibration input and output (samples.c, platform_write.c)           */

/* The rows of `lbscale coll` JSONL files, nccl-tests output (its text
 * table or -J JSON) and OSU collective latency tables (rows with 1 rank,
 * other benches, wrong > 0 and collectives without a fitted form are
 * counted in skipped). */
struct lbs_sim_samples {
    struct lbs_sim_sample *s;       /* malloc'ed */
    size_t n, cap, skipped;
};
/* Append path's rows (a regular file of at most
 * LBS_SIM_SAMPLES_MAX_BYTES); -EINVAL naming path:line and the field. */
int lbs_sim_samples_read(const char *path, struct lbs_sim_samples *set,
                         struct lbs_err *err);

/* What a file does not say about itself (OSU tables state no rank
 * count; old nccl-tests text names no collective): 0 / NULL = not given. */
struct lbs_sim_samples_in {
    const char *coll;               /* collective name (lbs_coll_name) */
    long ranks, rpn;                /* ranks; ranks per node (0: ranks) */
};
/* The formats lbs_sim_samples_parse tells apart. */
enum lbs_sim_samples_fmt {
    LBS_SIM_FMT_LBSCALE,            /* lbscale coll JSONL */
    LBS_SIM_FMT_NCCL_TEXT,          /* nccl-tests stdout */
    LBS_SIM_FMT_NCCL_JSON,          /* nccl-tests -J (JSON version 2) */
    LBS_SIM_FMT_OSU,                /* osu_allreduce & co. stdout */
};
const char *lbs_sim_samples_fmt_name(enum lbs_sim_samples_fmt f);
/* Append the rows of text (len bytes, path names it in messages), in
 * whichever of the formats above it is; *fmt says which and *rows how
 * many samples it added.  Binary, truncated or unrecognised text, or a
 * row that does not parse: -EINVAL naming path (and line) and what is
 * wrong. */
int lbs_sim_samples_parse(const char *path, const char *text, size_t len,
                          const struct lbs_sim_samples_in *in,
                          struct lbs_sim_samples *set,
                          enum lbs_sim_samples_fmt *fmt, size_t *rows,
                          struct lbs_err *err);
/* Keep the samples whose bytes lie in [lo, hi]; the others are skipped. */
void lbs_sim_samples_keep_bytes(struct lbs_sim_samples *set, double lo,
                                double hi);
void lbs_sim_samples_free(struct lbs_sim_samples *set);

/* One input file of a calibration, for the platform's provenance. */
struct lbs_sim_calib_file {
    const char *path, *format;      /* lbs_sim_samples_fmt_name */
    const char *checksum;           /* e.g. "crc32:1a2b3c4d" */
    size_t bytes, rows;             /* file size; samples it gave */
};
/* What a calibrated platform says besides the fit. */
struct lbs_sim_calibrated {
    const struct lbs_sim_fit *fit;  /* one node's rows (or, with none,
                                       the multi-node rows') */
    const char *name;               /* the platform's name */
    const char *const *files;       /* the samples' files (calibration) */
    size_t nfiles, skipped;
    long ranks;                     /* largest rank count: the node */
    double peak_tflops;             /* <= 0: 1, marked as assumed */
    double mem_bw_gbs;
    int mem_measured;               /* mem_bw_gbs is STREAM's triad */
    /* the cluster (all optional: 0 / NULL keep one flat node of ranks) */
    const struct lbs_sim_fit *inter;    /* rows of several nodes: the
                                           network's constants */
    const struct lbs_sim_calib_file *src;   /* nfiles entries */
    long gpus_per_node, nodes;      /* max_gpus = their product */
    const char *fabric;             /* "flat" or "fat-tree" */
    long nodes_per_leaf;            /* fat-tree */
    double oversub, lat_spine_us;   /* fat-tree (0: 1 and lat_us) */
    const char *cluster_note;       /* where nodes/gpus came from */
};
/* The platform document (lbscale-platform v1, ring forms on one flat
 * node; with an eager limit LL stands for MPI's eager protocol and
 * Simple for rendezvous) as malloc'ed text ending in a newline, checked
 * to read back as file; the caller writes and frees it. */
int lbs_sim_platform_calibrated(const struct lbs_sim_calibrated *c,
                                const char *file, char **text, size_t *len,
                                struct lbs_err *err);

#ifdef __cplusplus
}
#endif
#endif
