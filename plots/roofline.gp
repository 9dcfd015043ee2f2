# roofline.gp - achieved memory bandwidth of each optimizer step against the
# machine's in-place bandwidth (a = a + s*c, bench/stream.c) measured next to
# it in the same run (each row has its own: the median of the reference
# calls interleaved with its steps), drawn as a red tick on its bar; the
# label is the median of the paired ratios.
# A ratio above 1.05 (faster than memory allows) is labelled "> 1.05!".
# Inputs (gnuplot -e): datafile (columns: optim gbps stream_gbps frac
# elements threads), outbase (path without extension), title_extra,
# ref_given (1: a reference given once with --stream-gbps, not measured
# next to each step; the legend says so).
if (!exists("title_extra")) title_extra = ""
if (!exists("ref_given")) ref_given = 0
reftitle = ref_given ? "in-place GB/s given once (--stream-gbps), not measured next to each step" : "in-place a = a + s*c measured next to it (GB/s)"
stats datafile using 3 nooutput
stream = STATS_max
stats datafile using 2 nooutput
ymax = (STATS_max > stream ? STATS_max : stream) * 1.2
stats datafile using 5 nooutput
elems = STATS_max
stats datafile using 6 nooutput
threads = STATS_max

set style data histograms
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set boxwidth 0.8
set yrange [0:ymax]
set ylabel "effective bandwidth (GB/s, 1e9 bytes/s)"
set xlabel "optimizer step (bytes/element: lbscale optim --help; label: fraction of in-place GB/s)"
set title sprintf("Optimizer step vs in-place memory bandwidth, %.0fM fp32 parameters, %d threads%s", elems / 1e6, threads, title_extra)
set grid ytics
set key top left
set xtics rotate by 30 right nomirror
set bmargin 6

do for [fmt in "png svg"] {
    if (fmt eq "png") { set terminal pngcairo size 900,560 font "DejaVu Sans,11" noenhanced }
    if (fmt eq "svg") { set terminal svg size 900,560 font "DejaVu Sans,11" noenhanced }
    set output outbase . "." . fmt
    plot datafile using 2:xtic(1) title "achieved GB/s" lc rgb "#2e86c1", \
         "" using 0:3:(0.45) with xerrorbars pt -1 lw 3 lc rgb "#c0392b" title reftitle, \
         "" using 0:(($2 > $3 ? $2 : $3) + ymax * 0.02):($4 > 1.05 ? sprintf("%.0f%% > 1.05!", $4 * 100) : sprintf("%.0f%%", $4 * 100)) with labels notitle
}
