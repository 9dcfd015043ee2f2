# written by bench/study.py report: blocks with points
bhave = ""
ehave = ""
