/* lbscale/compress.h - gradient compressors made from spec strings.
 *
 *   struct lbs_compressor *c;
 *   struct lbs_err e;
 *   if (lbs_compressor_new("topk:k=0.01,ef=1", &c, &e)) ... e.msg ...
 *   // one rank, explicit payloads:
 *   void *p = malloc(lbs_compress_max_bytes(c, n));
 *   size_t bytes;
 *   lbs_compress(c, g, n, layer, step, p, &bytes, &e);
 *   lbs_decompress(c, p, bytes, n, layer, step, out, &e);
 *   // or across ranks: g becomes the mean of every rank's D(C(g))
 *   lbs_compress_exchange(c, comm, g, n, layer, step, &e);
 *   lbs_compressor_free(c);
 *
 * Compressors (lbscale compress --list prints the keys of each):
 *   none      payload = the fp32 values                       allreduce
 *   fp16      IEEE half, round to nearest even                allreduce (fp16)
 *   bf16      bfloat16, round to nearest even                 allreduce (bf16)
 *   topk      exactly K = max(1, round(k n)) largest |x|      allgather
 *   thresh    DGC: threshold from a sample, bounded correction allgatherv
 *   randk     Bernoulli(k) mask from (seed, step, layer)      allreduce
 *   cyclick   cyclic mask: permutation chunk t mod ceil(1/k)  allreduce
 *   sign      1 bit per element + one fp32 scale              allgather
 *   qsgd      s levels, stochastic rounding, norm per bucket  allgather
 *   powersgd  rank-r P Q^T, warm-started Q                    2 allreduces
 * fp16 and bf16 are summed in their own format (LBS_FLOAT16 /
 * LBS_BFLOAT16 allreduce, rounded after every addition: lbscale/comm.h
 * bounds the error), then divided by the rank count in float; a binary16
 * sum beyond 65504 is inf.
 * Every compressor also takes ef=0|1 (error feedback, default 0); it is
 * refused for none (lossless), fp16 and bf16 (their error is
 * round-to-nearest of relative size <= 2^-11 and 2^-8, already unbiased;
 * residual memory would double the state for no gain).
 *
 * Payload formats (little-endian, what travels on the wire):
 *   none      n float
 *   fp16      n binary16
 *   bf16      n bfloat16 (the top 16 bits of each rounded fp32)
 *   topk      K uint32 indices (ascending), then K float values; among
 *             equal magnitudes at the cut the lowest indices win, NaN
 *             ranks above inf
 *   thresh    c uint32 indices (ascending), then c float values; c varies
 *   randk     the masked values (float), in index order; the indices are
 *             recomputed from (seed, step, layer) by every rank
 *   cyclick   the values of chunk (step mod chunks), in index order
 *   sign      float scale, then ceil(n/8) bytes: bit j of byte b is 1 when
 *             element 8b+j is negative (x < 0); D = +-scale
 *   qsgd      ceil(n/bucket) float norms ||x_B||_2 (bucket=512), then n
 *             signed levels in [-s, s]: int8 when s <= 127, else int16;
 *             D = norm of the element's bucket * level / s
 *   powersgd  P (rows x r, row-major), then Q (cols x r), fp32; layers too
 *             small to gain (r (rows + cols) >= n) travel as n floats
 *
 * Error feedback (ef=1) is a decorator around any compressor: per layer a
 * residual e (n floats, zero at first use, keyed by the layer index) and
 *   x = g + e;  p = C(x);  e = x - D(p)
 * so D(p) + e_new == g + e_old up to float rounding.  In
 * lbs_compress_exchange PowerSGD follows torch's powerSGD hook instead:
 * e = x - (the averaged approximation), which is the same on one rank.
 *
 * Ranks and randomness: randk/cyclick masks and PowerSGD's initial Q come
 * from the counter-based generator keyed by (seed, step, layer), so all
 * ranks agree without sending indices.  QSGD's stochastic rounding and
 * thresh's sample are keyed by (seed, step, layer, rank) so ranks draw
 * independently; lbs_compress_exchange sets the rank from the comm,
 * lbs_compressor_set_rank does it for callers with their own transport.
 *
 * Ownership: lbs_compressor_new allocates; lbs_compressor_free releases
 * the compressor, its per-layer state (residuals, cyclic masks, PowerSGD
 * Q) and its scratch buffers.  Input, output and payload buffers are the
 * caller's.  A compressor is used by one thread at a time; its kernels use
 * OpenMP threads (omp_set_num_threads / OMP_NUM_THREADS).
 *
 * Errors: 0 or a negative code (lbscale/error.h) with a one-line message.
 * Unknown compressor or key: -ENOENT; bad value (k <= 0 or > 1, r < 1,
 * ef=1 where refused), a layer whose size changed between calls, n == 0
 * or n >= 2^32, a malformed payload: -EINVAL.
 */
#ifndef LBSCALE_COMPRESS_H
#define LBSCALE_COMPRESS_H

#include <stddef.h>
#include <stdio.h>

#include "lbscale/comm.h"
#include "lbscale/error.h"
#include "lbscale/param.h"

#ifdef __cplusplus
extern "C" {
#endif

struct lbs_compressor;

int lbs_compressor_new(const char *spec, struct lbs_compressor **out,
                       struct lbs_err *err);
void lbs_compressor_free(struct lbs_compressor *c);

/* "topk" and the effective "k=0.01,ef=1" list (every key, defaults too). */
const char *lbs_compressor_name(const struct lbs_compressor *c);
const char *lbs_compressor_params(const struct lbs_compressor *c);
/* The collective lbs_compress_exchange moves the payload with
 * (LBS_COLL_ALLREDUCE, _ALLGATHER or _ALLGATHERV; PowerSGD: allreduce,
 * twice). */
enum lbs_coll lbs_compressor_collective(const struct lbs_compressor *c);
int lbs_compressor_ef(const struct lbs_compressor *c);

/* What compressing and decompressing one layer move through device
 * memory, bytes per gradient element (a bandwidth model: selection,
 * hashing and packing arithmetic are taken as free), for a payload of w
 * bytes per element (the recorded wire bytes / elements).  Decompressing
 * costs decompress_once + decompress_part per payload decoded: one when
 * the collective sums payloads (allreduce), P when it gathers them
 * (per_rank = 1).  Error feedback adds a read of g, a read-modify-write
 * of the residual and one decode of its own payload to compress.  0, or
 * -ENOTSUP when the compressor has no memory model or it is "none"
 * (PowerSGD's matrix products are priced by the traffic they cause at
 * small r: see core/compress/powersgd.c). */
struct lbs_compress_traffic {
    double compress, decompress_once, decompress_part;
    int per_rank;
};
int lbs_compress_traffic(const struct lbs_compressor *c, double w,
                         struct lbs_compress_traffic *out);
/* The matrix products of compressing and decompressing one n-element
 * layer, as the cblas_sgemm calls (row-major) the compressor makes, and
 * the flops of one compress and one decompress call by the model in the
 * compressor's file (PowerSGD: core/compress/powersgd.c).  Operands name
 * buffers: 'x' the layer (read), 'p' (p_elems floats) and 'q' (q_elems)
 * the factors, 'o' the output; C = alpha op(A) op(B) + beta C with alpha
 * 1 (decompress: its alpha).  0, or -ENOTSUP when the compressor makes no
 * matrix products (every other one, and a PowerSGD layer sent raw). */
struct lbs_compress_gemm {
    int ta, tb;                  /* 1: op(A) = A^T (CblasTrans) */
    size_t m, n, k, lda, ldb, ldc;
    char a, b, c;                /* 'x', 'p', 'q' or 'o' */
    float beta;
    int dec;                     /* 1: part of decompress, 0: compress */
};
struct lbs_compress_flops {
    double compress, decompress; /* flops of one call, everything counted */
    double gemm;                 /* of which in the sgemm calls (all) */
    size_t p_elems, q_elems;
    int ngemm;
    struct lbs_compress_gemm g[3];
};
int lbs_compress_flops(const struct lbs_compressor *c, size_t n,
                       struct lbs_compress_flops *out);
/* The bytes one compress call on the CPU moves through memory for an
 * n-element layer (the bandwidth model `lbscale compress` measures its
 * roofline with): the 4n input for every compressor that reads all of it;
 * less for one that reads only the coordinates it keeps (cyclick without
 * ef: the cache lines its chunk touches, its indices and its payload,
 * core/compress/cyclick.c). */
double lbs_compress_cpu_bytes(const struct lbs_compressor *c, size_t n);
/* The effective value of one key of the spec (defaults included; "ef"
 * too; an enum key gives its index, e.g. sign's scale: 0 = l1, 1 = l2),
 * or -ENOENT when the compressor has no such key.  What a second
 * implementation (the CUDA kernels) reads its configuration from. */
int lbs_compressor_param(const struct lbs_compressor *c, const char *key,
                         double *value);
/* Salt for rank-private randomness (QSGD rounding, thresh sample). */
void lbs_compressor_set_rank(struct lbs_compressor *c, int rank);

/* Exact payload bytes of lbs_compress for an n-element layer at (layer,
 * step), or 0 when the size depends on the values (thresh: use the bytes
 * lbs_compress returns).  randk computes its mask for this (and keeps it
 * for the compress call that follows). */
size_t lbs_compress_wire_bytes(struct lbs_compressor *c, size_t n, int layer,
                               long step);
/* Upper bound of the payload for n elements: the buffer size to give
 * lbs_compress. */
size_t lbs_compress_max_bytes(const struct lbs_compressor *c, size_t n);

/* Compress n floats of layer (>= 0) at step into payload (at least
 * lbs_compress_max_bytes bytes, 8-byte aligned as malloc returns it);
 * *bytes gets the payload size.  With ef=1
 * the layer's residual is added first and updated (see above). */
int lbs_compress(struct lbs_compressor *c, const float *x, size_t n,
                 int layer, long step, void *payload, size_t *bytes,
                 struct lbs_err *err);
/* out (n floats) = D(payload).  layer/step must be those of the compress
 * call (the masks depend on them).  Touches no residual. */
int lbs_decompress(struct lbs_compressor *c, const void *payload,
                   size_t bytes, size_t n, int layer, long step, float *out,
                   struct lbs_err *err);

/* Data-parallel exchange: g (n floats) becomes the mean over the comm's
 * ranks of D(C(g_rank)) (ef applied per rank; fp16/bf16: to the rounding
 * of their sum), moved with the declared collective.  Variable-size
 * payloads (thresh) first share their sizes with one allgather of one
 * LBS_INT64 (8 bytes logged), then allgatherv.  What
 * a record comm logs for one call is exactly the payload bytes
 * (lbs_compress_wire_bytes, or for thresh the compressed size) in the
 * declared collective, plus that 8-byte size allgather for thresh.
 * step is also set on the comm (lbs_comm_set_step). */
int lbs_compress_exchange(struct lbs_compressor *c, struct lbs_comm *comm,
                          float *g, size_t n, int layer, long step,
                          struct lbs_err *err);

/* The layer's residual (n floats), or NULL when ef is off or the layer
 * was never compressed.  Valid until the next call on c. */
const float *lbs_compress_residual(const struct lbs_compressor *c, int layer,
                                   size_t *n);
/* Forget every residual and warm-start state (as if new). */
void lbs_compressor_reset(struct lbs_compressor *c);

/* ---- questions answered from the ops tables (no state needed) ---- */

/* A GPU implementation hung on a compressor's ops table (as optimizers'
 * struct lbs_optim_device, lbscale/optim.h): the C file stays the
 * reference, core/cuda/compress.cu runs the kernel family named here with
 * the values the hook maps from the same parsed configuration, and
 * tests/gpu/check_compress.c checks every compressor in the registry that
 * has one, on the cases listed here, against the C table. */
enum lbs_compress_kernel {
    LBS_CKERNEL_TOPK,    /* radix select, (index, value) pairs */
    LBS_CKERNEL_RANDK,   /* Bernoulli mask from the counter generator */
    LBS_CKERNEL_SIGN,    /* one bit per element + a float scale */
};
/* What the kernels read (ef comes from the common key). */
struct lbs_compress_device_hp {
    double k;            /* topk, randk: density */
    double seed;         /* randk: mask seed */
    int scale;           /* randk: decode x/k; sign: 1 = l2, 0 = l1 */
};
struct lbs_compress_device_check {
    const char *spec;    /* NULL ends the list */
    /* 1: finite inputs only (sums and ef residuals of inf/NaN are NaN) */
    int finite_only;
};
struct lbs_compress_device {
    enum lbs_compress_kernel kernel;  /* which family in compress.cu */
    /* 1: payload, decode and ef residual bit-identical to the CPU's;
     * 0: the payload starts with a float scale the GPU sums in another
     * order (sign: relative 1e-4, see check_compress.c), the rest of the
     * payload bit-identical. */
    int exact;
    const struct lbs_compress_device_check *checks;
    /* The compressor's parsed config (its own struct) -> the kernels'
     * values: the one mapping, beside the config's definition. */
    void (*hparams)(const void *cfg, struct lbs_compress_device_hp *hp);
};

/* What a compressor is, from its ops table.  All pointers are static. */
struct lbs_compressor_props {
    const char *name, *summary;
    const struct lbs_param_spec *params; /* its own keys ("ef" is common) */
    enum lbs_coll coll;      /* what lbs_compress_exchange moves it with */
    int ef_ok;               /* 0: ef=1 is refused */
    /* GPU kernels, or NULL when the compressor runs on the CPU only. */
    const struct lbs_compress_device *device;
};
/* The properties of the compressor spec names (only the name is read):
 * 0, or -ENOENT / -EINVAL as lbs_compressor_new. */
int lbs_compressor_props(const char *spec, struct lbs_compressor_props *p,
                         struct lbs_err *err);
/* Check a spec without making a compressor: 0, or exactly the code and
 * message lbs_compressor_new would give. */
int lbs_compressor_check(const char *spec, struct lbs_err *err);
/* The GPU's view of c's configuration through its device hook: 0 with
 * *dev and *hp filled (zeros first, then the hook's mapping), or -ENOTSUP
 * naming the compressors that have GPU kernels. */
int lbs_compressor_device(const struct lbs_compressor *c,
                          const struct lbs_compress_device **dev,
                          struct lbs_compress_device_hp *hp,
                          struct lbs_err *err);

/* The compressor's own invariant of one round trip out = D(C(x)) of an
 * n-element layer at (layer 0, step 0), whose payload is payload/bytes
 * and relative error rel_err (||x - out|| / ||x||): how many elements (or
 * facts, such as a payload size) break what this compressor promises.
 * Each compressor file states its check beside its kernels:
 *   none      out == x
 *   fp16/bf16 |out - x| <= unit roundoff |x| + half the smallest subnormal
 *   topk      sparse prefix (see min_kept), bytes == 8 K
 *   thresh    sparse prefix, bytes / 8 <= floor(upper K)
 *   randk, cyclick  unscaled (scale=0): sparse (kept values exact)
 *   sign      |out| == the payload's scale, signs kept
 *   qsgd      |out - x| <= the bucket's norm / s
 *   powersgd  rel_err <= 1
 * min_kept: sparse compressors set it to the smallest kept |x| (INFINITY
 * when none), randk and cyclick then to 0; others leave it as given. */
struct lbs_compress_check {
    const float *x, *out;
    size_t n;
    const void *payload;
    size_t bytes;
    double rel_err;
    double min_kept;
};
long lbs_compress_wrong(const struct lbs_compressor *c,
                        struct lbs_compress_check *ck);

/* Registry: names in registration order, NULL-terminated. */
const char *const *lbs_compressor_names(void);
/* "name - summary", collective and key table of one compressor (or all
 * when name is NULL); -ENOENT for an unknown name. */
int lbs_compressor_help(const char *name, FILE *f);

#ifdef __cplusplus
}
#endif
#endif
