# written by tools/study.py report
npanel = 5
array PT[5] = ["large batch, b=8192", "SLAMB vs LAMB", "1-bit LAMB vs LAMB", "JointSpar, mlp8, b=2048", "JointSpar, mlp8, b=8192"]
array PF[5] = [0, 4, 8, 12, 16]
array PN[5] = [4, 4, 4, 4, 4]
array PH[5] = [1, 1, 1, 1, 1]
array CL[20] = ["sgd (5 seeds)", "adamw (5 seeds)", "lars (5 seeds)", "lamb (5 seeds)", "slamb b=1024 (5 seeds)", "lamb b=1024 (5 seeds)", "slamb b=8192 (5 seeds)", "lamb b=8192 (5 seeds)", "onebit_lamb b=2048 (4 seeds)", "lamb b=2048 (5 seeds)", "onebit_lamb b=8192 (5 seeds)", "lamb b=8192 (5 seeds)", "sgd (5 seeds)", "jointspar (5 seeds)", "lars (5 seeds)", "jointspar_lars (5 seeds)", "sgd (5 seeds)", "jointspar (5 seeds)", "lars (5 seeds)", "jointspar_lars (5 seeds)"]
