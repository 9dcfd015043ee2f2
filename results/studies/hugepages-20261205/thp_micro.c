#include <sys/mman.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#define N 50000000UL
static float*al(int thp){size_t b=(N*4+(2u<<20)-1)&~((size_t)(2u<<20)-1);float*p=aligned_alloc(thp?(2u<<20):64,b);if(thp)madvise(p,b,MADV_HUGEPAGE);
#pragma omp parallel for schedule(static)
for(size_t i=0;i<N;i++)p[i]=1e-3f*(i%1000);return p;}
static double rd(const float*x){double t=omp_get_wtime();float s=0;
#pragma omp parallel for simd schedule(static) reduction(+:s)
for(size_t i=0;i<N;i++)s+=x[i]*x[i];t=omp_get_wtime()-t;if(s<0)puts("");return 4.0*N/t/1e9;}
static double rmw(float*a,const float*c){double t=omp_get_wtime();
#pragma omp parallel for simd schedule(static)
for(size_t i=0;i<N;i++)a[i]+=0.5f*c[i];return 12.0*N/(omp_get_wtime()-t)/1e9;}
static double tri(float*a,const float*b,const float*c){double t=omp_get_wtime();
#pragma omp parallel for simd schedule(static)
for(size_t i=0;i<N;i++)a[i]=b[i]+0.5f*c[i];return 12.0*N/(omp_get_wtime()-t)/1e9;}
int main(){float*a0=al(0),*b0=al(0),*c0=al(0),*a1=al(1),*b1=al(1),*c1=al(1);
for(int r=0;r<8;r++)printf("4K: rmw %5.1f read %5.1f triad %5.1f | 2M: rmw %5.1f read %5.1f triad %5.1f\n",rmw(a0,b0),rd(c0),tri(a0,b0,c0),rmw(a1,b1),rd(c1),tri(a1,b1,c1));}
