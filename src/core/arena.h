/* A bump allocator: many small allocations, freed together with one call.
 * The model's IR lives in one arena; so do the protobuf structures while a
 * file is parsed. */
#ifndef SEAM_ARENA_H
#define SEAM_ARENA_H

#include <stddef.h>

typedef struct seam_arena_chunk seam_arena_chunk;

typedef struct seam_arena {
    seam_arena_chunk *head;   /* chunk being filled; older chunks follow */
    size_t chunk_size;        /* size of ordinary chunks */
    size_t total;             /* bytes obtained from malloc, for reports */
} seam_arena;

void seam_arena_init(seam_arena *a, size_t chunk_size);
/* Returns 16-byte aligned memory, or NULL when out of memory. */
void *seam_arena_alloc(seam_arena *a, size_t size);
/* Memory aligned to align (a power of two up to 16): small arrays of
 * int32 pack tighter than at 16. */
void *seam_arena_alloc_aligned(seam_arena *a, size_t size, size_t align);
/* As seam_arena_alloc, zero-filled; also NULL if n * size overflows. */
void *seam_arena_calloc(seam_arena *a, size_t n, size_t size);
/* Copies s (NULL gives ""); strings are packed, not aligned. */
char *seam_arena_strdup(seam_arena *a, const char *s);
char *seam_arena_strndup(seam_arena *a, const char *s, size_t n);
/* Copies n bytes of p (p may be NULL when n is 0); never returns NULL for
 * n == 0 unless out of memory. */
void *seam_arena_memdup(seam_arena *a, const void *p, size_t n);
/* Forgets every allocation but keeps the newest chunk for reuse; the
 * others are freed. For scratch that is filled and emptied many times. */
void seam_arena_reset(seam_arena *a);
/* Frees every chunk. The arena can be used again afterwards. */
void seam_arena_free(seam_arena *a);

/* A buffer read on every run (packed or reordered weights, an executor's
 * activations): 64-byte aligned, and from 2 MB on, on 2 MB boundaries
 * marked for transparent huge pages (a model's weights streamed from
 * memory in 4 KB pages miss the TLB every page: 7-10% of a 96 MB MLP's
 * run). NULL when out of memory; free() frees it. */
void *seam_alloc_resident(size_t size);

#endif
