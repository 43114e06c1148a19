/* CPU kernels: MatMul and Gemm, and the linalg family's table (Conv and
 * ConvTranspose are conv.c's).
 *
 * float32 goes straight to sgemm; float64 to dgemm; float16 and bfloat16
 * are widened to float32 and narrowed back (blas.c). A float32 product of
 * a few rows with a large weight runs on the packed GEMM instead (gemm.c),
 * a constant weight packed once at session creation. Gemm and MatMul apply
 * an activation the executor fused into them to each block of the output
 * as it is written. Integer MatMul and Gemm are plain loops in int64. */
#include <stdlib.h>
#include <string.h>

#include "backends/cpu/cpu.h"
#include "backends/cpu/gemm.h"
#include "backends/cpu/linalg.h"
#include "core/pool.h"

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
 * every call: with fewer than 8 rows (a classifier at batch 1, where
 * OpenBLAS's sgemm with one row falls to a third of the memory's speed),
 * not on a few columns (one panel of 32 computes 10). It first took only
 * weights of 2^20 elements or more; on an AVX2 EPYC, 2 threads, Gemm by a
 * transposed constant weight, smaller ones were 1.0-5.7x faster packed
 * too (1 x 1024 by 1000 x 1024: 197 -> 51 us, mobilenet_v3_small's
 * classifier; 1 x 576 by 1024: 108 -> 28; 1 x 256 by 256: 23 -> 4; 6 x 256
 * by 512: 43 -> 19; 1 x 64 by 128: 3 -> 1), none slower. From 8 rows up the kernel alone wins 1.1x to 1.4x
 * up to some 160 rows (bench/results/cpugemm2.md), but inside the models,
 * 2 threads, it lost: encoder_2x32 2.9 -> 3.7 ms, encoder_1x128 6.0 ->
 * 6.5, mlp_large 13.6 -> 14.9 (bench/RESULTS.md), so those stay on
 * OpenBLAS. M < 0: not known (at check time). */
static bool xw_pays(int64_t M, int64_t K, int64_t N) { return N >= 64 && M < 8 && K * N >= 4096; }

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
            if (row_dim) M = xt->dims[d].v >= 0 && xt->dims[d].v < CPU_BLAS_MAX ? M * xt->dims[d].v : -1;
        }
        if (M > CPU_BLAS_MAX) M = -1;
    }
    if (K < 1 || N < 1 || K > CPU_BLAS_MAX || N > CPU_BLAS_MAX || !xw_pays(M, K, N)) return;
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
            cpu_blas_gemm_post(j->pool, j->f64, false, false, M, N, K, 1.0,
                               (const char *)j->pa + (size_t)(oa * M * K) * es, K,
                               (const char *)j->pb + (size_t)(ob * K * N) * es, N, 0.0,
                               (char *)j->py + (size_t)(t * M * N) * es, N, NULL, j->post);
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
    if (M > CPU_BLAS_MAX || N > CPU_BLAS_MAX || K > CPU_BLAS_MAX)
        return kernel_fail(k, "a matrix dimension exceeds 2^31");
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
    if (a->dtype == SEAM_DTYPE_FLOAT32 && b->rank == 2 && batches <= CPU_BLAS_MAX / (M > 0 ? M : 1) && K > 0 &&
        xw_pays(rows, K, N) && cpu_gemm_available()) {
        if (!xw_product(k, (const float *)a->data, false, K, 1.0f, rows, (const float *)b->data, b->numel, false, K, N,
                        (float *)y->data, false))
            return kernel_oom(k);
        return SEAM_STATUS_OK;
    }
    cpu_fview va = {0}, vb = {0}, vy = {0};
    if (j.fl) {
        if (!cpu_fview3(a, b, y, j.f64, &va, &vb, &vy)) return kernel_oom(k);
        j.pa = va.p, j.pb = vb.p, j.py = vy.p;
    }
    /* B shared by every batch and A not broadcast ([..., M, K] x [K, N], as
     * a linear layer on a sequence is): the batches stack into one product
     * of batches * M rows, which packs B once instead of once a batch */
    bool b_shared = a->rank >= 2 && ba.rank == br;
    for (int32_t d = 0; d < br && b_shared; d++) b_shared = sb[d] == 0 && ba.dims[d] == bdims[d];
    if (j.fl && batches > 1 && b_shared && batches <= CPU_BLAS_MAX / M) {
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
        cpu_fview_release(&va);
        cpu_fview_release(&vb);
        cpu_fview_finish(y, &vy);
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
    if (M > CPU_BLAS_MAX || N > CPU_BLAS_MAX || K > CPU_BLAS_MAX)
        return kernel_fail(k, "a matrix dimension exceeds 2^31");
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
    cpu_fview va, vb, vy;
    if (!cpu_fview3(a, b, y, f64, &va, &vb, &vy)) return kernel_oom(k);
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
    cpu_blas_gemm_post(k->pool, f64, ta, tb, M, N, K, alpha, va.p, ta ? M : K, vb.p, tb ? K : N, cb, vy.p, N, NULL,
                       &k->post);
    cpu_fview_release(&va);
    cpu_fview_release(&vb);
    cpu_fview_finish(y, &vy);
    return SEAM_STATUS_OK;
}

const seam_cpu_binding seam_cpu_linalg[] = {
    {"", "MatMul", 1, {run_matmul, check_matmul}},
    {"", "Gemm", 1, {run_gemm, check_matmul}},
    {"", "Conv", 1, {cpu_conv_run, cpu_conv_check}},
    {"", "ConvTranspose", 1, {cpu_conv_transpose_run, cpu_conv_check}},
};
const size_t seam_cpu_linalg_count = sizeof(seam_cpu_linalg) / sizeof(seam_cpu_linalg[0]);
