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

#endif
