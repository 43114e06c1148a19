/*
 * The linalg family's kernels across their files: blas.c (float views of
 * any float dtype, and C = op(A) op(B) on OpenBLAS split over seam's pool),
 * linalg.c (MatMul, Gemm, and the family's table) and conv.c (Conv and
 * ConvTranspose, bound in linalg.c's table).
 *
 *     cpu_fview va, vb, vy;
 *     if (!cpu_fview3(a, b, y, f64, &va, &vb, &vy)) return kernel_oom(k);
 *     cpu_blas_gemm(k->pool, f64, false, false, M, N, K, 1.0, va.p, K, vb.p, N, 0.0, vy.p, N);
 *     cpu_fview_release(&va);
 *     cpu_fview_release(&vb);
 *     cpu_fview_finish(y, &vy);
 */
#ifndef SEAM_CPU_LINALG_H
#define SEAM_CPU_LINALG_H

#include <stdbool.h>
#include <stdint.h>

#include "backends/cpu/cpu.h"
#include "core/pool.h"

#define CPU_BLAS_MAX ((int64_t)1 << 31) /* BLAS takes int sizes */

/* A float view of a tensor: its own data for float32/64, else a widened
 * float32 copy (free with cpu_fview_release). */
typedef struct cpu_fview {
    void *p;
    bool owned;
    bool f64;
} cpu_fview;

/* t as float32 (float64 when want_f64). False: out of memory. */
bool cpu_fview_of(const seam_tensor *t, bool want_f64, cpu_fview *v);
/* Frees v's copy, if it made one; v->p is NULL after. */
void cpu_fview_release(cpu_fview *v);
/* An output buffer in the compute type: the output itself, or a zeroed
 * temporary narrowed into it by cpu_fview_finish. False: out of memory. */
bool cpu_fview_out(seam_tensor *y, bool f64, cpu_fview *v);
/* Narrows v's temporary into y (when v has one), then releases v. */
void cpu_fview_finish(seam_tensor *y, cpu_fview *v);
/* The float views of a product's two operands and its output, all or
 * nothing (false: out of memory, nothing left to release). */
bool cpu_fview3(const seam_tensor *a, const seam_tensor *b, seam_tensor *y, bool f64, cpu_fview *va, cpu_fview *vb,
                cpu_fview *vy);

/* One product on OpenBLAS, as cpu_blas_block computes a block of it. */
typedef struct cpu_blas_job {
    bool f64, ta, tb;
    bool by_rows; /* pieces are row blocks of C, else column blocks */
    int64_t m, n, k, lda, ldb, ldc, chunk;
    double alpha, beta;
    const void *a, *b;
    void *c;
    /* float32 only, (optional): a per-row bias that C starts as (beta is
     * then not used), and a fused activation applied to each block of C
     * right after it is computed */
    const float *bias;
    const act_params *post;
} cpu_blas_job;

/* The block of C at rows [i0, i0 + mm) and columns [j0, j0 + nn), on the
 * calling thread (OpenBLAS single-threaded: cpu_blas_single_thread). */
void cpu_blas_block(const cpu_blas_job *j, int64_t i0, int64_t mm, int64_t j0, int64_t nn);

/* C[m x n] = post(alpha * op(A) op(B) + beta * C), row-major; with a bias
 * (optional, float32 only) C starts as bias[row] instead and beta is not
 * used. The bias and post (optional, float32 only) go over each block of C
 * while it is in cache. A large product is split over pool (optional) by
 * its sizes only, so the result does not depend on the thread count. */
void cpu_blas_gemm_post(seam_pool *pool, bool f64, bool ta, bool tb, int64_t m, int64_t n, int64_t kk, double alpha,
                        const void *a, int64_t lda, const void *b, int64_t ldb, double beta, void *c, int64_t ldc,
                        const float *bias, const act_params *post);
/* cpu_blas_gemm_post with no bias and no activation. */
void cpu_blas_gemm(seam_pool *pool, bool f64, bool ta, bool tb, int64_t m, int64_t n, int64_t kk, double alpha,
                   const void *a, int64_t lda, const void *b, int64_t ldb, double beta, void *c, int64_t ldc);

/* conv.c: Conv (check_conv prepares a constant weight: Winograd or the
 * packed GEMM) and ConvTranspose, which shares its check. */
seam_status cpu_conv_run(seam_kernel *k);
seam_status cpu_conv_transpose_run(seam_kernel *k);
seam_status cpu_conv_check(seam_check *c);

#endif
