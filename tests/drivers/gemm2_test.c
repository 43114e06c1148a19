/* The packed GEMM's newer entry points (src/backends/cpu/gemm.c) against
 * products in float64 written here:
 *
 * 1. cpu_gemm_run_mode with a plain B read in place (a 1x1 conv's input),
 *    packed per block, and as cpu_gemm_direct_b picks: the three bitwise
 *    equal, on row panels and column tiles with tails, depths of 1, under,
 *    at and over one 256-deep block, with and without bias, a fused Relu
 *    or HardSwish.
 * 2. cpu_gemm_xw_run (W packed once, X packed as it goes): W as [K, N] and
 *    as [N, K], X as [M, K] and as [K, M], alpha, accumulating onto C or
 *    not, K = 0, one and two rows (the matrix-vector kernel), column
 *    counts around the 32-column panels and the 4-panel groups.
 * Each on 1, 2 and 3 threads: the same bits. The error bound is
 * 1e-6 * sqrt(K) times the largest |term sum| of the row (float32 sums).
 * Exits 0 without testing anything (and says so) on a CPU without AVX-512. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "act_ref.h"
#include "backends/cpu/gemm.h"
#include "core/pool.h"

static int failures, checks;

static uint64_t rng_state = 0x2545f4914f6cdd1dull;
static float urand(void) { /* [-1, 1) */
    rng_state ^= rng_state << 13, rng_state ^= rng_state >> 7, rng_state ^= rng_state << 17;
    return (float)((double)(rng_state >> 11) / (double)(1ull << 52) - 1.0);
}

static float *randoms(int64_t n) {
    float *p = malloc(sizeof(float) * (size_t)(n > 0 ? n : 1));
    if (!p) {
        fprintf(stderr, "gemm2_test: out of memory\n");
        exit(1);
    }
    for (int64_t i = 0; i < n; i++) p[i] = urand();
    return p;
}

/* got [m, n] (rows of ldc) against want [m, n] (float64, rows of n), with
 * scale[i] the row's sum of |terms| */
static void compare(const char *what, const float *got, int64_t ldc, const double *want, const double *scale, int64_t m,
                    int64_t n, int64_t k) {
    checks++;
    double tol = 1e-6 * sqrt((double)(k > 0 ? k : 1));
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            double e = fabs((double)got[i * ldc + j] - want[i * n + j]);
            if (!(e <= tol * (scale[i * n + j] + 1e-30) + 1e-30)) {
                printf("FAIL %s: C[%lld, %lld] = %.9g, want %.9g\n", what, (long long)i, (long long)j,
                       (double)got[i * ldc + j], want[i * n + j]);
                failures++;
                return;
            }
        }
}

static void same_bits(const char *what, const float *a, const float *b, size_t n) {
    checks++;
    if (memcmp(a, b, n * sizeof(float)) != 0) {
        printf("FAIL %s: the results differ in their bits\n", what);
        failures++;
    }
}

static seam_pool *pools[3];

/* 1: W [m, k] packed, B [k, n] plain */
static void conv_case(int64_t m, int64_t k, int64_t n, bool with_bias, act_kind kind) {
    char what[160];
    snprintf(what, sizeof what, "run_mode m=%lld k=%lld n=%lld bias=%d act=%d", (long long)m, (long long)k, (long long)n,
             with_bias, (int)kind);
    float *a = randoms(m * k), *b = randoms(k * n), *bias = randoms(m);
    act_params post = {kind, 0, 0, 0, 0, 0};
    double *want = malloc(sizeof(double) * (size_t)(m * n)), *scale = malloc(sizeof(double) * (size_t)(m * n));
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            double s = with_bias ? bias[i] : 0, sa = fabs(s);
            for (int64_t q = 0; q < k; q++) s += (double)a[i * k + q] * b[q * n + j], sa += fabs((double)a[i * k + q] * b[q * n + j]);
            want[i * n + j] = act_ref(&post, s), scale[i * n + j] = sa;
        }
    cpu_gemm_packed *pa = cpu_gemm_pack(a, k, m, k);
    float *first = NULL;
    for (int mode = CPU_GEMM_B_AUTO; mode <= CPU_GEMM_B_DIRECT; mode++)
        for (int t = 0; t < 3; t++) {
            float *c = malloc(sizeof(float) * (size_t)(m * n));
            float *scratch = malloc(sizeof(float) * cpu_gemm_scratch(m, n, t + 1));
            for (int64_t i = 0; i < m * n; i++) c[i] = NAN; /* every element must be written */
            cpu_gemm_run_mode(pools[t], pa, &(cpu_gemm_b){b, n, NULL}, n, c, n, with_bias ? bias : NULL, &post, scratch,
                              mode);
            if (!first) {
                compare(what, c, n, want, scale, m, n, k);
                first = c;
            } else {
                char w2[200];
                snprintf(w2, sizeof w2, "%s mode %d, %d threads", what, mode, t + 1);
                same_bits(w2, first, c, (size_t)(m * n));
                free(c);
            }
            free(scratch);
        }
    free(first), cpu_gemm_packed_free(pa), free(a), free(b), free(bias), free(want), free(scale);
}

/* 2: C = post(alpha op(X) W (+ C)) */
static void xw_case(int64_t m, int64_t k, int64_t n, bool tx, bool tw, float alpha, bool acc, act_kind kind) {
    char what[200];
    snprintf(what, sizeof what, "xw m=%lld k=%lld n=%lld tx=%d tw=%d alpha=%g acc=%d act=%d", (long long)m,
             (long long)k, (long long)n, tx, tw, (double)alpha, acc, (int)kind);
    float *x = randoms(m * k), *w = randoms(k * n), *c0 = randoms(m * n);
    act_params post = {kind, 0, 0, 0, 0, 0};
    double *want = malloc(sizeof(double) * (size_t)(m * n + 1)), *scale = malloc(sizeof(double) * (size_t)(m * n + 1));
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            double s = 0, sa = acc ? fabs(c0[i * n + j]) : 0;
            for (int64_t q = 0; q < k; q++) {
                double xv = alpha * (tx ? x[q * m + i] : x[i * k + q]), wv = tw ? w[j * k + q] : w[q * n + j];
                s += xv * wv, sa += fabs(xv * wv);
            }
            want[i * n + j] = act_ref(&post, s + (acc ? c0[i * n + j] : 0)), scale[i * n + j] = sa;
        }
    cpu_gemm_wpacked *pw = cpu_gemm_wpack(w, k, n, tw);
    cpu_gemm_x xv = {x, tx ? m : k, tx, alpha};
    float *first = NULL;
    for (int t = 0; t < 3; t++) {
        float *c = malloc(sizeof(float) * (size_t)(m * n + 1));
        float *scratch = malloc(sizeof(float) * cpu_gemm_xw_scratch(m, n, t + 1));
        for (int64_t i = 0; i < m * n; i++) c[i] = acc ? c0[i] : NAN;
        cpu_gemm_xw_run(pools[t], &xv, m, pw, c, n, acc, &post, scratch);
        if (!first) {
            compare(what, c, n, want, scale, m, n, k);
            first = c;
        } else {
            char w2[240];
            snprintf(w2, sizeof w2, "%s, %d threads", what, t + 1);
            same_bits(w2, first, c, (size_t)(m * n));
            free(c);
        }
        free(scratch);
    }
    free(first), cpu_gemm_wpacked_free(pw), free(x), free(w), free(c0), free(want), free(scale);
}

int main(void) {
    if (!cpu_gemm_available()) {
        printf("gemm2_test: no AVX-512 here (or SEAM_CPU_PACKED_GEMM=0): nothing to test\n");
        return 0;
    }
    for (int t = 0; t < 3; t++) pools[t] = seam_pool_create(t + 1);
    /* 1. B plain: tails in rows (13, 29, 97) and columns (1, 17, 143, 600),
     * depths 1, 37, 256, 300 (two blocks); many rows over few columns (the
     * packed B of cpu_gemm_direct_b) */
    static const int64_t conv[][3] = {{16, 16, 600}, {29, 37, 143}, {97, 40, 323}, {45, 300, 207}, {13, 1, 17},
                                      {64, 256, 65}, {300, 200, 49}, {1, 8, 1},    {30, 20, 2000}};
    for (size_t s = 0; s < sizeof conv / sizeof conv[0]; s++) {
        conv_case(conv[s][0], conv[s][1], conv[s][2], true, ACT_NONE);
        conv_case(conv[s][0], conv[s][1], conv[s][2], s % 2 == 0, s % 2 ? ACT_RELU : ACT_HARD_SWISH);
    }
    /* 2. X W: one and two rows (4-panel groups and the rest), rows across
     * a 14-row panel and a 112-row block, K = 0, 1, 255, 256, 257, 600 */
    static const int64_t xw[][3] = {{1, 300, 1000}, {2, 257, 129},  {1, 16, 31},  {3, 64, 130}, {13, 255, 33},
                                    {15, 256, 64},  {150, 600, 97}, {8, 0, 40},   {9, 1, 1},    {120, 100, 300}};
    for (size_t s = 0; s < sizeof xw / sizeof xw[0]; s++) {
        int64_t m = xw[s][0], k = xw[s][1], n = xw[s][2];
        xw_case(m, k, n, false, false, 1.0f, false, ACT_NONE);
        xw_case(m, k, n, false, true, 1.0f, true, ACT_RELU);
        xw_case(m, k, n, true, true, 0.5f, false, ACT_HARD_SWISH);
        xw_case(m, k, n, true, false, -2.0f, true, ACT_NONE);
    }
    for (int t = 0; t < 3; t++) seam_pool_free(pools[t]);
    printf("gemm2_test: %d checks, %d failures\n", checks, failures);
    return failures ? 1 : 0;
}
