/* streams.c - SLAMB's pass 1 and update as memory traffic only: the
 * streams each pass reads and writes, at their rates, with trivial
 * arithmetic, against LAMB's, interleaved.  Does SLAMB's time beyond
 * LAMB's follow its extra bytes, or its extra streams?  (issue 34 item 2;
 * COMMANDS.md says how to build and run it.)
 *   L1: read g, m, v, w; write m, v, u            (LAMB's pass 1: 28 B/elem)
 *   S1: L1 + read q (1 B) and the averages pm (k floats), write three
 *       compact arrays (k floats each)           (SLAMB's: 29 + 16k)
 *   L2: read u, w; write w                         (LAMB's update: 12)
 *   S2: L2 + read q and the compact u_S (k)        (SLAMB's: 13 + 4k)
 * k = 0.1: the compact streams advance 1 or 2 floats per 16 elements
 * (1.6 on average), 16-byte accesses, as SLAMB's c <= 4 path. */
#include <immintrin.h>
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + 1e-9 * t.tv_nsec;
}
static float *fa(size_t n)
{
    float *p = aligned_alloc(2 << 20, (n * 4 + (2 << 20) - 1) / (2 << 20) * (2 << 20));
    memset(p, 0, n * 4);
    return p;
}
/* mode 0: 1 or 2 compact floats for block b (3 of every 5 blocks take
 * 2), so the 16-byte accesses sit at any 4-byte offset, as SLAMB's;
 * mode 1: 4 floats in 2 of every 5 blocks, 0 in the rest - the same
 * rate, every access 16-byte aligned (no line splits);
 * mode 2: as 0 without the compact writes (q and pm read only);
 * mode 3: as 0 without the q read */
static int mode;
#define ADV(b) (mode == 1 ? ((b) % 5 < 2 ? 4u : 0u) : ((b) % 5 < 3 ? 2u : 1u))

int main(int argc, char **argv)
{
    size_t n = argc > 1 ? strtoull(argv[1], 0, 0) : 100000000, nc = n / 8 + 64;
    int rounds = argc > 2 ? atoi(argv[2]) : 9;
    mode = argc > 3 ? atoi(argv[3]) : 0;
    float *g = fa(n), *m = fa(n), *v = fa(n), *w = fa(n), *u = fa(n);
    float *pm = fa(nc), *cm = fa(nc), *cv = fa(nc), *cw = fa(nc);
    uint8_t *q = aligned_alloc(64, n);
    memset(q, 1, n);
    const __m512 a = _mm512_set1_ps(0.9f), c = _mm512_set1_ps(0.1f);
    double best[4] = {1e9, 1e9, 1e9, 1e9}, sum[4] = {0};
    for (int r = 0; r < rounds + 1; r++) {
        for (int k = 0; k < 4; k++) {
            double t0 = now();
#pragma omp parallel
            {
                int T = omp_get_num_threads(), id = omp_get_thread_num();
                size_t nb = n / 16, b0 = nb * id / T, b1 = nb * (id + 1) / T;
                size_t o = 0;   /* this thread's compact position */
                for (size_t b = 0; b < b0; b++)
                    o += ADV(b);
                for (size_t b = b0; b < b1; b++) {
                    size_t i = b * 16;
                    if (k == 0 || k == 1) {   /* pass 1 */
                        __m512 gi = _mm512_load_ps(g + i), mi = _mm512_load_ps(m + i),
                               vi = _mm512_load_ps(v + i), wi = _mm512_load_ps(w + i);
                        if (k == 1) {
                            __m128i qi = mode == 3 ? _mm_set1_epi32(-1)
                                         : _mm_load_si128((const __m128i *)(q + i));
                            __m128 p = _mm_loadu_ps(pm + o);
                            mi = _mm512_add_ps(mi, _mm512_castps128_ps512(
                                                       _mm_and_ps(p, _mm_castsi128_ps(qi))));
                        }
                        mi = _mm512_add_ps(_mm512_mul_ps(a, mi), _mm512_mul_ps(c, gi));
                        vi = _mm512_add_ps(_mm512_mul_ps(a, vi), _mm512_mul_ps(c, gi));
                        _mm512_store_ps(m + i, mi);
                        _mm512_store_ps(v + i, vi);
                        _mm512_store_ps(u + i, _mm512_add_ps(mi, _mm512_mul_ps(c, wi)));
                        if (k == 1 && mode != 2) {
                            _mm_storeu_ps(cm + o, _mm512_castps512_ps128(mi));
                            _mm_storeu_ps(cv + o, _mm512_castps512_ps128(vi));
                            _mm_storeu_ps(cw + o, _mm512_castps512_ps128(wi));
                        }
                    } else {   /* update */
                        __m512 ui = _mm512_load_ps(u + i), wi = _mm512_load_ps(w + i);
                        if (k == 3) {
                            __m128i qi = mode == 3 ? _mm_set1_epi32(-1)
                                         : _mm_load_si128((const __m128i *)(q + i));
                            ui = _mm512_add_ps(ui, _mm512_castps128_ps512(_mm_and_ps(
                                                       _mm_loadu_ps(cv + o),
                                                       _mm_castsi128_ps(qi))));
                        }
                        _mm512_store_ps(w + i, _mm512_sub_ps(wi, _mm512_mul_ps(c, ui)));
                    }
                    o += ADV(b);
                }
            }
            double t = now() - t0;
            if (r > 0) {   /* round 0 warms the pages */
                sum[k] += t;
                if (t < best[k])
                    best[k] = t;
            }
        }
    }
    printf("mode %d threads %d n %zu rounds %d\n", mode, omp_get_max_threads(), n, rounds);
    printf("pass1 LAMB-shape %.2f ms  SLAMB-shape %.2f ms  ratio %.3f (bytes 1.093)\n",
           1e3 * sum[0] / rounds, 1e3 * sum[1] / rounds, sum[1] / sum[0]);
    printf("update LAMB-shape %.2f ms  SLAMB-shape %.2f ms  ratio %.3f (bytes 1.117)\n",
           1e3 * sum[2] / rounds, 1e3 * sum[3] / rounds, sum[3] / sum[2]);
    printf("both %.3f (bytes 1.100)  best-of ratios: pass1 %.3f update %.3f\n",
           (sum[1] + sum[3]) / (sum[0] + sum[2]),
           best[1] / best[0], best[3] / best[2]);
    return 0;
}
