/* A string -> int32 map for value names, allocated from an arena. */
#ifndef SEAM_IR_NAMES_H
#define SEAM_IR_NAMES_H

#include <stdbool.h>
#include <stdint.h>

#include "core/arena.h"

typedef struct ir_name_map ir_name_map;

ir_name_map *ir_names_new(seam_arena *a, uint32_t expect);
/* Returns the index stored for name, or -1. */
int32_t ir_names_get(const ir_name_map *m, const char *name);
/* Returns the index stored for name if there is one; otherwise stores
 * name -> idx and returns idx. -2 when out of memory. One probe sequence
 * instead of a get and a put. */
int32_t ir_names_get_or_put(ir_name_map *m, const char *name, int32_t idx);
/* The hash of a name, for the _hashed calls: a caller that looks a name
 * up more than once (or prefetches it first) hashes it once. */
uint32_t ir_names_hash(const char *name);
/* Starts loading the slot a hash goes to, for a lookup soon after: a
 * million-name map is far bigger than the caches, and a node's few names
 * then wait for memory together instead of one after the other. */
void ir_names_prefetch(const ir_name_map *m, uint32_t hash);
/* ir_names_get and ir_names_get_or_put with the name's hash given. */
int32_t ir_names_get_hashed(const ir_name_map *m, const char *name, uint32_t hash);
int32_t ir_names_get_or_put_hashed(ir_name_map *m, const char *name, uint32_t hash, int32_t idx);
/* Stores name -> idx (name is not copied and must outlive the map).
 * Returns false when out of memory. */
bool ir_names_put(ir_name_map *m, const char *name, int32_t idx);

#endif
