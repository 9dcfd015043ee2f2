/* test_half.c - lbscale/half.h: fp32 <-> binary16 and bfloat16.
 *
 *  - known bit patterns both ways (ones, extremes, the overflow and
 *    underflow edges, ties to even, subnormals, signed zeros, inf, NaN);
 *  - every one of the 65536 patterns of each format survives 16 -> 32 ->
 *    16 unchanged (a NaN comes back quieted, sign and top payload kept);
 *  - round to nearest even, exhaustively: for every pair of neighbouring
 *    finite values the midpoint (exact in fp32) goes to the even one, one
 *    fp32 ulp either side of it goes to the nearer one;
 *  - against independent references on a sample of 2^32/4099 binary32
 *    patterns: GCC's _Float16 cast for binary16, a nearest-neighbour
 *    search in double for bfloat16;
 *  - the array functions (F16C for binary16 when present) give the same
 *    bits as the scalar ones, NaNs included.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "lbscale/half.h"

static float f_of(uint32_t u)
{
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static uint32_t u_of(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

static const struct {
    uint32_t f;     /* binary32 bits */
    uint16_t h;     /* binary16 bits after rounding */
} f16_known[] = {
    {0x3f800000, 0x3c00},   /* 1 */
    {0xc0000000, 0xc000},   /* -2 */
    {0x00000000, 0x0000},   /* +0 */
    {0x80000000, 0x8000},   /* -0 keeps its sign */
    {0x477fe000, 0x7bff},   /* 65504, the largest finite */
    {0x477fefff, 0x7bff},   /* just below 65520 */
    {0x477ff000, 0x7c00},   /* 65520: the tie goes to even, inf */
    {0x7f7fffff, 0x7c00},   /* FLT_MAX */
    {0xff7fffff, 0xfc00},
    {0x7f800000, 0x7c00},   /* inf */
    {0xff800000, 0xfc00},
    {0x38800000, 0x0400},   /* 2^-14, smallest normal */
    {0x387fc000, 0x03ff},   /* largest subnormal */
    {0x33800000, 0x0001},   /* 2^-24, smallest subnormal */
    {0x33000000, 0x0000},   /* 2^-25: tie between 0 and 2^-24, to even 0 */
    {0x33000001, 0x0001},   /* just above the tie */
    {0x32ffffff, 0x0000},
    {0xb3000001, 0x8001},
    {0x33c00000, 0x0002},   /* 3 * 2^-25: tie between 1 and 2 (x 2^-24) */
    {0x34200000, 0x0002},   /* 5 * 2^-25: tie between 2 and 3, to 2 */
    {0x34600000, 0x0004},   /* 7 * 2^-25: tie between 3 and 4, to 4 */
    {0x00000001, 0x0000},   /* binary32 subnormal */
    {0x3f801000, 0x3c00},   /* 1 + 2^-11: tie, to even 1 */
    {0x3f803000, 0x3c02},   /* 1 + 3 2^-11: tie, to even 1 + 2^-9 */
    {0x3f801001, 0x3c01},
    {0x3dcccccd, 0x2e66},   /* 0.1 */
    {0x3eaaaaab, 0x3555},   /* 1/3 */
    {0x40490fdb, 0x4248},   /* pi */
    {0x7fc00000, 0x7e00},   /* quiet NaN */
    {0xffc00000, 0xfe00},
    {0x7f800001, 0x7e00},   /* signalling NaN, low payload: NaN, not inf */
    {0x7fbfe000, 0x7fff},   /* top payload bits kept, quiet bit set */
};

Test(half, f16_known_patterns)
{
    for (size_t i = 0; i < sizeof f16_known / sizeof *f16_known; i++) {
        float f = f_of(f16_known[i].f);
        uint16_t h = lbs_f32_to_f16_bits(f), a;
        cr_assert_eq(h, f16_known[i].h, "0x%08x -> 0x%04x, want 0x%04x",
                     f16_known[i].f, h, f16_known[i].h);
        lbs_f32_to_f16_array(&f, &a, 1);
        cr_assert_eq(a, h, "array 0x%08x -> 0x%04x", f16_known[i].f, a);
    }
    cr_assert_eq(lbs_f32_to_f16_bits(7 * 0x1p-25f), 0x0004);
    /* 16 -> 32 */
    cr_assert_eq(lbs_f16_bits_to_f32(0x0001), 0x1p-24f);
    cr_assert_eq(lbs_f16_bits_to_f32(0x03ff), 1023 * 0x1p-24f);
    cr_assert_eq(lbs_f16_bits_to_f32(0x0400), 0x1p-14f);
    cr_assert_eq(lbs_f16_bits_to_f32(0x7bff), 65504.0f);
    cr_assert_eq(lbs_f16_bits_to_f32(0x3c00), 1.0f);
    cr_assert_eq(lbs_f16_bits_to_f32(0xc000), -2.0f);
    cr_assert_eq(u_of(lbs_f16_bits_to_f32(0x8000)), 0x80000000u);
    cr_assert_eq(u_of(lbs_f16_bits_to_f32(0x7c00)), 0x7f800000u);
    cr_assert_eq(u_of(lbs_f16_bits_to_f32(0xfc00)), 0xff800000u);
    cr_assert_eq(u_of(lbs_f16_bits_to_f32(0x7e00)), 0x7fc00000u);
    cr_assert_eq(u_of(lbs_f16_bits_to_f32(0x7c01)), 0x7fc02000u);   /* quieted */
}

static const struct {
    uint32_t f;
    uint16_t b;
} bf16_known[] = {
    {0x3f800000, 0x3f80},   /* 1 */
    {0xc0000000, 0xc000},   /* -2 */
    {0x80000000, 0x8000},   /* -0 */
    {0x3f808000, 0x3f80},   /* 1 + 2^-8: tie, to even 1 */
    {0x3f818000, 0x3f82},   /* 1 + 3 2^-8: tie, to even */
    {0x3f808001, 0x3f81},   /* just above the tie */
    {0x3f807fff, 0x3f80},
    {0x40490fdb, 0x4049},   /* pi */
    {0x3dcccccd, 0x3dcd},   /* 0.1 */
    {0x7f7f7fff, 0x7f7f},   /* below the overflow tie */
    {0x7f7f8000, 0x7f80},   /* the tie goes to even: inf */
    {0x7f7fffff, 0x7f80},   /* FLT_MAX overflows */
    {0xff7fffff, 0xff80},
    {0x7f800000, 0x7f80},   /* inf */
    {0xff800000, 0xff80},
    {0x00800000, 0x0080},   /* FLT_MIN */
    {0x00000001, 0x0000},   /* binary32 subnormals round like the rest */
    {0x00008000, 0x0000},   /* tie, to even 0 */
    {0x00008001, 0x0001},
    {0x00018000, 0x0002},   /* tie, to even */
    {0x007fffff, 0x0080},   /* largest binary32 subnormal -> FLT_MIN */
    {0x80008001, 0x8001},
    {0x7fc00000, 0x7fc0},   /* quiet NaN */
    {0xffc00000, 0xffc0},
    {0x7f800001, 0x7fc0},   /* signalling NaN, low payload: NaN, not inf */
    {0xff800001, 0xffc0},
    {0x7fbf0000, 0x7fff},   /* top payload kept, quiet bit set */
    {0x7fffffff, 0x7fff},   /* rounding must not carry out of a NaN */
};

Test(half, bf16_known_patterns)
{
    for (size_t i = 0; i < sizeof bf16_known / sizeof *bf16_known; i++) {
        float f = f_of(bf16_known[i].f);
        uint16_t b = lbs_f32_to_bf16_bits(f), a;
        cr_assert_eq(b, bf16_known[i].b, "0x%08x -> 0x%04x, want 0x%04x",
                     bf16_known[i].f, b, bf16_known[i].b);
        lbs_f32_to_bf16_array(&f, &a, 1);
        cr_assert_eq(a, b, "array 0x%08x -> 0x%04x", bf16_known[i].f, a);
    }
    cr_assert_eq(lbs_bf16_bits_to_f32(0x3f80), 1.0f);
    cr_assert_eq(lbs_bf16_bits_to_f32(0x0001), 0x1p-133f);
    cr_assert_eq(lbs_bf16_bits_to_f32(0x7f7f), 0x1.fep127f);
    cr_assert_eq(u_of(lbs_bf16_bits_to_f32(0x8000)), 0x80000000u);
    cr_assert_eq(u_of(lbs_bf16_bits_to_f32(0xff80)), 0xff800000u);
    cr_assert_eq(u_of(lbs_bf16_bits_to_f32(0x7f81)), 0x7f810000u);
}

/* What a NaN pattern becomes after 16 -> 32 -> 16: quieted. */
static uint16_t quieted(uint16_t h, uint16_t quiet_bit)
{
    return h | quiet_bit;
}

static void roundtrip_all(int bf, uint16_t exp_mask, uint16_t frac_mask,
                          uint16_t quiet_bit)
{
    static uint16_t all[65536], back[65536];
    static float f[65536], fa[65536];
    for (uint32_t i = 0; i < 65536; i++)
        all[i] = (uint16_t)i;
    if (bf)
        lbs_bf16_to_f32_array(all, fa, 65536);
    else
        lbs_f16_to_f32_array(all, fa, 65536);
    size_t bad = 0;
    for (uint32_t i = 0; i < 65536; i++) {
        uint16_t h = (uint16_t)i;
        f[i] = bf ? lbs_bf16_bits_to_f32(h) : lbs_f16_bits_to_f32(h);
        int nan = (h & exp_mask) == exp_mask && (h & frac_mask);
        uint16_t want = nan ? quieted(h, quiet_bit) : h;
        uint16_t got = bf ? lbs_f32_to_bf16_bits(f[i])
                          : lbs_f32_to_f16_bits(f[i]);
        if (got != want || u_of(fa[i]) != u_of(f[i]) || !nan != !isnan(f[i])) {
            if (!bad)
                cr_log_error("%s 0x%04x -> %a -> 0x%04x (array %a)",
                             bf ? "bf16" : "f16", h, (double)f[i], got,
                             (double)fa[i]);
            bad++;
        }
    }
    if (bf)
        lbs_f32_to_bf16_array(f, back, 65536);
    else
        lbs_f32_to_f16_array(f, back, 65536);
    for (uint32_t i = 0; i < 65536; i++) {
        uint16_t s = bf ? lbs_f32_to_bf16_bits(f[i])
                        : lbs_f32_to_f16_bits(f[i]);
        bad += back[i] != s;
    }
    cr_assert_eq(bad, 0, "%zu of 65536 patterns do not round-trip", bad);
}

Test(half, f16_every_pattern_round_trips)
{
    roundtrip_all(0, 0x7c00, 0x03ff, 0x0200);
}

Test(half, bf16_every_pattern_round_trips)
{
    roundtrip_all(1, 0x7f80, 0x007f, 0x0040);
}

/* Neighbours a < b (positive finite patterns h and h + 1, and their
 * negatives): the midpoint, exact in binary32 (at most 12 significant
 * bits), rounds to the one with the even pattern; one binary32 ulp below
 * or above rounds to a or b.  The last pair (largest finite, inf) is the
 * overflow edge: its "midpoint" is where rounding overflows. */
static void ties_all(int bf, uint16_t inf)
{
    size_t bad = 0;
    for (uint16_t h = 0; h < inf; h++) {
        for (int s = 0; s < 2; s++) {
            uint16_t sg = s ? 0x8000 : 0, ha = sg | h, hb = sg | (h + 1);
            double a = bf ? lbs_bf16_bits_to_f32(ha) : lbs_f16_bits_to_f32(ha);
            double b = h + 1 < inf ? (bf ? lbs_bf16_bits_to_f32(hb)
                                         : lbs_f16_bits_to_f32(hb))
                                   : 2 * a - (bf ? lbs_bf16_bits_to_f32(
                                                       (uint16_t)(ha - 1))
                                                 : lbs_f16_bits_to_f32(
                                                       (uint16_t)(ha - 1)));
            float mid = (float)((a + b) / 2);
            cr_assert_eq((double)mid, (a + b) / 2);
            uint16_t even = (ha & 1) ? hb : ha;
            float lo = nextafterf(mid, (float)a), hi = nextafterf(mid,
                                                                  (float)b);
            uint16_t rm, rl, rh;
            if (bf) {
                rm = lbs_f32_to_bf16_bits(mid);
                rl = lbs_f32_to_bf16_bits(lo);
                rh = lbs_f32_to_bf16_bits(hi);
            } else {
                rm = lbs_f32_to_f16_bits(mid);
                rl = lbs_f32_to_f16_bits(lo);
                rh = lbs_f32_to_f16_bits(hi);
            }
            if (rm != even || rl != ha || rh != hb) {
                if (!bad)
                    cr_log_error("%s between 0x%04x and 0x%04x: mid -> "
                                 "0x%04x, below -> 0x%04x, above -> 0x%04x",
                                 bf ? "bf16" : "f16", ha, hb, rm, rl, rh);
                bad++;
            }
        }
    }
    cr_assert_eq(bad, 0, "%zu neighbour pairs round wrongly", bad);
}

Test(half, f16_ties_to_even_everywhere)
{
    ties_all(0, 0x7c00);
}

Test(half, bf16_ties_to_even_everywhere)
{
    ties_all(1, 0x7f80);
}

/* bfloat16 by search: the two candidates around f, the nearer in double,
 * ties to the even pattern, beyond the largest finite's half ulp inf. */
static uint16_t bf16_reference(float f)
{
    uint32_t u = u_of(f);
    uint16_t lo = (uint16_t)(u >> 16), hi = (uint16_t)(lo + 1);
    if ((lo & 0x7fff) == 0x7f80)   /* inf */
        return lo;
    double x = f, a = lbs_bf16_bits_to_f32(lo);
    double b = (hi & 0x7fff) == 0x7f80 ? 2 * a - lbs_bf16_bits_to_f32(lo - 1)
                                       : lbs_bf16_bits_to_f32(hi);
    double da = fabs(x - a), db = fabs(b - x);
    return da < db ? lo : db < da ? hi : (lo & 1) ? hi : lo;
}

Test(half, sampled_binary32_against_references)
{
    enum { B = 4096 };
    static float x[B];
    static uint16_t arr[B];
    size_t bad = 0;
    for (uint64_t u = 0; u < (1ull << 32);) {
        size_t m = 0;
        for (; m < B && u < (1ull << 32); m++, u += 4099)
            x[m] = f_of((uint32_t)u);
        lbs_f32_to_f16_array(x, arr, m);
        for (size_t i = 0; i < m; i++) {
            uint16_t s = lbs_f32_to_f16_bits(x[i]);
            bad += arr[i] != s;
#ifdef __FLT16_MAX__
            _Float16 h = (_Float16)x[i];
            uint16_t hb;
            memcpy(&hb, &h, 2);
            if (isnan(x[i]))
                bad += (s & 0x7c00) != 0x7c00 || !(s & 0x3ff) ||
                       (s >> 15) != (u_of(x[i]) >> 31);
            else
                bad += s != hb;
#endif
        }
        lbs_f32_to_bf16_array(x, arr, m);
        for (size_t i = 0; i < m; i++) {
            uint16_t s = lbs_f32_to_bf16_bits(x[i]);
            bad += arr[i] != s;
            if (isnan(x[i]))
                bad += !isnan(lbs_bf16_bits_to_f32(s)) ||
                       (s >> 15) != (u_of(x[i]) >> 31);
            else
                bad += s != bf16_reference(x[i]);
        }
    }
    cr_assert_eq(bad, 0, "%zu conversions differ from the references", bad);
}
