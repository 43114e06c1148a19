/* Deep equality of two graphs, by names and content, for round-trip tests
 * (import -> export -> import must give the same graph). */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "ir/ir.h"

static bool differ(char *why, size_t n, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, n, fmt, ap);
    va_end(ap);
    return false;
}

static bool str_eq(const char *a, const char *b) { return strcmp(a ? a : "", b ? b : "") == 0; }

static bool type_eq(const ir_type *a, const ir_type *b) {
    if (!a || !b) return a == b;
    if (a->kind != b->kind || a->elem != b->elem || a->rank != b->rank) return false;
    for (int32_t k = 0; k < a->rank; k++)
        if (a->dims[k].v != b->dims[k].v || !str_eq(a->dims[k].sym, b->dims[k].sym)) return false;
    return type_eq(a->inner, b->inner);
}

static bool tensor_eq(const ir_tensor *a, const ir_tensor *b) {
    if (!a || !b) return a == b;
    if (!str_eq(a->name, b->name) || a->dtype != b->dtype || a->rank != b->rank || a->numel != b->numel) return false;
    for (int32_t k = 0; k < a->rank; k++)
        if (a->dims[k] != b->dims[k]) return false;
    if (a->dtype == SEAM_DTYPE_STRING) {
        const ir_bytes *x = a->data, *y = b->data;
        for (int64_t k = 0; k < a->numel; k++)
            if (x[k].len != y[k].len || (x[k].len && memcmp(x[k].data, y[k].data, x[k].len))) return false;
        return true;
    }
    return a->nbytes == b->nbytes && (a->nbytes == 0 || memcmp(a->data, b->data, a->nbytes) == 0);
}

static bool sparse_eq(const ir_sparse_tensor *a, const ir_sparse_tensor *b) {
    if (!a || !b) return a == b;
    if (a->rank != b->rank || !tensor_eq(a->values, b->values) || !tensor_eq(a->indices, b->indices)) return false;
    for (int32_t k = 0; k < a->rank; k++)
        if (a->dims[k] != b->dims[k]) return false;
    return true;
}

static bool attr_eq(const ir_attr *a, const ir_attr *b, char *why, size_t n) {
    if (!str_eq(a->name, b->name) || a->kind != b->kind) return differ(why, n, "attribute '%s' differs in name or kind", a->name);
    if (a->kind >= IR_ATTR_FLOATS && a->kind != IR_ATTR_SPARSE_TENSOR && a->kind != IR_ATTR_TYPE_PROTO && a->n != b->n)
        return differ(why, n, "attribute '%s' differs in length", a->name);
    bool eq = true;
    switch (a->kind) {
    case IR_ATTR_FLOAT: eq = memcmp(&a->f, &b->f, sizeof(float)) == 0; break;
    case IR_ATTR_INT: eq = a->i == b->i; break;
    case IR_ATTR_STRING: eq = a->s.len == b->s.len && (!a->s.len || memcmp(a->s.data, b->s.data, a->s.len) == 0); break;
    case IR_ATTR_TENSOR: eq = tensor_eq(a->t, b->t); break;
    case IR_ATTR_GRAPH: return ir_graph_equal(a->g, b->g, why, n);
    case IR_ATTR_SPARSE_TENSOR: eq = sparse_eq(a->sparse, b->sparse); break;
    case IR_ATTR_TYPE_PROTO: eq = type_eq(a->tp, b->tp); break;
    case IR_ATTR_FLOATS: eq = !a->n || memcmp(a->floats, b->floats, sizeof(float) * (size_t)a->n) == 0; break;
    case IR_ATTR_INTS: eq = !a->n || memcmp(a->ints, b->ints, sizeof(int64_t) * (size_t)a->n) == 0; break;
    case IR_ATTR_STRINGS:
        for (int32_t k = 0; k < a->n && eq; k++)
            eq = a->strings[k].len == b->strings[k].len &&
                 (!a->strings[k].len || memcmp(a->strings[k].data, b->strings[k].data, a->strings[k].len) == 0);
        break;
    case IR_ATTR_TENSORS:
        for (int32_t k = 0; k < a->n && eq; k++) eq = tensor_eq(a->tensors[k], b->tensors[k]);
        break;
    case IR_ATTR_GRAPHS:
        for (int32_t k = 0; k < a->n; k++)
            if (!ir_graph_equal(a->graphs[k], b->graphs[k], why, n)) return false;
        break;
    case IR_ATTR_SPARSE_TENSORS:
        for (int32_t k = 0; k < a->n && eq; k++) eq = sparse_eq(a->sparse_tensors[k], b->sparse_tensors[k]);
        break;
    case IR_ATTR_TYPE_PROTOS:
        for (int32_t k = 0; k < a->n && eq; k++) eq = type_eq(a->type_protos[k], b->type_protos[k]);
        break;
    default: break;
    }
    return eq ? true : differ(why, n, "attribute '%s' differs in value", a->name);
}

static const char *vname(const ir_graph *g, int32_t v) { return v < 0 ? "" : g->values[v].name; }

static bool value_list_eq(const ir_graph *a, const int32_t *x, const ir_graph *b, const int32_t *y, int32_t n,
                          const char *what, char *why, size_t wn) {
    for (int32_t k = 0; k < n; k++) {
        if (!str_eq(vname(a, x[k]), vname(b, y[k])))
            return differ(why, wn, "%s %d: '%s' vs '%s'", what, k, vname(a, x[k]), vname(b, y[k]));
        if (x[k] >= 0 && !type_eq(&a->values[x[k]].type, &b->values[y[k]].type))
            return differ(why, wn, "%s %d '%s': types differ", what, k, vname(a, x[k]));
    }
    return true;
}

bool ir_graph_equal(const ir_graph *a, const ir_graph *b, char *why, size_t n) {
    if (!str_eq(a->name, b->name)) return differ(why, n, "graph names differ: '%s' vs '%s'", a->name, b->name);
    if (a->n_nodes != b->n_nodes) return differ(why, n, "graph '%s': %d vs %d nodes", a->name, a->n_nodes, b->n_nodes);
    if (a->n_inputs != b->n_inputs || a->n_outputs != b->n_outputs || a->n_inits != b->n_inits ||
        a->n_sparse_inits != b->n_sparse_inits)
        return differ(why, n, "graph '%s': input/output/initializer counts differ", a->name);
    if (!value_list_eq(a, a->inputs, b, b->inputs, a->n_inputs, "input", why, n)) return false;
    if (!value_list_eq(a, a->outputs, b, b->outputs, a->n_outputs, "output", why, n)) return false;
    for (int32_t k = 0; k < a->n_inits; k++)
        if (!tensor_eq(a->values[a->inits[k]].init, b->values[b->inits[k]].init))
            return differ(why, n, "initializer %d '%s' differs", k, a->values[a->inits[k]].name);
    for (int32_t k = 0; k < a->n_sparse_inits; k++)
        if (!sparse_eq(a->sparse_inits[k], b->sparse_inits[k]))
            return differ(why, n, "sparse initializer %d differs", k);
    for (int32_t i = 0; i < a->n_nodes; i++) {
        const ir_node *x = &a->nodes[i], *y = &b->nodes[i];
        if (!str_eq(x->name, y->name) || !str_eq(x->op_type, y->op_type) || !str_eq(x->domain, y->domain))
            return differ(why, n, "node %d: '%s' (%s) vs '%s' (%s)", i, x->name, x->op_type, y->name, y->op_type);
        if (x->n_inputs != y->n_inputs || x->n_outputs != y->n_outputs || x->n_attrs != y->n_attrs)
            return differ(why, n, "node %d '%s': input/output/attribute counts differ", i, x->name);
        if (!value_list_eq(a, x->inputs, b, y->inputs, x->n_inputs, "input", why, n) ||
            !value_list_eq(a, x->outputs, b, y->outputs, x->n_outputs, "output", why, n)) {
            char inner[512];
            snprintf(inner, sizeof(inner), "%s", why);
            return differ(why, n, "node %d '%s': %s", i, x->name, inner);
        }
        for (int32_t k = 0; k < x->n_attrs; k++)
            if (!attr_eq(&x->attrs[k], &y->attrs[k], why, n)) {
                char inner[512];
                snprintf(inner, sizeof(inner), "%s", why);
                return differ(why, n, "node %d '%s': %s", i, x->name, inner);
            }
    }
    for (int32_t k = 0; k < a->n_nodes; k++)
        if (a->topo[k] != b->topo[k]) return differ(why, n, "graph '%s': topological orders differ", a->name);
    return true;
}
