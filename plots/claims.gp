# claims.gp - issue 35: test accuracy vs epoch for each claim of the
# convergence study (tools/study.py report writes claims.dat and
# claims-panels.gp): one panel per claim, one curve per configuration at
# its chosen rate, mean over seeds with a +-1 sd band kept within the
# seeds' own range (study.py epoch_band).  A curve without
# runs yet (a partial study) is listed in the key as such.
# Inputs (gnuplot -e): dir, outbase, note (a subtitle).
if (!exists("note")) note = ""
load dir . "/claims-panels.gp"
set datafile missing "?"
array C[4] = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e"]
ncol = (npanel > 2) ? 3 : npanel
nrow = (npanel + ncol - 1) / ncol
do for [fmt in "png svg"] {
    if (fmt eq "png") { set terminal pngcairo size 560*ncol,430*nrow font "DejaVu Sans,10" noenhanced }
    if (fmt eq "svg") { set terminal svg size 560*ncol,430*nrow font "DejaVu Sans,10" dynamic noenhanced }
    set output outbase . "." . fmt
    set multiplot layout nrow,ncol title "Convergence claims: test accuracy vs epoch (mean, band = +-1 sd over seeds, within their range)" . (strlen(note) ? "\n" . note : "")
    set grid xtics ytics lc rgb "#dddddd"
    set key right bottom box lc rgb "#bbbbbb"
    set xlabel "epoch"
    set autoscale xfix   # the epochs run, not the next tic beyond
    set ylabel "test accuracy (%)"
    do for [p=1:npanel] {
        set title PT[p]
        if (PH[p] == 0) {
            # a claim without runs yet: an empty panel that says so
            set label 1 "no runs yet" at graph 0.5, 0.5 center
            plot [0:1] [0:1] NaN notitle
            unset label 1
            continue
        }
        plot for [j=1:PN[p]] dir . "/claims.dat" index (PF[p]+j-1) using 1:3:4 with filledcurves fs transparent solid 0.15 noborder lc rgb C[j] notitle, \
             for [j=1:PN[p]] dir . "/claims.dat" index (PF[p]+j-1) using 1:2 with linespoints lw 2 pt 7 ps 0.4 lc rgb C[j] title CL[PF[p]+j]
    }
    unset multiplot
}
