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
/* Stores name -> idx (name is not copied and must outlive the map).
 * Returns false when out of memory. */
bool ir_names_put(ir_name_map *m, const char *name, int32_t idx);

#endif
