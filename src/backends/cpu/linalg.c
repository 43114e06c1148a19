/* CPU kernels: MatMul, Gemm, Conv and ConvTranspose on OpenBLAS.
 *
 * float32 goes straight to sgemm; float64 to dgemm; float16 and bfloat16
 * are widened to float32 and narrowed back. Conv is im2col + sgemm per
 * image and group (a 1x1, stride 1, unpadded conv needs no im2col: the
 * input already is the column matrix); a depthwise conv is dwconv.c's
 * direct loop.
 * On CPUs with AVX-512, a float32 2-D Conv of the sizes where it wins runs
 * on the packed GEMM instead (gemm.c): a constant weight packed once at
 * session creation (another on each run), the im2col columns written
 * straight into the packed panels.
 * Conv, Gemm and MatMul apply an activation the executor fused into them
 * (and Conv its bias) to each block of the output as it is written.
 * ConvTranspose is the transposed product followed by col2im. Integer
 * MatMul is a plain loop in int64. */
#include <cblas.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cpu/cpu.h"
#include "backends/cpu/dwconv.h"
#include "backends/cpu/winograd.h"
#include "backends/cpu/gemm.h"
#include "core/pool.h"

/* A float view of a tensor: its own data for float32/64, else a widened
 * float32 copy (free with release). */
typedef struct fview {
    void *p;
    bool owned;
    bool f64;
} fview;

static bool fview_of(const seam_tensor *t, bool want_f64, fview *v) {
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

static void release(fview *v) {
    if (v->owned) free(v->p);
    v->p = NULL;
}

/* An output buffer in the compute type: the output itself, or a temporary
 * narrowed into it by finish(). */
static bool out_view(seam_tensor *y, bool f64, fview *v) {
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

static void finish(seam_tensor *y, fview *v) {
    if (v->owned)
        for (int64_t i = 0; i < y->numel; i++)
            cpu_set(y->data, y->dtype, i, v->f64 ? ((double *)v->p)[i] : ((float *)v->p)[i]);
    release(v);
}

/* The float views of a product's two operands and its output, all or
 * nothing (false: out of memory, nothing left to release). */
static bool views3(const seam_tensor *a, const seam_tensor *b, seam_tensor *y, bool f64, fview *va, fview *vb, fview *vy) {
    if (!fview_of(a, f64, va)) return false;
    if (!fview_of(b, f64, vb)) {
        release(va);
        return false;
    }
    if (!out_view(y, f64, vy)) {
        release(va);
        release(vb);
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

typedef struct gemm_job {
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
} gemm_job;

/* The block of C at rows [i0, i0 + mm) and columns [j0, j0 + nn). */
static void gemm_one(const gemm_job *j, int64_t i0, int64_t mm, int64_t j0, int64_t nn) {
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
    const gemm_job *j = arg;
    for (int64_t q = begin; q < end; q++) {
        int64_t total = j->by_rows ? j->m : j->n, at = q * j->chunk;
        int64_t len = total - at < j->chunk ? total - at : j->chunk;
        if (j->by_rows) gemm_one(j, at, len, 0, j->n);
        else gemm_one(j, 0, j->m, at, len);
    }
}

/* C[m x n] = post(alpha * op(A) op(B) + beta * C), row-major; with a bias
 * (optional, float32 only) C starts as bias[row] instead and beta is not
 * used. The bias and post (optional, float32 only) go over each block of C
 * while it is in cache. */
static void gemm_post(seam_pool *pool, bool f64, bool ta, bool tb, int64_t m, int64_t n, int64_t kk, double alpha,
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
    gemm_job j = {f64, ta, tb, false, m, n, kk, lda, ldb, ldc, n, alpha, beta, a, b, c, bias, post};
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
    if (chunks == 1) gemm_one(&j, 0, m, 0, n);
    else seam_parallel_for(pool, chunks, 1, gemm_chunks, &j);
}

static void gemm(seam_pool *pool, bool f64, bool ta, bool tb, int64_t m, int64_t n, int64_t kk, double alpha,
                 const void *a, int64_t lda, const void *b, int64_t ldb, double beta, void *c, int64_t ldc) {
    gemm_post(pool, f64, ta, tb, m, n, kk, alpha, a, lda, b, ldb, beta, c, ldc, NULL, NULL);
}

#define BLAS_MAX ((int64_t)1 << 31) /* BLAS takes int sizes */

/* ---- X W with the weight packed (MatMul, Gemm) ---- */

/* What check_matmul prepares for a float32 MatMul or Gemm whose weight
 * (input 1, 2-D) is a constant, on a CPU with AVX-512: the weight packed
 * for cpu_gemm_xw_run (W [K, N], or [N, K] for Gemm's transB). */
typedef struct xw_state {
    const void *w; /* the weight's data the pack was made from */
    int64_t w_numel;
    bool trans;
    cpu_gemm_wpacked *packed;
} xw_state;

static void xw_state_free(void *p) {
    xw_state *s = p;
    if (!s) return;
    cpu_gemm_wpacked_free(s->packed);
    free(s);
}

/* Where X W with W packed once beats OpenBLAS sgemm, which packs W on
 * every call: with fewer than 8 rows on a weight too large for L2 (a
 * classifier at batch 1: both stream W from memory, where OpenBLAS's sgemm
 * with one row falls to a third of that), not on a few columns (one panel
 * of 32 computes 10). From 8 rows up the kernel alone wins 1.1x to 1.4x
 * up to some 160 rows (bench/results/cpugemm2.md), but inside the models,
 * 2 threads, it lost: encoder_2x32 2.9 -> 3.7 ms, encoder_1x128 6.0 ->
 * 6.5, mlp_large 13.6 -> 14.9 (bench/RESULTS.md), so those stay on
 * OpenBLAS. M < 0: not known (at check time). */
static bool xw_pays(int64_t M, int64_t K, int64_t N) { return N >= 64 && M < 8 && K * N >= ((int64_t)1 << 20); }

/* The packed weight for this run: check's when it was made from this
 * run's data (a fed initializer replaces it), else w packed into scratch
 * (sizes from xw_now_floats). */
static const cpu_gemm_wpacked *xw_weight(const seam_kernel *k, const float *w, int64_t numel, int64_t K, int64_t N,
                                         bool trans, cpu_gemm_wpacked *now, float *scratch) {
    const xw_state *s = k->state;
    if (s && s->packed && s->w == w && s->w_numel == numel && s->trans == trans && s->packed->k == K &&
        s->packed->n == N)
        return s->packed;
    cpu_gemm_wpack_into(now, (float *)(((uintptr_t)scratch + 63) & ~(uintptr_t)63), w, K, N, trans);
    return now;
}

static size_t xw_now_floats(const seam_kernel *k, const void *w, int64_t numel, int64_t K, int64_t N, bool trans) {
    const xw_state *s = k->state;
    bool ready = s && s->packed && s->w == w && s->w_numel == numel && s->trans == trans && s->packed->k == K &&
                 s->packed->n == N;
    return ready ? 0 : cpu_gemm_wpacked_floats(K, N) + 16;
}

/* Y [M, N] = post(alpha op(X) W (+ Y when accumulate)) on the packed
 * GEMM, W's data w ([K, N], or [N, K] when tw). False: out of memory. */
static bool xw_product(seam_kernel *k, const float *x, bool tx, int64_t ldx, float alpha, int64_t M, const float *w,
                       int64_t w_numel, bool tw, int64_t K, int64_t N, float *y, bool accumulate) {
    size_t now_floats = xw_now_floats(k, w, w_numel, K, N, tw);
    size_t gemm_floats = cpu_gemm_xw_scratch(M, N, seam_pool_threads(k->pool));
    float *scratch = kernel_scratch(k, sizeof(float) * (now_floats + gemm_floats + 16));
    if (!scratch) return false;
    cpu_gemm_wpacked now;
    const cpu_gemm_wpacked *pw = xw_weight(k, w, w_numel, K, N, tw, &now, scratch);
    cpu_gemm_x xv = {x, ldx, tx, alpha};
    cpu_gemm_xw_run(k->pool, &xv, M, pw, y, N, accumulate, &k->post, scratch + now_floats);
    return true;
}

/* check time: W (input 1) packed when it is a float32 2-D constant, X is
 * float32 and xw_pays may hold for the rows inference knows of */
static void xw_prepare(seam_check *c, bool is_gemm) {
    const ir_tensor *wt = cpu_constant_input(c, 1);
    if (!wt || wt->dtype != SEAM_DTYPE_FLOAT32 || wt->rank != 2 || !wt->data || check_in_dtype(c, 0) != SEAM_DTYPE_FLOAT32 ||
        (size_t)wt->numel * sizeof(float) != wt->nbytes || !cpu_gemm_available())
        return;
    bool tw = is_gemm && node_attr_int(c->n, "transB", 0) != 0;
    int64_t K = tw ? wt->dims[1] : wt->dims[0], N = tw ? wt->dims[0] : wt->dims[1];
    /* the rows: X's dims but the last (Gemm: the one transA does not take) */
    const ir_type *xt = c->n->inputs[0] >= 0 ? &c->g->values[c->n->inputs[0]].type : NULL;
    int64_t M = -1;
    if (xt && xt->kind == IR_TYPE_TENSOR && xt->rank >= 1) {
        M = 1;
        bool ta = is_gemm && node_attr_int(c->n, "transA", 0) != 0;
        for (int32_t d = 0; d < xt->rank && M >= 0; d++) {
            bool row_dim = is_gemm ? (ta ? d == 1 : d == 0) : d < xt->rank - 1;
            if (row_dim) M = xt->dims[d].v >= 0 && xt->dims[d].v < BLAS_MAX ? M * xt->dims[d].v : -1;
        }
        if (M > BLAS_MAX) M = -1;
    }
    if (K < 1 || N < 1 || K > BLAS_MAX || N > BLAS_MAX || !xw_pays(M, K, N)) return;
    xw_state *s = calloc(1, sizeof(*s));
    if (!s) return;
    if (!(s->packed = cpu_gemm_wpack((const float *)wt->data, K, N, tw))) {
        free(s);
        return;
    }
    s->w = wt->data, s->w_numel = wt->numel, s->trans = tw;
    *c->state = s;
    *c->free_state = xw_state_free;
}

/* ---- MatMul ---- */

/* One batch of products: the batch dims broadcast, the matrices do not. */
typedef struct matmul_job {
    seam_pool *pool; /* for the gemm itself when the batches run one by one */
    bool fl, f64;    /* float (through BLAS), and which precision */
    const seam_tensor *a, *b;
    seam_tensor *y;
    const void *pa, *pb; /* float views of a and b */
    void *py;
    int64_t M, N, K;
    int32_t br;
    const int64_t *bdims, *sa, *sb;
    const act_params *post; /* fused activation (float32) */
} matmul_job;

static void matmul_batches(void *arg, int64_t begin, int64_t end) {
    const matmul_job *j = arg;
    int64_t M = j->M, N = j->N, K = j->K;
    for (int64_t t = begin; t < end; t++) {
        int64_t oa = 0, ob = 0, rem = t;
        for (int32_t d = j->br - 1; d >= 0; d--) {
            int64_t i = rem % j->bdims[d];
            rem /= j->bdims[d];
            oa += i * j->sa[d], ob += i * j->sb[d];
        }
        if (j->fl) {
            size_t es = j->f64 ? 8 : 4;
            gemm_post(j->pool, j->f64, false, false, M, N, K, 1.0, (const char *)j->pa + (size_t)(oa * M * K) * es, K,
                      (const char *)j->pb + (size_t)(ob * K * N) * es, N, 0.0, (char *)j->py + (size_t)(t * M * N) * es,
                      N, NULL, j->post);
            continue;
        }
        /* integers wrap like the C types they are: multiply in uint64 */
        const seam_tensor *a = j->a, *b = j->b;
        for (int64_t i = 0; i < M; i++)
            for (int64_t c = 0; c < N; c++) {
                uint64_t acc = 0;
                for (int64_t q = 0; q < K; q++)
                    acc += (uint64_t)cpu_get_i64(a->data, a->dtype, oa * M * K + i * K + q) *
                           (uint64_t)cpu_get_i64(b->data, b->dtype, ob * K * N + q * N + c);
                cpu_set_i64(j->y->data, j->y->dtype, t * M * N + i * N + c, (int64_t)acc);
            }
    }
}

static seam_status run_matmul(seam_kernel *k) {
    const seam_tensor *a = kernel_in(k, 0), *b = kernel_in(k, 1);
    if (!a || !b || a->rank < 1 || b->rank < 1) return kernel_fail(k, "needs two inputs of rank >= 1");
    if (a->dtype != b->dtype) return kernel_fail(k, "input dtypes differ");
    /* 1-D operands: A gets a leading 1, B a trailing 1, both dropped after */
    int64_t M = a->rank == 1 ? 1 : a->dims[a->rank - 2], K = a->dims[a->rank - 1];
    int64_t K2 = b->rank == 1 ? b->dims[0] : b->dims[b->rank - 2], N = b->rank == 1 ? 1 : b->dims[b->rank - 1];
    if (K != K2)
        return kernel_fail(k, "'%s' has %lld columns but '%s' has %lld rows", cpu_in_name(k, 0), (long long)K,
                           cpu_in_name(k, 1), (long long)K2);
    seam_tensor ba = {.rank = a->rank > 2 ? a->rank - 2 : 0}, bb = {.rank = b->rank > 2 ? b->rank - 2 : 0};
    for (int32_t d = 0; d < ba.rank; d++) ba.dims[d] = a->dims[d];
    for (int32_t d = 0; d < bb.rank; d++) bb.dims[d] = b->dims[d];
    const seam_tensor *bt[2] = {&ba, &bb};
    int32_t br;
    int64_t bdims[SEAM_MAX_RANK], sa[SEAM_MAX_RANK], sb[SEAM_MAX_RANK];
    if (!cpu_broadcast(bt, 2, &br, bdims)) return kernel_fail(k, "the batch dims of the inputs do not broadcast");
    int64_t dims[SEAM_MAX_RANK];
    int32_t r = 0;
    for (int32_t d = 0; d < br; d++) dims[r++] = bdims[d];
    if (a->rank > 1) dims[r++] = M;
    if (b->rank > 1) dims[r++] = N;
    if (r > SEAM_MAX_RANK) return kernel_fail(k, "result rank too large");
    seam_tensor *y = kernel_out(k, 0, a->dtype, r, dims);
    if (!y) return kernel_oom(k);
    /* an empty result may still have a huge batch count: nothing to loop over */
    if (y->numel == 0) return SEAM_STATUS_OK;
    if (M > BLAS_MAX || N > BLAS_MAX || K > BLAS_MAX) return kernel_fail(k, "a matrix dimension exceeds 2^31");
    cpu_bcast_strides(&ba, br, bdims, sa);
    cpu_bcast_strides(&bb, br, bdims, sb);
    int64_t batches = cpu_span(bdims, 0, br);
    matmul_job j = {k->pool, cpu_is_float(a->dtype), a->dtype == SEAM_DTYPE_FLOAT64, a, b, y, NULL, NULL, NULL,
                    M, N, K, br, bdims, sa, sb, &k->post};
    /* the executor fuses into float32 outputs only (by inferred type) */
    if (k->post.kind != ACT_NONE && a->dtype != SEAM_DTYPE_FLOAT32)
        return kernel_fail(k, "a fused activation needs float32, the inputs are %s", seam_dtype_name(a->dtype));
    /* float32 X [..., M, K] (or [K]) times a 2-D W [K, N]: one product of
     * all the rows, on the packed GEMM where it pays (by the sizes only,
     * whether W is a constant or not: the same bits either way) */
    int64_t rows = a->rank >= 2 ? batches * M : 1;
    if (a->dtype == SEAM_DTYPE_FLOAT32 && b->rank == 2 && batches <= BLAS_MAX / (M > 0 ? M : 1) && K > 0 &&
        xw_pays(rows, K, N) && cpu_gemm_available()) {
        if (!xw_product(k, (const float *)a->data, false, K, 1.0f, rows, (const float *)b->data, b->numel, false, K, N,
                        (float *)y->data, false))
            return kernel_oom(k);
        return SEAM_STATUS_OK;
    }
    fview va = {0}, vb = {0}, vy = {0};
    if (j.fl) {
        if (!views3(a, b, y, j.f64, &va, &vb, &vy)) return kernel_oom(k);
        j.pa = va.p, j.pb = vb.p, j.py = vy.p;
    }
    /* B shared by every batch and A not broadcast ([..., M, K] x [K, N], as
     * a linear layer on a sequence is): the batches stack into one product
     * of batches * M rows, which packs B once instead of once a batch */
    bool b_shared = a->rank >= 2 && ba.rank == br;
    for (int32_t d = 0; d < br && b_shared; d++) b_shared = sb[d] == 0 && ba.dims[d] == bdims[d];
    if (j.fl && batches > 1 && b_shared && batches <= BLAS_MAX / M) {
        j.M = batches * M;
        matmul_batches(&j, 0, 1);
    } else if (batches > 1 && (!j.fl || M * N * K < ((int64_t)1 << 18))) {
        /* small products share the pool by batch (each batch is one whole
         * product, so the result does not depend on the thread count); large
         * ones go one at a time with the gemm split over the pool */
        j.pool = NULL;
        seam_parallel_for(k->pool, batches, 1, matmul_batches, &j);
    } else {
        matmul_batches(&j, 0, batches);
    }
    if (j.fl) {
        release(&va);
        release(&vb);
        finish(y, &vy);
    }
    return SEAM_STATUS_OK;
}

static seam_status check_matmul(seam_check *c) {
    int32_t dt = check_in_dtype(c, 0);
    if (dt != SEAM_DTYPE_UNDEFINED && !cpu_is_float(dt) && !cpu_is_int(dt))
        return check_refuse(c, "MatMul on %s is not supported", seam_dtype_name(dt));
    /* MatMul and Gemm apply a fused activation to float outputs */
    c->post_ops = true;
    xw_prepare(c, strcmp(c->n->op_type, "Gemm") == 0);
    return SEAM_STATUS_OK;
}

/* ---- Gemm ---- */

/* alpha or beta as a whole number for integer Gemm, when it is one */
static bool whole(double v, int64_t *out) {
    if (!(v >= -9.2e18 && v <= 9.2e18) || v != (double)(int64_t)v) return false;
    *out = (int64_t)v;
    return true;
}

static seam_status run_gemm(seam_kernel *k) {
    const seam_tensor *a = kernel_in(k, 0), *b = kernel_in(k, 1), *c = kernel_in(k, 2);
    if (!a || !b || a->rank != 2 || b->rank != 2) return kernel_fail(k, "A and B must be 2-D");
    if (a->dtype != b->dtype || (c && c->dtype != a->dtype)) return kernel_fail(k, "A, B and C must have one dtype");
    bool ta = node_attr_int(k->n, "transA", 0) != 0, tb = node_attr_int(k->n, "transB", 0) != 0;
    double alpha = node_attr_float(k->n, "alpha", 1), beta = node_attr_float(k->n, "beta", 1);
    int64_t M = ta ? a->dims[1] : a->dims[0], K = ta ? a->dims[0] : a->dims[1];
    int64_t K2 = tb ? b->dims[1] : b->dims[0], N = tb ? b->dims[0] : b->dims[1];
    if (K != K2) return kernel_fail(k, "A has K = %lld but B has K = %lld", (long long)K, (long long)K2);
    if (M > BLAS_MAX || N > BLAS_MAX || K > BLAS_MAX) return kernel_fail(k, "a matrix dimension exceeds 2^31");
    /* C broadcasts (unidirectionally) to [M, N]: cr x cc, each 1 or the full size */
    int64_t cr = 1, cc = 1;
    if (c) {
        cr = c->rank == 2 ? c->dims[0] : 1, cc = c->rank >= 1 ? c->dims[c->rank - 1] : 1;
        if (c->rank > 2 || (cc != N && cc != 1) || (cr != M && cr != 1))
            return kernel_fail(k, "C does not broadcast to [%lld, %lld]", (long long)M, (long long)N);
    }
    int64_t dims[2] = {M, N};
    seam_tensor *y = kernel_out(k, 0, a->dtype, 2, dims);
    if (!y) return kernel_oom(k);
    /* the executor fuses into float32 outputs only (by inferred type) */
    if (k->post.kind != ACT_NONE && a->dtype != SEAM_DTYPE_FLOAT32)
        return kernel_fail(k, "a fused activation needs float32, A is %s", seam_dtype_name(a->dtype));
    if (!cpu_is_float(a->dtype)) { /* integer Gemm: plain loops, wrapping like the C types */
        int64_t ia = 0, ib = 0;
        bool exact = whole(alpha, &ia) && whole(beta, &ib);
        for (int64_t i = 0; i < M; i++)
            for (int64_t j = 0; j < N; j++) {
                uint64_t acc = 0;
                for (int64_t q = 0; q < K; q++)
                    acc += (uint64_t)cpu_get_i64(a->data, a->dtype, ta ? q * M + i : i * K + q) *
                           (uint64_t)cpu_get_i64(b->data, b->dtype, tb ? j * K + q : q * N + j);
                int64_t cv = c ? cpu_get_i64(c->data, c->dtype, (cr == 1 ? 0 : i) * cc + (cc == 1 ? 0 : j)) : 0;
                if (exact) {
                    uint64_t v = (uint64_t)ia * acc + (uint64_t)ib * (uint64_t)cv;
                    cpu_set_i64(y->data, y->dtype, i * N + j, (int64_t)v);
                } else {
                    cpu_set(y->data, y->dtype, i * N + j, alpha * (double)(int64_t)acc + beta * (double)cv);
                }
            }
        return SEAM_STATUS_OK;
    }
    if (y->numel == 0) return SEAM_STATUS_OK;
    /* float32 on the packed GEMM where it pays (by the sizes only): Y
     * starts as beta C when there is one, and alpha goes into X's panels */
    if (a->dtype == SEAM_DTYPE_FLOAT32 && K > 0 && xw_pays(M, K, N) && cpu_gemm_available()) {
        bool acc = c && beta != 0;
        for (int64_t i = 0; acc && i < M; i++)
            for (int64_t j = 0; j < N; j++)
                ((float *)y->data)[i * N + j] =
                    (float)(beta * cpu_get(c->data, c->dtype, (cr == 1 ? 0 : i) * cc + (cc == 1 ? 0 : j)));
        if (!xw_product(k, (const float *)a->data, ta, ta ? M : K, (float)alpha, M, (const float *)b->data, b->numel,
                        tb, K, N, (float *)y->data, acc))
            return kernel_oom(k);
        return SEAM_STATUS_OK;
    }
    bool f64 = a->dtype == SEAM_DTYPE_FLOAT64;
    fview va, vb, vy;
    if (!views3(a, b, y, f64, &va, &vb, &vy)) return kernel_oom(k);
    double cb = 0;
    if (c && beta != 0) { /* Y starts as C, and the product adds onto beta * Y */
        for (int64_t i = 0; i < M; i++)
            for (int64_t j = 0; j < N; j++) {
                double v = cpu_get(c->data, c->dtype, (cr == 1 ? 0 : i) * cc + (cc == 1 ? 0 : j));
                if (f64) ((double *)vy.p)[i * N + j] = v;
                else ((float *)vy.p)[i * N + j] = (float)v;
            }
        cb = beta;
    }
    gemm_post(k->pool, f64, ta, tb, M, N, K, alpha, va.p, ta ? M : K, vb.p, tb ? K : N, cb, vy.p, N, NULL, &k->post);
    release(&va);
    release(&vb);
    finish(y, &vy);
    return SEAM_STATUS_OK;
}

/* ---- Conv ---- */

typedef struct im2col_job {
    const void *x;      /* one image's channels of one group: [C, in...] */
    void *col;          /* [C * kprod, out_prod] */
    const conv_geom *w;
    int64_t C, kprod, out_prod, in_prod;
    bool f64;           /* double elements (float otherwise) */
} im2col_job;

/* Rows [begin, end) of the column matrix: row = (c, kernel offset). */
CPU_HOT static void im2col_rows(void *arg, int64_t begin, int64_t end) {
    im2col_job *j = arg;
    const conv_geom *w = j->w;
    int32_t n = w->n;
    for (int64_t row = begin; row < end; row++) {
        int64_t c = row / j->kprod, kk = row % j->kprod;
        int64_t koff[SEAM_MAX_RANK];
        for (int32_t d = n - 1; d >= 0; d--) {
            koff[d] = kk % w->kernel[d];
            kk /= w->kernel[d];
        }
        if (n == 2 && !j->f64) { /* the common case, with a contiguous inner loop when stride 1 */
            const float *src = (const float *)j->x + c * j->in_prod;
            float *dst = (float *)j->col + row * j->out_prod;
            int64_t H = w->in[0], W = w->in[1], OH = w->out[0], OW = w->out[1];
            for (int64_t oh = 0; oh < OH; oh++) {
                int64_t ih = oh * w->stride[0] - w->pad_lo[0] + koff[0] * w->dil[0];
                float *drow = dst + oh * OW;
                if (ih < 0 || ih >= H) {
                    memset(drow, 0, sizeof(float) * (size_t)OW);
                    continue;
                }
                const float *srow = src + ih * W;
                int64_t base = -w->pad_lo[1] + koff[1] * w->dil[1], s = w->stride[1];
                /* the output columns whose input column is inside: [lo, hi) */
                int64_t lo = base >= 0 ? 0 : (-base + s - 1) / s, hi = W - base > 0 ? (W - base + s - 1) / s : 0;
                if (hi > OW) hi = OW;
                if (lo > hi) lo = hi;
                for (int64_t ow = 0; ow < lo; ow++) drow[ow] = 0.0f;
                if (s == 1) {
                    memcpy(drow + lo, srow + lo + base, sizeof(float) * (size_t)(hi - lo));
                } else {
                    const float *sp = srow + base;
                    for (int64_t ow = lo; ow < hi; ow++) drow[ow] = sp[ow * s];
                }
                for (int64_t ow = hi; ow < OW; ow++) drow[ow] = 0.0f;
            }
            continue;
        }
        /* any rank, and float64 */
        int64_t oidx[SEAM_MAX_RANK] = {0}, base = c * j->in_prod, at = row * j->out_prod;
        for (int64_t o = 0; o < j->out_prod; o++) {
            int64_t off = 0;
            bool inside = true;
            for (int32_t d = 0; d < n && inside; d++) {
                int64_t i = oidx[d] * w->stride[d] - w->pad_lo[d] + koff[d] * w->dil[d];
                inside = i >= 0 && i < w->in[d];
                off = off * w->in[d] + i;
            }
            if (j->f64) ((double *)j->col)[at + o] = inside ? ((const double *)j->x)[base + off] : 0.0;
            else ((float *)j->col)[at + o] = inside ? ((const float *)j->x)[base + off] : 0.0f;
            cpu_index_next(oidx, w->out, n);
        }
    }
}

/* A 2-D float32 conv with a large output in column blocks: each task
 * builds the im2col columns of one block of output pixels (about 512 KB,
 * so they stay in L2) and multiplies it at once, instead of the whole
 * column matrix (megabytes, out to memory and back) then one product.
 * The blocks depend on the sizes only, and every block is computed the
 * same way by whichever task, so the result does not depend on the
 * thread count. */
typedef struct cblk_job {
    const float *x, *w, *bias; /* x: the image [C, H, W]; w [M, Cg * kprod]; bias [M] (optional) */
    float *y, *buf;            /* y: the image's [M, out]; buf: per task, Kg x nb */
    const conv_geom *win;
    const act_params *post;
    int64_t group, Cg, Mg, kprod, Kg, out_prod, in_prod, nb, blocks, per_task;
} cblk_job;

/* im2col of output pixels [p0, p0 + nb) for one group's channels, rows of nb. */
static void cblk_im2col(const cblk_job *j, const float *xg, float *col, int64_t p0, int64_t nb) {
    for (int64_t row = 0; row < j->Kg; row++) cpu_im2col_row(j->win, xg, row, p0, nb, col + row * nb);
}

static void cblk_tasks(void *arg, int64_t begin, int64_t end) {
    const cblk_job *j = arg;
    for (int64_t t = begin; t < end; t++) {
        float *col = j->buf + t * (j->Kg * j->nb + 16);
        int64_t b1 = (t + 1) * j->per_task < j->blocks * j->group ? (t + 1) * j->per_task : j->blocks * j->group;
        for (int64_t u = t * j->per_task; u < b1; u++) {
            int64_t g = u / j->blocks, p0 = u % j->blocks * j->nb;
            int64_t nb = j->out_prod - p0 < j->nb ? j->out_prod - p0 : j->nb;
            cblk_im2col(j, j->x + g * j->Cg * j->in_prod, col, p0, nb);
            gemm_job gj = {false, false, false, false, j->Mg, nb, j->Kg, j->Kg, nb, j->out_prod, nb, 1.0, 0.0,
                           j->w + g * j->Mg * j->Kg, col, j->y + g * j->Mg * j->out_prod + p0,
                           j->bias ? j->bias + g * j->Mg : NULL, j->post};
            gemm_one(&gj, 0, j->Mg, 0, nb);
        }
    }
}

/* What check_conv prepares for one Conv node (no state at all when the
 * weight is not a float32 constant): its weight transformed for Winograd
 * (winograd.c) when the conv's sizes fit it, else packed for the packed
 * GEMM (AVX-512 only), one matrix per group. */
typedef struct conv_state {
    const void *w;              /* the weight's data the packs were made from */
    int64_t w_numel, group;
    cpu_gemm_packed **packed;   /* [group], or NULL */
    cpu_wino *wino;             /* or NULL */
} conv_state;

static void conv_state_free(void *p) {
    conv_state *s = p;
    if (!s) return;
    for (int64_t g = 0; s->packed && g < s->group; g++) cpu_gemm_packed_free(s->packed[g]);
    free(s->packed);
    cpu_wino_free(s->wino);
    free(s);
}

/* How one conv runs (run_conv picks it in one place, from the sizes only,
 * never from the thread count). */
typedef enum conv_kind {
    CONV_DEPTHWISE, /* one input channel per group: dwconv.c */
    CONV_WINOGRAD,  /* float32 3x3 stride 1 where cpu_wino_fits: cpu_wino_run */
    CONV_PACKED,    /* float32 2-D with a packed constant weight: cpu_gemm_run */
    CONV_BLOCKED,   /* float32 2-D, many output pixels: cblk_tasks (im2col per block + sgemm) */
    CONV_DIRECT,    /* 1x1, stride 1, unpadded: the input is the column matrix, sgemm */
    CONV_IM2COL,    /* the rest: the whole column matrix, then sgemm */
} conv_kind;

/* Where the packed GEMM beats im2col + OpenBLAS sgemm (measured on the
 * benchmark set's convs, bench/results/cpugemm.md): not on a few output
 * pixels (the SE blocks' 1x1 convs on [C, 1, 1] are matrix-vector
 * products), not on few rows and few pixels (32 channels of 7x7: the
 * 32-column tiles compute 64 for 49), not on few rows and a short depth
 * (a 16-channel stem on a small image: packing B costs more than the
 * product; on 4096 pixels or more, im2col straight into the packed panels
 * beats im2col + sgemm by 1.4x: mobilenet_v3's 3 -> 16 stem). A direct
 * conv (1x1, stride 1, unpadded: the packed GEMM reads its input in place,
 * no packing pass, bench/results/cpugemm2.md) wins on short depths and few
 * rows too, but not on small products that OpenBLAS keeps in L1 (a few
 * dozen rows of 49 or 196 pixels, short depth). out_prod < 0: not known
 * yet (at check time, with symbolic dims). */
static bool packed_pays(int64_t Mg, int64_t Kg, int64_t out_prod, bool direct) {
    if (direct) return out_prod < 0 || (out_prod >= 16 && (out_prod >= 512 || Mg >= 64 || Kg >= 256));
    if (Mg < 48 && Kg < 160 && (out_prod < 4096 || Kg > 32)) return false;
    if (out_prod < 0) return true;
    return out_prod >= 16 && (out_prod >= 128 || Mg >= 64);
}

/* A Conv node's attributes say 1x1, stride 1 and no padding (its weight
 * wt [M, Cg, kh, kw]): the input is the column matrix. */
static bool conv_attrs_direct(const ir_node *n, const ir_tensor *wt) {
    const int64_t *v;
    int32_t cnt;
    for (int32_t d = 2; d < wt->rank; d++)
        if (wt->dims[d] != 1) return false;
    if ((cnt = node_attr_ints(n, "strides", &v)) > 0)
        for (int32_t i = 0; i < cnt; i++)
            if (v[i] != 1) return false;
    if ((cnt = node_attr_ints(n, "pads", &v)) > 0)
        for (int32_t i = 0; i < cnt; i++)
            if (v[i] != 0) return false;
    conv_auto_pad ap;
    return conv_auto_pad_of(n, &ap) && (ap == CONV_PAD_NOTSET || ap == CONV_PAD_VALID);
}

static seam_status run_conv(seam_kernel *k) {
    const seam_tensor *x = kernel_in(k, 0), *wt = kernel_in(k, 1), *b = kernel_in(k, 2);
    if (!x || !wt || x->rank < 3 || wt->rank != x->rank) return kernel_fail(k, "needs X [N, C, ...] and W of the same rank");
    int64_t group = node_attr_int(k->n, "group", 1), N = x->dims[0], C = x->dims[1], M = wt->dims[0];
    if (group < 1 || C % group || M % group || wt->dims[1] != C / group)
        return kernel_fail(k, "W [%lld, %lld, ...] does not fit %lld input channels in %lld groups", (long long)M,
                           (long long)wt->dims[1], (long long)C, (long long)group);
    if (b && (b->rank != 1 || b->dims[0] != M)) return kernel_fail(k, "B must be [%lld]", (long long)M);
    if (b && b->dtype != x->dtype) return kernel_fail(k, "B must have X's dtype");
    const int64_t *ks;
    int32_t nk = node_attr_ints(k->n, "kernel_shape", &ks);
    if (nk >= 0 && nk != x->rank - 2) return kernel_fail(k, "kernel_shape has %d entries", nk);
    for (int32_t d = 0; nk >= 0 && d < nk; d++)
        if (ks[d] != wt->dims[2 + d]) return kernel_fail(k, "kernel_shape disagrees with W");
    conv_geom w;
    seam_status st = cpu_conv_geom(k, x, wt->dims + 2, false, &w);
    if (st) return st;
    int64_t dims[SEAM_MAX_RANK];
    dims[0] = N, dims[1] = M;
    for (int32_t d = 0; d < w.n; d++) dims[2 + d] = w.out[d];
    seam_tensor *y = kernel_out(k, 0, x->dtype, x->rank, dims);
    if (!y) return kernel_oom(k);
    if (y->numel == 0) return SEAM_STATUS_OK;
    int64_t Cg = C / group, Mg = M / group, kprod = cpu_span(wt->dims, 2, wt->rank), out_prod = cpu_span(w.out, 0, w.n);
    int64_t in_prod = cpu_span(w.in, 0, w.n);
    /* (each at most 2^31, so the column matrix's byte count cannot wrap) */
    if (Cg * kprod > BLAS_MAX || out_prod > BLAS_MAX || Cg * kprod > (INT64_MAX / 16) / out_prod)
        return kernel_fail(k, "the convolution is too large");
    /* float32 (float16 and bfloat16 widened to it), or float64 through dgemm */
    bool f64 = x->dtype == SEAM_DTYPE_FLOAT64;
    size_t es = f64 ? 8 : 4;
    fview vx, vw, vy, vb = {0};
    if (!views3(x, wt, y, f64, &vx, &vw, &vy)) return kernel_oom(k);
    if (b && !fview_of(b, f64, &vb)) {
        release(&vx);
        release(&vw);
        release(&vy);
        return kernel_oom(k);
    }
    /* the executor fuses into float32 outputs only (by inferred type) */
    const act_params *post = &k->post;
    if (x->dtype != SEAM_DTYPE_FLOAT32 && post->kind != ACT_NONE) {
        release(&vx);
        release(&vw);
        release(&vy);
        release(&vb);
        return kernel_fail(k, "a fused activation needs float32, X is %s", seam_dtype_name(x->dtype));
    }
    bool direct = true; /* 1x1, stride 1, no pad: the input is the column matrix */
    for (int32_t d = 0; d < w.n; d++)
        direct &= w.kernel[d] == 1 && w.stride[d] == 1 && w.pad_lo[d] == 0 && w.pad_hi[d] == 0;
    int64_t threads = seam_pool_threads(k->pool), Kg = Cg * kprod;
    const conv_state *cs = k->state;
    cpu_dw_plan dj;
    cblk_job cb = {0};
    cb.nb = ((int64_t)1 << 17) / (Kg > 0 ? Kg : 1) / 64 * 64;
    if (cb.nb < 64) cb.nb = 64;
    cb.blocks = (out_prod + cb.nb - 1) / cb.nb;
    /* The one place that picks the path, by the sizes only (never the
     * thread count, nor whether the weight is a constant: a conv computes
     * the same bits in a plan's subgraph, where its weight is an input, as
     * in the whole model): depthwise first, then the packed GEMM, then the
     * OpenBLAS forms. The packed GEMM takes the weight check packed when
     * it is this run's (the same data), else packs it now. */
    conv_kind kind = CONV_IM2COL;
    if (!f64 && Cg == 1 && group > 1 && w.n == 2 && cpu_dw_plan_make(&dj, &w, N, C, M, (int32_t)threads))
        kind = CONV_DEPTHWISE;
    else if (x->dtype == SEAM_DTYPE_FLOAT32 && wt->dtype == SEAM_DTYPE_FLOAT32 && w.n == 2 && cpu_wino_fits(&w, Cg, Mg))
        kind = CONV_WINOGRAD;
    else if (x->dtype == SEAM_DTYPE_FLOAT32 && wt->dtype == SEAM_DTYPE_FLOAT32 && w.n == 2 && Kg > 0 &&
             packed_pays(Mg, Kg, out_prod, direct) && cpu_gemm_available())
        kind = CONV_PACKED;
    else if (direct)
        kind = CONV_DIRECT;
    else if (!f64 && w.n == 2 && Kg > 0 && cb.blocks > 1 && cb.blocks * group >= 4)
        kind = CONV_BLOCKED; /* float32 2-D with many output pixels per column block */
    bool prepacked = kind == CONV_PACKED && cs && cs->packed && cs->w == wt->data && cs->w_numel == wt->numel &&
                     cs->group == group && cs->packed[0]->m == Mg && cs->packed[0]->k == Kg;
    size_t pack_floats = kind == CONV_PACKED && !prepacked ? cpu_gemm_packed_floats(Mg, Kg) : 0;
    /* Winograd: the weights check transformed when they are this run's,
     * else transformed now (a weight computed or passed at run time) */
    cpu_wino *wino_now = NULL;
    const cpu_wino *wino = NULL;
    if (kind == CONV_WINOGRAD) {
        if (cs && cs->wino && cpu_wino_weights(cs->wino) == (const float *)wt->data && cs->w_numel == wt->numel &&
            cs->group == group)
            wino = cs->wino;
        else if (!(wino = wino_now = cpu_wino_prepare((const float *)vw.p, M, Cg, group))) {
            release(&vx);
            release(&vw);
            release(&vy);
            release(&vb);
            return kernel_oom(k);
        }
    }
    int64_t cb_tasks = 0;
    if (kind == CONV_BLOCKED) {
        cb_tasks = 2 * threads < cb.blocks * group ? 2 * threads : cb.blocks * group;
        cb.per_task = (cb.blocks * group + cb_tasks - 1) / cb_tasks;
        cb_tasks = (cb.blocks * group + cb.per_task - 1) / cb.per_task;
    }
    /* scratch: the depthwise tasks' planes, the packed GEMM's B blocks, or
     * the column matrix (whole or per block) */
    size_t scratch = kind == CONV_DEPTHWISE ? cpu_dw_scratch(&dj)
                     : kind == CONV_WINOGRAD ? cpu_wino_scratch_size(wino, &w, (int32_t)threads)
                     : kind == CONV_PACKED  ? sizeof(float) * (cpu_gemm_scratch(Mg, out_prod, threads) + pack_floats)
                     : kind == CONV_BLOCKED ? sizeof(float) * (size_t)(cb_tasks * (Kg * cb.nb + 16))
                     : kind == CONV_DIRECT  ? 0
                                            : es * (size_t)(Cg * kprod * out_prod);
    void *col = scratch ? kernel_scratch(k, scratch) : NULL;
    if (scratch && !col) {
        cpu_wino_free(wino_now);
        release(&vx);
        release(&vw);
        release(&vy);
        release(&vb);
        return kernel_oom(k);
    }
    switch (kind) {
    case CONV_WINOGRAD:
        cpu_wino_run(wino, k->pool, &w, N, vx.p, b ? vb.p : NULL, post, vy.p, col);
        cpu_wino_free(wino_now);
        goto done;
    case CONV_DEPTHWISE:
        cpu_dw_run(&dj, k->pool, vx.p, vw.p, b ? vb.p : NULL, post, vy.p, col);
        goto done;
    case CONV_PACKED: {
        /* scratch: the weight packed now (when check did not), then the B blocks */
        float *pack_at = (float *)(((uintptr_t)col + 63) & ~(uintptr_t)63), *gemm_at = pack_at + pack_floats;
        for (int64_t g = 0; g < group; g++) {
            cpu_gemm_packed now;
            const cpu_gemm_packed *pa = prepacked ? cs->packed[g] : &now;
            if (!prepacked) cpu_gemm_pack_into(&now, pack_at, (const float *)vw.p + g * Mg * Kg, Kg, Mg, Kg);
            for (int64_t n = 0; n < N; n++) {
                const float *xg = (const float *)vx.p + (n * C + g * Cg) * in_prod;
                cpu_gemm_b src = {xg, in_prod, direct ? NULL : &w};
                cpu_gemm_run(k->pool, pa, &src, out_prod, (float *)vy.p + (n * M + g * Mg) * out_prod, out_prod,
                             b ? (const float *)vb.p + g * Mg : NULL, post, gemm_at);
            }
        }
        goto done;
    }
    case CONV_BLOCKED:
        cpu_blas_single_thread();
        cb.w = vw.p, cb.bias = vb.p, cb.buf = col, cb.win = &w, cb.post = post;
        cb.group = group, cb.Cg = Cg, cb.Mg = Mg, cb.kprod = kprod, cb.Kg = Kg, cb.out_prod = out_prod;
        cb.in_prod = in_prod;
        for (int64_t n = 0; n < N; n++) {
            cb.x = (const float *)vx.p + n * C * in_prod;
            cb.y = (float *)vy.p + n * M * out_prod;
            seam_parallel_for(k->pool, cb_tasks, 1, cblk_tasks, &cb);
        }
        goto done;
    case CONV_DIRECT:
    case CONV_IM2COL:
        break;
    }
    /* The output starts as the bias and the products add onto it: for
     * float32 block by block inside gemm_post (which applies the
     * activation after each block), for float64 here. */
    if (f64)
        for (int64_t n = 0; n < N; n++)
            for (int64_t m = 0; m < M; m++) {
                double bv = b ? ((const double *)vb.p)[m] : 0.0;
                double *yp = (double *)vy.p + (n * M + m) * out_prod;
                for (int64_t i = 0; i < out_prod; i++) yp[i] = bv;
            }
    for (int64_t n = 0; n < N; n++)
        for (int64_t g = 0; g < group; g++) {
            const char *xg = (const char *)vx.p + (size_t)((n * C + g * Cg) * in_prod) * es;
            const void *src = xg;
            if (kind == CONV_IM2COL) {
                im2col_job j = {xg, col, &w, Cg, kprod, out_prod, in_prod, f64};
                seam_parallel_for(k->pool, Cg * kprod, 8, im2col_rows, &j);
                src = col;
            }
            gemm_post(k->pool, f64, false, false, Mg, out_prod, Cg * kprod, 1.0,
                      (const char *)vw.p + (size_t)(g * Mg * Cg * kprod) * es, Cg * kprod, src, out_prod, f64 ? 1.0 : 0.0,
                      (char *)vy.p + (size_t)((n * M + g * Mg) * out_prod) * es, out_prod,
                      f64 || !b ? NULL : (const float *)vb.p + g * Mg, f64 ? NULL : post);
        }
done:
    release(&vx);
    release(&vw);
    release(&vb);
    finish(y, &vy);
    return SEAM_STATUS_OK;
}


/* A float32 2-D Conv with a constant weight, on a CPU with AVX-512: the
 * weight packed for the packed GEMM, a matrix [M / group, C / group * kh *
 * kw] per group. Nothing when the conv is depthwise (dwconv.c runs it), or
 * out of memory (the OpenBLAS path then runs it). */
static void conv_pack(seam_check *c) {
    const ir_tensor *wt = cpu_constant_input(c, 1);
    if (!wt || wt->dtype != SEAM_DTYPE_FLOAT32 || wt->rank != 4 || !wt->data || check_in_dtype(c, 0) != SEAM_DTYPE_FLOAT32)
        return;
    int64_t group = node_attr_int(c->n, "group", 1), M = wt->dims[0], Cg = wt->dims[1];
    if (group < 1 || M % group || (Cg == 1 && group > 1)) return;
    int64_t Mg = M / group, Kg = Cg * wt->dims[2] * wt->dims[3];
    if (Mg < 1 || Kg < 1 || Kg > BLAS_MAX || Mg > BLAS_MAX || (size_t)wt->numel * sizeof(float) != wt->nbytes) return;
    /* Winograd when the sizes fit it: the input's H and W if inference
     * knows them, else 56 x 56 (run_conv decides with the real sizes, and
     * transforms the weights then if they were not here) */
    const ir_type *xt = c->n->inputs[0] >= 0 ? &c->g->values[c->n->inputs[0]].type : NULL;
    if (wt->dims[2] == 3 && wt->dims[3] == 3 && xt && xt->kind == IR_TYPE_TENSOR && xt->rank == 4) {
        int64_t in[2], ks[2] = {3, 3};
        for (int32_t d = 0; d < 2; d++) in[d] = xt->dims[2 + d].v >= 1 ? xt->dims[2 + d].v : 56;
        conv_geom g;
        char why[160];
        if (conv_geom_init(c->n, 2, in, ks, false, &g, why, sizeof why) && cpu_wino_fits(&g, Cg, Mg)) {
            conv_state *s = calloc(1, sizeof(*s));
            if (s && (s->wino = cpu_wino_prepare((const float *)wt->data, M, Cg, group))) {
                s->w = wt->data, s->w_numel = wt->numel, s->group = group;
                *c->state = s;
                *c->free_state = conv_state_free;
            } else {
                free(s);
            }
            return;
        }
    }
    if (!cpu_gemm_available()) return;
    /* the output's pixels when inference knows them */
    const ir_type *yt = c->n->n_outputs > 0 && c->n->outputs[0] >= 0 ? &c->g->values[c->n->outputs[0]].type : NULL;
    int64_t out_prod = yt && yt->kind == IR_TYPE_TENSOR && yt->rank == 4 ? 1 : -1;
    for (int32_t d = 2; out_prod >= 0 && d < 4; d++) out_prod = yt->dims[d].v >= 0 ? out_prod * yt->dims[d].v : -1;
    if (!packed_pays(Mg, Kg, out_prod, conv_attrs_direct(c->n, wt))) return;
    conv_state *s = calloc(1, sizeof(*s));
    if (!s) return;
    s->packed = calloc((size_t)group, sizeof(*s->packed));
    s->w = wt->data, s->w_numel = wt->numel, s->group = group;
    for (int64_t g = 0; s->packed && g < group; g++)
        if (!(s->packed[g] = cpu_gemm_pack((const float *)wt->data + g * Mg * Kg, Kg, Mg, Kg))) {
            conv_state_free(s);
            return;
        }
    if (!s->packed) {
        free(s);
        return;
    }
    *c->state = s;
    *c->free_state = conv_state_free;
}

static seam_status check_conv(seam_check *c) {
    seam_status st = check_float_input(c);
    if (st) return st;
    if ((st = check_auto_pad(c))) return st;
    /* Conv applies a fused activation (not ConvTranspose) */
    c->post_ops = strcmp(c->n->op_type, "Conv") == 0;
    if (c->post_ops) conv_pack(c);
    return SEAM_STATUS_OK;
}

/* ---- ConvTranspose ---- */

/* col2im for one image and group: output channel m adds up its kprod rows
 * of the column matrix. One channel per task with its rows in order, so
 * the sums do not depend on the thread count. */
typedef struct col2im_job {
    const void *col; /* [Mg * kprod, in_prod] */
    void *y;         /* this image's and group's [Mg, out...] */
    bool f64;
    int32_t n;
    int64_t kprod, in_prod, out_prod;
    const int64_t *in, *out, *kern, *s, *lo, *dl;
} col2im_job;

static void col2im_channels(void *arg, int64_t begin, int64_t end) {
    const col2im_job *j = arg;
    int32_t n = j->n;
    for (int64_t m = begin; m < end; m++)
        for (int64_t kq = 0; kq < j->kprod; kq++) {
            int64_t row = m * j->kprod + kq, kk = kq, koff[SEAM_MAX_RANK], iidx[SEAM_MAX_RANK] = {0};
            for (int32_t d = n - 1; d >= 0; d--) {
                koff[d] = kk % j->kern[d];
                kk /= j->kern[d];
            }
            for (int64_t i = 0; i < j->in_prod; i++) {
                int64_t off = 0;
                bool inside = true;
                for (int32_t d = 0; d < n && inside; d++) {
                    int64_t o = iidx[d] * j->s[d] - j->lo[d] + koff[d] * j->dl[d];
                    inside = o >= 0 && o < j->out[d];
                    off = off * j->out[d] + o;
                }
                if (inside) {
                    int64_t to = m * j->out_prod + off, from = row * j->in_prod + i;
                    if (j->f64) ((double *)j->y)[to] += ((const double *)j->col)[from];
                    else ((float *)j->y)[to] += ((const float *)j->col)[from];
                }
                cpu_index_next(iidx, j->in, n);
            }
        }
}

static seam_status run_conv_transpose(seam_kernel *k) {
    const seam_tensor *x = kernel_in(k, 0), *wt = kernel_in(k, 1), *b = kernel_in(k, 2);
    if (!x || !wt || x->rank < 3 || wt->rank != x->rank) return kernel_fail(k, "needs X [N, C, ...] and W of the same rank");
    int32_t n_sp = x->rank - 2;
    int64_t group = node_attr_int(k->n, "group", 1), N = x->dims[0], C = x->dims[1];
    if (group < 1 || C % group || wt->dims[0] != C) return kernel_fail(k, "W must be [C, M / group, ...] with C %% group == 0");
    int64_t Mg = wt->dims[1], Cg = C / group;
    if (Mg > IR_MAX_DIM / group) return kernel_fail(k, "too many output channels");
    int64_t M = Mg * group;
    if (b && (b->rank != 1 || b->dims[0] != M)) return kernel_fail(k, "B must be [%lld]", (long long)M);
    const int64_t *strides, *dil, *pads, *opad, *oshape, *ks;
    int32_t ns = node_attr_ints(k->n, "strides", &strides), nd = node_attr_ints(k->n, "dilations", &dil);
    int32_t np = node_attr_ints(k->n, "pads", &pads), no = node_attr_ints(k->n, "output_padding", &opad);
    int32_t nos = node_attr_ints(k->n, "output_shape", &oshape), nk = node_attr_ints(k->n, "kernel_shape", &ks);
    if ((ns >= 0 && ns != n_sp) || (nd >= 0 && nd != n_sp) || (np >= 0 && np != 2 * n_sp) || (no >= 0 && no != n_sp) ||
        (nos >= 0 && nos != n_sp && nos != x->rank) || (nk >= 0 && nk != n_sp))
        return kernel_fail(k, "strides, dilations, pads, output_padding, output_shape or kernel_shape have the wrong "
                              "length");
    conv_auto_pad ap;
    if (!conv_auto_pad_of(k->n, &ap)) return kernel_fail(k, "auto_pad must be NOTSET, SAME_UPPER, SAME_LOWER or VALID");
    bool same = ap == CONV_PAD_SAME_UPPER || ap == CONV_PAD_SAME_LOWER, upper = ap == CONV_PAD_SAME_UPPER;
    int64_t s[SEAM_MAX_RANK], dl[SEAM_MAX_RANK], lo[SEAM_MAX_RANK], out[SEAM_MAX_RANK], in[SEAM_MAX_RANK];
    int64_t kern[SEAM_MAX_RANK];
    for (int32_t d = 0; d < n_sp; d++) {
        in[d] = x->dims[2 + d];
        kern[d] = wt->dims[2 + d];
        if (nk > 0 && ks[d] != kern[d]) return kernel_fail(k, "kernel_shape disagrees with W");
        s[d] = ns > 0 ? strides[d] : 1;
        dl[d] = nd > 0 ? dil[d] : 1;
        int64_t op = no > 0 ? opad[d] : 0;
        /* bounded first, so the sizes below cannot overflow */
        if (kern[d] < 1 || kern[d] > CONV_MAX_WINDOW || s[d] < 1 || s[d] > CONV_MAX_WINDOW || dl[d] < 1 ||
            dl[d] > CONV_MAX_WINDOW || op < 0 || op > CONV_MAX_WINDOW)
            return kernel_fail(k, "bad kernel size, stride, dilation or output_padding on axis %d", d);
        int64_t eff = (kern[d] - 1) * dl[d] + 1, full = s[d] * (in[d] - 1) + op + eff;
        if (nos >= 0 || same) {
            out[d] = nos >= 0 ? oshape[nos == x->rank ? 2 + d : d] : in[d] * s[d];
            if (out[d] < 0 || out[d] > IR_MAX_DIM) return kernel_fail(k, "output_shape on axis %d is out of range", d);
            int64_t total = full - out[d];
            if (total < 0) total = 0;
            lo[d] = upper ? total / 2 : total - total / 2;
        } else {
            lo[d] = np > 0 ? pads[d] : 0;
            int64_t hi = np > 0 ? pads[d + n_sp] : 0;
            if (lo[d] < 0 || hi < 0 || lo[d] > CONV_MAX_WINDOW || hi > CONV_MAX_WINDOW)
                return kernel_fail(k, "pads must be between 0 and 2^20");
            out[d] = full - lo[d] - hi;
        }
        if (out[d] < 0) return kernel_fail(k, "the pads leave a negative output size on axis %d", d);
    }
    int64_t dims[SEAM_MAX_RANK];
    dims[0] = N, dims[1] = M;
    for (int32_t d = 0; d < n_sp; d++) dims[2 + d] = out[d];
    seam_tensor *y = kernel_out(k, 0, x->dtype, x->rank, dims);
    if (!y) return kernel_oom(k);
    if (y->numel == 0) return SEAM_STATUS_OK;
    int64_t kprod = cpu_span(kern, 0, n_sp), in_prod = cpu_span(in, 0, n_sp), out_prod = cpu_span(out, 0, n_sp);
    /* (each at most 2^31, so the column matrix's byte count cannot wrap) */
    if (Cg > 0 &&
        (Mg * kprod > BLAS_MAX || in_prod > BLAS_MAX || Mg * kprod > (INT64_MAX / 16) / (in_prod ? in_prod : 1)))
        return kernel_fail(k, "the convolution is too large");
    bool f64 = x->dtype == SEAM_DTYPE_FLOAT64;
    size_t es = f64 ? 8 : 4;
    fview vx, vw, vy;
    if (!views3(x, wt, y, f64, &vx, &vw, &vy)) return kernel_oom(k);
    void *col = Cg > 0 ? kernel_scratch(k, es * (size_t)(Mg * kprod * in_prod) + 1) : NULL;
    if (Cg > 0 && !col) {
        release(&vx);
        release(&vw);
        release(&vy);
        return kernel_oom(k);
    }
    memset(vy.p, 0, es * (size_t)y->numel);
    for (int64_t n = 0; n < N && Cg > 0; n++)
        for (int64_t g = 0; g < group; g++) {
            /* col [Mg * kprod, in_prod] = W_g^T [Mg * kprod, Cg] * X_g [Cg, in_prod] */
            const char *wg = (const char *)vw.p + (size_t)(g * Cg * Mg * kprod) * es;
            const char *xg = (const char *)vx.p + (size_t)((n * C + g * Cg) * in_prod) * es;
            gemm(k->pool, f64, true, false, Mg * kprod, in_prod, Cg, 1.0, wg, Mg * kprod, xg, in_prod, 0.0, col,
                 in_prod);
            col2im_job j = {col, (char *)vy.p + (size_t)((n * M + g * Mg) * out_prod) * es, f64, n_sp, kprod, in_prod,
                            out_prod, in, out, kern, s, lo, dl};
            seam_parallel_for(k->pool, Mg, 1, col2im_channels, &j);
        }
    if (b)
        for (int64_t n = 0; n < N; n++)
            for (int64_t m = 0; m < M; m++) {
                double bv = cpu_get(b->data, b->dtype, m);
                int64_t at = (n * M + m) * out_prod;
                for (int64_t i = 0; i < out_prod; i++) {
                    if (f64) ((double *)vy.p)[at + i] += bv;
                    else ((float *)vy.p)[at + i] += (float)bv;
                }
            }
    release(&vx);
    release(&vw);
    finish(y, &vy);
    return SEAM_STATUS_OK;
}

const seam_cpu_binding seam_cpu_linalg[] = {
    {"", "MatMul", 1, {run_matmul, check_matmul}},
    {"", "Gemm", 1, {run_gemm, check_matmul}},
    {"", "Conv", 1, {run_conv, check_conv}},
    {"", "ConvTranspose", 1, {run_conv_transpose, check_conv}},
};
const size_t seam_cpu_linalg_count = sizeof(seam_cpu_linalg) / sizeof(seam_cpu_linalg[0]);
