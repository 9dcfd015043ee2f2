# peers.gp - lbscale's kernels next to the PyTorch peers that users run on
# the CPU (tools/peers/cpu_peers.py), measured in interleaved rounds in one
# run.  Both bars use lbscale's bytes model (elements x bytes/element /
# median time), so they compare the same work; the label is the median of
# the rounds' speedups (peer ms / lbscale ms).
# Inputs (gnuplot -e): datafile (columns: kernel peer lbscale_gbps peer_gbps
# speedup), outbase (path without extension), threads, elems.
stats datafile using 3 nooutput
ymax = STATS_max * 1.25

set style data histograms
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set yrange [0:ymax]
set ylabel "effective bandwidth (GB/s at lbscale's bytes model)"
set xlabel "kernel (label: lbscale's speedup over the peer, median of the rounds)"
set title sprintf("lbscale vs PyTorch peers on the CPU, %.0fM fp32 elements, %d threads", elems / 1e6, threads)
set grid ytics
set key top right
set xtics nomirror

do for [fmt in "png svg"] {
    if (fmt eq "png") { set terminal pngcairo size 900,520 font "DejaVu Sans,11" noenhanced }
    if (fmt eq "svg") { set terminal svg size 900,520 font "DejaVu Sans,11" noenhanced }
    set output outbase . "." . fmt
    plot datafile using 3:xtic(1) title "lbscale" lc rgb "#2e86c1", \
         "" using 4 title "PyTorch peer (torch-optimizer Lamb, foreach AdamW/SGD, torch.topk)" lc rgb "#aab7b8", \
         "" using ($0 - 0.2):($3 + ymax * 0.03):(sprintf("%.1fx", $5)) with labels notitle
}
