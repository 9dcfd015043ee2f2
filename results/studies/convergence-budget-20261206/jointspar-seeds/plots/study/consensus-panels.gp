# written by tools/study.py report
nrow = -1
ncol = 0
npanel = 0
array PT[1] = [""]
