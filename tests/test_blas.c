/* test_blas.c - the OpenBLAS kernel-family decision (train/blas.c). */
#include <criterion/criterion.h>
#include <string.h>

#include "../train/blas.h"

static const struct blas_cpu avx512 = {.avx512 = 1, .avx2 = 1},
                             avx2 = {.avx512 = 0, .avx2 = 1},
                             sse = {.avx512 = 0, .avx2 = 0};

static void expect(const char *core, const struct blas_cpu *cpu, int user,
                   const char *want)
{
    const char *got = blas_pick_coretype(core, cpu, user);
    if (!want)
        cr_expect_null(got, "%s: expected no change, got %s", core, got);
    else
        cr_expect(got && !strcmp(got, want), "%s: expected %s, got %s", core,
                  want, got ? got : "(none)");
}

Test(blas, generic_fallback_on_avx512_picks_skylakex)
{
    expect("Prescott", &avx512, 0, "SkylakeX");
    expect("prescott", &avx512, 0, "SkylakeX");
    expect("Core2", &avx512, 0, "SkylakeX");
    expect("Nehalem", &avx512, 0, "SkylakeX");
    expect("generic", &avx512, 0, "SkylakeX");
    expect("", &avx512, 0, "SkylakeX");
    expect(NULL, &avx512, 0, "SkylakeX");
    /* AVX2 family on an AVX-512 CPU (Zen 4 mapped to Zen/Haswell) */
    expect("Haswell", &avx512, 0, "SkylakeX");
    expect("Zen", &avx512, 0, "SkylakeX");
}

Test(blas, avx512_family_is_kept)
{
    expect("SkylakeX", &avx512, 0, NULL);
    expect("Cooperlake", &avx512, 0, NULL);
    expect("SapphireRapids", &avx512, 0, NULL);
}

Test(blas, avx2_cpu_picks_haswell_only_on_fallback)
{
    expect("Prescott", &avx2, 0, "Haswell");
    expect("Sandybridge", &avx2, 0, "Haswell");
    expect("Barcelona", &avx2, 0, "Haswell");
    expect("Haswell", &avx2, 0, NULL);
    expect("Zen", &avx2, 0, NULL);
}

Test(blas, old_cpu_and_user_choice_left_alone)
{
    expect("Prescott", &sse, 0, NULL);
    expect("Prescott", &avx512, 1, NULL);
    expect("Haswell", &avx2, 1, NULL);
    cr_expect_null(blas_pick_coretype("Prescott", NULL, 0));
}
