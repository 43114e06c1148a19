/* A fixed set of worker threads for parallel loops. One pool per session;
 * no global state. */
#ifndef SEAM_POOL_H
#define SEAM_POOL_H

#include <stdint.h>

typedef struct seam_pool seam_pool;

/* n_threads <= 0 means one per online core. NULL when out of memory. */
seam_pool *seam_pool_create(int32_t n_threads);
void seam_pool_free(seam_pool *pool);
int32_t seam_pool_threads(const seam_pool *pool);

/* Another thread runtime's threads for the pool's loops: run(ctx,
 * n_threads, body, arg) calls body(arg, i, n) on n threads of that
 * runtime (i from 0, the calling thread among them; n may be fewer than
 * asked) and returns when all have returned. When set, a parallel loop is
 * run by those threads (each claims chunks as a worker would) instead of
 * by waking the pool's own workers, which then sleep: a backend whose
 * threads busy-wait between its runs (oneDNN's OpenMP) and the pool no
 * longer compete for the cores. Set from the thread that runs the pool's
 * loops, before any; NULL run goes back to the pool's workers. */
typedef void (*seam_team_body)(void *arg, int32_t thread, int32_t n_threads);
typedef void (*seam_team_run)(void *ctx, int32_t n_threads, seam_team_body body, void *arg);
void seam_pool_set_team(seam_pool *pool, seam_team_run run, void *ctx);

/* Parallel for: calls fn(arg, begin, end) over [0, n) in chunks, on the
 * pool's threads (or inline when the pool has one thread). */
void seam_parallel_for(seam_pool *pool, int64_t n, int64_t grain, void (*fn)(void *arg, int64_t begin, int64_t end),
                       void *arg);

/* A parallel region of n_steps dependent steps (a recurrence): calls
 * fn(arg, step, begin, end) for step 0, 1, ... n_steps - 1 in order, over
 * fixed parts [begin, end) of [0, n) (two per thread), each run by the
 * same thread every step while the threads keep up, so the data a part
 * touches stays in its core's caches; a late thread's parts are run by the
 * others. Every part of a step finishes before any part of the next starts
 * (a barrier that spins briefly, then sleeps). The ranges depend only on n
 * and the thread count; fn must give the same result whatever thread runs
 * a part. Runs inline as one part [0, n) when the pool has one thread, n
 * is 1, or it is called from inside a parallel loop. */
void seam_parallel_steps(seam_pool *pool, int64_t n_steps, int64_t n,
                         void (*fn)(void *arg, int64_t step, int64_t begin, int64_t end), void *arg);

#endif
