# scaling.gp - scaling efficiency vs GPU count (log2 axis), one line per
# optimizer, for one model on one platform (simulated, weak scaling).
# Inputs (gnuplot -e): datafile (blocks, one per optimizer: gpus
# efficiency iter_ms), outbase (path without extension), n (blocks),
# t1..tn (optimizer names), model, platform, maxgpus.
if (!exists("model")) model = "model"
if (!exists("platform")) platform = "platform"
if (!exists("maxgpus")) maxgpus = 1024

set title sprintf("Scaling efficiency: %s on %s (simulated, weak scaling)", model, platform)
set xlabel "GPUs (log2 scale)"
set ylabel "scaling efficiency E(P) = T(1 node) / T(P)  (%)"
set logscale x 2
stats datafile using 1 nooutput
pmin = STATS_min
pmax = STATS_max
set xrange [pmin / 1.25 : pmax * 1.25]
set xtics ()
do for [k=0:20] { if (2**k >= pmin / 1.01 && 2**k <= pmax * 1.01) { set xtics add (sprintf("%d", 2**k) 2**k) } }
set mxtics 1
# zoom on the data, but always show the 90% reference and stop at 100%
stats datafile using ($2*100) nooutput
emin = STATS_min
ylo = emin > 85 ? 80 : (emin > 45 ? 10 * floor(emin / 10 - 0.5) : 0)
set yrange [ylo:101.5]
ystep = ylo > 0 ? 5 : 10
set ytics ystep
set grid xtics ytics lc rgb "#dddddd"
set key outside right top title "optimizer" box lc rgb "#bbbbbb"
set arrow 1 from graph 0, first 90 to graph 1, first 90 nohead dt 3 lc rgb "#888888"
set label 1 "90%" at graph 0.01, first 91.5 tc rgb "#666666" font ",9"

# distinct line styles for up to 12 optimizers
array C[12] = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#7f7f7f", "#bcbd22", "#000000", "#aec7e8"]
do for [i=1:12] { set style line i lc rgb C[i] lw 2 pt (i % 7) + 1 ps 1.1 }

do for [fmt in "png svg"] {
    if (fmt eq "png") { set terminal pngcairo size 1000,600 font "DejaVu Sans,11" noenhanced }
    if (fmt eq "svg") { set terminal svg size 1000,600 font "DejaVu Sans,11" dynamic noenhanced }
    set output outbase . "." . fmt
    plot for [i=1:n] datafile index (i-1) using 1:($2*100) with linespoints ls ((i-1) % 12 + 1) title value(sprintf("t%d", i))
}
