/* The linalg family's products on OpenBLAS (linalg.h): float views of
 * float16, bfloat16 and the rest (widened to float32 and narrowed back;
 * float32 and float64 are used in place), and C = op(A) op(B) split over
 * seam's pool by its sizes only, with a fused bias and activation applied
 * to each block of C as it is written. MatMul and Gemm (linalg.c) and Conv
 * and ConvTranspose (conv.c) run on these. */
#include <cblas.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cpu/cpu.h"
#include "backends/cpu/linalg.h"
#include "core/pool.h"

bool cpu_fview_of(const seam_tensor *t, bool want_f64, cpu_fview *v) {
    v->f64 = want_f64;
    v->owned = false;
    if ((t->dtype == SEAM_DTYPE_FLOAT32 && !want_f64) || (t->dtype == SEAM_DTYPE_FLOAT64 && want_f64)) {
        v->p = t->data;
        return true;
    }
    size_t es = want_f64 ? 8 : 4;
    v->p = malloc((size_t)t->numel * es + es);
    if (!v->p) return false;
    v->owned = true;
    for (int64_t i = 0; i < t->numel; i++) {
        double x = cpu_get(t->data, t->dtype, i);
        if (want_f64) ((double *)v->p)[i] = x;
        else ((float *)v->p)[i] = (float)x;
    }
    return true;
}

void cpu_fview_release(cpu_fview *v) {
    if (v->owned) free(v->p);
    v->p = NULL;
}

/* An output buffer in the compute type: the output itself, or a temporary
 * narrowed into it by cpu_fview_finish(). */
bool cpu_fview_out(seam_tensor *y, bool f64, cpu_fview *v) {
    v->f64 = f64;
    if ((y->dtype == SEAM_DTYPE_FLOAT32 && !f64) || (y->dtype == SEAM_DTYPE_FLOAT64 && f64)) {
        v->p = y->data;
        v->owned = false;
        return true;
    }
    v->p = calloc((size_t)y->numel + 1, f64 ? 8 : 4);
    v->owned = true;
    return v->p != NULL;
}

void cpu_fview_finish(seam_tensor *y, cpu_fview *v) {
    if (v->owned)
        for (int64_t i = 0; i < y->numel; i++)
            cpu_set(y->data, y->dtype, i, v->f64 ? ((double *)v->p)[i] : ((float *)v->p)[i]);
    cpu_fview_release(v);
}

/* The float views of a product's two operands and its output, all or
 * nothing (false: out of memory, nothing left to release). */
bool cpu_fview3(const seam_tensor *a, const seam_tensor *b, seam_tensor *y, bool f64, cpu_fview *va, cpu_fview *vb,
                cpu_fview *vy) {
    if (!cpu_fview_of(a, f64, va)) return false;
    if (!cpu_fview_of(b, f64, vb)) {
        cpu_fview_release(va);
        return false;
    }
    if (!cpu_fview_out(y, f64, vy)) {
        cpu_fview_release(va);
        cpu_fview_release(vb);
        return false;
    }
    return true;
}

/* OpenBLAS runs single-threaded: seam splits a large product over its own
 * pool instead. Two thread pools on two cores fight (OpenBLAS's idle
 * workers spin in sched_yield), and a split of the output columns that
 * depends only on the sizes keeps results the same for any thread count.
 * OpenBLAS's pthread build starts its own workers when it loads, and an
 * idle one spins in sched_yield for a while (about 0.1 s) before it
 * sleeps: on two cores that takes time from seam's pool on every short
 * run. Single-threaded OpenBLAS never uses them, so they are stopped (it
 * starts them again if anyone asks for more threads later). Weak: builds
 * without the symbol (serial, OpenMP) have no such workers. */
static pthread_once_t blas_once = PTHREAD_ONCE_INIT;
extern int blas_thread_shutdown_(void) __attribute__((weak));
static void blas_single_thread(void) {
    openblas_set_num_threads(1);
    if (blas_thread_shutdown_) blas_thread_shutdown_();
}
void cpu_blas_single_thread(void) { pthread_once(&blas_once, blas_single_thread); }

/* The least work (multiply-adds) worth a piece of its own: a few
 * microseconds, well above what handing it to the pool costs. */
#define GEMM_PIECE ((int64_t)1 << 17)

/* The block of C at rows [i0, i0 + mm) and columns [j0, j0 + nn). */
void cpu_blas_block(const cpu_blas_job *j, int64_t i0, int64_t mm, int64_t j0, int64_t nn) {
    size_t es = j->f64 ? 8 : 4;
    const char *a = (const char *)j->a + (size_t)(j->ta ? i0 : i0 * j->lda) * es;
    const char *b = (const char *)j->b + (size_t)(j->tb ? j0 * j->ldb : j0) * es;
    char *c = (char *)j->c + (size_t)(i0 * j->ldc + j0) * es;
    /* the bias goes into this block just before the product adds onto it
     * (cheaper than BLAS zeroing C for beta 0, and no pass after) */
    double beta = j->beta;
    if (!j->f64 && j->bias) {
        for (int64_t i = 0; i < mm; i++) {
            float *row = (float *)c + i * j->ldc, bv = j->bias[i0 + i];
            for (int64_t q = 0; q < nn; q++) row[q] = bv;
        }
        beta = 1.0;
    }
    if (j->f64)
        cblas_dgemm(CblasRowMajor, j->ta ? CblasTrans : CblasNoTrans, j->tb ? CblasTrans : CblasNoTrans, (int)mm,
                    (int)nn, (int)j->k, j->alpha, (const double *)a, (int)j->lda, (const double *)b, (int)j->ldb,
                    beta, (double *)c, (int)j->ldc);
    else
        cblas_sgemm(CblasRowMajor, j->ta ? CblasTrans : CblasNoTrans, j->tb ? CblasTrans : CblasNoTrans, (int)mm,
                    (int)nn, (int)j->k, (float)j->alpha, (const float *)a, (int)j->lda, (const float *)b, (int)j->ldb,
                    (float)beta, (float *)c, (int)j->ldc);
    if (!j->f64 && j->post && j->post->kind != ACT_NONE)
        for (int64_t i = 0; i < mm; i++) cpu_post_apply(j->post, (float *)c + i * j->ldc, nn, 0);
}

static void gemm_chunks(void *arg, int64_t begin, int64_t end) {
    const cpu_blas_job *j = arg;
    for (int64_t q = begin; q < end; q++) {
        int64_t total = j->by_rows ? j->m : j->n, at = q * j->chunk;
        int64_t len = total - at < j->chunk ? total - at : j->chunk;
        if (j->by_rows) cpu_blas_block(j, at, len, 0, j->n);
        else cpu_blas_block(j, 0, j->m, at, len);
    }
}

/* C[m x n] = post(alpha * op(A) op(B) + beta * C), row-major; with a bias
 * (optional, float32 only) C starts as bias[row] instead and beta is not
 * used. The bias and post (optional, float32 only) go over each block of C
 * while it is in cache. */
void cpu_blas_gemm_post(seam_pool *pool, bool f64, bool ta, bool tb, int64_t m, int64_t n, int64_t kk, double alpha,
                        const void *a, int64_t lda, const void *b, int64_t ldb, double beta, void *c, int64_t ldc,
                        const float *bias, const act_params *post) {
    if (m == 0 || n == 0) return;
    if (kk == 0) { /* BLAS leaves C alone when k = 0; the math says beta * C */
        /* beta 0 means zeros, as in BLAS: C may hold garbage (0 * NaN is NaN) */
        if (!f64 && bias) beta = 0;
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < n; j++) {
                if (f64) ((double *)c)[i * ldc + j] = beta == 0 ? 0 : ((double *)c)[i * ldc + j] * beta;
                else ((float *)c)[i * ldc + j] = beta == 0 ? 0.0f : ((float *)c)[i * ldc + j] * (float)beta;
            }
        if (!f64 && (bias || post))
            for (int64_t i = 0; i < m; i++)
                cpu_post_apply(post ? post : &(act_params){ACT_NONE, 0, 0, 0, 0, 0}, (float *)c + i * ldc, n,
                               bias ? bias[i] : 0);
        return;
    }
    cpu_blas_single_thread();
    cpu_blas_job j = {f64, ta, tb, false, m, n, kk, lda, ldb, ldc, n, alpha, beta, a, b, c, bias, post};
    /* Enough work to share goes in pieces of at least GEMM_PIECE
     * multiply-adds, at most 8. The split depends on the sizes only, never
     * on the thread count, so --threads 1 computes exactly what the pool
     * does. Each piece packs all of the operand it does not split, so the split
     * is along the longer side of C: columns in multiples of 32 (the
     * kernels' register blocks divide it), or rows in multiples of 8. */
    int64_t work = m * n * kk, pieces = work / GEMM_PIECE;
    if (pieces > 8) pieces = 8;
    j.by_rows = m > n;
    int64_t side = j.by_rows ? m : n, unit = j.by_rows ? 8 : 32;
    if (pieces > side / unit) pieces = side / unit;
    int64_t chunks = 1;
    if (pieces > 1) {
        j.chunk = unit * ((side / unit + pieces - 1) / pieces);
        chunks = (side + j.chunk - 1) / j.chunk;
    }
    if (chunks == 1) cpu_blas_block(&j, 0, m, 0, n);
    else seam_parallel_for(pool, chunks, 1, gemm_chunks, &j);
}

void cpu_blas_gemm(seam_pool *pool, bool f64, bool ta, bool tb, int64_t m, int64_t n, int64_t kk, double alpha,
                   const void *a, int64_t lda, const void *b, int64_t ldb, double beta, void *c, int64_t ldc) {
    cpu_blas_gemm_post(pool, f64, ta, tb, m, n, kk, alpha, a, lda, b, ldb, beta, c, ldc, NULL, NULL);
}
