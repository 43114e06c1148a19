/* The thread pool behind seam_parallel_for. A parallel loop hands out
 * contiguous chunks; the split depends only on n, the grain and the thread
 * count, and each chunk is one call whatever thread runs it, so results
 * are the same from run to run.
 *
 * Most loops of a small model last a few microseconds, as long as waking a
 * sleeping thread takes. So the path of a loop neither locks nor sleeps
 * while the threads keep up:
 *  - the job and the chunks left to hand out share one atomic word
 *    (generation << 32 | chunks left); a thread claims a chunk with a
 *    compare-and-swap that fails when the job has changed, so a late worker
 *    can never take a chunk of the next job for one of the last;
 *  - workers spin on that word for a while after each job and only then
 *    sleep on a condition variable; the caller signals it only when
 *    someone sleeps;
 *  - the caller runs chunks too, then spins for a while until the chunks
 *    taken by workers are done, and only then sleeps until the last one
 *    signals.
 * Spinning is bounded (SPIN_NS) because on a busy machine a spinning
 * thread takes the CPU time that the threads it waits for need.
 *
 * A parallel region of steps (seam_parallel_steps, for recurrences whose
 * steps last a few microseconds each) is one job that every thread may
 * join (a chunk per thread); the work of a step is split into fixed parts,
 * two per thread, and a thread joining as the k-th runs the k-th pair of
 * every step, so the data of a part stays in one core's caches. Each part
 * of each step is claimed first (a per-part counter of the steps claimed,
 * moved from s to s + 1 by compare-and-swap): after its own part a thread
 * claims and runs any part of the step still unclaimed, so a thread that
 * is late (preempted, asleep, not started) never stalls the others, who
 * take its work until it catches up. A step is over when the count of
 * parts finished, which only grows during the job, reaches
 * (s + 1) * parts: spun on, then slept on, like the end of a loop; a late
 * thread joins at the step in progress. When every step is done the caller
 * closes the job to joiners and waits for those who joined.
 */
#include "core/pool.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>


/* How long a thread spins for work, or for the end of a loop, before it
 * sleeps: longer than the serial gap between the parallel loops of
 * consecutive small nodes, short enough not to starve the others when the
 * cores are shared (on a shared 2-core machine 30 us beat 100 us, 300 us
 * and 2 ms, both loaded and quiet). */
#define SPIN_NS 30000

/* uint64_t per claim counter: one cache line each */
#define CLAIM_STRIDE 8

struct seam_pool {
    int32_t n_threads;
    pthread_t *threads;
    /* the current job, written by the caller before the word is published */
    void (*fn)(void *arg, int64_t begin, int64_t end);
    void *arg;
    int64_t n, chunk;
    uint32_t n_chunks;
    /* generation << 32 | chunks not yet handed out */
    uint64_t word;
    uint32_t done;      /* chunks of the current job finished */
    int32_t sleepers;   /* workers asleep, or about to be, on work_cv */
    int32_t waiting;    /* the caller sleeps, or is about to, on done_cv */
    bool in_job;        /* a loop is running: a nested one runs inline */
    seam_team_run team; /* another runtime's threads run the loops (seam_pool_set_team), or NULL */
    void *team_ctx;
    uint32_t team_gen;  /* the job those threads claim chunks of */
    bool stop;
    pthread_mutex_t mu; /* only for sleeping and waking */
    pthread_cond_t work_cv, done_cv, step_cv;
    /* a region of steps (fn is NULL then): n_steps steps of n_parts parts */
    void (*step_fn)(void *arg, int64_t step, int64_t begin, int64_t end);
    int64_t n_steps, n_parts;
    uint64_t *claimed; /* per part, at [part * CLAIM_STRIDE]: steps claimed */
    /* parts finished in the current region: written by every part after
     * every step, so on a cache line of its own (the padding: calloc does
     * not align to 64) */
    char pad0_[64];
    uint64_t finished;
    int32_t step_sleepers; /* threads asleep, or about to be, on step_cv */
    char pad1_[64];
};

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

static int64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

/* Spins for a while, then sleeps, until *word reaches target. The thread
 * that brings it there calls wake(). */
static void wait_for(seam_pool *p, const uint64_t *word, uint64_t target, int32_t *sleepers, pthread_cond_t *cv) {
    int64_t t0 = 0;
    for (int32_t i = 0; __atomic_load_n(word, __ATOMIC_ACQUIRE) < target; i++) {
        cpu_relax();
        if ((i & 255) != 255) continue;
        if (!t0) t0 = now_ns();
        if (now_ns() - t0 < SPIN_NS) continue;
        pthread_mutex_lock(&p->mu);
        /* seq_cst on both sides (sleepers here, the word in wake's caller):
         * either it sees a sleeper and signals, or this sees the word */
        __atomic_add_fetch(sleepers, 1, __ATOMIC_SEQ_CST);
        while (__atomic_load_n(word, __ATOMIC_SEQ_CST) < target) pthread_cond_wait(cv, &p->mu);
        __atomic_sub_fetch(sleepers, 1, __ATOMIC_SEQ_CST);
        pthread_mutex_unlock(&p->mu);
        return;
    }
}

static void wake(seam_pool *p, const int32_t *sleepers, pthread_cond_t *cv) {
    if (!__atomic_load_n(sleepers, __ATOMIC_SEQ_CST)) return;
    pthread_mutex_lock(&p->mu);
    pthread_cond_broadcast(cv);
    pthread_mutex_unlock(&p->mu);
}

/* The thread that joined a region of steps as the c-th: step by step,
 * part c % n_parts first, then any part still unclaimed, then waits for the
 * step to end; joins a step in progress. Returns when every step is done. */
static void run_part(seam_pool *p, int64_t c) {
    /* its own parts first: [c * parts / threads, ...), then the next ones */
    int64_t parts = p->n_parts, home = c * parts / p->n_threads % parts;
    for (int64_t s = 0;;) {
        int64_t cur = (int64_t)(__atomic_load_n(&p->finished, __ATOMIC_ACQUIRE) / (uint64_t)parts);
        if (cur > s) s = cur;
        if (s >= p->n_steps) return;
        for (int64_t i = 0; i < parts; i++) {
            int64_t q = (home + i) % parts;
            uint64_t *cl = &p->claimed[q * CLAIM_STRIDE], want = (uint64_t)s;
            if (__atomic_load_n(cl, __ATOMIC_RELAXED) != want ||
                !__atomic_compare_exchange_n(cl, &want, want + 1, false, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
                continue;
            p->step_fn(p->arg, s, p->n * q / parts, p->n * (q + 1) / parts);
            /* the part's writes happen before the reads of step s + 1 by
             * every thread: they load the count with acquire, this adds
             * with seq_cst (and sees a sleeper, or it sees the count) */
            if (__atomic_add_fetch(&p->finished, 1, __ATOMIC_SEQ_CST) == (uint64_t)(s + 1) * (uint64_t)parts)
                wake(p, &p->step_sleepers, &p->step_cv);
        }
        wait_for(p, &p->finished, (uint64_t)(s + 1) * (uint64_t)parts, &p->step_sleepers, &p->step_cv);
        s++;
    }
}

/* Claims and runs chunks of generation gen until none are left (one part
 * at most, for a region of steps). */
static void run_chunks(seam_pool *p, uint32_t gen) {
    uint64_t w = __atomic_load_n(&p->word, __ATOMIC_ACQUIRE);
    for (;;) {
        uint32_t left = (uint32_t)w;
        if ((uint32_t)(w >> 32) != gen || left == 0) return;
        if (!__atomic_compare_exchange_n(&p->word, &w, w - 1, true, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) continue;
        /* a claimed chunk keeps the job from finishing, so its fields are
         * stable until done is bumped; chunks go out in order */
        uint32_t n_chunks = p->n_chunks;
        int64_t c = (int64_t)n_chunks - left;
        bool part = p->fn == NULL;
        if (part) {
            run_part(p, c);
        } else {
            int64_t b = c * p->chunk, e = b + p->chunk < p->n ? b + p->chunk : p->n;
            p->fn(p->arg, b, e);
        }
        /* seq_cst with waiting (see seam_parallel_for); after this add the
         * job may be over, so nothing of it is read below */
        if ((__atomic_add_fetch(&p->done, 1, __ATOMIC_SEQ_CST) == n_chunks || part) &&
            __atomic_load_n(&p->waiting, __ATOMIC_SEQ_CST)) {
            pthread_mutex_lock(&p->mu);
            pthread_cond_broadcast(&p->done_cv);
            pthread_mutex_unlock(&p->mu);
        }
        if (part) return;
        w = __atomic_load_n(&p->word, __ATOMIC_ACQUIRE);
    }
}

static void *worker(void *arg) {
    seam_pool *p = arg;
    uint32_t seen = 0;
    for (;;) {
        /* spin for a new job, then sleep */
        int64_t t0 = now_ns();
        uint32_t gen = seen;
        for (int32_t i = 0;; i++) {
            if (__atomic_load_n(&p->stop, __ATOMIC_ACQUIRE)) return NULL;
            gen = (uint32_t)(__atomic_load_n(&p->word, __ATOMIC_ACQUIRE) >> 32);
            if (gen != seen) break;
            cpu_relax();
            if ((i & 255) == 255 && now_ns() - t0 > SPIN_NS) {
                pthread_mutex_lock(&p->mu);
                /* seq_cst on both sides (sleepers here, word in the caller):
                 * either the caller sees a sleeper and signals, or this
                 * thread sees the new generation */
                __atomic_add_fetch(&p->sleepers, 1, __ATOMIC_SEQ_CST);
                while (!__atomic_load_n(&p->stop, __ATOMIC_SEQ_CST) &&
                       (uint32_t)(__atomic_load_n(&p->word, __ATOMIC_SEQ_CST) >> 32) == seen)
                    pthread_cond_wait(&p->work_cv, &p->mu);
                __atomic_sub_fetch(&p->sleepers, 1, __ATOMIC_SEQ_CST);
                pthread_mutex_unlock(&p->mu);
                t0 = now_ns();
            }
        }
        seen = gen;
        run_chunks(p, gen);
    }
}

seam_pool *seam_pool_create(int32_t n_threads) {
    if (n_threads <= 0) {
        long c = sysconf(_SC_NPROCESSORS_ONLN);
        n_threads = c > 0 ? (int32_t)c : 1;
    }
    if (n_threads > 256) n_threads = 256;
    seam_pool *p = calloc(1, sizeof(*p));
    if (!p) return NULL;
    p->n_threads = n_threads;
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->work_cv, NULL);
    pthread_cond_init(&p->done_cv, NULL);
    pthread_cond_init(&p->step_cv, NULL);
    /* the calling thread works too: n_threads - 1 workers */
    if (n_threads > 1) {
        p->threads = calloc((size_t)n_threads - 1, sizeof(pthread_t));
        p->claimed = calloc((size_t)n_threads * 2 * CLAIM_STRIDE, sizeof(uint64_t)); /* two parts a thread */
        if (!p->threads || !p->claimed) {
            free(p->threads);
            free(p->claimed);
            pthread_mutex_destroy(&p->mu);
            pthread_cond_destroy(&p->work_cv);
            pthread_cond_destroy(&p->done_cv);
            pthread_cond_destroy(&p->step_cv);
            free(p);
            return NULL;
        }
        for (int32_t k = 0; k < n_threads - 1; k++) {
            if (pthread_create(&p->threads[k], NULL, worker, p) != 0) {
                p->n_threads = k + 1;
                break;
            }
        }
    }
    return p;
}

void seam_pool_free(seam_pool *p) {
    if (!p) return;
    pthread_mutex_lock(&p->mu);
    __atomic_store_n(&p->stop, true, __ATOMIC_SEQ_CST);
    pthread_cond_broadcast(&p->work_cv);
    pthread_mutex_unlock(&p->mu);
    for (int32_t k = 0; k < p->n_threads - 1; k++) pthread_join(p->threads[k], NULL);
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->work_cv);
    pthread_cond_destroy(&p->done_cv);
    pthread_cond_destroy(&p->step_cv);
    free(p->threads);
    free(p->claimed);
    free(p);
}

int32_t seam_pool_threads(const seam_pool *p) { return p ? p->n_threads : 1; }

void seam_pool_set_team(seam_pool *p, seam_team_run run, void *ctx) {
    if (!p) return;
    p->team = run;
    p->team_ctx = ctx;
}

/* A team thread: claims chunks of the job as a worker does. */
static void team_body(void *arg, int32_t thread, int32_t n_threads) {
    (void)thread, (void)n_threads;
    seam_pool *p = arg;
    run_chunks(p, p->team_gen);
}

/* Publishes the job whose fields the caller has set, takes part in it,
 * and waits until every chunk is done. */
static void run_job(seam_pool *p, uint32_t n_chunks) {
    p->n_chunks = n_chunks;
    __atomic_store_n(&p->done, 0, __ATOMIC_RELAXED);
    uint32_t gen = (uint32_t)(__atomic_load_n(&p->word, __ATOMIC_RELAXED) >> 32) + 1;
    __atomic_store_n(&p->word, (uint64_t)gen << 32 | (uint64_t)n_chunks, __ATOMIC_SEQ_CST);
    if (p->team) {
        /* the other runtime's threads (this one among them) claim the
         * chunks; a worker of ours still spinning may take some too, and
         * is waited for below like any; the sleeping ones are left asleep */
        p->team_gen = gen;
        p->team(p->team_ctx, p->n_threads, team_body, p);
    } else if (__atomic_load_n(&p->sleepers, __ATOMIC_SEQ_CST) > 0) {
        pthread_mutex_lock(&p->mu);
        pthread_cond_broadcast(&p->work_cv);
        pthread_mutex_unlock(&p->mu);
    }
    run_chunks(p, gen);
    if (!p->fn) {
        /* a region of steps, all done: closed to the threads that have not
         * joined yet; those who did are waited for below */
        uint64_t w = __atomic_load_n(&p->word, __ATOMIC_ACQUIRE);
        while ((uint32_t)w &&
               !__atomic_compare_exchange_n(&p->word, &w, w >> 32 << 32, true, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
        }
        n_chunks -= (uint32_t)w;
    }
    /* wait for the chunks workers took: spin, then sleep until the last
     * one signals (a worker may have been preempted) */
    int64_t t0 = 0;
    for (int32_t i = 0; __atomic_load_n(&p->done, __ATOMIC_ACQUIRE) < n_chunks; i++) {
        cpu_relax();
        if ((i & 255) != 255) continue;
        if (!t0) t0 = now_ns();
        if (now_ns() - t0 < SPIN_NS) continue;
        pthread_mutex_lock(&p->mu);
        /* seq_cst on both sides (waiting here, done in run_chunks): either
         * the last worker sees waiting and signals, or this sees done */
        __atomic_store_n(&p->waiting, 1, __ATOMIC_SEQ_CST);
        while (__atomic_load_n(&p->done, __ATOMIC_SEQ_CST) < n_chunks) pthread_cond_wait(&p->done_cv, &p->mu);
        __atomic_store_n(&p->waiting, 0, __ATOMIC_SEQ_CST);
        pthread_mutex_unlock(&p->mu);
        break;
    }
}

void seam_parallel_for(seam_pool *p, int64_t n, int64_t grain, void (*fn)(void *arg, int64_t begin, int64_t end),
                       void *arg) {
    if (n <= 0) return;
    if (grain < 1) grain = 1;
    /* (a loop started from inside a chunk would overwrite the job its
     * caller is part of) */
    if (!p || p->n_threads <= 1 || n <= grain || __atomic_load_n(&p->in_job, __ATOMIC_ACQUIRE)) {
        fn(arg, 0, n);
        return;
    }
    __atomic_store_n(&p->in_job, true, __ATOMIC_RELEASE);
    /* A few chunks per thread balance uneven work without much contention. */
    int64_t chunk = (n + p->n_threads * 4 - 1) / (p->n_threads * 4);
    if (chunk < grain) chunk = grain;
    int64_t n_chunks = (n + chunk - 1) / chunk;
    if (n_chunks > UINT32_MAX / 2) { /* keep the chunk index well inside 32 bits */
        chunk = (n + UINT32_MAX / 2 - 1) / (UINT32_MAX / 2);
        n_chunks = (n + chunk - 1) / chunk;
    }
    /* the previous job is finished (every chunk done), so no worker reads
     * these fields now: a worker only reads them after claiming a chunk */
    p->fn = fn;
    p->arg = arg;
    p->n = n;
    p->chunk = chunk;
    run_job(p, (uint32_t)n_chunks);
    __atomic_store_n(&p->in_job, false, __ATOMIC_RELEASE);
}

void seam_parallel_steps(seam_pool *p, int64_t n_steps, int64_t n,
                         void (*fn)(void *arg, int64_t step, int64_t begin, int64_t end), void *arg) {
    if (n_steps <= 0 || n <= 0) return;
    if (!p || p->n_threads <= 1 || n == 1 || __atomic_load_n(&p->in_job, __ATOMIC_ACQUIRE)) {
        for (int64_t s = 0; s < n_steps; s++) fn(arg, s, 0, n);
        return;
    }
    __atomic_store_n(&p->in_job, true, __ATOMIC_RELEASE);
    /* two parts per thread: a thread preempted in the middle of a part
     * holds up half its share, not all of it */
    int64_t parts = n < 2 * (int64_t)p->n_threads ? n : 2 * (int64_t)p->n_threads;
    p->fn = NULL;
    p->step_fn = fn;
    p->arg = arg;
    p->n = n;
    p->n_steps = n_steps;
    p->n_parts = parts;
    for (int64_t q = 0; q < parts; q++) __atomic_store_n(&p->claimed[q * CLAIM_STRIDE], 0, __ATOMIC_RELAXED);
    __atomic_store_n(&p->finished, 0, __ATOMIC_RELAXED);
    /* any thread may join: one chunk each */
    run_job(p, (uint32_t)p->n_threads);
    __atomic_store_n(&p->in_job, false, __ATOMIC_RELEASE);
}
