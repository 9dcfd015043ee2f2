# study.gp - issue 17's convergence study (tools/study.py report writes
# the data): left, final test accuracy vs global batch per optimizer, mean
# over seeds with 95% Student-t confidence intervals as error bars; right,
# test accuracy vs epoch at the largest batch, mean over seeds with a
# +-1 sd band.
# Inputs (gnuplot -e): dir (the report directory with acc_vs_batch.dat and
# acc_vs_epoch.dat), outbase, big (the largest batch, for the title),
# note (a subtitle: budget, epochs, seeds).  dir/study_have.gp (also
# written by tools/study.py report) says which optimizers have points.
if (!exists("note")) note = ""
load dir . "/study_have.gp"
set datafile missing "?"    # each block's placeholder (tools/study.py)
if (!exists("big")) big = "8192"
array T[4] = ["SGD-M", "AdamW", "LARS", "LAMB"]
array C[4] = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e"]
do for [fmt in "png svg"] {
    if (fmt eq "png") { set terminal pngcairo size 1300,560 font "DejaVu Sans,11" noenhanced }
    if (fmt eq "svg") { set terminal svg size 1300,560 font "DejaVu Sans,11" dynamic noenhanced }
    set output outbase . "." . fmt
    set multiplot layout 1,2 title "Convergence study (issue 17): MLP 784-512-256-10 on Fashion-MNIST" . (strlen(note) ? "\n" . note : "")
    set grid xtics ytics lc rgb "#dddddd"
    set key left bottom box lc rgb "#bbbbbb"
    set logscale x 2
    set xlabel "global batch"
    set ylabel "test accuracy (%)"
    set title "final test accuracy, mean and 95% CI over seeds"
    set autoscale x
    set offsets graph 0.06, graph 0.06, 0, 0
    set autoscale y
    plot for [j in bhave] dir . "/acc_vs_batch.dat" index (int(j)-1) using ($1*(1+0.04*(int(j)-2.5))):2:3:4 with yerrorlines lw 2 pt 7 ps 0.8 lc rgb C[int(j)] title T[int(j)]
    unset logscale x
    set offsets 0, 0, 0, 0
    set autoscale x
    set autoscale y
    set xlabel "epoch"
    set title "test accuracy vs epoch at batch " . big . " (mean, band = +-1 sd)"
    set key right bottom
    plot for [j in ehave] dir . "/acc_vs_epoch.dat" index (int(j)-1) using 1:3:4 with filledcurves fs transparent solid 0.2 noborder lc rgb C[int(j)] notitle, \
         for [j in ehave] dir . "/acc_vs_epoch.dat" index (int(j)-1) using 1:2 with linespoints lw 2 pt 7 ps 0.6 lc rgb C[int(j)] title T[int(j)]
    unset multiplot
}
