# written by tools/study.py report: blocks with points
bhave = "4"
ehave = "4"
