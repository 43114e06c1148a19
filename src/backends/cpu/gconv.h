/*
 * Grouped 2-D convolutions with few channels a group (ResNeXt's 32 groups
 * of 4 to 32 channels), float32, on CPUs with AVX-512 or AVX2 and FMA
 * (the same sums in the same order: the same bits): a direct loop per
 * group instead of im2col and an sgemm of 4 to 32 rows per group and
 * block, whose calls and packing cost more than their products.
 *
 * Each input channel of the group is copied once into zero-padded phase
 * planes (as dwconv.c does: phase (r, q) holds the padded input's rows r,
 * r + sh, ... and columns q, q + sw, ...), so that every tap of the kernel
 * is a stride-1 read: output (oh, ow) is ext[oh * PW + ow] with
 *
 *     ext[i] = sum over c, taps (a, b) of w[m][c][a][b] * Q_c[i + off(a, b)]
 *
 * (the PW - OW extra columns of each row are computed and dropped). 32
 * consecutive i for up to 8 output channels are a block of accumulators;
 * each input vector serves the block's channels. Every output is summed
 * in the same order (c, then taps) whichever task computes it, so the
 * result does not depend on the thread count.
 *
 *     if (cpu_gconv_fits(&geom, group, Cg, Mg)) {
 *         void *s = kernel_scratch(k, cpu_gconv_scratch(&geom, Cg, Mg, threads));
 *         cpu_gconv_run(pool, &geom, N, group, Cg, Mg, x, w, bias, post, y, s);
 *     }
 */
#ifndef SEAM_CPU_GCONV_H
#define SEAM_CPU_GCONV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ops/activation.h"
#include "ops/conv_geom.h"

typedef struct seam_pool seam_pool;

/* Whether the direct loop takes a conv of geometry g (2-D) with `group`
 * groups of Cg input and Mg output channels: more than one group and
 * input channel a group, at most 64 output channels a group, planes of a
 * bounded size, and a CPU with AVX-512, or AVX2 and FMA (SEAM_CPU_GCONV=avx2
 * takes the AVX2 kernel anywhere, =0 neither). */
bool cpu_gconv_fits(const conv_geom *g, int64_t group, int64_t Cg, int64_t Mg);

/* Scratch bytes cpu_gconv_run needs on a pool of `threads` threads. */
size_t cpu_gconv_scratch(const conv_geom *g, int64_t Cg, int64_t Mg, int32_t threads);

/* y [N, group * Mg, OH, OW] = post(conv(x [N, group * Cg, H, W], w [group *
 * Mg, Cg, KH, KW]) + bias) with g's sizes; bias [group * Mg] and post
 * optional (NULL); scratch: cpu_gconv_scratch bytes (any alignment). */
void cpu_gconv_run(seam_pool *pool, const conv_geom *g, int64_t N, int64_t group, int64_t Cg, int64_t Mg,
                   const float *x, const float *w, const float *bias, const act_params *post, float *y, void *scratch);

#endif
