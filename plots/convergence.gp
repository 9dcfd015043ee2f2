# convergence.gp - test accuracy of real training runs vs optimizer step
# (left) and vs simulated wall-clock time (right): steps x the simulated
# iteration time of that optimizer at 1,024 GPUs.
# Inputs (gnuplot -e): datafile (blocks, one per run: step
# test_accuracy_pct simulated_s, '?' = no simulator row), outbase, n,
# t1..tn (labels), has_sim (0/1), simidx (the block numbers, 1-based,
# that have simulated times, e.g. "1 3"), nosim (labels without), simdesc,
# cfg (what the runs share, e.g. "global batch 1024"; may be empty).
if (!exists("has_sim")) has_sim = 0
if (!exists("simdesc")) simdesc = ""
if (!exists("simidx")) simidx = ""
if (!exists("nosim")) nosim = ""
if (!exists("cfg")) cfg = ""
head = "Convergence: test accuracy of real training runs" . (strlen(cfg) > 0 ? ", " . cfg : "")
set datafile missing "?"
# a single point per run (one epoch) must not give an empty range
stats datafile using 1 nooutput
x1lo = STATS_min; x1hi = STATS_max
stats datafile using 2 nooutput
ylo = STATS_min; yhi = STATS_max
if (x1lo == x1hi) { x1lo = x1lo - 1 - 0.1 * abs(x1lo); x1hi = x1hi + 1 + 0.1 * abs(x1hi) } else { x1lo = NaN }
if (ylo == yhi) { ylo = ylo - 1; yhi = yhi + 1 } else { ylo = NaN }
x3lo = NaN
if (has_sim) {
    stats datafile using 3 nooutput
    x3lo = STATS_min; x3hi = STATS_max
    if (x3lo == x3hi) { x3lo = x3lo * 0.9 - 1e-3; x3hi = x3hi * 1.1 + 1e-3 } else { x3lo = NaN }
}
if (ylo == ylo) { set yrange [ylo:yhi] }
array C[8] = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf"]

do for [fmt in "png svg"] {
    if (fmt eq "png") { set terminal pngcairo size (has_sim ? 1300 : 800),560 font "DejaVu Sans,11" noenhanced }
    if (fmt eq "svg") { set terminal svg size (has_sim ? 1300 : 800),560 font "DejaVu Sans,11" dynamic noenhanced }
    set output outbase . "." . fmt
    if (has_sim) { set multiplot layout 1,2 title head }
    set grid xtics ytics lc rgb "#dddddd"
    set key right bottom box lc rgb "#bbbbbb"
    set ylabel "test accuracy (%)"
    set xlabel "optimizer step"
    set title has_sim ? "vs step" : "Convergence: test accuracy vs step" . (strlen(cfg) > 0 ? ", " . cfg : "")
    if (x1lo == x1lo) { set xrange [x1lo:x1hi] } else { set autoscale x }
    plot for [i=1:n] datafile index (i-1) using 1:2 with linespoints lw 2 pt 7 ps 0.7 lc rgb C[(i-1) % 8 + 1] title value(sprintf("t%d", i))
    if (has_sim) {
        set title "vs simulated wall-clock at " . simdesc . (strlen(nosim) > 0 ? "\nno simulator rows for: " . nosim : "")
        set xlabel "simulated wall-clock (s) = steps x simulated iteration time"
        if (x3lo == x3lo) { set xrange [x3lo:x3hi] } else { set autoscale x }
        plot for [k in simidx] datafile index (int(k)-1) using 3:2 with linespoints lw 2 pt 7 ps 0.7 lc rgb C[(int(k)-1) % 8 + 1] title value("t" . k)
        unset multiplot
    }
}
