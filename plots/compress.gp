# compress.gp - gradient compressors as a dot plot: one row per compressor
# (no labels to collide), three panels sharing the rows.  Every plot
# clause keeps a valid x for every row (a point of size 0 or an empty
# label where there is nothing to show): gnuplot 5.4 crashes on a label
# clause whose points are all invalid inside a multiplot.  The panels:
#   left    compression (filled) and decompression (open) throughput as a
#           fraction of the STREAM triad measured in the same run (log x:
#           the rates span two decades);
#   middle  relative error ||x - D(C(x))|| / ||x|| (log x); an exact
#           compressor (error 0) has no place on a log axis, so its row
#           says "exact (0)" in words instead of a point at an invented
#           value;
#   right   how many times smaller than fp32 its wire format is (log x).
# Rows are sorted by error, exact ones first.
# Inputs (gnuplot -e): datafile (row compressor stream_frac rel_err gbps
# stream_gbps elements decompress_frac ratio collective; row = 0..n-1 from
# the top, -1 = not measured), outbase, n, elems, stream, flo, fhi, elo,
# rhi.
if (!exists("elems")) elems = 0
if (!exists("stream")) stream = 0

# axis ranges (whole decades around the data) come from lbscale plot:
# flo..fhi the throughput fractions, elo the smallest nonzero error, rhi
# the largest size reduction; hasdec 0: no decompression rates
if (!exists("flo")) flo = 0.01
if (!exists("fhi")) fhi = 2
if (!exists("elo")) elo = 1e-4
if (!exists("rhi")) rhi = 1e4
if (!exists("hasdec")) hasdec = 1
set yrange [n - 0.4 : -0.6]
set grid xtics mxtics lc rgb "#e4e4e4"
set border 3
set xtics nomirror
set ytics nomirror

do for [fmt in "png svg"] {
    if (fmt eq "png") { set terminal pngcairo size 1200,(170 + 34 * n) font "DejaVu Sans,11" noenhanced }
    if (fmt eq "svg") { set terminal svg size 1200,(170 + 34 * n) font "DejaVu Sans,11" dynamic noenhanced }
    set output outbase . "." . fmt
    set multiplot title sprintf("Gradient compressors on %s fp32 elements: speed, error and size (STREAM triad %.1f GB/s)", elems >= 1e6 ? sprintf("%.0fM", elems / 1e6) : sprintf("%.0fK", elems / 1e3), stream)
    set bmargin 4.5
    set tmargin 3.2

    # left: throughput, with the row labels (compressor and its collective)
    set lmargin at screen 0.17
    set rmargin at screen 0.44
    set logscale x 10
    set format x "%g"
    set xrange [flo : fhi]
    set xlabel "throughput / STREAM triad (log scale)"
    set ytics () 
    set ytics scale 0
    unset label
    set arrow 1 from first 1, graph 0 to first 1, graph 1 nohead dt 2 lc rgb "#c0392b"
    set label 1 "STREAM" at first 1, graph 1 offset 0,0.6 center tc rgb "#c0392b" font ",9"
    set key at screen 0.17, screen 0.02 left bottom horizontal samplen 1 font ",10" nobox
    plot datafile using 3:1:ytic(sprintf("%s (%s)", strcol(2), strcol(10))) with points pt 7 ps 1.6 lc rgb "#1f77b4" title "compress", \
         "" using ($8 > 0 ? $8 : 1):1:($8 > 0 ? 1.6 : 0) with points pt 6 ps variable lw 2 lc rgb "#ff7f0e" title (hasdec ? "decompress" : "")
    unset arrow 1

    # middle: error; exact rows in words at the left edge
    set lmargin at screen 0.47
    set rmargin at screen 0.74
    set xrange [elo : 1.5]
    set format x "%.0e"
    set xlabel "relative error ||x - D(C(x))|| / ||x|| (log)"
    set ytics format ""
    set ytics ()
    unset label 1
    set arrow 2 from first 1, graph 0 to first 1, graph 1 nohead dt 3 lc rgb "#888888"
    set label 2 "1 = as large as x" at first 1, graph 1 offset 0,0.6 center tc rgb "#666666" font ",9"
    unset key
    plot datafile using ($4 > 0 ? $4 : elo):1:($4 > 0 ? 1.6 : 0) with points pt 7 ps variable lc rgb "#555555" notitle, \
         "" using ($4 > 0 ? $4 : elo):1:($4 >= 0.1 ? sprintf("%.3g", $4) : "") with labels right offset -1.2,0 font ",9" tc rgb "#444444" notitle, \
         "" using ($4 > 0 ? $4 : elo):1:($4 > 0 && $4 < 0.1 ? sprintf("%.2g", $4) : "") with labels left offset 1.2,0 font ",9" tc rgb "#444444" notitle, \
         "" using (elo * 1.3):1:($4 > 0 ? "" : "exact (0)") with labels left tc rgb "#444444" font ",10" notitle
    unset arrow 2
    unset label 2

    # right: size on the wire
    set lmargin at screen 0.77
    set rmargin at screen 0.97
    set xrange [0.8 : rhi]
    set format x "%gx"
    set xlabel "x smaller than fp32 (log)"
    plot datafile using ($9 > 0 ? $9 : 1):1:($9 > 0 ? 1.4 : 0) with points pt 5 ps variable lc rgb "#555555" notitle, \
         "" using ($9 > 0 ? $9 : 1):1:($9 > 0 ? sprintf($9 >= 10 ? "%.0fx" : "%.2gx", $9) : "") with labels left offset 1,0 font ",9" tc rgb "#444444" notitle
    unset multiplot
    unset logscale x
}
