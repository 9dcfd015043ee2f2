# itersplit.gp - iteration time split into compute (forward + backward),
# optimizer step and exposed communication, one stacked bar per optimizer,
# grouped by GPU count (simulated).
# Inputs (gnuplot -e): datafile (x optim gpus compute_ms optimizer_ms
# exposed_comm_ms), outbase, ng (groups), g1..g<ng> (group labels),
# gx1..gx<ng> (group centres), xmax, model, platform.
if (!exists("model")) model = "model"
if (!exists("platform")) platform = "platform"

stats datafile using ($4 + $5 + $6) nooutput
top = STATS_max

set title sprintf("Iteration time split: %s on %s (simulated)", model, platform)
set ylabel "time per iteration (ms)"
set xlabel ""
set yrange [0:top * 1.22]
set xrange [-0.8:xmax + 0.8]
set style fill solid 0.85 border rgb "#444444"
set boxwidth 0.8
set grid ytics lc rgb "#dddddd"
set xtics rotate by 45 right font ",9" nomirror
set key outside right top box lc rgb "#bbbbbb"
set bmargin 5
do for [i=1:ng] {
    set label i value(sprintf("g%d", i)) at first value(sprintf("gx%d", i)), graph 0.95 center font ",11"
}
do for [i=1:ng-1] {
    xs = (value(sprintf("gx%d", i)) + value(sprintf("gx%d", i+1))) / 2
    set arrow i from first xs, graph 0 to first xs, graph 1 nohead dt 2 lc rgb "#999999"
}

do for [fmt in "png svg"] {
    if (fmt eq "png") { set terminal pngcairo size 1100,620 font "DejaVu Sans,11" noenhanced }
    if (fmt eq "svg") { set terminal svg size 1100,620 font "DejaVu Sans,11" dynamic noenhanced }
    set output outbase . "." . fmt
    plot datafile using 1:($4 + $5 + $6):xtic(2) with boxes lc rgb "#d62728" title "exposed communication", \
         "" using 1:($4 + $5) with boxes lc rgb "#ff9f40" title "optimizer step", \
         "" using 1:4 with boxes lc rgb "#1f77b4" title "compute (fwd + bwd)"
}
