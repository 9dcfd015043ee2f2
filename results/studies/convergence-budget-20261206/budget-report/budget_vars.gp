# written by tools/study.py budget
nopt = 2
array N[2] = ["lamb", "sgd"]
array PE[2] = [5, 0]
