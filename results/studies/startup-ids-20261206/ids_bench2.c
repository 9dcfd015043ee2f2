#include "mask_new.c"
#include <stdio.h>
#include <time.h>
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+1e-9*t.tv_nsec;}
int main(int argc,char**argv){
  size_t n=strtoull(argv[1],0,10); double k=atof(argv[2]);
  size_t C=lbs_mask_cyclic_count(k,n);
  uint8_t *q=lbs_array_alloc(n,1);
  size_t sb=lbs_mask_cyclic_ids_scratch(n); uint32_t *scr=lbs_array_alloc(sb,1);
  if(argc>3&&atoi(argv[3])){memset(scr,1,sb);memset(q,1,n);}
  int T=omp_get_max_threads(); uint32_t *off=malloc(T*ids_buckets(n)*4);
  double t0=now();
  struct cyclic_shuffle sh; uint32_t *a=scr; size_t have=sb/4;
  shuffle_plan(&sh,n,a,a+n,have-n);
  shuffle_run(&sh,lbs_rng_key(1,UINT64_MAX,0));
  double t1=now();
  void*spare;size_t room; uint32_t*low; size_t low_n; shuffle_fold(&sh,&low,&low_n,&spare,&room);
  double t2=now();
  for (size_t p = low_n; p < n; p += low_n)
    ids_bucketed(a + p, n - p < low_n ? n - p : low_n, p, n, C, q, a, off, T);
  double t3=now();
  ids_bucketed(low, low_n, 0, n, C, q, a, off, T);
  double t4=now();
  unsigned long h=0; for(size_t i=0;i<n;i+=997) h=h*31+q[i];
  printf("run %.3f fold %.3f ids-upper %.3f ids-low %.3f total %.3f hash %lx\n",t1-t0,t2-t1,t3-t2,t4-t3,t4-t0,h);
  return 0;}
