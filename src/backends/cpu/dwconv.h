/*
 * The depthwise 2-D convolution (one input channel per group, float32),
 * three ways picked by cpu_dw_plan_make from the sizes (and, for the
 * second, whether the CPU has AVX-512F):
 *   - planes of at most 256 output pixels (100 where the rows below are
 *     AVX2's): 16 channels at once, interleaved so each tap is one vector
 *     (dw_lanes);
 *   - larger planes, 3x3 or 5x5, strides 1 or 2, no dilation: per channel
 *     over zero-padded phase planes, four output rows of 16 columns per
 *     block in AVX-512 registers (8 columns in AVX2 ones), the bias (and
 *     on AVX-512 the post-op) applied there (the "rows");
 *   - anything else: per channel, one flat loop over the phase planes.
 * conv.c's Conv takes this path when cpu_dw_plan_make says the geometry
 * fits; every channel is computed the same way whatever task runs it, so
 * the result does not depend on the thread count.
 */
#ifndef SEAM_CPU_DWCONV_H
#define SEAM_CPU_DWCONV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ops/activation.h"
#include "ops/conv_geom.h"

typedef struct seam_pool seam_pool;

/* How one depthwise conv runs: made by cpu_dw_plan from its sizes only. */
typedef struct cpu_dw_plan {
    const conv_geom *win;
    int64_t N, C, M;  /* images, input channels (= groups), output channels */
    int64_t PH, PW, slack, per_buf, units, tasks, per_task;
    bool vec;         /* small planes: several channels at once */
    bool rows;        /* larger planes: the rows (3x3 and 5x5, stride 1 or 2, no dilation; AVX-512 or AVX2) */
} cpu_dw_plan;

/* Plans the conv of geometry w (2-D) over N images of C channels into M
 * (a multiple of C) for a pool of `threads`; false when the planes would be
 * too large for a buffer per task (the caller then takes another path). */
bool cpu_dw_plan_make(cpu_dw_plan *p, const conv_geom *w, int64_t N, int64_t C, int64_t M, int32_t threads);

/* Scratch bytes cpu_dw_run needs (alignment included). */
size_t cpu_dw_scratch(const cpu_dw_plan *p);

/* y [N, M, OH, OW] = post(conv(x [N, C, H, W], w [M, 1, KH, KW]) + bias[M]);
 * bias and post optional (NULL). */
void cpu_dw_run(const cpu_dw_plan *p, seam_pool *pool, const float *x, const float *w, const float *bias,
                const act_params *post, float *y, void *scratch);

#endif
