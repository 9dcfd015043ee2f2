# written by bench/study.py report
nrow = 2
ncol = 3
npanel = 6
array PT[6] = ["16 ranks, ring, iid shards, batch 2048, 5 seeds", "8 ranks, ring, dirichlet:alpha=0.1 shards, batch 2048, 5 seeds", "16 ranks, ring, dirichlet:alpha=0.1 shards, batch 2048, 4 seeds", "16 ranks, ring, iid shards, batch 8192, 5 seeds", "8 ranks, ring, dirichlet:alpha=0.1 shards, batch 8192, 5 seeds", "16 ranks, ring, dirichlet:alpha=0.1 shards, batch 8192, 5 seeds"]
