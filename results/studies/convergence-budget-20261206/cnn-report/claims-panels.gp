# written by tools/study.py report
npanel = 2
array PT[2] = ["large batch, cnn, b=128", "large batch, cnn, b=2048"]
array PF[2] = [0, 2]
array PN[2] = [2, 2]
array PH[2] = [1, 1]
array CL[4] = ["sgd (5 seeds)", "lamb (5 seeds)", "sgd (5 seeds)", "lamb (5 seeds)"]
