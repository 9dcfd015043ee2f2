# busbw.gp - one collective on one backend, one line per rank count, in
# two panels against the message size (log2 axis, nccl-tests "size"):
#   left   time per call in microseconds, log-log as OSU prints latency,
#          with bars from the fastest to the slowest timed call;
#   right  nccl-tests bus bandwidth (GB/s), log scale so that sizes below
#          16 KiB are not flattened onto the axis, with the memory or link
#          limit drawn.
# Rank counts above the machine's cores (oversubscribed: ranks take turns
# on a core) are dashed and say so in the legend.  Compressed patterns
# report a dense-equivalent busbw (lbscale coll --help), which the figure
# labels as such, with the fraction of those bytes they really move.
# Inputs (gnuplot -e): datafile (blocks, one per rank count: bytes busbw
# algbw time_us time_us_min time_us_max; '?' = not recorded), outbase,
# n, t1..tn (labels), o1..on (1 = oversubscribed), coll, backend, link
# (GB/s, 0 = none), linkname, cores, dense (0/1), densefrac (text),
# hasrange (0: no fastest/slowest times recorded).
if (!exists("coll")) coll = "collective"
if (!exists("backend")) backend = ""
if (!exists("link")) link = 0
if (!exists("linkname")) linkname = "link limit"
if (!exists("cores")) cores = 0
if (!exists("dense")) dense = 0
if (!exists("densefrac")) densefrac = "a fraction"
if (!exists("hasrange")) hasrange = 1
set datafile missing "?"

stats datafile using 1 nooutput
bmin = STATS_min
bmax = STATS_max
lab(b) = b >= 2**30 ? sprintf("%.0fG", b / 2**30) : b >= 2**20 ? sprintf("%.0fM", b / 2**20) : b >= 2**10 ? sprintf("%.0fK", b / 2**10) : sprintf("%.0f", b)
kstep = (bmax / bmin > 2**16) ? 4 : 2
set logscale x 2
set xrange [bmin / 1.4 : bmax * 1.4]
set xtics ()
do for [k=0:50:kstep] { if (2**k >= bmin / 1.01 && 2**k <= bmax * 1.01) { set xtics add (lab(2**k) 2**k) } }
set grid xtics ytics mytics lc rgb "#e4e4e4"
set xlabel (dense ? "dense fp32 equivalent size (bytes; K = KiB, M = MiB)" : "message size (bytes; K = KiB, M = MiB)")

array C[8] = ["#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#7f7f7f"]
do for [i=1:8] { set style line i lc rgb C[i] lw 2 pt 7 ps 0.7 dt 1 }
do for [i=1:8] { set style line 10+i lc rgb C[i] lw 2 pt 6 ps 0.7 dt 2 }
do for [i=1:8] { set style line 20+i lc rgb C[i] lw 1 dt 1 pt 0 }
ls_of(i) = (value(sprintf("o%d", i)) ? 10 : 0) + (i-1) % 8 + 1
set bars small

# bus bandwidth axis: whole decades around the data and the limit line
stats datafile using ($2 > 0 ? $2 : 1/0) nooutput
ylo = 10 ** floor(log10(STATS_min))
yhi = 10 ** ceil(log10((link > STATS_max ? link : STATS_max) * 1.3))

tcore = cores > 0 ? sprintf(", %d cores", cores) : ""
do for [fmt in "png svg"] {
    if (fmt eq "png") { set terminal pngcairo size 1300,600 font "DejaVu Sans,11" noenhanced }
    if (fmt eq "svg") { set terminal svg size 1300,600 font "DejaVu Sans,11" dynamic noenhanced }
    set output outbase . "." . fmt
    set multiplot title sprintf("%s%s: time and bus bandwidth vs message size%s", coll, strlen(backend) > 0 && backend ne "unknown" ? " (" . backend . ")" : "", tcore)
    set tmargin at screen 0.86
    set bmargin at screen (dense ? 0.17 : 0.12)

    set lmargin at screen 0.07
    set rmargin at screen 0.46
    set title (hasrange ? "time per call (median; bars: fastest to slowest call)" : "time per call")
    set ylabel "time per call (us, log scale)"
    set logscale y 10
    set format y "%g"
    set yrange [*:*]
    set key top left box lc rgb "#bbbbbb" opaque font ",10"
    if (hasrange) {
        plot for [i=1:n] datafile index (i-1) using 1:4:5:6 with yerrorbars ls (20 + (i-1) % 8 + 1) notitle, \
             for [i=1:n] datafile index (i-1) using 1:4 with linespoints ls ls_of(i) title value(sprintf("t%d", i))
    } else {
        plot for [i=1:n] datafile index (i-1) using 1:4 with linespoints ls ls_of(i) title value(sprintf("t%d", i))
    }

    set lmargin at screen 0.56
    set rmargin at screen 0.97
    set title (dense ? "dense-equivalent bus bandwidth (nccl-tests convention)" : "bus bandwidth (nccl-tests busbw convention)")
    set ylabel (dense ? "dense-equivalent busbw (GB/s, log scale)" : "bus bandwidth (GB/s = 1e9 B/s, log scale)")
    set yrange [ylo : yhi]
    linktitle = link > 0 ? sprintf("%s: %.1f GB/s", linkname, link) : ""
    if (dense) {
        set label 1 sprintf("dense-equivalent: the busbw a dense fp32 allreduce would need for the same time;\nthis pattern moves only %s of those bytes, so it can lie above the memory line", densefrac) at screen 0.53, screen 0.045 left font ",9" tc rgb "#8e44ad"
    }
    set key top left box lc rgb "#bbbbbb" opaque font ",10"
    plot for [i=1:n] datafile index (i-1) using 1:($2 > 0 ? $2 : 1/0) with linespoints ls ls_of(i) notitle, \
         (link > 0 ? link : 1/0) with lines dt 2 lw 2 lc rgb "#c0392b" title linktitle
    unset label 1
    unset logscale y
    unset multiplot
}
