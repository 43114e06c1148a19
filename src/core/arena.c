#include "core/arena.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct seam_arena_chunk {
    seam_arena_chunk *next;
    size_t size, used;
    _Alignas(16) unsigned char data[];
};

void seam_arena_init(seam_arena *a, size_t chunk_size) {
    a->head = NULL;
    a->chunk_size = chunk_size ? chunk_size : (size_t)1 << 16;
    a->total = 0;
}

static seam_arena_chunk *arena_new_chunk(seam_arena *a, size_t size) {
    if (size > SIZE_MAX - sizeof(seam_arena_chunk)) return NULL;
    seam_arena_chunk *c = malloc(sizeof(*c) + size);
    if (!c) return NULL;
    c->size = size;
    c->used = 0;
    a->total += size;
    return c;
}

void *seam_arena_alloc(seam_arena *a, size_t size) {
    size_t need = (size + 15) & ~(size_t)15;
    if (need < size) return NULL;
    if (need == 0) need = 16;
    seam_arena_chunk *c = a->head;
    if (c && c->size - c->used >= need) {
        void *p = c->data + c->used;
        c->used += need;
        return p;
    }
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
    seam_arena_chunk *n = arena_new_chunk(a, a->chunk_size);
    if (!n) return NULL;
    n->next = c;
    a->head = n;
    n->used = need;
    return n->data;
}

void *seam_arena_calloc(seam_arena *a, size_t n, size_t size) {
    if (size && n > SIZE_MAX / size) return NULL;
    void *p = seam_arena_alloc(a, n * size);
    if (p) memset(p, 0, n * size);
    return p;
}

char *seam_arena_strndup(seam_arena *a, const char *s, size_t n) {
    if (n == SIZE_MAX) return NULL;
    char *p = seam_arena_alloc(a, n + 1);
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

void seam_arena_free(seam_arena *a) {
    seam_arena_chunk *c = a->head;
    while (c) {
        seam_arena_chunk *next = c->next;
        free(c);
        c = next;
    }
    a->head = NULL;
    a->total = 0;
}
