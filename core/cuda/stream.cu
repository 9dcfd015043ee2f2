/* stream.cu - device-to-device copy bandwidth: the GPU's STREAM copy,
 * the reference every GPU bandwidth in lbscale is compared against
 * (lbs_cuda.h).  Two ways, best of iters each after one warm-up:
 * cudaMemcpy D2D (the driver's copy engine path) and a plain copy kernel
 * (float4 loads and stores, what a memory-bound kernel can reach).  Bytes
 * count read + write, as STREAM counts copy: 8 per float. */
#include <cuda_runtime.h>

#include "cuda_check.h"
#include "lbs_cuda.h"

__global__ void k_fill(float *a, size_t n)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        a[i] = (float)(i & 0xffffff);   /* exact in a float */
}

/* b = a: float4 for the bulk (cudaMalloc aligns to 256 bytes), then the
 * tail of n % 4 floats */
__global__ void k_copy(const float4 *__restrict__ a, float4 *__restrict__ b,
                       size_t n4, const float *at, float *bt, size_t tail)
{
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i < n4)
        b[i] = a[i];
    if (i < tail)
        bt[i] = at[i];
}

__global__ void k_check(const float *b, size_t n, unsigned long long *wrong)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        if (b[i] != (float)(i & 0xffffff))
            atomicAdd(wrong, 1ull);
}

static int check(const float *b, size_t n, unsigned long long *dw,
                 long *wrong, struct lbs_err *err)
{
    unsigned long long w = 0;
    LBS_CU(cudaMemset(dw, 0, sizeof w));
    k_check<<<1024, 256>>>(b, n, dw);
    LBS_CU_LAUNCHED();
    LBS_CU(cudaMemcpy(&w, dw, sizeof w, cudaMemcpyDeviceToHost));
    *wrong += (long)w;
    return 0;
}

static int measure(struct lbs_cuda_stream *r, float *a, float *b,
                   unsigned long long *dw, int iters, struct lbs_err *err)
{
    const size_t n = r->n, n4 = n / 4;
    const unsigned blocks = (unsigned)((n4 + 255) / 256 ? (n4 + 255) / 256 : 1);
    cudaEvent_t e0 = NULL, e1 = NULL;
    int rc = 0;
    LBS_CU_GOTO(cudaEventCreate(&e0), out);
    LBS_CU_GOTO(cudaEventCreate(&e1), out);
    k_fill<<<1024, 256>>>(a, n);
    LBS_CU_GOTO(cudaGetLastError(), out);
    for (int way = 0; way < 2; way++) {
        double best = 1e30;
        LBS_CU_GOTO(cudaMemset(b, 0, n * sizeof *b), out);
        for (int k = 0; k <= iters; k++) {   /* k = 0: warm-up */
            LBS_CU_GOTO(cudaEventRecord(e0), out);
            if (way == 0) {
                LBS_CU_GOTO(cudaMemcpyAsync(b, a, n * sizeof *a,
                                            cudaMemcpyDeviceToDevice), out);
            } else {
                k_copy<<<blocks, 256>>>((const float4 *)a, (float4 *)b, n4,
                                        a + 4 * n4, b + 4 * n4, n % 4);
                LBS_CU_GOTO(cudaGetLastError(), out);
            }
            LBS_CU_GOTO(cudaEventRecord(e1), out);
            LBS_CU_GOTO(cudaEventSynchronize(e1), out);
            float ms;
            LBS_CU_GOTO(cudaEventElapsedTime(&ms, e0, e1), out);
            if (k > 0 && ms < best)
                best = ms;
        }
        double gbps = 8.0 * (double)n / (best * 1e-3) / 1e9;
        *(way == 0 ? &r->memcpy_gbps : &r->kernel_gbps) = gbps;
        if ((rc = check(b, n, dw, &r->wrong, err)))
            goto out;
    }
out:
    if (e0)                       /* teardown: errors already reported */
        cudaEventDestroy(e0);
    if (e1)
        cudaEventDestroy(e1);
    return rc;
}

extern "C" int lbs_cuda_stream(size_t n, int iters, struct lbs_cuda_stream *r,
                               struct lbs_err *err)
{
    int rc = lbs_cuda_probe(r->gpu, sizeof r->gpu, err);
    if (rc < 0)
        return rc;
    r->n = n;
    r->memcpy_gbps = r->kernel_gbps = 0;
    r->wrong = 0;
    float *a = NULL, *b = NULL;
    unsigned long long *dw = NULL;
    rc = 0;
    LBS_CU_GOTO(cudaMalloc(&a, n * sizeof *a), out);
    LBS_CU_GOTO(cudaMalloc(&b, n * sizeof *b), out);
    LBS_CU_GOTO(cudaMalloc(&dw, sizeof *dw), out);
    rc = measure(r, a, b, dw, iters < 1 ? 1 : iters, err);
out:
    cudaFree(a);                  /* teardown: errors already reported */
    cudaFree(b);
    cudaFree(dw);
    return rc;
}
