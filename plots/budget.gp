# budget.gp - issue 35's training budget (tools/study.py budget writes the
# data): left, the training loss (mean over each epoch) vs epoch of LAMB
# and SGD-M at batch 128 at a constant rate, log scale, with the epoch at
# which each stopped improving by the criterion (< 1% over the last 20% of
# the epochs) marked; right, validation and test accuracy vs epoch.
# Inputs (gnuplot -e): dir (with budget.dat and budget_vars.gp), outbase,
# epochs (the budget chosen, as a phrase for the title).
if (!exists("epochs")) epochs = "?"
load dir . "/budget_vars.gp"
array C[4] = ["#ff7f0e", "#1f77b4", "#2ca02c", "#d62728"]
do for [fmt in "png svg"] {
    if (fmt eq "png") { set terminal pngcairo size 1300,520 font "DejaVu Sans,11" noenhanced }
    if (fmt eq "svg") { set terminal svg size 1300,520 font "DejaVu Sans,11" dynamic noenhanced }
    set output outbase . "." . fmt
    set multiplot layout 1,2 title "Training budget (issue 35): MLP 784-512-256-10, batch 128, constant rate; budget: " . epochs
    set grid xtics ytics lc rgb "#dddddd"
    set key right top box lc rgb "#bbbbbb"
    set xlabel "epoch"
    set ylabel "training loss (epoch mean)"
    set logscale y
    set title "training loss; dashed: first epoch E with < 1% improvement over 0.8E..E"
    unset arrow
    do for [j=1:nopt] {
        if (PE[j] > 0) { set arrow from PE[j], graph 0 to PE[j], graph 1 nohead dt 2 lw 2 lc rgb C[j] }
    }
    plot for [j=1:nopt] dir . "/budget.dat" index (j-1) using 1:2 with linespoints lw 2 pt 7 ps 0.5 lc rgb C[j] title N[j] . (PE[j] > 0 ? " (criterion met at " . PE[j] . ")" : " (criterion not met)")
    unset logscale y
    unset arrow
    set ylabel "accuracy (%)"
    set key right bottom
    set title "validation (solid) and test (dashed) accuracy"
    plot for [j=1:nopt] dir . "/budget.dat" index (j-1) using 1:3 with lines lw 2 lc rgb C[j] title N[j] . " val", \
         for [j=1:nopt] dir . "/budget.dat" index (j-1) using 1:4 with lines lw 2 dt 2 lc rgb C[j] title N[j] . " test"
    unset multiplot
}
