/* kern_tmpl.h - the preamble of every kernel template (kfam.h): the
 * level's name suffix F(), its intrinsics, and the inline helpers that
 * more than one template's loops share (static inline, so each loop is
 * compiled as it was when all of them lived in one file). */
#ifndef LBS_KERN_TMPL_H
#define LBS_KERN_TMPL_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "chunks.h"
#include "kfam.h"

#define CAT2(a, b) a##_##b
#define CAT(a, b) CAT2(a, b)
#define F(name) CAT(name, KERN_SFX)
#define STR2(x) #x
#define STR(x) STR2(x)

#endif
