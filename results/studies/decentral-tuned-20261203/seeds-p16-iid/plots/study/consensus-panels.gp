# written by bench/study.py report
nrow = 1
ncol = 1
npanel = 1
array PT[1] = ["16 ranks, ring, iid shards, batch 2048, 4 seeds"]
