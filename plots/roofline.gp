# roofline.gp - achieved memory bandwidth of each optimizer step against the
# machine's STREAM triad measured in the same run.
# Inputs (gnuplot -e): datafile (columns: optim gbps stream_gbps frac
# elements threads), outbase (path without extension), title_extra.
if (!exists("title_extra")) title_extra = ""
stats datafile using 3 nooutput
stream = STATS_max
stats datafile using 5 nooutput
elems = STATS_max
stats datafile using 6 nooutput
threads = STATS_max

set style data histograms
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set boxwidth 0.8
set yrange [0:stream * 1.25]
set ylabel "effective bandwidth (GB/s, 1e9 bytes/s)"
set xlabel "optimizer step (bytes/element: lbscale optim --help; label: fraction of STREAM)"
set title sprintf("Optimizer step vs STREAM triad, %.0fM fp32 parameters, %d threads%s", elems / 1e6, threads, title_extra)
set grid ytics
set key top right
set xtics rotate by 30 right nomirror
set bmargin 6
set arrow 1 from graph 0, first stream to graph 1, first stream nohead lw 2 lc rgb "#c0392b" dt 2
set label 1 sprintf("STREAM triad %.1f GB/s", stream) at graph 0.02, first stream * 1.04 tc rgb "#c0392b"

do for [fmt in "png svg"] {
    if (fmt eq "png") { set terminal pngcairo size 900,560 font "DejaVu Sans,11" noenhanced }
    if (fmt eq "svg") { set terminal svg size 900,560 font "DejaVu Sans,11" noenhanced }
    set output outbase . "." . fmt
    plot datafile using 2:xtic(1) title "achieved GB/s" lc rgb "#2e86c1", \
         "" using 0:($2 + stream * 0.03):(sprintf("%.0f%%", $4 * 100)) with labels notitle
}
