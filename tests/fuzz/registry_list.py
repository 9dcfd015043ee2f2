#!/usr/bin/env python3
"""registry_list.py MESON_BUILD TEMPLATE - registry_list.h for the fuzz build.

meson makes core/registry_list.h from core/meson.build's `optimizers` and
`compressors` rows (configure_file on core/registry_list.h.in); the fuzz
Makefile builds without meson, so this makes the same header from the
same rows (a list of lists of strings, which is also Python's syntax).
"""
import ast
import re
import sys

meson, template = open(sys.argv[1]).read(), open(sys.argv[2]).read()
for var, macro in (("optimizers", "LBS_OPTIMIZERS"),
                   ("compressors", "LBS_COMPRESSORS")):
    m = re.search(r"^%s = (\[.*?\]\])" % var, meson, re.S | re.M)
    if not m:
        sys.exit("registry_list.py: no '%s = [[...]]' in %s" % (var, sys.argv[1]))
    rows = ast.literal_eval(m.group(1))
    template = template.replace(
        "@%s@" % macro, " ".join("X(%s)" % n for row in rows for n in row))
sys.stdout.write(template)
