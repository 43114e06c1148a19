/*
 * The dnnl backend binds a subgraph's boundary values to the caller's
 * buffers at each run (no copy): its compiled steps keep their oneDNN
 * memory objects and arguments, and only the boundary memories are
 * pointed at the run's buffers. This checks that a run reads the input
 * buffer of that run and writes the output buffer of that run, when the
 * caller moves to other buffers between runs, overwrites a buffer it gave
 * before, or gives output buffers of its own; with oneDNN on 1 and on 2
 * threads. Reference: the same model on seam's CPU kernels, on the same
 * data (within 1e-4 of the output's scale).
 *
 * The model is tiny_model.h's: two dnnl subgraphs around a CPU Neg, so
 * both a subgraph's input from the caller and its input from the CPU
 * executor's memory, and outputs to the caller and to the CPU, are bound
 * per run.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "seam.h"
#include "seam_backend.h"
#include "tiny_model.h"

#define N_IN (TINY_C * TINY_HW * TINY_HW)
#define N_Y 5
#define N_S (8 * (TINY_HW / 2) * (TINY_HW / 2))

static const int64_t x_dims[4] = {1, TINY_C, TINY_HW, TINY_HW};

static seam_session *make_session(seam_context *ctx, const uint8_t *bytes, size_t n, const char *dnnl_option,
                                  seam_model **out) {
    seam_model *m = NULL;
    seam_session *s = NULL;
    const seam_backend *targets[1] = {seam_backend_dnnl()};
    if (seam_model_load_buffer(ctx, bytes, n, NULL, &m)) return NULL;
    if (dnnl_option) {
        seam_partition_options po = seam_partition_defaults();
        po.targets = targets;
        po.n_targets = 1;
        po.placement = SEAM_PLACEMENT_CAPABILITY; /* (by cost, a model this small stays on the CPU) */
        seam_plan *plan = NULL;
        const char *const options[1] = {dnnl_option};
        if (seam_model_fold(m, NULL) || seam_partition(m, &po, &plan) || seam_plan_apply(m, plan, targets, 1, options, 1)) {
            fprintf(stderr, "partition: %s\n", seam_context_last_error(ctx));
            seam_plan_free(plan);
            seam_model_free(m);
            return NULL;
        }
        seam_plan_free(plan);
    }
    seam_session_options so = {0};
    so.n_threads = 2;
    so.targets = targets;
    so.n_targets = dnnl_option ? 1 : 0;
    if (seam_session_create(m, &so, &s)) {
        fprintf(stderr, "session: %s\n", seam_context_last_error(ctx));
        seam_model_free(m);
        return NULL;
    }
    *out = m;
    return s;
}

static void fill(float *x, uint32_t seed) {
    for (int32_t i = 0; i < N_IN; i++) {
        seed = seed * 1664525u + 1013904223u;
        x[i] = (float)((seed >> 8) & 0xffff) / 32768.0f - 1.0f;
    }
}

/* Runs s on x; the output k's data (and, when out is given, copies it). */
static const float *run(seam_session *s, const float *x, int32_t k, float *copy, size_t n) {
    if (seam_session_set_input(s, "x", SEAM_DTYPE_FLOAT32, 4, x_dims, x) || seam_session_run(s)) return NULL;
    seam_tensor_view v;
    if (seam_session_output(s, k, &v) || v.nbytes != n * sizeof(float)) return NULL;
    if (copy) memcpy(copy, v.data, v.nbytes);
    return v.data;
}

/* got within 1e-4 of want's scale (max |want|). */
static bool close_to(const float *got, const float *want, size_t n) {
    double scale = 0, worst = 0;
    for (size_t i = 0; i < n; i++) scale = fmax(scale, fabs(want[i]));
    for (size_t i = 0; i < n; i++) worst = fmax(worst, fabs((double)got[i] - want[i]));
    if (worst > 1e-4 * (scale > 0 ? scale : 1)) {
        fprintf(stderr, "  off by %g (scale %g)\n", worst, scale);
        return false;
    }
    return scale > 0; /* an all-zero output would not tell buffers apart */
}

static void check_option(seam_context *ctx, const uint8_t *bytes, size_t n, seam_session *cpu, const char *option) {
    seam_model *m = NULL;
    seam_session *s = make_session(ctx, bytes, n, option, &m);
    CHECK(s != NULL);
    if (!s) return;
    printf("dnnl %s\n", option);
    /* the plan put its subgraphs on dnnl (each logs what it compiled) */
    CHECK_CONTAINS(seam_session_log(s), "(dnnl): ");
    float *a = malloc(sizeof(float) * N_IN), *b = malloc(sizeof(float) * N_IN);
    float want_y[N_Y], want_s[N_S], got_y[N_Y], got_s[N_S];
    CHECK(a && b);
    if (!a || !b) goto done;
    /* three inputs: in a, then in b (another address), then in a again
     * after the caller overwrote it */
    const uint32_t seeds[3] = {1, 2, 3};
    float *bufs[3] = {a, b, a};
    for (int32_t r = 0; r < 3; r++) {
        fill(bufs[r], seeds[r]);
        CHECK(run(cpu, bufs[r], 0, want_y, N_Y) && run(cpu, bufs[r], 1, want_s, N_S));
        CHECK(run(s, bufs[r], 0, got_y, N_Y) && run(s, bufs[r], 1, got_s, N_S));
        CHECK(close_to(got_y, want_y, N_Y));
        CHECK(close_to(got_s, want_s, N_S));
    }
    /* output buffers of the caller's, a different one at each run: each
     * run writes its own, and leaves the one given before as it was */
    float y1[N_Y], y2[N_Y], s1[N_S], s2[N_S];
    for (int32_t r = 0; r < 4; r++) {
        float *yb = r % 2 ? y2 : y1, *sb = r % 2 ? s2 : s1, *other = r % 2 ? y1 : y2;
        float before[N_Y];
        memcpy(before, other, sizeof(before));
        fill(a, 10 + (uint32_t)r);
        CHECK(run(cpu, a, 0, want_y, N_Y) && run(cpu, a, 1, want_s, N_S));
        CHECK(seam_session_set_output_buffer(s, "y", yb, sizeof(y1)) == SEAM_STATUS_OK);
        CHECK(seam_session_set_output_buffer(s, "s", sb, sizeof(s1)) == SEAM_STATUS_OK);
        const float *yd = run(s, a, 0, NULL, N_Y);
        const float *sd = run(s, a, 1, NULL, N_S);
        CHECK(yd == yb && sd == sb);
        CHECK(close_to(yb, want_y, N_Y));
        CHECK(close_to(sb, want_s, N_S));
        if (r) CHECK(memcmp(before, other, sizeof(before)) == 0);
    }
    /* a buffer too small: the run writes session memory instead */
    float tiny[1] = {12345.0f};
    CHECK(seam_session_set_output_buffer(s, "y", tiny, sizeof(tiny)) == SEAM_STATUS_OK);
    CHECK(seam_session_set_output_buffer(s, "s", NULL, 0) == SEAM_STATUS_OK);
    fill(b, 20);
    CHECK(run(cpu, b, 0, want_y, N_Y));
    const float *yd = run(s, b, 0, got_y, N_Y);
    CHECK(yd && yd != tiny && tiny[0] == 12345.0f);
    CHECK(close_to(got_y, want_y, N_Y));
done:
    free(a);
    free(b);
    seam_session_free(s);
    seam_model_free(m);
}

int main(void) {
    seam_context *ctx = NULL;
    CHECK(seam_context_create(&ctx) == SEAM_STATUS_OK);
    if (!ctx) CHECK_DONE();
    size_t n = 0;
    uint8_t *bytes = tiny_model_bytes(&n);
    seam_model *cm = NULL;
    seam_session *cpu = make_session(ctx, bytes, n, NULL, &cm);
    CHECK(cpu != NULL);
    if (cpu) {
        check_option(ctx, bytes, n, cpu, "threads=1");
        check_option(ctx, bytes, n, cpu, "threads=2");
        check_option(ctx, bytes, n, cpu, "fusion=off");
    }
    seam_session_free(cpu);
    seam_model_free(cm);
    free(bytes);
    seam_context_free(ctx);
    CHECK_DONE();
}
