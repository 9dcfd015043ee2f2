# compress.gp - gradient compressors: compression throughput as a fraction
# of the STREAM triad measured in the same run, against the relative error
# ||x - D(C(x))|| / ||x|| (log scale; exact compressors sit on the left
# edge, marked "exact").
# Inputs (gnuplot -e): datafile (compressor stream_frac rel_err gbps
# stream_gbps elements), outbase, n, t1..tn (compressor names, one per
# row in order), elems, stream.
if (!exists("elems")) elems = 0
if (!exists("stream")) stream = 0

stats datafile using ($3 > 0 ? $3 : 1/0) nooutput
emin = (STATS_records > 0 && STATS_min > 0) ? STATS_min : 1e-3
floor = 10 ** floor(log10(emin) - 1)
stats datafile using 2 nooutput
fmax = STATS_max

set title sprintf("Compressors: throughput vs error, %.0fM fp32 elements (STREAM triad %.1f GB/s)", elems / 1e6, stream)
set xlabel "relative error ||x - D(C(x))|| / ||x||  (log scale; 'exact' = 0)"
set ylabel "compression throughput / STREAM triad"
set logscale x 10
set format x "%.0e"
set xrange [floor / 2 : 3]
set yrange [0 : (fmax > 1 ? fmax : 1) * 1.2]
set grid xtics ytics lc rgb "#dddddd"
set key outside right top box lc rgb "#bbbbbb" title "compressor"
array C[10] = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#7f7f7f", "#bcbd22"]
set arrow 1 from graph 0, first 1 to graph 1, first 1 nohead dt 2 lc rgb "#c0392b"
set label 1 "= STREAM triad" at graph 0.98, first 1.03 right tc rgb "#c0392b"
set label 2 "exact" at first floor, graph 0.03 center tc rgb "#666666" font ",9"

do for [fmt in "png svg"] {
    if (fmt eq "png") { set terminal pngcairo size 1000,600 font "DejaVu Sans,11" noenhanced }
    if (fmt eq "svg") { set terminal svg size 1000,600 font "DejaVu Sans,11" dynamic noenhanced }
    set output outbase . "." . fmt
    plot for [i=1:n] datafile every ::(i-1)::(i-1) using ($3 > 0 ? $3 : floor):2 with points pt ((i-1) % 13 + 1) ps 2 lw 2 lc rgb C[(i-1) % 10 + 1] title value(sprintf("t%d", i))
}
