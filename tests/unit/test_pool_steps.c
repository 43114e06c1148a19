/*
 * seam_parallel_steps (runtime/pool.c): a region of dependent steps on the
 * pool, with a barrier after each step and parts taken over by the other
 * threads when their thread is late.
 *
 * Each case runs an integer recurrence in which every unit of step s reads
 * units of step s - 1 owned by other parts (double buffered, as rnn.c's
 * hidden state is) and checks, against the same recurrence run serially:
 *  - the final state, exactly (a missing barrier reads a stale unit);
 *  - that every (step, unit) ran exactly once, and for step s only after
 *    every unit of step s - 1 (a global order stamp).
 * Pools of 1 to 6 threads (more threads than cores: threads are late and
 * others take their parts), unit counts from 1 to 300, regions called from
 * inside a parallel loop (they run inline), and a region whose part 0
 * sleeps now and then, so that the others sleep at the barrier and are
 * woken, and a part is taken by a thread that does not own it (counted:
 * at least one must happen). The same regions and parallel loops run by
 * another runtime's threads (seam_pool_set_team, as oneDNN's OpenMP
 * threads run them beside dnnl subgraphs), teams of fewer threads than
 * the pool asks for among them. Built with -DSEAM_TSAN=ON, ThreadSanitizer
 * checks every access (label tsan).
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backends/kernel.h"
#include "core/pool.h"

static int failures;

#define EXPECT(cond, ...)                                                                                              \
    do {                                                                                                               \
        if (!(cond)) {                                                                                                 \
            failures++;                                                                                                \
            printf("FAIL %s:%d: ", __FILE__, __LINE__);                                                               \
            printf(__VA_ARGS__);                                                                                       \
            printf("\n");                                                                                              \
        }                                                                                                              \
    } while (0)

typedef struct rec {
    int64_t n, n_steps;
    uint64_t *buf;          /* [2][n] */
    uint64_t *calls;        /* [n_steps][n]: times (step, unit) ran */
    uint64_t *stamp;        /* [n_steps][n]: global order of the run */
    uint64_t clock;         /* atomic: the next stamp */
    int64_t sleep_every;    /* part 0 (the range with unit 0) sleeps every this many steps; 0: never */
    pthread_t *owner;       /* [2][n_steps]: the threads that ran unit 0 and unit n - 1 */
    int32_t sleep_us;
} rec;

static uint64_t next(const uint64_t *prev, int64_t n, int64_t s, int64_t i) {
    return prev[(i * 7 + s) % n] * 31 + prev[(i + 1) % n] + (uint64_t)i + (uint64_t)s;
}

static void step_fn(void *arg, int64_t s, int64_t b, int64_t e) {
    rec *r = arg;
    const uint64_t *prev = r->buf + (s & 1) * r->n;
    uint64_t *cur = r->buf + ((s + 1) & 1) * r->n;
    if (b == 0 && r->sleep_every && s % r->sleep_every == 1) usleep((useconds_t)r->sleep_us);
    if (b == 0) r->owner[s] = pthread_self();
    if (e == r->n) r->owner[r->n_steps + s] = pthread_self();
    for (int64_t i = b; i < e; i++) {
        cur[i] = next(prev, r->n, s, i);
        r->calls[s * r->n + i]++;
        r->stamp[s * r->n + i] = __atomic_fetch_add(&r->clock, 1, __ATOMIC_RELAXED);
    }
}

/* Runs the recurrence on pool (or inline when pool is NULL); returns the
 * number of steps whose first or last part ran on another thread than at
 * step 0. */
static int64_t run_case(seam_pool *pool, int64_t n, int64_t n_steps, int64_t sleep_every, const char *what) {
    rec r = {.n = n, .n_steps = n_steps, .sleep_every = sleep_every, .sleep_us = 300};
    r.buf = calloc((size_t)(2 * n), sizeof(uint64_t));
    r.calls = calloc((size_t)(n * n_steps), sizeof(uint64_t));
    r.stamp = calloc((size_t)(n * n_steps), sizeof(uint64_t));
    r.owner = calloc((size_t)(2 * n_steps + 1), sizeof(pthread_t));
    uint64_t *ref = calloc((size_t)(2 * n), sizeof(uint64_t));
    if (!r.buf || !r.calls || !r.stamp || !r.owner || !ref) {
        printf("out of memory\n");
        exit(1);
    }
    for (int64_t i = 0; i < n; i++) r.buf[i] = ref[i] = (uint64_t)i * 2654435761u;
    for (int64_t s = 0; s < n_steps; s++)
        for (int64_t i = 0; i < n; i++) ref[((s + 1) & 1) * n + i] = next(ref + (s & 1) * n, n, s, i);
    if (pool) seam_parallel_steps(pool, n_steps, n, step_fn, &r);
    else
        for (int64_t s = 0; s < n_steps; s++) step_fn(&r, s, 0, n);
    const uint64_t *got = r.buf + (n_steps & 1) * n, *want = ref + (n_steps & 1) * n;
    EXPECT(memcmp(got, want, sizeof(uint64_t) * (size_t)n) == 0, "%s: n %lld, %lld steps: the final state differs",
           what, (long long)n, (long long)n_steps);
    int64_t bad_calls = 0, bad_order = 0, moved = 0;
    for (int64_t s = 0; s < n_steps; s++) {
        uint64_t lo = UINT64_MAX, hi_prev = 0;
        for (int64_t i = 0; i < n; i++) {
            bad_calls += r.calls[s * n + i] != 1;
            if (r.stamp[s * n + i] < lo) lo = r.stamp[s * n + i];
            if (s > 0 && r.stamp[(s - 1) * n + i] > hi_prev) hi_prev = r.stamp[(s - 1) * n + i];
        }
        bad_order += s > 0 && lo < hi_prev;
        moved += s > 0 && (!pthread_equal(r.owner[s], r.owner[0]) ||
                           !pthread_equal(r.owner[n_steps + s], r.owner[n_steps]));
    }
    EXPECT(bad_calls == 0, "%s: n %lld: %lld (step, unit) ran other than once", what, (long long)n,
           (long long)bad_calls);
    EXPECT(bad_order == 0, "%s: n %lld: %lld steps began before the previous one ended", what, (long long)n,
           (long long)bad_order);
    free(r.buf), free(r.calls), free(r.stamp), free(r.owner), free(ref);
    return moved;
}

typedef struct nested {
    seam_pool *pool;
} nested;

static void nested_chunk(void *arg, int64_t b, int64_t e) {
    nested *ns = arg;
    for (int64_t c = b; c < e; c++) run_case(ns->pool, 13 + c, 50, 0, "inside a parallel loop");
}

/* ---- a team of another runtime's threads (seam_pool_set_team) ----
 * Stands in for OpenMP: each call starts want - 1 threads (at most
 * `give` in all, the caller as thread 0) and joins them. */
typedef struct fake_team {
    int32_t give;   /* threads it gives at most (fewer than asked: the pool must cope) */
    int64_t calls;  /* atomic: run calls */
} fake_team;

typedef struct team_arg {
    seam_team_body body;
    void *arg;
    int32_t i, n;
} team_arg;

static void *team_thread(void *p) {
    team_arg *t = p;
    t->body(t->arg, t->i, t->n);
    return NULL;
}

static void fake_run(void *ctx, int32_t n_threads, seam_team_body body, void *arg) {
    fake_team *ft = ctx;
    __atomic_add_fetch(&ft->calls, 1, __ATOMIC_RELAXED);
    int32_t n = n_threads < ft->give ? n_threads : ft->give;
    pthread_t th[8];
    team_arg ta[8];
    int32_t started = 0;
    for (int32_t i = 1; i < n && i < 8; i++) {
        ta[i] = (team_arg){body, arg, i, n};
        if (pthread_create(&th[i], NULL, team_thread, &ta[i]) == 0) started = i;
    }
    body(arg, 0, n);
    for (int32_t i = 1; i <= started; i++) pthread_join(th[i], NULL);
}

typedef struct visit {
    int64_t *seen;  /* atomic counts per index */
} visit;

static void visit_chunk(void *arg, int64_t b, int64_t e) {
    visit *v = arg;
    for (int64_t i = b; i < e; i++) __atomic_add_fetch(&v->seen[i], 1, __ATOMIC_RELAXED);
}

static void team_cases(void) {
    for (int32_t t = 2; t <= 4; t++)
        for (int32_t give = 1; give <= t; give += t - 1 > 1 ? t - 2 : 1) {
            fake_team ft = {give, 0};
            seam_pool *pool = seam_pool_create(t);
            if (!pool) {
                failures++;
                return;
            }
            seam_pool_set_team(pool, fake_run, &ft);
            char what[80];
            snprintf(what, sizeof(what), "%d threads, a team giving %d", t, give);
            run_case(pool, 37, 60, 0, what);
            run_case(pool, 300, 5, 0, what);
            int64_t seen[1000] = {0};
            visit v = {seen};
            for (int rep = 0; rep < 20; rep++) seam_parallel_for(pool, 1000, 1, visit_chunk, &v);
            int64_t bad = 0;
            for (int64_t i = 0; i < 1000; i++) bad += seen[i] != 20;
            EXPECT(bad == 0, "%s: %lld indices of a parallel loop not visited exactly once a loop", what, (long long)bad);
            EXPECT(__atomic_load_n(&ft.calls, __ATOMIC_RELAXED) > 0, "%s: the team never ran the loops", what);
            seam_pool_set_team(pool, NULL, NULL); /* back to the pool's workers */
            int64_t before = __atomic_load_n(&ft.calls, __ATOMIC_RELAXED);
            run_case(pool, 37, 20, 0, what);
            EXPECT(__atomic_load_n(&ft.calls, __ATOMIC_RELAXED) == before, "%s: the team ran after it was unset", what);
            seam_pool_free(pool);
        }
}

int main(void) {
    team_cases();
    static const int64_t sizes[] = {1, 2, 3, 5, 37, 300};
    for (int32_t t = 1; t <= 6; t++) {
        seam_pool *pool = seam_pool_create(t);
        if (!pool) {
            printf("out of memory\n");
            return 1;
        }
        char what[64];
        snprintf(what, sizeof(what), "%d threads", t);
        for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
            run_case(pool, sizes[k], 1, 0, what);
            run_case(pool, sizes[k], 700, 0, what);
        }
        run_case(pool, 40, 0, 0, what); /* no steps: nothing runs */
        nested ns = {pool};
        seam_parallel_for(pool, 4, 1, nested_chunk, &ns);
        seam_pool_free(pool);
    }
    /* part 0 sleeps every 4th step: the others sleep at the barrier, and
     * its owner, woken late, finds its part of the next step taken */
    seam_pool *pool = seam_pool_create(2);
    int64_t moved = 0;
    for (int round = 0; round < 5 && !moved; round++) moved += run_case(pool, 64, 80, 4, "sleepy part");
    EXPECT(moved > 0, "sleepy part: no part was ever run by another thread than its owner");
    printf("sleepy part: part 0 ran on another thread in %lld steps\n", (long long)moved);
    seam_pool_free(pool);
    run_case(NULL, 9, 10, 0, "serial");
    printf("%s\n", failures ? "FAILED" : "passed");
    return failures ? 1 : 0;
}
