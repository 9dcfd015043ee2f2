#!/usr/bin/python3
"""layout_check.py [ROOT] - the code-layout rules of docs/design.md, as a
TAP test, so that a change that breaks one fails CI instead of waiting
for a review:

  1. no C file under bench/ over 800 lines (one verb, or one phase of a
     verb, per file);
  2. no function over 120 lines in hand-written C outside tests/ (a
     function runs from a line that opens with '{' in column 0 to the
     next line that opens with '}' in column 0, the kernel's style, which
     every file here follows; initialisers of tables are not functions and
     are skipped: their opening line ends in '= {' or the line before
     ends in '=');
  3. the layers: nothing in core/kern/ includes a header of core/optim/ or
     core/compress/ (the kernel library sits below the algorithms; each
     algorithm's kernels include the library, never the other way).

Standard library only.
"""
import os
import re
import sys

ROOT = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else
                       os.path.join(os.path.dirname(__file__), ".."))
BENCH_MAX, FUNC_MAX = 800, 120
SKIP_DIRS = {"tests", "build", ".git", "results", "subprojects"}


def c_files(top, exts=(".c", ".cu")):
    for d, dirs, files in os.walk(top):
        rel = os.path.relpath(d, ROOT)
        dirs[:] = [x for x in dirs if x not in SKIP_DIRS
                   and not x.startswith(("build", "."))]
        for f in files:
            if f.endswith(exts):
                yield os.path.join(rel, f)


def long_functions(path):
    lines = open(os.path.join(ROOT, path), errors="replace").read().split("\n")
    out, start = [], None
    for i, l in enumerate(lines):
        if l.startswith("{") and start is None:
            prev = lines[i - 1].rstrip() if i else ""
            if not prev.endswith("="):
                j = i - 1
                while j > 0 and "(" not in lines[j]:
                    j -= 1
                start = (i, lines[j].strip()[:70])
        elif l.startswith("}") and start is not None:
            n = i - start[0] - 1
            if n > FUNC_MAX:
                out.append("%s:%d: %s: %d lines" % (path, start[0] + 1,
                                                      start[1], n))
            start = None
    return out


def main():
    n, bad = 0, 0

    def check(desc, problems):
        nonlocal n, bad
        n += 1
        if problems:
            bad += 1
            print("not ok %d - %s" % (n, desc))
            for p in problems:
                print("#   " + p)
        else:
            print("ok %d - %s" % (n, desc))

    bench = [f for f in c_files(os.path.join(ROOT, "bench"))]
    check("no bench/ C file over %d lines (%d files)" % (BENCH_MAX, len(bench)),
          ["%s: %d lines" % (f, c) for f in bench
           for c in [sum(1 for _ in open(os.path.join(ROOT, f),
                                         errors="replace"))] if c > BENCH_MAX])
    allc = list(c_files(ROOT))
    check("no function over %d lines outside tests/ (%d files)" %
          (FUNC_MAX, len(allc)),
          [p for f in allc for p in long_functions(f)])
    above = set()
    for sub in ("core/optim", "core/compress"):
        d = os.path.join(ROOT, sub)
        above |= {f for f in os.listdir(d) if f.endswith(".h")}
    kern = os.path.join(ROOT, "core/kern")
    probs = []
    for f in sorted(os.listdir(kern)):
        for i, l in enumerate(open(os.path.join(kern, f), errors="replace"), 1):
            m = re.match(r'\s*#\s*include\s+"([^"]+)"', l)
            if m and (os.path.basename(m.group(1)) in above or
                      re.search(r"(^|/)(optim|compress)/", m.group(1))):
                probs.append("core/kern/%s:%d includes %s" % (f, i, m.group(1)))
    check("core/kern/ includes nothing from core/optim/ or core/compress/",
          probs)
    print("1..%d" % n)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
