# consensus.gp - issue 17's decentralized runs: consensus distance (the RMS
# distance of the ranks' parameters from their average, train
# --consensus-every) vs step for DmSGD and DecentLaM, one panel per
# (ranks, topology, shards, batch): mean over seeds, band = min..max over
# seeds, log scale.  tools/study.py report writes the data (consensus.dat,
# gnuplot index 2p DmSGD and 2p+1 DecentLaM for panel p) and the panel
# list (consensus-panels.gp: nrow, ncol, npanel, PT[] titles).
# Inputs (gnuplot -e): dat (consensus.dat), outbase, dir (the directory
# of both, default "."; study_plot in bench/suites/phase.sh runs gnuplot
# there, so no path is ever part of this code or of a shell command).
if (!exists("dir")) dir = "."
load dir . "/consensus-panels.gp"
if (npanel < 1) { print "consensus.gp: no consensus curves in " . dat; exit }
array C[2] = ["#d62728", "#1f77b4"]
array T[2] = ["DmSGD", "DecentLaM"]
do for [fmt in "png svg"] {
    if (fmt eq "png") { set terminal pngcairo size 480*ncol,380*nrow+60 font "DejaVu Sans,10" noenhanced }
    if (fmt eq "svg") { set terminal svg size 480*ncol,380*nrow+60 font "DejaVu Sans,10" dynamic noenhanced }
    set output outbase . "." . fmt
    set multiplot layout nrow,ncol title "Consensus distance vs step: DmSGD and DecentLaM (MLP 784-512-256-10, Fashion-MNIST; mean over seeds, band = min..max)"
    set grid xtics ytics lc rgb "#dddddd"
    set logscale y
    set format y "%g"
    set xlabel "step"
    set ylabel "RMS distance from the average model"
    set key top right box lc rgb "#bbbbbb"
    do for [p=1:npanel] {
        set title PT[p]
        plot for [j=1:2] dat index (2*(p-1)+j-1) using 1:3:4 with filledcurves fs transparent solid 0.2 noborder lc rgb C[j] notitle, \
             for [j=1:2] dat index (2*(p-1)+j-1) using 1:2 with linespoints lw 2 pt 7 ps 0.5 lc rgb C[j] title T[j]
    }
    unset multiplot
}
