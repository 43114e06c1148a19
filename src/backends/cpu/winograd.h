/*
 * Winograd F(4x4, 3x3) for the CPU Conv kernel: float32, NCHW, 2-D, a 3x3
 * kernel, stride 1, dilation 1, any pads, groups, batch >= 1.
 *
 * Each 4x4 block of output pixels ("tile") is computed from a 6x6 block of
 * input (tiles overlap by 2): the input tile is transformed (B^T d B), the
 * 36 transformed values of every tile are multiplied, per position, by the
 * transformed weights (36 GEMMs [Mg x Cg] x [Cg x tiles]), and each 6x6
 * product is transformed back (A^T m A) to the 4x4 outputs, which get the
 * bias and the fused activation while they are in cache. That is 36
 * multiplies per 16 outputs and input channel instead of 144: about 4x
 * fewer, at the price of the transforms and a little precision (at most
 * 5.4e-6 of the output's scale on the benchmark models' conv shapes; see
 * bench/results/wino.md). An inf or NaN input makes every output of the
 * tiles whose 6x6 input holds it inf or NaN, where a direct convolution
 * keeps finite the outputs whose 3x3 window misses it (oneDNN's Winograd
 * does the same).
 *
 *     if (cpu_wino_fits(&geom, Cg, Mg)) {
 *         cpu_wino *p = cpu_wino_prepare(w, M, Cg, group);            // once per session
 *         void *s = kernel_scratch(k, cpu_wino_scratch_size(p, &geom, threads));
 *         cpu_wino_run(p, pool, &geom, N, x, bias, post, y, s);       // every run
 *     }
 */
#ifndef SEAM_CPU_WINOGRAD_H
#define SEAM_CPU_WINOGRAD_H

#include <stddef.h>
#include <stdint.h>

#include "ops/activation.h"
#include "ops/conv_geom.h"

typedef struct seam_pool seam_pool;

/* The transformed weights of one conv, packed for the GEMMs. */
typedef struct cpu_wino cpu_wino;

/* Whether Winograd is used for a conv of this geometry with Cg input and
 * Mg output channels per group: a 2-D 3x3 kernel, stride 1, dilation 1,
 * and sizes where it measured faster than im2col + sgemm (the rule and its
 * measurements are in winograd.c). Depends on the sizes only, never on the
 * thread count. */
bool cpu_wino_fits(const conv_geom *g, int64_t Cg, int64_t Mg);

/* Transforms w [M, Cg, 3, 3] (M = group * Mg) once (w is not kept, only
 * its address). NULL when out of memory or the sizes are not positive. */
cpu_wino *cpu_wino_prepare(const float *w, int64_t M, int64_t Cg, int64_t group);
void cpu_wino_free(cpu_wino *p);
/* The w cpu_wino_prepare was given: a run compares it with its W input's
 * data to know that the transform is of the weights it has. */
const float *cpu_wino_weights(const cpu_wino *p);

/* The scratch bytes cpu_wino_run needs for geometry g with a pool of
 * `threads` threads. */
size_t cpu_wino_scratch_size(const cpu_wino *p, const conv_geom *g, int32_t threads);

/* y [N, M, OH, OW] = post(conv(x [N, Cg * group, H, W], w) + bias), with
 * g's sizes and pads (g must satisfy cpu_wino_fits' shape conditions).
 * bias [M] and post are optional (NULL). scratch: cpu_wino_scratch_size
 * bytes for the pool's thread count (any alignment). The result does not
 * depend on the thread count. */
void cpu_wino_run(const cpu_wino *p, seam_pool *pool, const conv_geom *g, int64_t N, const float *x, const float *bias,
                  const act_params *post, float *y, void *scratch);

#endif
