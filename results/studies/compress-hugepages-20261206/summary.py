import json, sys, collections, numpy as np
rows = [json.loads(l) for l in open(sys.argv[1])]
d = collections.defaultdict(lambda: collections.defaultdict(list))
for x in rows:
    d[x['compressor']][x['bin']].append(x)
print("| compressor | compress new/old: median [min, max] of rounds | decompress new/old | stream_frac CV old | new | stream_frac median old | new |")
print("|---|--:|--:|--:|--:|--:|--:|")
for c, b in d.items():
    o = sorted(b['old'], key=lambda x: x['round']); n = sorted(b['new'], key=lambda x: x['round'])
    rc = [y['compress_ms_median'] / x['compress_ms_median'] for x, y in zip(o, n)]
    rd = [y['decompress_ms_median'] / x['decompress_ms_median'] for x, y in zip(o, n)]
    fo = np.array([x['stream_frac'] for x in o]); fn = np.array([x['stream_frac'] for x in n])
    print("| %s | %.2f [%.2f, %.2f] | %.2f [%.2f, %.2f] | %.1f%% | %.1f%% | %.3f | %.3f |" % (
        c, np.median(rc), min(rc), max(rc), np.median(rd), min(rd), max(rd),
        100 * fo.std(ddof=1) / fo.mean(), 100 * fn.std(ddof=1) / fn.mean(),
        np.median(fo), np.median(fn)))
