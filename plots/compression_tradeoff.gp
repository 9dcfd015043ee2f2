# compression_tradeoff.gp - what a compressor costs in accuracy and buys in
# time at scale: LAMB's final test accuracy (real 4-rank training) against
# the simulated BERT-Large time per step at 1,024 GPUs (trace of the real
# compressed exchange), one point per compressor setting, one colour per
# platform.  Inputs: datafile (two blocks: dgx-a100, eth-25g), outbase.
set logscale x 2
set xlabel "simulated BERT-Large time per step at 1,024 GPUs (ms, log scale)"
set ylabel "LAMB final test accuracy, Fashion-MNIST, 4 ranks (%)"
set title "Compressors: accuracy vs simulated step time at 1,024 GPUs"
set grid
set key below horizontal box
set bmargin 6
do for [fmt in "png svg"] {
    if (fmt eq "png") { set terminal pngcairo size 1000,640 font "DejaVu Sans,10" }
    if (fmt eq "svg") { set terminal svg size 1000,640 font "DejaVu Sans,10" }
    set output outbase . "." . fmt
    plot datafile index 0 using 1:2 with points pt 7 ps 1.4 lc rgb "#2e86c1" title "DGX-A100 (NVLink + 8x HDR IB)", \
         "" index 0 using 1:2:3 with labels offset 0,0.9 font ",8" tc rgb "#2e86c1" notitle, \
         "" index 1 using 1:2 with points pt 5 ps 1.4 lc rgb "#c0392b" title "25 Gb/s Ethernet", \
         "" index 1 using 1:2:3 with labels offset 0,-0.9 font ",8" tc rgb "#c0392b" notitle
}
