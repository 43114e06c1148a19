/* The packed GEMM's two newer forms against OpenBLAS's cblas_sgemm, one
 * thread, thread CPU time, the forms alternating round by round, best of
 * several rounds (the machine may be shared: minima, not means).
 *
 *   conv M K N   a 1x1 conv's product W[M, K] X[K, N] (N pixels): OpenBLAS,
 *                the packed GEMM packing X into panels, and the packed GEMM
 *                reading X in place (no packing pass)
 *   xw M K N     a linear layer Y[M, N] = X[M, K] W[N, K]^T (torch's Linear,
 *                Gemm transB = 1): OpenBLAS, and W packed once (cpu_gemm_xw_run)
 *
 * usage: OPENBLAS_CORETYPE=SKYLAKEX gemm2_bench [conv|xw M K N]...
 * With no arguments, built-in lists from the benchmark set's models. */
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backends/cpu/gemm.h"

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static float *randoms(int64_t n) {
    float *p = malloc(sizeof(float) * (size_t)(n > 0 ? n : 1));
    for (int64_t i = 0; p && i < n; i++) p[i] = (float)rand() / (float)RAND_MAX - 0.5f;
    return p;
}

/* 1x1 convs (M = outputs, K = inputs, N = pixels) of mobilenet_v3_large,
 * mnasnet1_0, efficientnet_b0 and mobilenet_v2 */
static const int64_t conv_shapes[][3] = {
    {16, 16, 12544}, {64, 16, 12544}, {96, 16, 12544}, {16, 32, 12544}, {24, 64, 3136},  {72, 24, 3136},
    {24, 72, 3136},  {144, 24, 3136}, {24, 144, 3136}, {120, 40, 784},  {240, 40, 784},  {40, 120, 784},
    {40, 72, 784},   {192, 32, 784},  {32, 192, 784},  {480, 80, 196},  {80, 480, 196},  {184, 80, 196},
    {80, 184, 196},  {672, 112, 196}, {112, 672, 196}, {384, 64, 196},  {64, 384, 196},  {960, 160, 49},
    {160, 960, 49},  {1152, 192, 49}, {192, 1152, 49}, {1280, 320, 49},
};
/* linear layers (M = rows, K = inputs, N = outputs) of mlp_large, the
 * encoders, vit_b_16, the classifiers and the LSTM/GRU heads */
static const int64_t xw_shapes[][3] = {
    {64, 1024, 4096}, {64, 4096, 4096}, {64, 4096, 1024}, {64, 256, 256},  {64, 256, 1024},  {64, 1024, 256},
    {64, 256, 768},   {128, 256, 1024}, {128, 1024, 256}, {197, 768, 768}, {197, 768, 3072}, {197, 3072, 768},
    {197, 768, 2304}, {1, 1280, 1000},  {1, 960, 1280},   {1, 768, 1000},  {1, 256, 10},     {8, 512, 512},
};

#define ROUNDS 7

static void run_conv(int64_t M, int64_t K, int64_t N) {
    float *a = randoms(M * K), *b = randoms(K * N), *c = randoms(M * N);
    cpu_gemm_packed *pa = a ? cpu_gemm_pack(a, K, M, K) : NULL;
    float *scratch = pa ? malloc(sizeof(float) * cpu_gemm_scratch(M, N, 1)) : NULL;
    if (!b || !c || !scratch) {
        fprintf(stderr, "gemm2_bench: out of memory\n");
        exit(1);
    }
    cpu_gemm_b bb = {b, N, NULL};
    double flop = 2.0 * (double)M * (double)N * (double)K;
    int reps = (int)(4e7 / flop * 50) + 1;
    double best[3] = {1e30, 1e30, 1e30};
    for (int round = 0; round < ROUNDS; round++)
        for (int f = 0; f < 3; f++) {
            double t0 = now();
            for (int r = 0; r < reps; r++)
                if (f == 0)
                    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)M, (int)N, (int)K, 1.0f, a, (int)K, b,
                                (int)N, 0.0f, c, (int)N);
                else
                    cpu_gemm_run_mode(NULL, pa, &bb, N, c, N, NULL, NULL, scratch,
                                      f == 1 ? CPU_GEMM_B_PACKED : CPU_GEMM_B_DIRECT);
            double t = now() - t0;
            if (t < best[f]) best[f] = t;
        }
    double g[3];
    for (int f = 0; f < 3; f++) g[f] = flop * reps / best[f] * 1e-9;
    printf("conv %5lld %5lld %6lld  %8.1f %8.1f %8.1f  %6.2f %6.2f\n", (long long)M, (long long)K, (long long)N, g[0],
           g[1], g[2], g[2] / g[0], g[2] / g[1]);
    fflush(stdout);
    free(scratch), cpu_gemm_packed_free(pa), free(a), free(b), free(c);
}

static void run_xw(int64_t M, int64_t K, int64_t N) {
    float *x = randoms(M * K), *w = randoms(N * K), *c = randoms(M * N);
    cpu_gemm_wpacked *pw = w ? cpu_gemm_wpack(w, K, N, true) : NULL;
    float *scratch = pw ? malloc(sizeof(float) * cpu_gemm_xw_scratch(M, N, 1)) : NULL;
    if (!x || !c || !scratch) {
        fprintf(stderr, "gemm2_bench: out of memory\n");
        exit(1);
    }
    cpu_gemm_x xx = {x, K, false, 1.0f};
    double flop = 2.0 * (double)M * (double)N * (double)K;
    int reps = (int)(4e7 / flop * 50) + 1;
    double best[2] = {1e30, 1e30};
    for (int round = 0; round < ROUNDS; round++)
        for (int f = 0; f < 2; f++) {
            double t0 = now();
            for (int r = 0; r < reps; r++)
                if (f == 0)
                    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)M, (int)N, (int)K, 1.0f, x, (int)K, w,
                                (int)K, 0.0f, c, (int)N);
                else
                    cpu_gemm_xw_run(NULL, &xx, M, pw, c, N, false, NULL, scratch);
            double t = now() - t0;
            if (t < best[f]) best[f] = t;
        }
    double g0 = flop * reps / best[0] * 1e-9, g1 = flop * reps / best[1] * 1e-9;
    printf("xw   %5lld %5lld %6lld  %8.1f %8.1f %8s  %6.2f\n", (long long)M, (long long)K, (long long)N, g0, g1, "", g1 / g0);
    fflush(stdout);
    free(scratch), cpu_gemm_wpacked_free(pw), free(x), free(w), free(c);
}

int main(int argc, char **argv) {
    if (!cpu_gemm_available()) {
        fprintf(stderr, "gemm2_bench: this CPU has no AVX-512: the packed GEMM does not run here\n");
        return 1;
    }
    const char *core = getenv("OPENBLAS_CORETYPE");
    printf("OPENBLAS_CORETYPE=%s, one thread, thread CPU time, best of %d rounds, GF/s\n", core ? core : "(unset)",
           ROUNDS);
    printf("form     M     K      N  OpenBLAS   packed   direct  dir/OB dir/packed\n");
    openblas_set_num_threads(1);
    if (argc == 1) {
        for (size_t s = 0; s < sizeof(conv_shapes) / sizeof(conv_shapes[0]); s++)
            run_conv(conv_shapes[s][0], conv_shapes[s][1], conv_shapes[s][2]);
        for (size_t s = 0; s < sizeof(xw_shapes) / sizeof(xw_shapes[0]); s++)
            run_xw(xw_shapes[s][0], xw_shapes[s][1], xw_shapes[s][2]);
        return 0;
    }
    if ((argc - 1) % 4) {
        fprintf(stderr, "usage: gemm2_bench [conv|xw M K N]...\n");
        return 2;
    }
    for (int i = 1; i + 3 < argc; i += 4) {
        int64_t M = atoll(argv[i + 1]), K = atoll(argv[i + 2]), N = atoll(argv[i + 3]);
        if (M < 1 || K < 1 || N < 1) {
            fprintf(stderr, "gemm2_bench: sizes must be positive\n");
            return 2;
        }
        if (strcmp(argv[i], "conv") == 0) run_conv(M, K, N);
        else if (strcmp(argv[i], "xw") == 0) run_xw(M, K, N);
        else {
            fprintf(stderr, "usage: gemm2_bench [conv|xw M K N]...\n");
            return 2;
        }
    }
    return 0;
}
