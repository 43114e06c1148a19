/*
 * Sessions on different threads do not interfere (seam.h, "Threading").
 *
 * THREADS threads start together (a barrier); each makes its own context,
 * loads the model (tiny_model.h), and, on every other thread, partitions
 * it for dnnl and applies the plan as `seam run --target dnnl` does; then
 * makes a session (with its own thread pool) and runs it RUNS times, twice
 * over (a new session each time, so backends compile concurrently too).
 * Every output of every run must equal, bit for bit, the one a serial run
 * on the main thread gives afterwards. The first dnnl calls of the process
 * happen on the threads, at once: the backend's one-time set-up is raced
 * on purpose.
 *
 * Built with -DSEAM_TSAN=ON, ThreadSanitizer checks every access: the
 * test must run clean. oneDNN runs on OpenMP (libgomp), which is not
 * instrumented: under TSan the dnnl subgraphs use one OpenMP thread each
 * (target option threads=1), so no libgomp team runs and nothing of
 * libgomp's needs suppressing. Concurrency between sessions is what is
 * tested.
 *
 * `test_threads --share-session` breaks the rule on purpose: two threads
 * run one session at once. Under TSan that must be reported (it checks
 * that the test can fail); without TSan it proves nothing and is not run.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "seam_backend.h"
#include "tiny_model.h"

#if defined(__SANITIZE_THREAD__)
#define UNDER_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define UNDER_TSAN 1
#endif
#endif
#ifndef UNDER_TSAN
#define UNDER_TSAN 0
#endif

#define THREADS 4
#define ROUNDS 2 /* sessions per thread, one after the other */
#define RUNS 4   /* runs per session */
#define N_OUT 2

static uint8_t *model_bytes;
static size_t model_size;
static float input[TINY_C * TINY_HW * TINY_HW];

typedef struct outputs {
    size_t nbytes[N_OUT];
    unsigned char *data[N_OUT];
} outputs;

typedef struct worker {
    pthread_t thread;
    bool dnnl;                          /* partitioned for dnnl, else the plain CPU session */
    pthread_barrier_t *start;
    outputs got[ROUNDS * RUNS];
    char error[512];
} worker;

static void fail(worker *w, seam_context *ctx, const char *what) {
    snprintf(w->error, sizeof(w->error), "%s: %s", what, ctx ? seam_context_last_error(ctx) : "");
}

/* A session for the model, partitioned for dnnl or not. */
static seam_session *make_session(seam_context *ctx, bool dnnl, seam_model **model_out, worker *w) {
    seam_model *m = NULL;
    seam_session *s = NULL;
    const seam_backend *targets[1] = {seam_backend_dnnl()};
    const char *const options[] = {UNDER_TSAN ? "threads=1" : "threads=2"};
    seam_plan *plan = NULL;
    if (seam_model_load_buffer(ctx, model_bytes, model_size, NULL, &m)) return fail(w, ctx, "load"), NULL;
    if (dnnl) {
        seam_partition_options po = seam_partition_defaults();
        po.targets = targets;
        po.n_targets = 1;
        po.placement = SEAM_PLACEMENT_CAPABILITY; /* by cost, the tiny model would stay on the CPU */
        if (seam_model_fold(m, NULL) || seam_partition(m, &po, &plan) ||
            seam_plan_apply(m, plan, targets, 1, options, 1)) {
            fail(w, ctx, "partition");
            seam_plan_free(plan);
            seam_model_free(m);
            return NULL;
        }
        seam_plan_free(plan);
    }
    seam_session_options so = {0};
    so.n_threads = 2;
    so.targets = targets;
    so.n_targets = dnnl ? 1 : 0;
    if (seam_session_create(m, &so, &s)) {
        fail(w, ctx, "session");
        seam_model_free(m);
        return NULL;
    }
    if (dnnl && !strstr(seam_session_log(s), "(dnnl): ")) { /* the dnnl sessions must run on dnnl */
        snprintf(w->error, sizeof(w->error), "session: no dnnl subgraph compiled (log: '%s')", seam_session_log(s));
        seam_session_free(s);
        seam_model_free(m);
        return NULL;
    }
    *model_out = m;
    return s;
}

static bool run_once(seam_session *s, seam_context *ctx, outputs *out, worker *w) {
    static const int64_t dims[4] = {1, TINY_C, TINY_HW, TINY_HW};
    if (seam_session_set_input(s, "x", SEAM_DTYPE_FLOAT32, 4, dims, input) || seam_session_run(s))
        return fail(w, ctx, "run"), false;
    for (int32_t k = 0; k < N_OUT; k++) {
        seam_tensor_view v;
        if (seam_session_output(s, k, &v)) return fail(w, ctx, "output"), false;
        out->nbytes[k] = v.nbytes;
        out->data[k] = malloc(v.nbytes + 1);
        if (!out->data[k]) return fail(w, NULL, "out of memory"), false;
        memcpy(out->data[k], v.data, v.nbytes);
    }
    return true;
}

static void *work(void *arg) {
    worker *w = arg;
    pthread_barrier_wait(w->start);
    seam_context *ctx = NULL;
    if (seam_context_create(&ctx)) return fail(w, NULL, "context"), NULL;
    for (int32_t r = 0; r < ROUNDS && !w->error[0]; r++) {
        seam_model *m = NULL;
        seam_session *s = make_session(ctx, w->dnnl, &m, w);
        for (int32_t k = 0; s && k < RUNS && run_once(s, ctx, &w->got[r * RUNS + k], w); k++) {
        }
        seam_session_free(s);
        seam_model_free(m);
    }
    seam_context_free(ctx);
    return NULL;
}

static bool same(const outputs *a, const outputs *b) {
    for (int32_t k = 0; k < N_OUT; k++)
        if (!a->data[k] || !b->data[k] || a->nbytes[k] != b->nbytes[k] || memcmp(a->data[k], b->data[k], a->nbytes[k]))
            return false;
    return true;
}

static void free_outputs(outputs *o) {
    for (int32_t k = 0; k < N_OUT; k++) free(o->data[k]);
}

/* Two threads run one session at once: a data race by design. */
typedef struct sharer {
    seam_session *s;
    seam_context *ctx;
    worker w;
} sharer;

static void *share(void *arg) {
    sharer *sh = arg;
    for (int32_t k = 0; k < RUNS; k++) {
        outputs o = {0};
        run_once(sh->s, sh->ctx, &o, &sh->w);
        free_outputs(&o);
    }
    return NULL;
}

static int share_session(void) {
    seam_context *ctx = NULL;
    seam_model *m = NULL;
    worker w = {0};
    seam_context_create(&ctx);
    seam_session *s = make_session(ctx, false, &m, &w);
    if (!s) {
        fprintf(stderr, "%s\n", w.error);
        return 2;
    }
    sharer a = {s, ctx, {0}}, b = {s, ctx, {0}};
    pthread_t ta, tb;
    pthread_create(&ta, NULL, share, &a);
    pthread_create(&tb, NULL, share, &b);
    pthread_join(ta, NULL);
    pthread_join(tb, NULL);
    seam_session_free(s);
    seam_model_free(m);
    seam_context_free(ctx);
    printf("shared session: ran (only ThreadSanitizer can tell whether that was safe)\n");
    return 0;
}

int main(int argc, char **argv) {
    tiny_input(input);
    model_bytes = tiny_model_bytes(&model_size);
    CHECK(model_bytes != NULL);
    if (!model_bytes) CHECK_DONE();
    if (argc > 1 && strcmp(argv[1], "--share-session") == 0) {
        int rc = share_session();
        free(model_bytes);
        return rc;
    }

    static worker workers[THREADS];
    pthread_barrier_t start;
    pthread_barrier_init(&start, NULL, THREADS);
    for (int32_t t = 0; t < THREADS; t++) {
        workers[t].dnnl = t % 2 == 1;
        workers[t].start = &start;
        CHECK(pthread_create(&workers[t].thread, NULL, work, &workers[t]) == 0);
    }
    for (int32_t t = 0; t < THREADS; t++) pthread_join(workers[t].thread, NULL);
    pthread_barrier_destroy(&start);

    /* the serial reference, on this thread, for the CPU and for dnnl */
    outputs want[2] = {{{0}, {0}}, {{0}, {0}}};
    for (int32_t d = 0; d < 2; d++) {
        worker w = {0};
        seam_context *ctx = NULL;
        seam_model *m = NULL;
        seam_context_create(&ctx);
        seam_session *s = make_session(ctx, d == 1, &m, &w);
        CHECK(s && run_once(s, ctx, &want[d], &w));
        if (w.error[0]) fprintf(stderr, "serial %s: %s\n", d ? "dnnl" : "cpu", w.error);
        seam_session_free(s);
        seam_model_free(m);
        seam_context_free(ctx);
    }
    /* the partitioned model computes what the plain one does (dnnl's
     * convolutions round differently: close, not equal) */
    CHECK(want[0].nbytes[0] == 5 * sizeof(float) && want[1].nbytes[0] == want[0].nbytes[0]);
    for (size_t k = 0; want[0].data[0] && want[1].data[0] && k < 5; k++) {
        float a = ((const float *)want[0].data[0])[k], b = ((const float *)want[1].data[0])[k];
        CHECK(a - b < 1e-4f && b - a < 1e-4f);
    }

    for (int32_t t = 0; t < THREADS; t++) {
        worker *w = &workers[t];
        if (w->error[0]) fprintf(stderr, "thread %d (%s): %s\n", t, w->dnnl ? "dnnl" : "cpu", w->error);
        CHECK(!w->error[0]);
        for (int32_t k = 0; k < ROUNDS * RUNS && !w->error[0]; k++) {
            if (!same(&w->got[k], &want[w->dnnl]))
                fprintf(stderr, "thread %d run %d differs from the serial run\n", t, k);
            CHECK(same(&w->got[k], &want[w->dnnl]));
        }
        for (int32_t k = 0; k < ROUNDS * RUNS; k++) free_outputs(&w->got[k]);
    }
    free_outputs(&want[0]);
    free_outputs(&want[1]);
    free(model_bytes);
    printf("%d threads x %d sessions x %d runs (cpu and dnnl)%s\n", THREADS, ROUNDS, RUNS,
           UNDER_TSAN ? ", under ThreadSanitizer" : "");
    CHECK_DONE();
}
