/* fuzz_calib.c - libFuzzer harness for `sim calibrate`'s readers
 * (sim/samples.c, sim/samples_ext.c: lbscale coll JSONL, nccl-tests text
 * and -J JSON, OSU tables) and the fits behind them (calib.c,
 * calib_net.c).  Input: the first byte's low 3 bits + 1 are the --ranks
 * of files that state none (0 = not given), bit 3 gives --coll allgather,
 * bits 4-5 --ranks-per-node 1..3; the rest is the file, copied to a
 * buffer of exactly its size (ASan sees any read past it).  A refusal must
 * name the file; an accepted file's samples must be finite and in range
 * (ranks >= 2, 1 <= rpn <= ranks, bytes >= 0, time > 0), and a fit of
 * them must give finite, non-negative constants or refuse.  Built by
 * tests/fuzz/build.sh.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lbscale_sim.h"

#define NAME "fuzz-calib.txt"

static void check_fit(const struct lbs_sim_fit *f)
{
    if (!isfinite(f->base_lat) || f->base_lat < 0 || !isfinite(f->hop_lat) ||
        f->hop_lat < 0 || !isfinite(f->bw) || !(f->bw > 0))
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    struct lbs_sim_samples_in in = {
        .coll = data[0] & 8 ? "allgather" : NULL,
        .ranks = data[0] & 7 ? (data[0] & 7) + 1 : 0,
        .rpn = (data[0] >> 4) & 3};
    size_t len = size - 1;
    char *text = malloc(len ? len : 1);
    if (!text)
        abort();
    memcpy(text, data + 1, len);
    struct lbs_sim_samples set = {0};
    enum lbs_sim_samples_fmt fmt;
    size_t rows = 0;
    struct lbs_err e = {{0}};
    int rc = len ? lbs_sim_samples_parse(NAME, text, len, &in, &set, &fmt,
                                         &rows, &e)
                 : -1;
    free(text);
    if (rc) {
        if (len && !strstr(e.msg, NAME))
            abort();
        lbs_sim_samples_free(&set);
        return 0;
    }
    if (rows != set.n || !lbs_sim_samples_fmt_name(fmt))
        abort();
    size_t one = 0;
    for (size_t i = 0; i < set.n; i++) {
        const struct lbs_sim_sample *s = &set.s[i];
        if (s->ranks < 2 || s->rpn < 1 || s->rpn > s->ranks ||
            s->nodes < 1 || s->nodes > s->ranks || !(s->bytes >= 0) ||
            !isfinite(s->bytes) || !(s->t > 0) || !isfinite(s->t) ||
            (int)s->coll < 0 || s->coll >= LBS_COLL_COUNT)
            abort();
        one += s->nodes <= 1;
    }
    /* the fits, on inputs small enough to keep the harness fast */
    if (set.n >= 2 && set.n <= 200) {
        struct lbs_sim_fit f, net;
        if (!lbs_sim_fit(set.s, set.n, &f, &e)) {
            check_fit(&f);
            if (!lbs_sim_fit_net(set.s, set.n, &f, &net, &e)) {
                check_fit(&net);
                if (net.rndv_lat != 0)
                    abort();
            }
        }
    }
    (void)one;
    lbs_sim_samples_free(&set);
    return 0;
}
