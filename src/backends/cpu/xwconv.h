/*
 * The rows of a convolution computed as X W^T (conv.c's CONV_XW, for
 * convs of few output positions in all): row (n, p) holds the K = Cg *
 * kprod input values its window reads, in the weight's order (channel
 * major), 0 where the window reads padding.
 */
#ifndef SEAM_CPU_XWCONV_H
#define SEAM_CPU_XWCONV_H

#include <stdint.h>

#include "ops/conv_geom.h"

typedef struct seam_pool seam_pool;

/* The rows [N * P, Cg * kprod] of x [N, C, in...] for the P output
 * positions of w, over the pool; table: P * (2 * kprod + 1) int64 of
 * scratch (each position's taps that read the input, listed once). */
void cpu_xw_gather(seam_pool *pool, const conv_geom *w, const float *x, int64_t N, int64_t C, int64_t Cg, int64_t in_prod,
                   int64_t kprod, int64_t P, float *rows, int64_t *table);

#endif
