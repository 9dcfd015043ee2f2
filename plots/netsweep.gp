# netsweep.gp - scaling efficiency at one GPU count against the network
# bandwidth per node (log2 axis), one line per optimizer (lbscale sim
# netsweep).  What to look at: where each line crosses the 90% line, and
# how that bandwidth compares with the interconnects nodes are sold with
# (dotted verticals).
# Inputs (gnuplot -e): datafile (blocks, one per optimizer: node_gbps
# efficiency iter_ms), outbase, n, t1..tn (optimizer names), model,
# platform, gpus.
if (!exists("model")) model = "model"
if (!exists("platform")) platform = "platform"
if (!exists("gpus")) gpus = 1024

set title sprintf("%s on %d GPUs of %s: scaling efficiency vs network per node (simulated)", model, gpus, platform)
set xlabel "network bandwidth per node (Gb/s, log2 scale)"
set ylabel "scaling efficiency T(1 node) / T(P)  (%)"
set logscale x 2
stats datafile using 1 nooutput
set xrange [STATS_min / 1.2 : STATS_max * 1.2]
set yrange [0:101.5]
set ytics 10
set grid ytics lc rgb "#dddddd"
set key inside right center title "optimizer" box lc rgb "#bbbbbb" opaque
set arrow 1 from graph 0, first 90 to graph 1, first 90 nohead dt 3 lc rgb "#888888"
set label 1 "90% (SLAMB paper, BERT-XL on 1,024 A100)" at graph 0.55, first 92 tc rgb "#666666" font ",9"
array RB[5] = [100, 200, 400, 1600, 3200]
array RN[5] = ["1 x 100 GbE", "1 x HDR 200G", "1 x NDR 400G", "DGX A100 8 x HDR", "DGX H100 8 x NDR"]
do for [i=1:5] {
    set arrow 10+i from first RB[i], graph 0 to first RB[i], graph 1 nohead dt 2 lc rgb "#bbbbbb"
    set label 10+i RN[i] at first RB[i], graph 0.03 rotate by 90 offset -0.6,0 tc rgb "#999999" font ",8"
}
array C[12] = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#7f7f7f", "#bcbd22", "#000000", "#aec7e8"]
do for [i=1:12] { set style line i lc rgb C[i] lw 2 pt (i % 7) + 1 ps 1.1 }
set xtics ()
do for [k=0:16] { if (2**k * 25 >= STATS_min / 1.01 && 2**k * 25 <= STATS_max * 1.01) { set xtics add (sprintf("%d", 2**k * 25) 2**k * 25) } }

do for [fmt in "png svg"] {
    if (fmt eq "png") { set terminal pngcairo size 1000,600 font "DejaVu Sans,11" noenhanced }
    if (fmt eq "svg") { set terminal svg size 1000,600 font "DejaVu Sans,11" dynamic noenhanced }
    set output outbase . "." . fmt
    plot for [i=1:n] datafile index (i-1) using 1:($2*100) with linespoints ls ((i-1) % 12 + 1) title value(sprintf("t%d", i))
}
