/* kh.c - LAMB's and SLAMB's passes on one chunk in L2,
 * ns per element, interleaved, min over reps : the compute side of
 * SLAMB/LAMB, with no memory between them.  Build and run: COMMANDS.md. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "kern.h"
#include "chunks.h"
#include "lamb_kernel.h"
#include "slamb_kern.h"
extern const struct lbs_kern lbs_kern_avx512;
extern const struct lbs_lamb_kern lbs_lamb_kern_avx512;
extern const struct lbs_slamb_kern SK;
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec*1e9+t.tv_nsec;}
int main(int argc,char**argv){
  size_t per = argc>1? strtoul(argv[1],0,0):32768, n = per*LBS_CHUNKS;
  int reps = argc>2? atoi(argv[2]):2000; unsigned C=10;
  float *g=aligned_alloc(64,per*4),*m=aligned_alloc(64,per*4),*v=aligned_alloc(64,per*4),*w=aligned_alloc(64,per*4),*u=aligned_alloc(64,per*4);
  float *cm=aligned_alloc(64,per*4+64),*cv=aligned_alloc(64,per*4+64),*cw=aligned_alloc(64,per*4+64),*pm=aligned_alloc(64,per*4+64);
  uint8_t *q=malloc(per+64);
  srand(1);
  for(size_t i=0;i<per;i++){g[i]=rand()/(float)RAND_MAX-0.5f;m[i]=0.01f;v[i]=0.001f;w[i]=0.1f;q[i]=rand()%C;}
  uint32_t off[LBS_CHUNKS+1]={0}, poff[LBS_CHUNKS+1]={0}; size_t cc=0,pc=0;
  size_t hi=lbs_chunk_lo(n,1);
  for(size_t i=0;i<hi;i++){cc+=q[i]==3;pc+=q[i]==2;}
  for(int j=1;j<=LBS_CHUNKS;j++){off[j]=cc;poff[j]=pc;}
  for(size_t i=0;i<pc;i++)pm[i]=0.02f;
  struct lbs_lamb_coef lk={.b1=0.9f,.b2=0.999f,.c1=0.1f,.c2=0.001f,.ibc1=3.1f,.ibc2=7.7f,.eps=1e-6f,.wd=0.01f,.gscale=1};
  struct lbs_slamb_coef sk={.b1=0.9f,.b2=0.999f,.c1=0.1f,.c2=0.001f,.ibc1=3.1f,.ibc2=7.7f,.eps=1e-6f,.wd=0.01f};
  struct lbs_slamb_qbuf B={.q=q,.cur=3,.prev=2,.off=off,.poff=poff,.cm=cm,.cv=cv,.cw=cw,.pm=pm};
  float tab[256]; for(int j=0;j<256;j++)tab[j]=1e-4f*(j+1);
  double pw[LBS_CHUNKS],pu[LBS_CHUNKS],part[LBS_CHUNKS][4];
  double best[6]; for(int j=0;j<6;j++)best[j]=1e30;
  for(int r=0;r<reps;r++){
    /* new chunk ids every rep, outside the timing: with the same ids each
     * rep the branch predictor learns a block's branches by heart */
    cc=pc=0;
    for(size_t i=0;i<hi;i++){q[i]=rand()%C;cc+=q[i]==3;pc+=q[i]==2;}
    for(int j=1;j<=LBS_CHUNKS;j++){off[j]=cc;poff[j]=pc;}
    double t0=now();
    lbs_lamb_kern_avx512.lamb_chunks(&lk,g,m,v,w,u,n,0,1,pw,pu);
    double t1=now();
    lbs_kern_avx512.axpy(w,u,1e-6f,hi);
    double t2=now();
    B.pm = pm;
    SK.slamb_q1_chunks(&sk,g,m,v,w,u,&B,n,0,1,part);
    double t3=now();
    SK.slamb_qfix_chunks(&sk,&B,1.0f,pm,0,1,part);
    double t4=now();
    SK.slamb_qupd_chunks(tab,C,&B,u,w,n,0,1);
    double t5=now();
    double d[5]={t1-t0,t2-t1,t3-t2,t4-t3,t5-t4};
    for(int j=0;j<5;j++) if(d[j]<best[j])best[j]=d[j];
    if(t2-t0<best[5]) best[5]=t2-t0;
  }
  double e=hi;
  printf("per-chunk %zu elems: lamb p1 %.3f axpy %.3f | slamb q1 %.3f qfix %.3f qupd %.3f ns/elem | lamb %.3f slamb %.3f ratio %.3f\n",
    hi,best[0]/e,best[1]/e,best[2]/e,best[3]/e,best[4]/e,(best[0]+best[1])/e,(best[2]+best[3]+best[4])/e,(best[2]+best[3]+best[4])/(best[0]+best[1]));
  return 0;
}
