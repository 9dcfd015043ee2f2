/* sign.c - 1-bit compression with a scale (signSGD with a magnitude, as
 * EF-SignSGD and 1-bit Adam/LAMB send it).
 *
 * Payload: one float scale, then ceil(n/8) bytes; bit j of byte b is 1
 * when element 8b+j is negative (x < 0).  D(x)_i = -scale or +scale, so
 * zeros (and NaN) decode as +scale.  scale=l1 (default) is mean |x|, the
 * scale minimising ||x - s sign(x)||_2 (EF-SignSGD); scale=l2 is
 * ||x||_2 / sqrt(n) (DeepSpeed's 1-bit Adam/LAMB).  One pass over x
 * packs the bits and sums the scale together.
 * Collective: allgather (sums of signs are not signs).
 */
#include <math.h>
#include <omp.h>
#include <pthread.h>
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "compress_impl.h"
#include "kfam.h"
#include "sign_kern.h"

struct sign_cfg {
    double scale;
};

static const char *const sign_scales[] = {"l1", "l2", NULL};
static const struct lbs_param_spec sign_params[] = {
    {"scale", LBS_P_ENUM, 0, 0, 0, 0, offsetof(struct sign_cfg, scale),
     "l1: mean|x|; l2: ||x||/sqrt(n)", sign_scales},
    {NULL, 0, 0, 0, 0, 0, 0, NULL, NULL},
};

static size_t sign_max(const struct lbs_compressor *c, size_t n)
{
    (void)c;
    return 4 + (n + 7) / 8;
}

static size_t sign_bytes(struct lbs_compressor *c, size_t n,
                         const struct lbs_cctx *ctx)
{
    (void)ctx;
    return sign_max(c, n);
}

/* Packing bytes: the dispatched kernel (sign_tmpl.c). */

static int sign_compress(struct lbs_compressor *c, const float *x, size_t n,
                         const struct lbs_cctx *ctx, void *payload,
                         size_t *bytes, struct lbs_err *err)
{
    (void)ctx; (void)err;
    const struct sign_cfg *k = c->cfg;
    uint8_t *bits = (uint8_t *)payload + 4;
    size_t nbytes = (n + 7) / 8;
    int l2 = k->scale == 1;
    double acc = 0;
    const struct lbs_sign_kern *K = lbs_kfam_cur(&lbs_sign_kfam);
#pragma omp parallel reduction(+ : acc) if (n > LBS_PAR_MIN)
    {
        size_t t = (size_t)omp_get_thread_num(),
               nt = (size_t)omp_get_num_threads();
        acc += K->sign_pack(x, n, bits, nbytes * t / nt,
                            nbytes * (t + 1) / nt, l2);
    }
    float s = (float)(l2 ? sqrt(acc / (double)n) : acc / (double)n);
    memcpy(payload, &s, 4);
    *bytes = 4 + nbytes;
    return 0;
}

/* sgn[b][j] = -1 when bit j of byte b is set, else +1: one table row per
 * packed byte turns the decode into two 4-wide multiply-adds. */
static float sgn[256][8];

static void sign_table(void)
{
    for (int b = 0; b < 256; b++)
        for (int j = 0; j < 8; j++)
            sgn[b][j] = (b >> j) & 1 ? -1.0f : 1.0f;
}

static int sign_decompress_add(struct lbs_compressor *c, const void *payload,
                               size_t bytes, size_t n,
                               const struct lbs_cctx *ctx, float alpha,
                               float *out, struct lbs_err *err)
{
    (void)ctx;
    int rc = lbs_cmp_expect_bytes(c, bytes, sign_max(c, n), err);
    if (rc)
        return rc;
    float s;
    memcpy(&s, payload, 4);
    const uint8_t *bits = (const uint8_t *)payload + 4;
    const float a = alpha * s;
    const size_t full = n / 8;
#pragma omp parallel for schedule(static) if (n > LBS_PAR_MIN)
    for (size_t b = 0; b < full; b++) {
        const float *t = sgn[bits[b]];
        float *o = out + 8 * b;
        for (int j = 0; j < 8; j++)
            o[j] += a * t[j];
    }
    for (size_t i = 8 * full; i < n; i++)
        out[i] += a * sgn[bits[full]][i - 8 * full];
    return 0;
}

static int sign_init(struct lbs_compressor *c, struct lbs_err *err)
{
    (void)c; (void)err;
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, sign_table);
    return 0;
}

/* Invariant (lbs_compress_wrong): every |out| is the payload's scale and
 * keeps the sign of x (x < 0 exactly when out < 0). */
static long sign_wrong(const struct lbs_compressor *c,
                       struct lbs_compress_check *ck)
{
    float s;
    long bad = 0;
    (void)c;
    memcpy(&s, ck->payload, 4);
#pragma omp parallel for reduction(+ : bad) schedule(static)
    for (size_t i = 0; i < ck->n; i++)
        bad += fabsf(ck->out[i]) != s || ((ck->out[i] < 0) != (ck->x[i] < 0));
    return bad;
}

/* The GPU kernel (core/cuda/compress.cu: ballot packing, the scale summed
 * in double) and the cases tests/gpu/check_compress.c compares it with
 * this file on: the bits identical, the scale to a relative 1e-4. */
static const struct lbs_compress_device_check sign_gpu_checks[] = {
    {"sign", 1},
    {"sign:scale=l2", 1},
    {"sign:ef=1", 1},
    {NULL, 0},
};
static void sign_gpu_hp(const void *cfg, struct lbs_compress_device_hp *hp)
{
    const struct sign_cfg *s = cfg;
    hp->scale = s->scale == 1;   /* 0 = l1, 1 = l2 */
}
static const struct lbs_compress_device sign_gpu = {
    .kernel = LBS_CKERNEL_SIGN,
    .exact = 0,
    .checks = sign_gpu_checks,
    .hparams = sign_gpu_hp,
};

const struct lbs_compress_ops lbs_cmp_sign = {
    .name = "sign",
    .summary = "1 bit per element (packed 8 per byte) + one fp32 scale",
    .params = sign_params,
    .cfg_size = sizeof(struct sign_cfg),
    .coll = LBS_COLL_ALLGATHER,
    /* memory traffic (lbs_compress_traffic): two passes over x (scale, signs),
     * bits written; decoding a part reads its bits and updates every element
     * */
    .traffic = {.comp = 8, .comp_w = 1, .dec_once = 4,
                .dec_part = 8, .dec_w = 1, .known = 1},
    .ef_ok = 1,
    .init = sign_init,
    .wire_bytes = sign_bytes,
    .max_bytes = sign_max,
    .compress = sign_compress,
    .decompress_add = sign_decompress_add,
    .wrong = sign_wrong,
    .device = &sign_gpu,
    .kern = &lbs_sign_kfam,
};
