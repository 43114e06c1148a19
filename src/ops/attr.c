/* Attribute access on a node (see attr.h). */
#include "ops/attr.h"

#include <string.h>

const ir_attr *node_attr(const ir_node *n, const char *name) { return n && name ? ir_node_attr(n, name) : NULL; }

int64_t node_attr_int(const ir_node *n, const char *name, int64_t def) {
    const ir_attr *a = node_attr(n, name);
    return a && a->kind == IR_ATTR_INT ? a->i : def;
}

float node_attr_float(const ir_node *n, const char *name, float def) {
    const ir_attr *a = node_attr(n, name);
    return a && a->kind == IR_ATTR_FLOAT ? a->f : def;
}

const char *node_attr_string(const ir_node *n, const char *name, const char *def) {
    const ir_attr *a = node_attr(n, name);
    return a && a->kind == IR_ATTR_STRING && a->s.data ? (const char *)a->s.data : def;
}

bool node_attr_is(const ir_node *n, const char *name, const char *want) {
    const ir_attr *a = node_attr(n, name);
    size_t len = strlen(want);
    return a && a->kind == IR_ATTR_STRING && a->s.len == len && (len == 0 || memcmp(a->s.data, want, len) == 0);
}

int32_t node_attr_ints(const ir_node *n, const char *name, const int64_t **out) {
    const ir_attr *a = node_attr(n, name);
    if (!a || a->kind != IR_ATTR_INTS) return -1;
    *out = a->ints;
    return a->n;
}

int32_t node_attr_floats(const ir_node *n, const char *name, const float **out) {
    const ir_attr *a = node_attr(n, name);
    if (!a || a->kind != IR_ATTR_FLOATS) return -1;
    *out = a->floats;
    return a->n;
}

int32_t op_axis(int64_t axis, int32_t rank) {
    if (axis < 0) axis += rank;
    return axis >= 0 && axis < rank ? (int32_t)axis : -1;
}
