# wire.gp - bits each compressor puts on the wire per fp32 gradient element
# (log scale; dense fp32 = 32), labelled with the compression ratio.
# Inputs (gnuplot -e): datafile (compressor bits_per_element wire_bytes
# ratio elements collective), outbase, elems.
if (!exists("elems")) elems = 0
stats datafile using 2 nooutput
bmax = STATS_max
bmin = STATS_min

set title sprintf("Compressors: wire volume per gradient element, %.0fM fp32 elements", elems / 1e6)
set ylabel "bits on the wire per element (log scale)"
set xlabel "compressor (collective it needs)"
set logscale y 10
set yrange [(bmin < 0.1 ? bmin / 3 : 0.03) : (bmax > 32 ? bmax : 32) * 4]
set style fill solid 0.8 border -1
set boxwidth 0.7
set grid ytics lc rgb "#dddddd"
set xtics rotate by 30 right nomirror
set bmargin 6
set key top right box lc rgb "#bbbbbb"

do for [fmt in "png svg"] {
    if (fmt eq "png") { set terminal pngcairo size 1000,600 font "DejaVu Sans,11" noenhanced }
    if (fmt eq "svg") { set terminal svg size 1000,600 font "DejaVu Sans,11" dynamic noenhanced }
    set output outbase . "." . fmt
    plot datafile using 0:2:xtic(sprintf("%s (%s)", strcol(1), strcol(6))) with boxes lc rgb "#2e86c1" title "bits per element (label: x smaller than fp32)", \
         "" using 0:($2 * 1.35):(sprintf($4 >= 10 ? "%.0fx" : "%.2gx", $4)) with labels font ",9" notitle, \
         32 with lines dt 2 lw 2 lc rgb "#c0392b" title "dense fp32 = 32 bits"
}
