/* The thread pool behind seam_parallel_for. Workers sleep on a condition
 * variable; a parallel loop hands out contiguous chunks in order, so the
 * split of the work depends only on n, the grain and the thread count:
 * results are the same from run to run. */
#include "runtime/pool.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <unistd.h>

#include "ops/kernel.h"

struct seam_pool {
    int32_t n_threads;
    pthread_t *threads;
    pthread_mutex_t mu;
    pthread_cond_t work_cv, done_cv;
    /* the current job */
    void (*fn)(void *arg, int64_t begin, int64_t end);
    void *arg;
    int64_t n, chunk, next_chunk, n_chunks;
    int32_t busy;       /* workers inside the current job */
    uint64_t generation;
    bool stop;
};

static void run_chunks(seam_pool *p) {
    for (;;) {
        pthread_mutex_lock(&p->mu);
        int64_t c = p->next_chunk < p->n_chunks ? p->next_chunk++ : -1;
        pthread_mutex_unlock(&p->mu);
        if (c < 0) return;
        int64_t b = c * p->chunk, e = b + p->chunk < p->n ? b + p->chunk : p->n;
        p->fn(p->arg, b, e);
    }
}

/* Between the parallel loops of consecutive nodes a worker spins briefly
 * before it sleeps: waking a sleeping thread costs tens of microseconds,
 * more than many small kernels take. */
#define SPIN_ROUNDS 2000

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

static void spin_until_work(seam_pool *p, uint64_t seen) {
    for (int i = 0; i < SPIN_ROUNDS; i++) {
        if (__atomic_load_n(&p->generation, __ATOMIC_ACQUIRE) != seen || __atomic_load_n(&p->stop, __ATOMIC_ACQUIRE)) return;
        cpu_relax();
    }
}

static void *worker(void *arg) {
    seam_pool *p = arg;
    uint64_t seen = 0;
    pthread_mutex_lock(&p->mu);
    for (;;) {
        if (!p->stop && p->generation == seen) {
            pthread_mutex_unlock(&p->mu);
            spin_until_work(p, seen);
            pthread_mutex_lock(&p->mu);
        }
        while (!p->stop && p->generation == seen) pthread_cond_wait(&p->work_cv, &p->mu);
        if (p->stop) break;
        seen = p->generation;
        p->busy++;
        pthread_mutex_unlock(&p->mu);
        run_chunks(p);
        pthread_mutex_lock(&p->mu);
        if (--p->busy == 0) pthread_cond_broadcast(&p->done_cv);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
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
    /* the calling thread works too: n_threads - 1 workers */
    if (n_threads > 1) {
        p->threads = calloc((size_t)n_threads - 1, sizeof(pthread_t));
        if (!p->threads) {
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
    __atomic_store_n(&p->stop, true, __ATOMIC_RELEASE);
    pthread_cond_broadcast(&p->work_cv);
    pthread_mutex_unlock(&p->mu);
    for (int32_t k = 0; k < p->n_threads - 1; k++) pthread_join(p->threads[k], NULL);
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->work_cv);
    pthread_cond_destroy(&p->done_cv);
    free(p->threads);
    free(p);
}

int32_t seam_pool_threads(const seam_pool *p) { return p ? p->n_threads : 1; }

void seam_parallel_for(seam_pool *p, int64_t n, int64_t grain, void (*fn)(void *arg, int64_t begin, int64_t end),
                       void *arg) {
    if (n <= 0) return;
    if (grain < 1) grain = 1;
    if (!p || p->n_threads <= 1 || n <= grain) {
        fn(arg, 0, n);
        return;
    }
    /* A few chunks per thread balance uneven work without much locking. */
    int64_t chunk = (n + p->n_threads * 4 - 1) / (p->n_threads * 4);
    if (chunk < grain) chunk = grain;
    pthread_mutex_lock(&p->mu);
    p->fn = fn;
    p->arg = arg;
    p->n = n;
    p->chunk = chunk;
    p->next_chunk = 0;
    p->n_chunks = (n + chunk - 1) / chunk;
    __atomic_add_fetch(&p->generation, 1, __ATOMIC_RELEASE);
    pthread_cond_broadcast(&p->work_cv);
    pthread_mutex_unlock(&p->mu);
    run_chunks(p);
    pthread_mutex_lock(&p->mu);
    while (p->busy > 0 || p->next_chunk < p->n_chunks) pthread_cond_wait(&p->done_cv, &p->mu);
    pthread_mutex_unlock(&p->mu);
}
