# written by tools/study.py report: blocks with points
bhave = "1"
ehave = "1"
