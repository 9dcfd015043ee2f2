#define _GNU_SOURCE
/* microbench: SGD step pieces vs in-place reference, interleaved. */
#include <immintrin.h>
#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/mman.h>
static void *al(size_t b) { b = (b + (2u<<20) - 1) & ~(size_t)((2u<<20) - 1); void *p = aligned_alloc(2u << 20, b); if (getenv("THP")) madvise(p, b, MADV_HUGEPAGE); return p; }

#define NL 16
#define CH 256
#define NB 1024
static size_t NTOT = 100000000, NREF = 32u << 20;
static float *g[NL], *v[NL], *w[NL];
static size_t ln[NL];
static double *ra, *rc;

static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + 1e-9 * t.tv_nsec; }
static inline size_t clo(size_t n, size_t c) { return (size_t)(((unsigned __int128)n * c) / CH); }

static void ref(void)
{
    static int k; double s = (k++ & 1) ? -3.0 : 3.0;
    double *restrict a = ra; const double *restrict c = rc;
#pragma omp parallel for simd schedule(static)
    for (size_t i = 0; i < NREF; i++) a[i] = a[i] + s * c[i];
}

static double sumsq(const float *x, size_t n)
{
    double s = 0;
    for (size_t b = 0; b < n; b += NB) {
        size_t e = b + NB < n ? b + NB : n; float f = 0;
#pragma omp simd reduction(+ : f)
        for (size_t i = b; i < e; i++) f += x[i] * x[i];
        s += f;
    }
    return s;
}
/* finite-only: max of |x| bits (integer max, 1-cycle chain) */
static double maxbits(const float *x, size_t n)
{
    const uint32_t *u = (const uint32_t *)x; uint32_t m = 0;
#pragma omp simd reduction(max : m)
    for (size_t i = 0; i < n; i++) { uint32_t b = u[i] & 0x7fffffffu; m = b > m ? b : m; }
    return m >= 0x7f800000u ? INFINITY : 0.0;
}
/* 4 accumulators */
static double sumsq4(const float *x, size_t n)
{
    double s = 0;
    for (size_t b = 0; b < n; b += NB) {
        size_t e = b + NB < n ? b + NB : n;
        __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0; size_t i = b;
        for (; i + 64 <= e; i += 64) {
            __m512 x0 = _mm512_loadu_ps(x + i), x1 = _mm512_loadu_ps(x + i + 16), x2 = _mm512_loadu_ps(x + i + 32), x3 = _mm512_loadu_ps(x + i + 48);
            a0 = _mm512_add_ps(a0, _mm512_mul_ps(x0, x0)); a1 = _mm512_add_ps(a1, _mm512_mul_ps(x1, x1));
            a2 = _mm512_add_ps(a2, _mm512_mul_ps(x2, x2)); a3 = _mm512_add_ps(a3, _mm512_mul_ps(x3, x3));
        }
        float f = _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)));
        for (; i < e; i++) f += x[i] * x[i];
        s += f;
    }
    return s;
}
static int PFB = 4, PFH = 0;
/* current sumsq plus line prefetches PFB blocks ahead (arithmetic unchanged) */
static double sumsq_pf(const float *x, size_t n)
{
    double s = 0;
    for (size_t b = 0; b < n; b += NB) {
        size_t e = b + NB < n ? b + NB : n; float f = 0;
        size_t p = b + (size_t)PFB * NB;
        if (p < n) {
            size_t pe = p + NB < n ? p + NB : n;
            if (PFH == 0) for (size_t q = p; q < pe; q += 16) _mm_prefetch((const char *)(x + q), _MM_HINT_T0);
            else for (size_t q = p; q < pe; q += 16) _mm_prefetch((const char *)(x + q), _MM_HINT_T1);
        }
#pragma omp simd reduction(+ : f)
        for (size_t i = b; i < e; i++) f += x[i] * x[i];
        s += f;
    }
    return s;
}
/* K chunks at once, block by block: each chunk's sum in its own order */
#define KS 4
static void sumsq_multi(const float *x, size_t n, size_t c0, size_t c1, double *part, int k)
{
    size_t step = (c1 - c0 + k - 1) / k;   /* chunk c0 + j*step + i for stream j */
    for (size_t i = 0; i < step; i++) {
        size_t cs[KS], lo[KS], hi[KS]; double s[KS]; int m = 0;
        for (int j = 0; j < k; j++) {
            size_t c = c0 + j * step + i; if (c >= c1) continue;
            cs[m] = c; lo[m] = clo(n, c); hi[m] = clo(n, c + 1); s[m] = 0; m++;
        }
        size_t len = 0; for (int j = 0; j < m; j++) if (hi[j] - lo[j] > len) len = hi[j] - lo[j];
        for (size_t b = 0; b < len; b += NB)
            for (int j = 0; j < m; j++) {
                size_t bb = lo[j] + b; if (bb >= hi[j]) continue;
                size_t e = bb + NB < hi[j] ? bb + NB : hi[j]; float f = 0;
#pragma omp simd reduction(+ : f)
                for (size_t q = bb; q < e; q++) f += x[q] * x[q];
                s[j] += f;
            }
        for (int j = 0; j < m; j++) part[cs[j]] = s[j];
    }
}
static int CHK;
static double gsq[NL];
static void check(int rev)
{
    for (size_t li = 0; li < NL; li++) {
        size_t l = rev ? NL - 1 - li : li;
        double part[CH]; float *x = g[l]; size_t n = ln[l];
#pragma omp parallel
        {
            size_t T = omp_get_num_threads(), t = omp_get_thread_num();
            if (CHK >= 10) sumsq_multi(x, n, CH * t / T, CH * (t + 1) / T, part, CHK - 10);
            else for (size_t c = CH * t / T; c < CH * (t + 1) / T; c++)
                part[c] = (CHK == 0 ? sumsq : CHK == 1 ? sumsq4 : CHK == 3 ? sumsq_pf : maxbits)(x + clo(n, c), clo(n, c + 1) - clo(n, c));
        }
        double s = 0; for (int c = 0; c < CH; c++) s += part[c];
        gsq[l] = s;
    }
}

static const float mu = 0.9f, kk = 0.001f, wd = 0, gs = 1, aa = 1;
typedef float (*mom_fn)(const float *g, float *v, float *w, size_t n);

static float mom0(const float *g, float *v, float *w, size_t n)
{
    float sum = 0;
#pragma omp simd reduction(+ : sum)
    for (size_t i = 0; i < n; i++) {
        float d = gs * g[i] + wd * w[i];
        float vi = mu * v[i] + aa * d;
        v[i] = vi; sum += vi; w[i] -= kk * vi;
    }
    return sum;
}
/* restrict: every load before the stores */
static float mom4(const float *restrict g, float *restrict v, float *restrict w, size_t n)
{
    float sum = 0;
#pragma omp simd reduction(+ : sum)
    for (size_t i = 0; i < n; i++) {
        float wi = w[i];
        float d = gs * g[i] + wd * wi;
        float vi = mu * v[i] + aa * d;
        v[i] = vi; sum += vi; w[i] = wi - kk * vi;
    }
    return sum;
}
/* aligned: scalar head until w is on a 64-byte line */
static float mom1(const float *g, float *v, float *w, size_t n)
{
    float sum = 0;
    size_t h = ((64 - ((uintptr_t)w & 63)) & 63) / 4; if (h > n) h = n;
    for (size_t i = 0; i < h; i++) {
        float d = gs * g[i] + wd * w[i];
        float vi = mu * v[i] + aa * d;
        v[i] = vi; sum += vi; w[i] -= kk * vi;
    }
    const float *gg = g + h; float *vv = v + h; float *ww = __builtin_assume_aligned(w + h, 64);
    if (((uintptr_t)gg & 63) == 0 && ((uintptr_t)vv & 63) == 0) {
        gg = __builtin_assume_aligned(gg, 64); vv = __builtin_assume_aligned(vv, 64);
        float s2 = 0;
#pragma omp simd reduction(+ : s2) aligned(gg, vv, ww : 64)
        for (size_t i = 0; i < n - h; i++) {
            float d = gs * gg[i] + wd * ww[i];
            float vi = mu * vv[i] + aa * d;
            vv[i] = vi; s2 += vi; ww[i] -= kk * vi;
        }
        return sum + s2;
    }
    return sum + mom0(gg, vv, ww, n - h);
}
/* prefetch PF bytes ahead on the three streams */
static size_t PF = 1024;
static float mom2(const float *g, float *v, float *w, size_t n)
{
    float sum = 0; size_t i = 0; size_t pe = PF / 4;
    __m512 s = _mm512_setzero_ps(), vm = _mm512_set1_ps(mu), vk = _mm512_set1_ps(kk);
    for (; i + 16 <= n; i += 16) {
        _mm_prefetch((const char *)(g + i + pe), _MM_HINT_T0);
        _mm_prefetch((const char *)(v + i + pe), _MM_HINT_T0);
        _mm_prefetch((const char *)(w + i + pe), _MM_HINT_T0);
        __m512 d = _mm512_loadu_ps(g + i);
        __m512 vi = _mm512_add_ps(_mm512_mul_ps(vm, _mm512_loadu_ps(v + i)), d);
        _mm512_storeu_ps(v + i, vi); s = _mm512_add_ps(s, vi);
        _mm512_storeu_ps(w + i, _mm512_sub_ps(_mm512_loadu_ps(w + i), _mm512_mul_ps(vk, vi)));
    }
    sum = _mm512_reduce_add_ps(s);
    for (; i < n; i++) { float vi = mu * v[i] + g[i]; v[i] = vi; sum += vi; w[i] -= kk * vi; }
    return sum;
}
/* 2x unroll, two accumulators, intrinsics */
static float mom3(const float *g, float *v, float *w, size_t n)
{
    size_t i = 0;
    __m512 s0 = _mm512_setzero_ps(), s1 = s0, vm = _mm512_set1_ps(mu), vk = _mm512_set1_ps(kk);
    for (; i + 32 <= n; i += 32) {
        __m512 a0 = _mm512_add_ps(_mm512_mul_ps(vm, _mm512_loadu_ps(v + i)), _mm512_loadu_ps(g + i));
        __m512 a1 = _mm512_add_ps(_mm512_mul_ps(vm, _mm512_loadu_ps(v + i + 16)), _mm512_loadu_ps(g + i + 16));
        _mm512_storeu_ps(v + i, a0); _mm512_storeu_ps(v + i + 16, a1);
        s0 = _mm512_add_ps(s0, a0); s1 = _mm512_add_ps(s1, a1);
        _mm512_storeu_ps(w + i, _mm512_sub_ps(_mm512_loadu_ps(w + i), _mm512_mul_ps(vk, a0)));
        _mm512_storeu_ps(w + i + 16, _mm512_sub_ps(_mm512_loadu_ps(w + i + 16), _mm512_mul_ps(vk, a1)));
    }
    float sum = _mm512_reduce_add_ps(_mm512_add_ps(s0, s1));
    for (; i < n; i++) { float vi = mu * v[i] + g[i]; v[i] = vi; sum += vi; w[i] -= kk * vi; }
    return sum;
}
/* chunks split at 16-element boundaries (changes the sum's grouping only) */
static int ALIGNCH;
static void mom(mom_fn f)
{
    for (int l = 0; l < NL; l++) {
        size_t n = ln[l]; float sum = 0;
#pragma omp parallel for schedule(static) reduction(+ : sum)
        for (size_t c = 0; c < CH; c++) {
            size_t lo = clo(n, c), hi = clo(n, c + 1);
            if (ALIGNCH) { lo = c ? (lo + 15) & ~(size_t)15 : 0; hi = c + 1 < CH ? (hi + 15) & ~(size_t)15 : n; }
            sum += f(g[l] + lo, v[l] + lo, w[l] + lo, hi - lo);
        }
        if (!isfinite(sum)) abort();
    }
}

/* one parallel region for all layers, no barrier between layers */
static double gpart[NL][CH];
static void check_one(void)
{
#pragma omp parallel
    {
        size_t T = omp_get_num_threads(), t = omp_get_thread_num();
        for (int l = 0; l < NL; l++)
            for (size_t c = CH * t / T; c < CH * (t + 1) / T; c++)
                gpart[l][c] = sumsq(g[l] + clo(ln[l], c), clo(ln[l], c + 1) - clo(ln[l], c));
    }
    for (int l = 0; l < NL; l++) { double s = 0; for (int c = 0; c < CH; c++) s += gpart[l][c]; gsq[l] = s; }
}
static void mom_one(mom_fn f)
{
    float sums[NL][8] = {{0}};
#pragma omp parallel
    {
        size_t T = omp_get_num_threads(), t = omp_get_thread_num();
        for (int l = 0; l < NL; l++) {
            float s = 0; size_t n = ln[l];
            for (size_t c = CH * t / T; c < CH * (t + 1) / T; c++)
                s += f(g[l] + clo(n, c), v[l] + clo(n, c), w[l] + clo(n, c), clo(n, c + 1) - clo(n, c));
            sums[l][t] = s;
        }
    }
    for (int l = 0; l < NL; l++) if (!isfinite(sums[l][0] + sums[l][1])) abort();
}
static int ONE;
struct var { const char *name; int check, rev, alch; mom_fn m; size_t pf; double bytes; int chk; };

static int cmpd(const void *a, const void *b) { double x = *(double *)a, y = *(double *)b; return x < y ? -1 : x > y; }

int main(int argc, char **argv)
{
    int rounds = argc > 1 ? atoi(argv[1]) : 9;
    const char *which = argc > 2 ? argv[2] : "all";
    for (int l = 0; l < NL; l++) {
        ln[l] = NTOT / NL;
        g[l] = al(ln[l] * 4); v[l] = al(ln[l] * 4); w[l] = al(ln[l] * 4);
#pragma omp parallel for schedule(static)
        for (size_t i = 0; i < ln[l]; i++) { g[l][i] = 1e-3f * (float)((i * 2654435761u) % 1000) - 0.5f; v[l][i] = 0; w[l][i] = 1; }
    }
    ra = al(NREF * 8); rc = al(NREF * 8);
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < NREF; i++) { ra[i] = 1; rc[i] = 2; }
    struct var all[] = {
        {"step0", 1, 0, 0, mom0, 0, 24}, {"check", 1, 0, 0, NULL, 0, 4}, {"mom0", 0, 0, 0, mom0, 0, 20},
        {"mom1align", 0, 0, 0, mom1, 0, 20}, {"mom0alch", 0, 0, 1, mom0, 0, 20},
        {"mom2pf512", 0, 0, 0, mom2, 512, 20}, {"mom2pf2k", 0, 0, 0, mom2, 2048, 20},
        {"mom3unr", 0, 0, 0, mom3, 0, 20}, {"step0rev", 1, 1, 0, mom0, 0, 24},
        {"chk4acc", 1, 0, 0, NULL, 0, 4, 1},
        {"chkone", 1, 0, 0, NULL, 0, 4, 20}, {"momrs", 0, 0, 0, mom4, 0, 20, 20}, {"momone", 0, 0, 0, mom0, 0, 20, 20}, {"stepone", 1, 0, 0, mom0, 0, 24, 20},
        {"chkpf2", 1, 0, 0, NULL, 2, 4, 3}, {"chkpf8", 1, 0, 0, NULL, 8, 4, 3}, {"chkpf32", 1, 0, 0, NULL, 32, 4, 3},
        {"chk2s", 1, 0, 0, NULL, 0, 4, 12}, {"chk4s", 1, 0, 0, NULL, 0, 4, 14}, {"chkmax", 1, 0, 0, NULL, 0, 4, 2},
    };
    int nv = sizeof all / sizeof *all;
    struct var *vs[32]; int k = 0;
    for (int i = 0; i < nv; i++)
        if (!strcmp(which, "all") || strstr(which, all[i].name)) vs[k++] = &all[i];
    nv = k;
    double ratio[32][64], gbs[32][64], rgb[32][64], tmin[32], rmin[32];
    for (int i = 0; i < 32; i++) tmin[i] = rmin[i] = 1e9;
    for (int r = -2; r < rounds; r++)
        for (int i = 0; i < nv; i++) {
            double t0 = now(); ref(); double t1 = now();
            struct var *x = vs[i]; PF = x->pf; ALIGNCH = x->alch; CHK = x->chk; if (CHK == 3) PFB = x->pf;
            ONE = x->chk == 20;
            if (x->check) { if (ONE) check_one(); else check(x->rev); }
            if (x->m) { if (ONE) mom_one(x->m); else mom(x->m); }
            double t2 = now();
            if (r < 0) continue;
            double rg = 24.0 * NREF / (t1 - t0) / 1e9, kg = x->bytes * NTOT / (t2 - t1) / 1e9;
            ratio[i][r] = kg / rg; if (t2 - t1 < tmin[i]) tmin[i] = t2 - t1; if (t1 - t0 < rmin[i]) rmin[i] = t1 - t0; gbs[i][r] = kg; rgb[i][r] = rg;
        }
    printf("%-10s %6s %8s %8s  ratio median [min, max]   best/best\n", "variant", "B/el", "GB/s", "ref");
    for (int i = 0; i < nv; i++) {
        qsort(ratio[i], rounds, 8, cmpd); qsort(gbs[i], rounds, 8, cmpd); qsort(rgb[i], rounds, 8, cmpd);
        printf("%-10s %6.0f %8.1f %8.1f  %.3f [%.3f, %.3f]\n", vs[i]->name, vs[i]->bytes, gbs[i][rounds / 2], rgb[i][rounds / 2],
               ratio[i][rounds / 2], ratio[i][0], ratio[i][rounds - 1]);
        printf("%*s best %.1f GB/s, ref best %.1f GB/s, best ratio %.3f\n", 10, "", vs[i]->bytes * NTOT / tmin[i] / 1e9, 24.0 * NREF / rmin[i] / 1e9, vs[i]->bytes * NTOT / tmin[i] / (24.0 * NREF / rmin[i]));
    }
    return 0;
}
