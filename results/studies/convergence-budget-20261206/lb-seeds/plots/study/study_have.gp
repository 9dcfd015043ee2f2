# written by tools/study.py report: blocks with points
bhave = "1 2 3 4"
ehave = "1 2 3 4"
