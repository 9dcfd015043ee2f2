#!/usr/bin/python3
"""Print meson's test results as the plain closing line CI reads:
'<label>: N passed, N failed, N skipped', preceded by one line per skipped
test with the reason it printed (its first line mentioning SKIP), so a
skip is never silent.  Usage: summary.py TESTLOG.json LABEL"""
import json
import sys

counts = {"OK": 0, "FAIL": 0, "SKIP": 0}
for line in open(sys.argv[1]):
    rec = json.loads(line)
    result = rec["result"]
    key = "OK" if result in ("OK", "EXPECTEDFAIL") else "SKIP" if result == "SKIP" else "FAIL"
    counts[key] += 1
    if key == "SKIP":
        out = (rec.get("stdout") or "") + (rec.get("stderr") or "")
        why = next((l.strip() for l in out.splitlines() if "SKIP" in l),
                   "no reason printed")
        print(f"skipped {rec['name']}: {why}")
print(f"{sys.argv[2]}: {counts['OK']} passed, {counts['FAIL']} failed, {counts['SKIP']} skipped")
