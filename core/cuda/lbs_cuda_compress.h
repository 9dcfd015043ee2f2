/* lbs_cuda_compress.h - the gradient compressors on a CUDA GPU (internal
 * to lbscale: core, the CLI and the equivalence test use it).
 *
 * The CPU compressors (lbscale/compress.h) are the reference: the same
 * spec strings, the same payload bytes, the same selections.
 *   topk   exact top-k by radix select on the 31 magnitude bits: the same
 *          K elements as topk.c (ties at the cut: lowest indices; NaN
 *          above inf), payload K ascending uint32 indices then K values -
 *          bit-identical to the CPU payload
 *   randk  the Bernoulli(k) mask of lbscale/mask.h from the same counter
 *          generator (lbscale/rng.h compiled for the device), gathered in
 *          index order; decode x or x/k - bit-identical
 *   sign   float scale then ceil(n/8) bytes, bit j of byte b set when
 *          element 8b+j < 0 - bits identical; the scale (mean |x| or
 *          ||x||/sqrt(n)) is summed in double in a fixed order, the CPU
 *          sums float partials per thread, so the two agree to a relative
 *          1e-4 (bound; typically 1e-6), not bit for bit, for |x| within
 *          about 1e-18..1e18 (scale=l2 squares in float on the CPU, where
 *          smaller squares lose bits and larger ones overflow)
 *   ef=1   error feedback exactly as ef.c: x = g + e, p = C(x),
 *          e = x - D(p), residuals per layer index kept on the device
 * Decoding adds with explicit round-to-nearest multiply and add (no fused
 * multiply-add), as the CPU code computes it, so D(p) is bit-identical for
 * the same payload.  Which compressors run here, with which kernel and
 * values, is said by their ops tables' device hooks (struct
 * lbs_compress_device, lbscale/compress.h); others: -ENOTSUP.
 *
 * Memory: d_* pointers are device memory (cudaMalloc'd, so payloads are
 * aligned as the 4-byte scale and uint32 indices need).  Every call runs
 * on the legacy default stream and returns when its work is done, so host
 * timing around a call measures it and a kernel fault is reported by the
 * call that launched it, naming the failing CUDA call.
 *
 * Ownership: lbs_cuda_compressor_new allocates the compressor and its
 * device scratch, lbs_cuda_compressor_free releases both and the
 * residuals.  Input, output and payload buffers are the caller's
 * (lbs_cuda_mem_* allocate and copy them for C callers).  One thread at a
 * time.  Errors: 0 or a negative code with err naming the failing call;
 * the same spec and shape errors as the CPU compressors.
 *
 * Built without CUDA (LBS_HAVE_CUDA 0), every call is a stub returning
 * -ENOTSUP "this lbscale was built without CUDA".
 */
#ifndef LBS_CUDA_COMPRESS_H
#define LBS_CUDA_COMPRESS_H

#include <stddef.h>

#include "lbs_config.h"
#include "lbscale/error.h"

#ifdef __cplusplus
extern "C" {
#endif

struct lbs_cuda_compressor;

#if LBS_HAVE_CUDA

/* spec as for lbs_compressor_new ("topk:k=0.01,ef=1"); the spec is
 * validated by the CPU parser, so messages and codes are the same. */
int lbs_cuda_compressor_new(const char *spec,
                            struct lbs_cuda_compressor **out,
                            struct lbs_err *err);
void lbs_cuda_compressor_free(struct lbs_cuda_compressor *c);
/* Payload buffer size for n elements (lbs_compress_max_bytes). */
size_t lbs_cuda_compress_max_bytes(const struct lbs_cuda_compressor *c,
                                   size_t n);
/* lbs_compress on the device: d_g (n floats) of layer at step into
 * d_payload; *bytes = payload size. */
int lbs_cuda_compress(struct lbs_cuda_compressor *c, const float *d_g,
                      size_t n, int layer, long step, void *d_payload,
                      size_t *bytes, struct lbs_err *err);
/* lbs_decompress on the device: d_out (n floats) = D(d_payload). */
int lbs_cuda_decompress(struct lbs_cuda_compressor *c, const void *d_payload,
                        size_t bytes, size_t n, int layer, long step,
                        float *d_out, struct lbs_err *err);
/* Copy the layer's ef residual (n floats) to host memory h_e; -ENOENT
 * when ef is off or the layer was never compressed, -EINVAL on a size
 * mismatch. */
int lbs_cuda_compress_residual(const struct lbs_cuda_compressor *c,
                               int layer, float *h_e, size_t n,
                               struct lbs_err *err);

/* Plain device memory for C callers (cudaMalloc, cudaFree, cudaMemcpy);
 * put and get return with the copy complete, so any stream may use d. */
int lbs_cuda_mem_alloc(void **d, size_t bytes, struct lbs_err *err);
void lbs_cuda_mem_free(void *d);
int lbs_cuda_mem_put(void *d, const void *h, size_t bytes,
                     struct lbs_err *err);
int lbs_cuda_mem_get(void *h, const void *d, size_t bytes,
                     struct lbs_err *err);

#else /* !LBS_HAVE_CUDA: stubs, so callers need no #if */

static inline int lbs_cuda_compress_nocuda_(struct lbs_err *err)
{
    return lbs_err_set(err, -ENOTSUP, "this lbscale was built without CUDA "
                       "(nvcc not found at configure time)");
}
static inline int lbs_cuda_compressor_new(const char *spec,
                                          struct lbs_cuda_compressor **out,
                                          struct lbs_err *err)
{
    (void)spec;
    *out = NULL;
    return lbs_cuda_compress_nocuda_(err);
}
static inline void lbs_cuda_compressor_free(struct lbs_cuda_compressor *c)
{
    (void)c;
}
static inline size_t lbs_cuda_compress_max_bytes(
    const struct lbs_cuda_compressor *c, size_t n)
{
    (void)c; (void)n;
    return 0;
}
static inline int lbs_cuda_compress(struct lbs_cuda_compressor *c,
                                    const float *d_g, size_t n, int layer,
                                    long step, void *d_payload, size_t *bytes,
                                    struct lbs_err *err)
{
    (void)c; (void)d_g; (void)n; (void)layer; (void)step; (void)d_payload;
    *bytes = 0;
    return lbs_cuda_compress_nocuda_(err);
}
static inline int lbs_cuda_decompress(struct lbs_cuda_compressor *c,
                                      const void *d_payload, size_t bytes,
                                      size_t n, int layer, long step,
                                      float *d_out, struct lbs_err *err)
{
    (void)c; (void)d_payload; (void)bytes; (void)n; (void)layer; (void)step;
    (void)d_out;
    return lbs_cuda_compress_nocuda_(err);
}
static inline int lbs_cuda_compress_residual(
    const struct lbs_cuda_compressor *c, int layer, float *h_e, size_t n,
    struct lbs_err *err)
{
    (void)c; (void)layer; (void)h_e; (void)n;
    return lbs_cuda_compress_nocuda_(err);
}
static inline int lbs_cuda_mem_alloc(void **d, size_t bytes,
                                     struct lbs_err *err)
{
    (void)bytes;
    *d = NULL;
    return lbs_cuda_compress_nocuda_(err);
}
static inline void lbs_cuda_mem_free(void *d)
{
    (void)d;
}
static inline int lbs_cuda_mem_put(void *d, const void *h, size_t bytes,
                                   struct lbs_err *err)
{
    (void)d; (void)h; (void)bytes;
    return lbs_cuda_compress_nocuda_(err);
}
static inline int lbs_cuda_mem_get(void *h, const void *d, size_t bytes,
                                   struct lbs_err *err)
{
    (void)d; (void)h; (void)bytes;
    return lbs_cuda_compress_nocuda_(err);
}

#endif /* LBS_HAVE_CUDA */

#ifdef __cplusplus
}
#endif
#endif
