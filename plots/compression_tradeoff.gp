# compression_tradeoff.gp - what a gradient compressor costs in accuracy
# and buys in time at scale: LAMB's final test accuracy with that
# compressor (real training under mpirun) against the simulated
# BERT-Large time per step at `gpus` GPUs (the trace of the real
# compressed exchange), one point per compressor setting ("none" = dense
# LAMB), one colour and point type per platform.  Up and to the left is
# better.
# Inputs (gnuplot -e): datafile (blocks, one per platform:
# simulated_ms_per_step accuracy_pct "label"), outbase, n, t1..tn
# (platform names), gpus, ranks, dataset.
if (!exists("gpus")) gpus = 1024
if (!exists("ranks")) ranks = 4
if (!exists("dataset")) dataset = "the training set"
set logscale x 2
set xlabel sprintf("simulated BERT-Large time per step at %d GPUs (ms, log2 scale)", gpus)
set ylabel sprintf("LAMB final test accuracy, %s, %d ranks (%%)", dataset, ranks)
set title sprintf("Gradient compressors: accuracy vs simulated step time at %d GPUs (up and left is better)", gpus)
set grid xtics ytics lc rgb "#e0e0e0"
set key below horizontal box lc rgb "#bbbbbb"
set bmargin 6
set offsets graph 0.12, graph 0.12, graph 0.12, graph 0.12
array C[6] = ["#2e86c1", "#c0392b", "#27ae60", "#8e44ad", "#d35400", "#7f8c8d"]
array PT[6] = [7, 5, 9, 13, 11, 15]
do for [fmt in "png svg"] {
    if (fmt eq "png") { set terminal pngcairo size 1000,640 font "DejaVu Sans,11" noenhanced }
    if (fmt eq "svg") { set terminal svg size 1000,640 font "DejaVu Sans,11" dynamic noenhanced }
    set output outbase . "." . fmt
    plot for [i=1:n] datafile index (i-1) using 1:2 with points pt PT[(i-1) % 6 + 1] ps 1.6 lc rgb C[(i-1) % 6 + 1] title value(sprintf("t%d", i)), \
         for [i=1:n] datafile index (i-1) using 1:2:3 with labels offset 0,(i % 2 ? 1.1 : -1.1) font ",9" tc rgb C[(i-1) % 6 + 1] notitle
}
