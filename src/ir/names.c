#include "ir/names.h"

#include <string.h>

typedef struct slot {
    const char *key;
    uint32_t hash;
    int32_t idx;
} slot;

struct ir_name_map {
    seam_arena *arena;
    slot *slots;
    uint32_t cap, count; /* cap is a power of two; load kept under 1/2 */
};

static uint32_t hash_str(const char *s) {
    uint32_t h = 2166136261u; /* FNV-1a */
    for (; *s; s++) h = (h ^ (uint8_t)*s) * 16777619u;
    return h;
}

static bool names_alloc(ir_name_map *m, uint32_t cap) {
    m->slots = seam_arena_calloc(m->arena, cap, sizeof(slot));
    m->cap = cap;
    m->count = 0;
    return m->slots != NULL;
}

ir_name_map *ir_names_new(seam_arena *a, uint32_t expect) {
    ir_name_map *m = seam_arena_alloc(a, sizeof(*m));
    if (!m) return NULL;
    m->arena = a;
    uint32_t cap = 16;
    while (cap < expect * 2 && cap < (1u << 30)) cap <<= 1;
    return names_alloc(m, cap) ? m : NULL;
}

uint32_t ir_names_hash(const char *name) { return hash_str(name); }

void ir_names_prefetch(const ir_name_map *m, uint32_t hash) { __builtin_prefetch(&m->slots[hash & (m->cap - 1)]); }

int32_t ir_names_get(const ir_name_map *m, const char *name) { return ir_names_get_hashed(m, name, hash_str(name)); }

int32_t ir_names_get_hashed(const ir_name_map *m, const char *name, uint32_t h) {
    for (uint32_t i = h & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
        const slot *s = &m->slots[i];
        if (!s->key) return -1;
        if (s->hash == h && strcmp(s->key, name) == 0) return s->idx;
    }
}

static void put_slot(ir_name_map *m, const char *key, uint32_t h, int32_t idx) {
    for (uint32_t i = h & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
        slot *s = &m->slots[i];
        if (!s->key) {
            *s = (slot){key, h, idx};
            m->count++;
            return;
        }
        if (s->hash == h && strcmp(s->key, key) == 0) {
            s->idx = idx;
            return;
        }
    }
}

/* Doubles the table. Old slots stay in the arena; the waste is bounded by
 * the final table's size. */
static bool names_grow(ir_name_map *m) {
    slot *old = m->slots;
    uint32_t old_cap = m->cap, old_count = m->count;
    if (!names_alloc(m, old_cap * 2)) {
        m->slots = old;
        m->cap = old_cap;
        m->count = old_count;
        return false;
    }
    for (uint32_t i = 0; i < old_cap; i++)
        if (old[i].key) put_slot(m, old[i].key, old[i].hash, old[i].idx);
    return true;
}

bool ir_names_put(ir_name_map *m, const char *name, int32_t idx) {
    if ((m->count + 1) * 2 > m->cap && !names_grow(m)) return false;
    put_slot(m, name, hash_str(name), idx);
    return true;
}

int32_t ir_names_get_or_put(ir_name_map *m, const char *name, int32_t idx) {
    return ir_names_get_or_put_hashed(m, name, hash_str(name), idx);
}

int32_t ir_names_get_or_put_hashed(ir_name_map *m, const char *name, uint32_t h, int32_t idx) {
    if ((m->count + 1) * 2 > m->cap && !names_grow(m)) return -2;
    for (uint32_t i = h & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
        slot *s = &m->slots[i];
        if (!s->key) {
            *s = (slot){name, h, idx};
            m->count++;
            return idx;
        }
        if (s->hash == h && strcmp(s->key, name) == 0) return s->idx;
    }
}
