# written by tools/study.py report
npanel = 5
array PT[5] = ["large batch, b=8192", "SLAMB vs LAMB", "1-bit LAMB vs LAMB", "JointSpar, mlp8, b=2048", "JointSpar, mlp8, b=8192"]
array PF[5] = [0, 4, 8, 12, 16]
array PN[5] = [4, 4, 4, 4, 4]
array PH[5] = [0, 0, 0, 1, 1]
array CL[20] = ["sgd (no runs yet)", "adamw (no runs yet)", "lars (no runs yet)", "lamb (no runs yet)", "slamb b=1024 (no runs yet)", "lamb b=1024 (no runs yet)", "slamb b=8192 (no runs yet)", "lamb b=8192 (no runs yet)", "onebit_lamb b=2048 (no runs yet)", "lamb b=2048 (no runs yet)", "onebit_lamb b=8192 (no runs yet)", "lamb b=8192 (no runs yet)", "sgd (4 seeds)", "jointspar (4 seeds)", "lars (4 seeds)", "jointspar_lars (4 seeds)", "sgd (4 seeds)", "jointspar (4 seeds)", "lars (4 seeds)", "jointspar_lars (4 seeds)"]
