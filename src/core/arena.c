#include "core/arena.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

struct seam_arena_chunk {
    seam_arena_chunk *next;
    size_t size, used;
    size_t mapped;           /* bytes mmap'd for this chunk, 0 if malloc'd */
    _Alignas(16) unsigned char data[];
};

/* Chunks of this size or more are mapped on 2 MB boundaries and marked for
 * transparent huge pages: a million-node graph touches about a gigabyte,
 * and faulting it in 4 KB pages cost a fifth of the load time. */
#define HUGE_CHUNK ((size_t)2 << 20)

static seam_arena_chunk *map_chunk(size_t total) {
    size_t len = (total + HUGE_CHUNK - 1) & ~(HUGE_CHUNK - 1);
    unsigned char *p = mmap(NULL, len + HUGE_CHUNK, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return NULL;
    uintptr_t start = ((uintptr_t)p + HUGE_CHUNK - 1) & ~(uintptr_t)(HUGE_CHUNK - 1);
    size_t head = start - (uintptr_t)p, tail = HUGE_CHUNK - head;
    if (head) munmap(p, head);
    if (tail) munmap((unsigned char *)start + len, tail);
#ifdef MADV_HUGEPAGE
    madvise((void *)start, len, MADV_HUGEPAGE);
#endif
    seam_arena_chunk *c = (seam_arena_chunk *)start;
    c->mapped = len;
    return c;
}

void *seam_alloc_resident(size_t size) {
    if (size < HUGE_CHUNK) return aligned_alloc(64, (size + 63) & ~(size_t)63);
    if (size > SIZE_MAX - HUGE_CHUNK) return NULL;
    size_t len = (size + HUGE_CHUNK - 1) & ~(HUGE_CHUNK - 1);
    void *p = aligned_alloc(HUGE_CHUNK, len);
#ifdef MADV_HUGEPAGE
    if (p) madvise(p, len, MADV_HUGEPAGE); /* (a hint: failure changes nothing) */
#endif
    return p;
}

void seam_arena_init(seam_arena *a, size_t chunk_size) {
    a->head = NULL;
    a->chunk_size = chunk_size ? chunk_size : (size_t)1 << 16;
    a->total = 0;
}

static seam_arena_chunk *arena_new_chunk(seam_arena *a, size_t size) {
    if (size > SIZE_MAX / 2 - sizeof(seam_arena_chunk) - HUGE_CHUNK) return NULL;
    seam_arena_chunk *c;
    if (sizeof(*c) + size >= HUGE_CHUNK) {
        c = map_chunk(sizeof(*c) + size);
    } else {
        c = malloc(sizeof(*c) + size);
        if (c) c->mapped = 0;
    }
    if (!c) return NULL;
    c->size = size;
    c->used = 0;
    a->total += size;
    return c;
}

/* size bytes at `align` (1 or 16) alignment. */
static void *arena_alloc(seam_arena *a, size_t size, size_t align) {
    size_t need = size ? size : 1;
    seam_arena_chunk *c = a->head;
    if (c) {
        size_t at = (c->used + align - 1) & ~(align - 1);
        if (at <= c->size && c->size - at >= need) {
            c->used = at + need;
            return c->data + at;
        }
    }
    need = (need + 15) & ~(size_t)15;
    if (need < size) return NULL;
    /* Big requests get a chunk of their own, linked behind the head so the
     * head's free space is not wasted. */
    if (need > a->chunk_size / 4) {
        seam_arena_chunk *big = arena_new_chunk(a, need);
        if (!big) return NULL;
        big->used = need;
        if (c) {
            big->next = c->next;
            c->next = big;
        } else {
            big->next = NULL;
            a->head = big;
        }
        return big->data;
    }
    /* Chunks grow with the arena (up to 8 MB), so small models stay small
     * and big ones get few, huge-page backed chunks. */
    if (a->total >= 4 * a->chunk_size && a->chunk_size < ((size_t)8 << 20)) a->chunk_size *= 2;
    seam_arena_chunk *n = arena_new_chunk(a, a->chunk_size);
    if (!n) return NULL;
    n->next = c;
    a->head = n;
    n->used = need;
    return n->data;
}

void *seam_arena_alloc(seam_arena *a, size_t size) { return arena_alloc(a, size, 16); }

void *seam_arena_alloc_aligned(seam_arena *a, size_t size, size_t align) {
    return arena_alloc(a, size, align && align <= 16 && !(align & (align - 1)) ? align : 16);
}

void *seam_arena_calloc(seam_arena *a, size_t n, size_t size) {
    if (size && n > SIZE_MAX / size) return NULL;
    void *p = seam_arena_alloc(a, n * size);
    if (p) memset(p, 0, n * size);
    return p;
}

/* Strings need no alignment: packed, a million short names take half the
 * memory. */
char *seam_arena_strndup(seam_arena *a, const char *s, size_t n) {
    if (n == SIZE_MAX) return NULL;
    char *p = arena_alloc(a, n + 1, 1);
    if (!p) return NULL;
    if (n) memcpy(p, s, n);
    p[n] = 0;
    return p;
}

char *seam_arena_strdup(seam_arena *a, const char *s) {
    if (!s) s = "";
    return seam_arena_strndup(a, s, strlen(s));
}

void *seam_arena_memdup(seam_arena *a, const void *p, size_t n) {
    void *q = seam_arena_alloc(a, n);
    if (q && n) memcpy(q, p, n);
    return q;
}

void seam_arena_reset(seam_arena *a) {
    seam_arena_chunk *keep = a->head;
    if (!keep) return;
    seam_arena_chunk *c = keep->next;
    while (c) {
        seam_arena_chunk *next = c->next;
        if (c->mapped) munmap(c, c->mapped);
        else free(c);
        c = next;
    }
    keep->next = NULL;
    keep->used = 0;
    a->total = keep->size;
}

void seam_arena_free(seam_arena *a) {
    seam_arena_chunk *c = a->head;
    while (c) {
        seam_arena_chunk *next = c->next;
        if (c->mapped) munmap(c, c->mapped);
        else free(c);
        c = next;
    }
    a->head = NULL;
    a->total = 0;
}
