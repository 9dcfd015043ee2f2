/* lbscale/half.h - fp32 <-> 2-byte floats, the one place core converts.
 *
 *   binary16 (IEEE half, LBS_FLOAT16): 1 sign, 5 exponent, 10 fraction
 *            bits; largest finite 65504, smallest normal 2^-14, smallest
 *            subnormal 2^-24.
 *   bfloat16 (LBS_BFLOAT16): the top 16 bits of a binary32 (1 sign, 8
 *            exponent, 7 fraction bits): fp32's range, 8 bits of
 *            significand.
 *
 * fp32 -> 16 bits rounds to nearest, ties to even, as an IEEE cast does:
 * values beyond the format's range become +-inf (for binary16: |x| >=
 * 65520), values below half its smallest subnormal become +-0, the rest
 * of the tiny ones subnormals (no flush to zero); the sign of zero is
 * kept.  A NaN stays a NaN of the same sign, quieted, with the top bits
 * of its payload (what F16C's vcvtps2ph and AVX512-BF16's vcvtneps2bf16
 * do): a signalling NaN whose payload sits in the low bits must not turn
 * into inf.  16 bits -> fp32 is exact: every binary16 and bfloat16 value
 * is a binary32 value; NaN payloads are kept (a binary16 signalling NaN
 * comes back quiet, as F16C's vcvtph2ps returns it; bfloat16 -> fp32 is a
 * shift and keeps every bit).
 *
 * The scalar functions are the bit-exact reference; the array functions
 * give the same bits (tests/test_half.c checks every 16-bit pattern and a
 * sample of the 2^32 binary32 ones) and use F16C for binary16 when the CPU
 * has it (checked once at run time: the build targets plain x86-64).
 * They run on the calling thread: callers split large arrays.
 *
 * Pure functions: no state, no allocation, any thread.
 */
#ifndef LBSCALE_HALF_H
#define LBSCALE_HALF_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

uint16_t lbs_f32_to_f16_bits(float f);
float lbs_f16_bits_to_f32(uint16_t h);
uint16_t lbs_f32_to_bf16_bits(float f);
float lbs_bf16_bits_to_f32(uint16_t h);

void lbs_f32_to_f16_array(const float *x, uint16_t *h, size_t n);
void lbs_f16_to_f32_array(const uint16_t *h, float *x, size_t n);
void lbs_f32_to_bf16_array(const float *x, uint16_t *h, size_t n);
void lbs_bf16_to_f32_array(const uint16_t *h, float *x, size_t n);

#ifdef __cplusplus
}
#endif
#endif
