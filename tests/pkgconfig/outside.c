/* outside.c - a program outside the lbscale tree, built only against the
 * installed headers and library found through `pkg-config lbscale`.
 * It uses nothing but <lbscale/lbscale.h>: two layers over its own arrays,
 * three LAMB steps, w must change and stay finite; an unknown optimizer
 * must fail with -ENOENT.  Exit 0 on success, 1 with a message otherwise. */
#include <lbscale/lbscale.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

#define N0 (4 * 8)
#define N1 8

int main(void)
{
    static float w0[N0], g0[N0], w1[N1], g1[N1], w0_init[N0], w1_init[N1];
    for (int i = 0; i < N0; i++) {
        w0[i] = 0.1f * (float)(i % 7) - 0.3f;
        g0[i] = 0.01f * (float)(i % 5) - 0.02f;
    }
    for (int i = 0; i < N1; i++) {
        w1[i] = 0.05f * (float)i;
        g1[i] = 0.001f * (float)(i + 1);
    }
    memcpy(w0_init, w0, sizeof w0);
    memcpy(w1_init, w1, sizeof w1);

    struct lbs_layer layers[2] = {
        {.name = "fc.weight", .w = w0, .g = g0, .n = N0, .ndim = 2,
         .shape = {4, 8}},
        {.name = "fc.bias", .w = w1, .g = g1, .n = N1, .ndim = 1,
         .shape = {N1}},
    };
    struct lbs_optim *o;
    struct lbs_err e;
    int rc = lbs_optim_new("lamb:lr=0.01,wd=0.01", layers, 2, NULL, &o, &e);
    if (rc) {
        fprintf(stderr, "outside: lbs_optim_new: %d: %s\n", rc, e.msg);
        return 1;
    }
    for (int t = 0; t < 3; t++)
        if ((rc = lbs_optim_step(o, &e))) {
            fprintf(stderr, "outside: step %d: %d: %s\n", t + 1, rc, e.msg);
            lbs_optim_free(o);
            return 1;
        }
    long steps = lbs_optim_steps(o);
    printf("outside: %s (%s), %ld steps, lbscale %s\n", lbs_optim_name(o),
           lbs_optim_params(o), steps, LBSCALE_VERSION);
    lbs_optim_free(o);
    if (steps != 3) {
        fprintf(stderr, "outside: %ld steps, want 3\n", steps);
        return 1;
    }
    int changed0 = 0, changed1 = 0;
    for (int i = 0; i < N0; i++) {
        if (!isfinite(w0[i])) {
            fprintf(stderr, "outside: w0[%d] not finite\n", i);
            return 1;
        }
        changed0 |= w0[i] != w0_init[i];
    }
    for (int i = 0; i < N1; i++) {
        if (!isfinite(w1[i])) {
            fprintf(stderr, "outside: w1[%d] not finite\n", i);
            return 1;
        }
        changed1 |= w1[i] != w1_init[i];
    }
    if (!changed0 || !changed1) {
        fprintf(stderr, "outside: a layer's w did not change\n");
        return 1;
    }
    rc = lbs_optim_new("nosuchoptim:lr=1", layers, 2, NULL, &o, &e);
    if (rc != -ENOENT) {
        fprintf(stderr, "outside: unknown optimizer gave %d, want -ENOENT "
                "(%d)\n", rc, -ENOENT);
        if (!rc)
            lbs_optim_free(o);
        return 1;
    }
    printf("outside: unknown spec -> -ENOENT: %s\n", e.msg);
    return 0;
}
