/*
 * A dilated 2-D conv whose taps read the input for only part of the
 * output, tap by tap (tapconv.c): each tap's product over the rectangle of
 * outputs where it reads the input, and nothing where it reads padding.
 */
#ifndef SEAM_CPU_TAPCONV_H
#define SEAM_CPU_TAPCONV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backends/cpu/gemm.h"

typedef struct seam_pool seam_pool;

/* The weight [M, C, KH, KW] as one packed matrix [M, C] per tap. */
typedef struct cpu_tapconv {
    int64_t M, C, taps;
    cpu_gemm_packed **w; /* [taps] */
} cpu_tapconv;

/* Whether a float32 2-D conv of one group, C -> M channels, is faster tap
 * by tap: at most CONV_TAPS_FRACTION of its (output, tap) pairs read the
 * input (ops/conv_geom.h), and the
 * products are large enough for the packed GEMM (which must be there). */
bool cpu_tapconv_pays(const conv_geom *w, int64_t group, int64_t C, int64_t M);

/* Packs the taps of w (float32 [M, C, KH, KW]); NULL when out of memory. */
cpu_tapconv *cpu_tapconv_prepare(const float *w, int64_t M, int64_t C, int64_t KH, int64_t KW);
void cpu_tapconv_free(cpu_tapconv *t);

/* Scratch bytes cpu_tapconv_run needs. */
size_t cpu_tapconv_scratch(const conv_geom *g, int64_t C, int64_t M, int32_t threads);

/* y [N, M, OH, OW] = post(conv(x [N, C, H, W]) + bias), bias NULL for
 * none. Each output's sum: the taps in order (a tap that reads the input
 * for every output first), each tap's over C as the packed GEMM sums. */
void cpu_tapconv_run(const cpu_tapconv *t, seam_pool *pool, const conv_geom *g, int64_t N, const float *x,
                     const float *bias, const act_params *post, float *y, void *scratch);

#endif
