/* phases of lbs_mask_cyclic_ids at 100M, k=0.1 (experiment only) */
#include "mask_var.c"
#include <stdio.h>
#include <time.h>
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+1e-9*t.tv_nsec;}
int main(int argc,char**argv){
  size_t n=strtoull(argv[1],0,10); double k=atof(argv[2]);
  size_t C=lbs_mask_cyclic_count(k,n);
  uint8_t *q=lbs_array_alloc(n,1);
  size_t sb=lbs_mask_cyclic_ids_scratch(n); uint32_t *scr=lbs_array_alloc(sb,1);
  /* touch first (as reused memory would be) when argv[3] says so */
  if(argc>3&&atoi(argv[3])){memset(scr,1,sb);memset(q,1,n);}
  double t0=now();
  struct cyclic_shuffle sh; uint32_t *a=scr; size_t have=sb/4;
  shuffle_plan(&sh,n,a,a+n,have-n);
  shuffle_run(&sh,lbs_rng_key(1,UINT64_MAX,0));
  double t1=now();
  void*spare;size_t room; shuffle_fold(&sh,NULL,NULL,&spare,&room);
  double t2=now();
  chunk_ids(a,n,C,q,1);
  double t3=now();
  unsigned long h=0; for(size_t i=0;i<n;i+=9973) h=h*31+q[i];
  printf("PF=%d PFI=%d run %.3f fold %.3f ids %.3f total %.3f hash %lx\n",PREFETCH,PREFETCH_IDS,t1-t0,t2-t1,t3-t2,t3-t0,h);
  return 0;}
