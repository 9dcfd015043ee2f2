#!/bin/bash
# JointSpar's reference against LAMB's and SGD's: processes in turn, same binary
export OMP_NUM_THREADS=2
N=/tmp/i34/cur/build/lbscale
date -u
for r in 1 2 3; do
  for o in jointspar lamb sgd jointspar_lars; do
    $N optim --optim $o --elements 100M --threads 2 --iters 7 --warmup 2 --no-save 2>&1 | grep -v "^#" | grep -v "^ *$"
  done
done
date -u
