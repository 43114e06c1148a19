/* The packed AVX-512 GEMM (src/backends/cpu/gemm.c) against OpenBLAS's
 * cblas_sgemm on conv-shaped products C[M, N] = W[M, K] col[K, N], single
 * thread, thread CPU time, the two alternating, best of several rounds.
 * OpenBLAS packs both operands every call (as seam's unpacked path does);
 * the packed GEMM gets W packed once, as a session does.
 *
 * usage: OPENBLAS_CORETYPE=SKYLAKEX gemm_bench [M K N ...]
 * (the CLI sets that core type itself; without it OpenBLAS may pick a
 * slower kernel on this CPU). With no shapes, a built-in list from the
 * benchmark set's conv nets. */
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "backends/cpu/gemm.h"

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static float *randoms(int64_t n) {
    float *p = malloc(sizeof(float) * (size_t)(n > 0 ? n : 1));
    if (!p) return NULL;
    for (int64_t i = 0; i < n; i++) p[i] = (float)rand() / (float)RAND_MAX - 0.5f;
    return p;
}

/* (M, K, N): Cout, Cin * kh * kw, OH * OW, from resnet18, densenet121,
 * googlenet, inception_v3, mobilenet_v3_large, mnasnet1_0 at 224x224 */
static const int64_t shapes[][3] = {
    {64, 576, 3136},  {128, 1152, 784}, {256, 2304, 196}, {512, 4608, 49},  {128, 64, 784},   {256, 128, 196},
    {128, 256, 3136}, {32, 1152, 3136}, {32, 1152, 784},  {32, 1152, 196},  {32, 1152, 49},   {128, 512, 784},
    {128, 1024, 196}, {128, 992, 49},   {64, 64, 12544},  {192, 576, 3136}, {96, 864, 784},   {64, 192, 784},
    {288, 48, 1225},  {192, 768, 289},  {320, 1280, 64},  {120, 40, 784},   {480, 80, 196},   {960, 160, 49},
    {40, 120, 784},   {80, 480, 196},   {160, 960, 49},   {1280, 960, 1},   {24, 72, 3136},   {72, 24, 3136},
};

int main(int argc, char **argv) {
    if (!cpu_gemm_available()) {
        fprintf(stderr, "gemm_bench: this CPU has no AVX-512: the packed GEMM does not run here\n");
        return 1;
    }
    const char *core = getenv("OPENBLAS_CORETYPE");
    printf("OPENBLAS_CORETYPE=%s, one thread, thread CPU time, best of 5 rounds\n", core ? core : "(unset)");
    printf("%6s %6s %6s  %10s %10s  %6s\n", "M", "K", "N", "OpenBLAS", "packed", "ratio");
    openblas_set_num_threads(1);
    int n_shapes = argc > 1 ? (argc - 1) / 3 : (int)(sizeof(shapes) / sizeof(shapes[0]));
    for (int s = 0; s < n_shapes; s++) {
        int64_t M = argc > 1 ? atoll(argv[1 + 3 * s]) : shapes[s][0], K = argc > 1 ? atoll(argv[2 + 3 * s]) : shapes[s][1];
        int64_t N = argc > 1 ? atoll(argv[3 + 3 * s]) : shapes[s][2];
        float *a = randoms(M * K), *b = randoms(K * N), *c = randoms(M * N);
        cpu_gemm_packed *pa = a ? cpu_gemm_pack(a, K, M, K) : NULL;
        float *scratch = pa ? malloc(sizeof(float) * cpu_gemm_scratch(M, N, 1)) : NULL;
        if (!a || !b || !c || !pa || !scratch) {
            fprintf(stderr, "gemm_bench: out of memory\n");
            return 1;
        }
        cpu_gemm_b bb = {b, N, NULL};
        double flop = 2.0 * (double)M * (double)N * (double)K;
        /* repeat each timing to about 20 ms */
        int reps = (int)(2e7 / flop * 50) + 1;
        double best_o = 1e30, best_p = 1e30;
        for (int round = 0; round < 5; round++) {
            double t0 = now();
            for (int r = 0; r < reps; r++)
                cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)M, (int)N, (int)K, 1.0f, a, (int)K, b,
                            (int)N, 0.0f, c, (int)N);
            double t1 = now();
            for (int r = 0; r < reps; r++) cpu_gemm_run(NULL, pa, &bb, N, c, N, NULL, NULL, scratch);
            double t2 = now();
            if (t1 - t0 < best_o) best_o = t1 - t0;
            if (t2 - t1 < best_p) best_p = t2 - t1;
        }
        double go = flop * reps / best_o * 1e-9, gp = flop * reps / best_p * 1e-9;
        printf("%6lld %6lld %6lld  %10.1f %10.1f  %6.2f\n", (long long)M, (long long)K, (long long)N, go, gp, gp / go);
        fflush(stdout);
        free(scratch);
        cpu_gemm_packed_free(pa);
        free(a), free(b), free(c);
    }
    return 0;
}
