# written by tools/study.py report: blocks with points
bhave = "1 4"
ehave = "1 4"
