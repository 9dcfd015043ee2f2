# scaling.gp - scaling efficiency vs GPU count (log2 axis) for one model
# on one platform (simulated, weak scaling), in two panels:
#   left   E(P) in %, one line per optimizer (optimizers whose curves agree
#          within `same` percentage points are one line naming them all);
#   right  the efficiency lost, 1 - E(P), on a log scale: 0.5% and 3% lie
#          on top of each other at the left and a decade apart here.
# Published anchors (block n, when nanch > 0: gpus published lbscale
# label setup) are filled diamonds, lbscale's prediction of the anchor's own
# setup open diamonds; their sources are in the caption (.caption file).
# Inputs (gnuplot -e): datafile (blocks, one per line: gpus efficiency
# iter_ms; then the anchors), outbase, n, t1..tn (line labels), nanch,
# model, platform, maxgpus, emin, same, anchtitle (legend of the
# published points).
if (!exists("model")) model = "model"
if (!exists("platform")) platform = "platform"
if (!exists("nanch")) nanch = 0
if (!exists("emin")) emin = 0.5
if (!exists("same")) same = 0.25

stats datafile index 0 using 1 nooutput
pmin = STATS_min
pmax = maxgpus
set logscale x 2
set xrange [pmin / 1.25 : pmax * 1.25]
set xtics ()
do for [k=0:20] { if (2**k >= pmin / 1.01 && 2**k <= pmax * 1.01) { set xtics add (sprintf("%d", 2**k) 2**k) } }
set mxtics 1
set grid xtics ytics lc rgb "#e0e0e0"
set xlabel "GPUs (log2 scale)"

# up to 10 lines: colour, dash and point type all differ
array C[10] = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#7f7f7f", "#bcbd22"]
array DT[10] = [1, 2, 4, 5, 1, 2, 4, 5, 1, 2]
array PT[10] = [7, 5, 9, 11, 13, 4, 6, 8, 10, 12]
do for [i=1:10] { set style line i lc rgb C[i] lw 2 dt DT[i] pt PT[i] ps 1.2 }
set style line 20 lc rgb "#000000" pt 13 ps 2.6
set style line 21 lc rgb "#000000" pt 12 ps 2.6 lw 2

# the anchors' plot clauses, appended only when there are anchors (a
# clause on a data block that does not exist is an error)
anchleft = ""
anchright = ""
if (nanch > 0) {
    anchleft = sprintf(", datafile index %d using 1:($2*100) with points ls 20 title anchtitle, datafile index %d using 1:($3*100) with points ls 21 title 'lbscale, same setup', datafile index %d using 1:($2*100):5 with labels right offset -1.5,0 font ',9' tc rgb '#333333' notitle", n, n, n)
    anchright = sprintf(", datafile index %d using 1:((1-$2)*100) with points ls 20 notitle, datafile index %d using 1:((1-$3)*100) with points ls 21 notitle", n, n)
}

# left: zoom on the data, but always show the 90% reference; stop at 100%
ylo = emin > 0.85 ? 80 : (emin > 0.45 ? 10 * floor(emin * 10 - 0.5) : 0)
ystep = ylo > 0 ? 5 : 10
if (!exists("anchtitle")) anchtitle = "published anchor"
if (strlen(anchtitle) == 0) anchtitle = "published anchor"

do for [fmt in "png svg"] {
    if (fmt eq "png") { set terminal pngcairo size 1300,660 font "DejaVu Sans,11" noenhanced }
    if (fmt eq "svg") { set terminal svg size 1300,660 font "DejaVu Sans,11" dynamic noenhanced }
    set output outbase . "." . fmt
    set multiplot title sprintf("Scaling efficiency: %s on %s (simulated, weak scaling: same batch per GPU)", model, platform)
    set bmargin at screen 0.11
    set tmargin at screen 0.88

    set lmargin at screen 0.06
    set rmargin at screen 0.38
    set title "efficiency E(P) = T(1 node) / T(P)"
    set ylabel "scaling efficiency (%)"
    set yrange [ylo:101]
    set ytics ystep
    set arrow 1 from graph 0, first 90 to graph 1, first 90 nohead dt 3 lc rgb "#888888"
    set label 1 "90%" at graph 0.01, first 91 tc rgb "#666666" font ",9"
    set key at screen 0.79, screen 0.88 left top vertical Left reverse box lc rgb "#bbbbbb" spacing 1.15 samplen 3 font ",10"
    set key title sprintf("optimizer (a = b: within %.2g pp)", same)
    plot for [i=1:n] datafile index (i-1) using 1:($2*100) with linespoints ls ((i-1) % 10 + 1) title value(sprintf("t%d", i)) @anchleft
    unset arrow 1
    unset label 1

    set lmargin at screen 0.45
    set rmargin at screen 0.77
    set title "efficiency lost, 1 - E(P) (log scale)"
    set ylabel "1 - E(P)  (%, log scale)"
    set logscale y 10
    set yrange [*:100]
    set ytics auto
    set format y "%g"
    set arrow 2 from graph 0, first 10 to graph 1, first 10 nohead dt 3 lc rgb "#888888"
    set label 2 "10% lost = 90% efficiency" at graph 0.01, first 11.5 tc rgb "#666666" font ",9"
    unset key
    plot for [i=1:n] datafile index (i-1) using 1:((1-$2) > 1e-6 ? (1-$2)*100 : 1/0) with linespoints ls ((i-1) % 10 + 1) notitle @anchright
    unset logscale y
    unset arrow 2
    unset label 2
    unset multiplot
}
