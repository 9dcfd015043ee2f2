# busbw.gp - bus bandwidth vs message size for one collective, one line per
# rank count, with the link limit drawn (nccl-tests conventions).
# Inputs (gnuplot -e): datafile (blocks, one per rank count: bytes busbw
# algbw time_us), outbase, n, t1..tn (labels), coll, backend, link (GB/s,
# 0 = none), linkname, ymaxdata.
if (!exists("coll")) coll = "collective"
if (!exists("backend")) backend = ""
if (!exists("link")) link = 0
if (!exists("linkname")) linkname = "link limit"

# compressed patterns report the dense fp32 equivalent (lbscale coll --help)
dense = (coll eq "masked_allreduce" || coll eq "topk_allgather" || coll eq "onebit")
ytop = (link > ymaxdata ? link : ymaxdata) * 1.2
if (ytop <= 0) ytop = 1
set title sprintf("Bus bandwidth vs message size: %s%s (nccl-tests busbw convention%s)", coll, strlen(backend) > 0 && backend ne "unknown" ? " (" . backend . ")" : "", dense ? "; dense-equivalent" : "")
set xlabel "message size (bytes, log2 scale)"
set ylabel "bus bandwidth (GB/s, 1e9 bytes/s)"
set logscale x 2
stats datafile using 1 nooutput
bmin = STATS_min
bmax = STATS_max
lab(b) = b >= 2**30 ? sprintf("%.0f GiB", b / 2**30) : b >= 2**20 ? sprintf("%.0f MiB", b / 2**20) : b >= 2**10 ? sprintf("%.0f KiB", b / 2**10) : sprintf("%.0f B", b)
kstep = (bmax / bmin > 2**16) ? 2 : 1
set xrange [bmin / 1.3 : bmax * 1.3]
set xtics ()
do for [k=0:50:kstep] { if (2**k >= bmin / 1.01 && 2**k <= bmax * 1.01) { set xtics add (lab(2**k) 2**k) } }
set yrange [0:ytop]
set grid xtics ytics lc rgb "#dddddd"
set key left top box lc rgb "#bbbbbb"
linktitle = link > 0 ? sprintf("%s: %.1f GB/s", linkname, link) : ""
if (dense) { set xlabel "dense fp32 equivalent message size (bytes, log2 scale)" }
array C[8] = ["#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#7f7f7f"]

do for [fmt in "png svg"] {
    if (fmt eq "png") { set terminal pngcairo size 1000,600 font "DejaVu Sans,11" noenhanced }
    if (fmt eq "svg") { set terminal svg size 1000,600 font "DejaVu Sans,11" dynamic noenhanced }
    set output outbase . "." . fmt
    plot for [i=1:n] datafile index (i-1) using 1:2 with linespoints lw 2 pt 7 ps 0.8 lc rgb C[(i-1) % 8 + 1] title value(sprintf("t%d", i)), \
         (link > 0 ? link : 1/0) with lines dt 2 lw 2 lc rgb "#c0392b" title linktitle
}
