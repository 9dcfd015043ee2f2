# written by tools/study.py report: blocks with points
bhave = ""
ehave = ""
