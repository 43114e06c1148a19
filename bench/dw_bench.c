/* The depthwise convolution (src/backends/cpu/dwconv.c) on the depthwise
 * conv shapes of mobilenet_v3_large, mnasnet1_0, efficientnet_b0 and
 * mobilenet_v2, with bias and HardSwish fused (what mobilenet_v3 asks;
 * --act relu or none for the others), on
 * 1 and 2 threads, against two roofline bounds:
 *   fma: k*k*C*OH*OW multiply-adds at this machine's measured peak (a loop
 *        of independent 16-lane FMAs on one core, x2 for 2 threads)
 *   mem: reading the input once and writing the output once (a sum over
 *        the input and a fill of the output, timed on one thread)
 *
 *   dw_bench [--reps R] [--act A] < shapes   lines "name C H W k stride pad count"
 *   dw_bench [--reps R] [--act A]            the built-in list
 *
 * The machine may be shared: R rounds, each shape's best round counts;
 * 1 thread is timed in the thread's CPU time, 2 threads in wall time. The
 * "total" rows weigh each shape by how often its model has it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "backends/cpu/dwconv.h"
#include "core/pool.h"

typedef struct shape {
    char name[32];
    int64_t C, H, W, k, s, pad, count;
} shape;

static const shape builtin[] = {
    {"mobilenet_v3_large", 16, 112, 112, 3, 1, 1, 1}, {"mobilenet_v3_large", 64, 112, 112, 3, 2, 1, 1},
    {"mobilenet_v3_large", 72, 56, 56, 3, 1, 1, 1},   {"mobilenet_v3_large", 72, 56, 56, 5, 2, 2, 1},
    {"mobilenet_v3_large", 120, 28, 28, 5, 1, 2, 2},  {"mobilenet_v3_large", 240, 28, 28, 3, 2, 1, 1},
    {"mobilenet_v3_large", 200, 14, 14, 3, 1, 1, 1},  {"mobilenet_v3_large", 184, 14, 14, 3, 1, 1, 2},
    {"mobilenet_v3_large", 480, 14, 14, 3, 1, 1, 1},  {"mobilenet_v3_large", 672, 14, 14, 3, 1, 1, 1},
    {"mobilenet_v3_large", 672, 14, 14, 5, 2, 2, 1},  {"mobilenet_v3_large", 960, 7, 7, 5, 1, 2, 2},
    {"mnasnet1_0", 32, 112, 112, 3, 1, 1, 1},         {"mnasnet1_0", 48, 112, 112, 3, 2, 1, 1},
    {"mnasnet1_0", 72, 56, 56, 3, 1, 1, 2},           {"mnasnet1_0", 72, 56, 56, 5, 2, 2, 1},
    {"mnasnet1_0", 120, 28, 28, 5, 1, 2, 2},          {"mnasnet1_0", 240, 28, 28, 5, 2, 2, 1},
    {"mnasnet1_0", 480, 14, 14, 5, 1, 2, 2},          {"mnasnet1_0", 480, 14, 14, 3, 1, 1, 1},
    {"mnasnet1_0", 576, 14, 14, 3, 1, 1, 1},          {"mnasnet1_0", 576, 14, 14, 5, 2, 2, 1},
    {"mnasnet1_0", 1152, 7, 7, 5, 1, 2, 3},           {"mnasnet1_0", 1152, 7, 7, 3, 1, 1, 1},
    {"efficientnet_b0", 32, 112, 112, 3, 1, 1, 1},    {"efficientnet_b0", 96, 112, 112, 3, 2, 1, 1},
    {"efficientnet_b0", 144, 56, 56, 3, 1, 1, 1},     {"efficientnet_b0", 144, 56, 56, 5, 2, 2, 1},
    {"efficientnet_b0", 240, 28, 28, 5, 1, 2, 1},     {"efficientnet_b0", 240, 28, 28, 3, 2, 1, 1},
    {"efficientnet_b0", 480, 14, 14, 3, 1, 1, 2},     {"efficientnet_b0", 480, 14, 14, 5, 1, 2, 1},
    {"efficientnet_b0", 672, 14, 14, 5, 1, 2, 2},     {"efficientnet_b0", 672, 14, 14, 5, 2, 2, 1},
    {"efficientnet_b0", 1152, 7, 7, 5, 1, 2, 3},      {"efficientnet_b0", 1152, 7, 7, 3, 1, 1, 1},
    {"mobilenet_v2", 32, 112, 112, 3, 1, 1, 1},       {"mobilenet_v2", 96, 112, 112, 3, 2, 1, 1},
    {"mobilenet_v2", 144, 56, 56, 3, 1, 1, 1},        {"mobilenet_v2", 144, 56, 56, 3, 2, 1, 1},
    {"mobilenet_v2", 192, 28, 28, 3, 1, 1, 2},        {"mobilenet_v2", 192, 28, 28, 3, 2, 1, 1},
    {"mobilenet_v2", 384, 14, 14, 3, 1, 1, 4},        {"mobilenet_v2", 576, 14, 14, 3, 1, 1, 2},
    {"mobilenet_v2", 576, 14, 14, 3, 2, 1, 1},        {"mobilenet_v2", 960, 7, 7, 3, 1, 1, 3},
};

static double now(clockid_t clk) {
    struct timespec t;
    clock_gettime(clk, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec * 1e-6;
}

static double frand(uint64_t *st) {
    *st ^= *st << 13, *st ^= *st >> 7, *st ^= *st << 17;
    return (double)(*st >> 11) / (double)(1ull << 53);
}

/* One core's peak multiply-adds per ms: 12 independent 16-lane chains. */
typedef float v16 __attribute__((vector_size(64)));
__attribute__((target("avx512f,fma"), noinline)) static double fma_peak(void) {
    v16 a[12], m = {0}, c = {0};
    for (int i = 0; i < 16; i++) m[i] = 0.999f, c[i] = 1e-3f;
    for (int i = 0; i < 12; i++) a[i] = m * (float)(i + 1);
    int64_t iters = 1 << 22;
    double t0 = now(CLOCK_THREAD_CPUTIME_ID);
    for (int64_t r = 0; r < iters; r++) {
        __asm__ volatile("" : "+v"(m));
        for (int i = 0; i < 12; i++) a[i] = a[i] * m + c;
    }
    double t = now(CLOCK_THREAD_CPUTIME_ID) - t0;
    float s = 0;
    for (int i = 0; i < 12; i++) s += a[i][0];
    if (s == 12345.0f) printf("%f\n", s); /* keeps the loop */
    return (double)iters * 12 * 16 / t;
}

/* ms to read n floats (a sum, 16 partial sums) and write m floats (a
 * fill), best of reps */
static double mem_time(const float *src, float *dst, int64_t n, int64_t m, int reps) {
    double best = 1e30;
    for (int r = 0; r < reps; r++) {
        double t0 = now(CLOCK_THREAD_CPUTIME_ID);
        float acc[16] = {0};
        for (int64_t i = 0; i + 16 <= n; i += 16)
            for (int l = 0; l < 16; l++) acc[l] += src[i + l];
        float s = 0;
        for (int l = 0; l < 16; l++) s += acc[l];
        for (int64_t i = 0; i < m; i++) dst[i] = s;
        double t = now(CLOCK_THREAD_CPUTIME_ID) - t0;
        if (t < best) best = t;
    }
    return best;
}

int main(int argc, char **argv) {
    int reps = 9;
    act_params post = {ACT_HARD_SWISH, 0, 0, 0, 0, 0};
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--reps") == 0 && i + 1 < argc) reps = atoi(argv[++i]);
        else if (strcmp(argv[i], "--act") == 0 && i + 1 < argc && strcmp(argv[i + 1], "relu") == 0)
            post.kind = ACT_RELU, i++;
        else if (strcmp(argv[i], "--act") == 0 && i + 1 < argc && strcmp(argv[i + 1], "none") == 0)
            post.kind = ACT_NONE, i++;
        else if (strcmp(argv[i], "--act") == 0 && i + 1 < argc && strcmp(argv[i + 1], "hardswish") == 0) i++;
        else {
            fprintf(stderr, "usage: dw_bench [--reps R] [--act hardswish|relu|none] [< shapes]\n");
            return 2;
        }
    }
    if (reps < 1) reps = 1;
    shape *ss = NULL;
    size_t n = 0;
    if (!isatty(0)) {
        shape s;
        while (scanf("%31s %ld %ld %ld %ld %ld %ld %ld", s.name, &s.C, &s.H, &s.W, &s.k, &s.s, &s.pad, &s.count) == 8) {
            ss = realloc(ss, sizeof *ss * (n + 1));
            if (!ss) return 1;
            ss[n++] = s;
        }
    }
    if (n == 0) {
        n = sizeof builtin / sizeof builtin[0];
        ss = malloc(sizeof builtin);
        if (!ss) return 1;
        memcpy(ss, builtin, sizeof builtin);
    }
    seam_pool *pools[2] = {seam_pool_create(1), seam_pool_create(2)};
    if (!pools[0] || !pools[1]) return 1;
    double peak = __builtin_cpu_supports("avx512f") ? fma_peak() : 0;
    printf("peak: %.1f GFMA/s on one core\n\n", peak * 1e-6);
    printf("| model | C | H x W | k | s | n | 1t us | 2t us | fma-bound 1t us | mem-bound 1t us | 1t / bound |\n");
    printf("|---|---|---|---|---|---|---|---|---|---|---|\n");
    char last[32] = "";
    double tot[5] = {0};
    for (size_t si = 0; si <= n; si++) {
        if (si == n || (last[0] && strcmp(last, ss[si].name) != 0)) {
            printf("| %s total | | | | | | %.0f | %.0f | %.0f | %.0f | %.2f |\n", last, tot[0], tot[1], tot[2], tot[3],
                   tot[0] / tot[4]);
            memset(tot, 0, sizeof tot);
        }
        if (si == n) break;
        const shape *s = &ss[si];
        snprintf(last, sizeof last, "%s", s->name);
        conv_geom g;
        memset(&g, 0, sizeof g);
        g.n = 2;
        for (int d = 0; d < 2; d++) {
            g.in[d] = d ? s->W : s->H, g.kernel[d] = s->k, g.stride[d] = s->s, g.dil[d] = 1;
            g.pad_lo[d] = g.pad_hi[d] = s->pad;
            g.out[d] = (g.in[d] + 2 * s->pad - s->k) / s->s + 1;
        }
        int64_t nx = s->C * s->H * s->W, ny = s->C * g.out[0] * g.out[1];
        float *x = malloc(sizeof(float) * (size_t)nx), *w = malloc(sizeof(float) * (size_t)(s->C * s->k * s->k));
        float *b = malloc(sizeof(float) * (size_t)s->C), *y = malloc(sizeof(float) * (size_t)(ny > nx ? ny : nx));
        uint64_t st = 88172645463325252ull;
        for (int64_t i = 0; i < nx; i++) x[i] = (float)frand(&st) - 0.5f;
        for (int64_t i = 0; i < s->C * s->k * s->k; i++) w[i] = (float)frand(&st) - 0.5f;
        for (int64_t i = 0; i < s->C; i++) b[i] = (float)frand(&st) - 0.5f;
        double best[2] = {1e30, 1e30};
        for (int t = 0; t < 2; t++) {
            cpu_dw_plan p;
            if (!cpu_dw_plan_make(&p, &g, 1, s->C, s->C, t + 1)) return 1;
            void *scratch = malloc(cpu_dw_scratch(&p));
            clockid_t clk = t == 0 ? CLOCK_THREAD_CPUTIME_ID : CLOCK_MONOTONIC;
            cpu_dw_run(&p, pools[t], x, w, b, &post, y, scratch); /* warm */
            for (int r = 0; r < reps; r++) {
                int inner = ny < 100000 ? 8 : 2;
                double t0 = now(clk);
                for (int i = 0; i < inner; i++) cpu_dw_run(&p, pools[t], x, w, b, &post, y, scratch);
                double dt = (now(clk) - t0) / inner;
                if (dt < best[t]) best[t] = dt;
            }
            free(scratch);
        }
        double fma_us = peak > 0 ? (double)(ny * s->k * s->k) / peak * 1e3 : 0;
        float *src = malloc(sizeof(float) * (size_t)nx), *dst = malloc(sizeof(float) * (size_t)ny);
        memcpy(src, x, sizeof(float) * (size_t)nx);
        double mem_us = mem_time(src, dst, nx, ny, reps) * 1e3;
        double bound = fma_us > mem_us ? fma_us : mem_us;
        printf("| %s | %ld | %ldx%ld | %ld | %ld | %ld | %.1f | %.1f | %.1f | %.1f | %.1f |\n", s->name, s->C, s->H,
               s->W, s->k, s->s, s->count, best[0] * 1e3, best[1] * 1e3, fma_us, mem_us, best[0] * 1e3 / bound);
        tot[0] += best[0] * 1e3 * s->count, tot[1] += best[1] * 1e3 * s->count;
        tot[2] += fma_us * s->count, tot[3] += mem_us * s->count, tot[4] += bound * s->count;
        free(x), free(w), free(b), free(y), free(src), free(dst);
        fflush(stdout);
    }
    seam_pool_free(pools[0]);
    seam_pool_free(pools[1]);
    free(ss);
    return 0;
}
