#!/usr/bin/python3
"""Print meson's test results as the plain closing line CI reads:
'<label>: N passed, N failed, N skipped'.  Usage: summary.py TESTLOG.json LABEL"""
import json
import sys

counts = {"OK": 0, "FAIL": 0, "SKIP": 0}
for line in open(sys.argv[1]):
    result = json.loads(line)["result"]
    key = "OK" if result in ("OK", "EXPECTEDFAIL") else "SKIP" if result == "SKIP" else "FAIL"
    counts[key] += 1
print(f"{sys.argv[2]}: {counts['OK']} passed, {counts['FAIL']} failed, {counts['SKIP']} skipped")
