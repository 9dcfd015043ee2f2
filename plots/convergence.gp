# convergence.gp - test accuracy of real training runs vs optimizer step
# (left) and vs simulated wall-clock time (right): steps x the simulated
# iteration time of that optimizer at 1,024 GPUs.
# Inputs (gnuplot -e): datafile (blocks, one per run: step
# test_accuracy_pct simulated_s, '?' = no simulator row), outbase, n,
# t1..tn (labels), has_sim (0/1), simdesc.
if (!exists("has_sim")) has_sim = 0
if (!exists("simdesc")) simdesc = ""
set datafile missing "?"
array C[8] = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf"]

do for [fmt in "png svg"] {
    if (fmt eq "png") { set terminal pngcairo size (has_sim ? 1300 : 800),560 font "DejaVu Sans,11" noenhanced }
    if (fmt eq "svg") { set terminal svg size (has_sim ? 1300 : 800),560 font "DejaVu Sans,11" dynamic noenhanced }
    set output outbase . "." . fmt
    if (has_sim) { set multiplot layout 1,2 title "Convergence: test accuracy of real training runs" }
    set grid xtics ytics lc rgb "#dddddd"
    set key right bottom box lc rgb "#bbbbbb"
    set ylabel "test accuracy (%)"
    set xlabel "optimizer step"
    set title has_sim ? "vs step" : "Convergence: test accuracy vs step"
    plot for [i=1:n] datafile index (i-1) using 1:2 with linespoints lw 2 pt 7 ps 0.7 lc rgb C[(i-1) % 8 + 1] title value(sprintf("t%d", i))
    if (has_sim) {
        set title "vs simulated wall-clock at " . simdesc
        set xlabel "simulated wall-clock (s) = steps x simulated iteration time"
        plot for [i=1:n] datafile index (i-1) using 3:2 with linespoints lw 2 pt 7 ps 0.7 lc rgb C[(i-1) % 8 + 1] title value(sprintf("t%d", i))
        unset multiplot
    }
}
