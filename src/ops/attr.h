/*
 * Attribute access on a node: the one API that inference, the CPU kernels,
 * the executor's fusion and the built-in backends use. (Plugin backends
 * read the same attributes through the public seam_node_attr_* calls,
 * which wrap these.) Each getter returns the default when the attribute is
 * absent or of another kind.
 *
 *     int64_t axis = node_attr_int(n, "axis", 1);
 *     if (node_attr_is(n, "mode", "nearest")) ...
 */
#ifndef SEAM_OPS_ATTR_H
#define SEAM_OPS_ATTR_H

#include "ir/ir.h"

const ir_attr *node_attr(const ir_node *n, const char *name);
int64_t node_attr_int(const ir_node *n, const char *name, int64_t def);
float node_attr_float(const ir_node *n, const char *name, float def);
/* A STRING attribute, NUL-terminated (the loader keeps them so), or def. */
const char *node_attr_string(const ir_node *n, const char *name, const char *def);
/* True when the STRING attribute is present and its bytes equal want. */
bool node_attr_is(const ir_node *n, const char *name, const char *want);
/* An INTS attribute: returns the count and sets *out, or -1 if absent. */
int32_t node_attr_ints(const ir_node *n, const char *name, const int64_t **out);
/* A FLOATS attribute: returns the count and sets *out, or -1 if absent. */
int32_t node_attr_floats(const ir_node *n, const char *name, const float **out);

/* An axis (an attribute or an input value) that may count from the end,
 * as an index in [0, rank); -1 when out of range. */
int32_t op_axis(int64_t axis, int32_t rank);

#endif
