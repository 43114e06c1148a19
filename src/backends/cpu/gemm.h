/*
 * A packed single-precision GEMM for products with a constant left
 * operand (a Conv's weight): C[M, N] = post(A[M, K] B[K, N] + bias), with
 * A packed once into micro-panels (at session creation) and B packed per
 * cache block from a plain row-major matrix or straight from a 2-D conv's
 * input (im2col written into the packed panels: no separate pass).
 *
 * The same GEMM with the right operand constant instead (X W: MatMul and
 * Gemm with a constant weight) is at the end of this file.
 *
 * An AVX-512 micro-kernel (14 rows x 32 columns of accumulators), or on
 * AVX2 the same tile in groups of 8 columns, chosen at run time:
 * cpu_gemm_available() is false on CPUs without either, and the callers
 * keep their OpenBLAS path for those (and for float64).
 *
 * Each element of C is summed in the same order (over K in blocks of
 * CPU_GEMM_KC, each block in order) whatever block, tile or thread
 * computes it, so the result does not depend on the thread count.
 */
#ifndef SEAM_CPU_GEMM_H
#define SEAM_CPU_GEMM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ops/activation.h"
#include "ops/conv_geom.h"

typedef struct seam_pool seam_pool;

#define CPU_GEMM_MR 14  /* rows of the register block */
#define CPU_GEMM_NR 32  /* columns of the register block (2 zmm) */
#define CPU_GEMM_KC 256 /* depth of a cache block */

/* A [M, K] in panels of h <= CPU_GEMM_MR rows: panel p holds rows
 * [p * h, p * h + h) as K columns of MR (the rows past them are zeros). */
typedef struct cpu_gemm_packed {
    int64_t m, k, panels, h;
    float *data; /* 64-byte aligned */
} cpu_gemm_packed;

/* True when the CPU has AVX-512 (F, BW, VL) and FMA, or AVX2 and FMA (the
 * same layouts, the tile in 8-column groups: the same bits), and the
 * environment does not say SEAM_CPU_PACKED_GEMM=0 (the path of CPUs
 * without either); SEAM_CPU_PACKED_GEMM=avx2 takes the AVX2 kernels on a
 * CPU with both. cpu_gemm_avx512: the AVX-512 kernels are the ones in use
 * (for callers with AVX-512 code of their own, gconv.c). */
bool cpu_gemm_available(void);
bool cpu_gemm_avx512(void);

/* Packs A (row-major, rows of lda floats); NULL when out of memory. */
cpu_gemm_packed *cpu_gemm_pack(const float *a, int64_t lda, int64_t m, int64_t k);
void cpu_gemm_packed_free(cpu_gemm_packed *p);
/* The same into memory the caller owns (for a weight that is not a
 * constant, packed on each run): cpu_gemm_packed_floats(m, k) floats at
 * data, 64-byte aligned; p->data becomes data. */
size_t cpu_gemm_packed_floats(int64_t m, int64_t k);
void cpu_gemm_pack_into(cpu_gemm_packed *p, float *data, const float *a, int64_t lda, int64_t m, int64_t k);

/* The right operand: a row-major matrix B [K, N] (ldb floats a row), or,
 * when win is set, the im2col column matrix of a 2-D conv of one image's
 * group of channels x [Cg, H, W] (K = Cg * kh * kw, N = OH * OW). */
typedef struct cpu_gemm_b {
    const float *b;
    int64_t ldb;
    const conv_geom *win; /* (optional) a 2-D conv: b is its input */
} cpu_gemm_b;

/* Whether a plain B [k, n] times an A of m rows is read in place (true)
 * rather than packed. */
bool cpu_gemm_direct_b(int64_t m, int64_t k, int64_t n);

/* Scratch floats cpu_gemm_run needs for m rows and n columns on `threads`
 * threads (take it with kernel_scratch; 64-byte alignment is done inside). */
size_t cpu_gemm_scratch(int64_t m, int64_t n, int32_t threads);

/* Row `row` of a float32 2-D conv's column matrix (x: the group's channels
 * [Cg, H, W]), output pixels [p0, p0 + nc), into dst[0, nc): zeros where
 * the window reads padding. For the packed GEMM's B panels and conv.c's
 * blocked im2col. */
void cpu_im2col_row(const conv_geom *w, const float *x, int64_t row, int64_t p0, int64_t nc, float *dst);

/* C [M, N] (rows of ldc floats) = post(A B + bias[row]) with bias and
 * post optional (NULL). Splits over the pool by columns, or by row panels
 * when there are few columns. */
void cpu_gemm_run(seam_pool *pool, const cpu_gemm_packed *a, const cpu_gemm_b *b, int64_t n, float *c, int64_t ldc,
                  const float *bias, const act_params *post, float *scratch);
/* The same with the way a plain B is read chosen: in place by the
 * micro-kernel (CPU_GEMM_B_DIRECT: a 1x1 conv's input, no packing pass),
 * packed into panels per block (CPU_GEMM_B_PACKED), or as
 * cpu_gemm_direct_b says (CPU_GEMM_B_AUTO, what cpu_gemm_run does). The
 * three give the same bits; the choice is for tests and benchmarks. */
enum { CPU_GEMM_B_AUTO, CPU_GEMM_B_PACKED, CPU_GEMM_B_DIRECT };
void cpu_gemm_run_mode(seam_pool *pool, const cpu_gemm_packed *a, const cpu_gemm_b *b, int64_t n, float *c,
                       int64_t ldc, const float *bias, const act_params *post, float *scratch, int mode);



/* ---- X W: the right operand constant (MatMul's and Gemm's weight) ----
 *
 * C [M, N] (rows of ldc floats) = post(alpha op(X) W (+ C when
 * accumulate)), X [M, K] (or [K, M] when trans) with rows of ldx floats,
 * W [K, N] packed once into column panels: for each depth block of
 * CPU_GEMM_KC rows, ceil(N / CPU_GEMM_NR) panels of its rows of NR floats
 * (zeros past N). X is packed into A panels as the product goes. The same
 * micro-kernel and summation order as cpu_gemm_run: the result does not
 * depend on the thread count. */
typedef struct cpu_gemm_wpacked {
    int64_t k, n, panels;
    float *data; /* 64-byte aligned */
} cpu_gemm_wpacked;

typedef struct cpu_gemm_x {
    const float *x;
    int64_t ldx;
    bool trans;
    float alpha;
} cpu_gemm_x;

/* Packs W, given as [k, n] row-major, or as [n, k] when trans (a Gemm's
 * transB, torch's Linear); NULL when out of memory. */
cpu_gemm_wpacked *cpu_gemm_wpack(const float *w, int64_t k, int64_t n, bool trans);
void cpu_gemm_wpacked_free(cpu_gemm_wpacked *p);
/* The same into memory the caller owns (a weight packed on each run). */
size_t cpu_gemm_wpacked_floats(int64_t k, int64_t n);
void cpu_gemm_wpack_into(cpu_gemm_wpacked *p, float *data, const float *w, int64_t k, int64_t n, bool trans);

/* Scratch floats cpu_gemm_xw_run needs (alignment done inside). */
size_t cpu_gemm_xw_scratch(int64_t m, int64_t n, int32_t threads);
void cpu_gemm_xw_run(seam_pool *pool, const cpu_gemm_x *x, int64_t m, const cpu_gemm_wpacked *w, float *c, int64_t ldc,
                     bool accumulate, const act_params *post, float *scratch);

#endif
