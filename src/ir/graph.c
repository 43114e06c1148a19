/* Building graphs, linking producers and consumers, the topological order
 * and the structural checks of a loaded model. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/context.h"
#include "ir/ir.h"
#include "ir/names.h"

/* A million-node graph is a million of each: keep them from growing back
 * unnoticed (the sizes are for 64-bit pointers). */
_Static_assert(sizeof(void *) != 8 || sizeof(ir_value) <= 88, "ir_value grew past 88 bytes");
_Static_assert(sizeof(void *) != 8 || sizeof(ir_node) <= 80, "ir_node grew past 80 bytes");

bool ir_dtype_valid(int32_t dtype) {
    return dtype > SEAM_DTYPE_UNDEFINED && dtype < SEAM_DTYPE_COUNT_;
}

ir_graph *ir_graph_new(struct seam_model *m, ir_graph *parent) {
    ir_graph *g = seam_arena_calloc(&m->arena, 1, sizeof(*g));
    if (!g) return NULL;
    g->model = m;
    g->parent = parent;
    g->parent_node = -1;
    g->name = "";
    g->doc = "";
    g->names = ir_names_new(&m->arena, 64);
    return g->names ? g : NULL;
}

/* Grows an arena array to hold at least `need` entries (doubling). */
static bool grow(seam_arena *a, void **arr, int32_t *cap, int32_t need, size_t elem) {
    if (need <= *cap) return true;
    int64_t c = *cap ? *cap : 16;
    while (c < need) c *= 2;
    if (c > INT32_MAX) return false;
    void *n = seam_arena_alloc(a, (size_t)c * elem);
    if (!n) return false;
    if (*cap) memcpy(n, *arr, (size_t)*cap * elem);
    *arr = n;
    *cap = (int32_t)c;
    return true;
}

/* A side array of cap entries (NULL: none set) grown to new_cap, zeroed
 * past what it held. */
static bool grow_side(seam_arena *a, const char ***side, int32_t cap, int32_t new_cap) {
    if (!*side || new_cap == cap) return true; /* (grow() had room: nothing moved) */
    const char **n = seam_arena_calloc(a, (size_t)new_cap + 1, sizeof(char *));
    if (!n) return false;
    memcpy(n, *side, sizeof(char *) * (size_t)cap);
    *side = n;
    return true;
}

static bool grow_values(ir_graph *g, int32_t need) {
    int32_t cap = g->cap_values;
    return grow(&g->model->arena, (void **)&g->values, &g->cap_values, need, sizeof(ir_value)) &&
           grow_side(&g->model->arena, &g->value_docs, cap, g->cap_values);
}

static bool grow_nodes(ir_graph *g, int32_t need) {
    int32_t cap = g->cap_nodes;
    return grow(&g->model->arena, (void **)&g->nodes, &g->cap_nodes, need, sizeof(ir_node)) &&
           grow_side(&g->model->arena, &g->node_docs, cap, g->cap_nodes) &&
           grow_side(&g->model->arena, &g->folded_ops, cap, g->cap_nodes);
}

/* Sets entry i of a side array of cap entries, made on first use. A NULL
 * or empty value on a missing array needs none. */
static bool side_set(seam_arena *a, const char ***side, int32_t cap, int32_t i, const char *s, bool keep_empty) {
    if (!*side) {
        if (!s || (!keep_empty && !s[0])) return true;
        *side = seam_arena_calloc(a, (size_t)cap + 1, sizeof(char *));
        if (!*side) return false;
    }
    (*side)[i] = s;
    return true;
}

const char *ir_value_doc(const ir_graph *g, int32_t v) {
    return g->value_docs && g->value_docs[v] ? g->value_docs[v] : "";
}

const char *ir_node_doc(const ir_graph *g, int32_t node) {
    return g->node_docs && g->node_docs[node] ? g->node_docs[node] : "";
}

const char *ir_node_folded_op(const ir_graph *g, int32_t node) { return g->folded_ops ? g->folded_ops[node] : NULL; }

bool ir_value_set_doc(ir_graph *g, int32_t v, const char *doc) {
    return side_set(&g->model->arena, &g->value_docs, g->cap_values, v, doc, false);
}

bool ir_node_set_doc(ir_graph *g, int32_t node, const char *doc) {
    return side_set(&g->model->arena, &g->node_docs, g->cap_nodes, node, doc, false);
}

bool ir_node_set_folded_op(ir_graph *g, int32_t node, const char *op) {
    return side_set(&g->model->arena, &g->folded_ops, g->cap_nodes, node, op, true);
}

static void value_init(ir_value *v, const char *name) {
    memset(v, 0, sizeof(*v));
    v->name = name;
    v->type.rank = -1;
    v->producer = -1;
    v->outer = -1;
}

/* The loader drops the top graph's name map when it is done (a million
 * names take 32 MB); building on such a graph, or a caller about to look
 * up many names, makes it again. */
bool ir_graph_index_names(ir_graph *g) {
    if (g->names) return true;
    g->names = ir_names_new(&g->model->arena, (uint32_t)g->n_values);
    if (!g->names) return false;
    for (int32_t v = 0; v < g->n_values; v++)
        if (g->values[v].name[0] && !ir_names_put(g->names, g->values[v].name, v)) {
            g->names = NULL;
            return false;
        }
    return true;
}

int32_t ir_graph_add_value(ir_graph *g, const char *name) {
    if (!ir_graph_index_names(g)) return -1;
    if (!grow_values(g, g->n_values + 1)) return -1;
    int32_t idx = g->n_values++;
    value_init(&g->values[idx], name);
    if (g->value_docs) g->value_docs[idx] = NULL;
    if (name[0] && !ir_names_put(g->names, name, idx)) return -1;
    return idx;
}

int32_t ir_graph_find_or_add(ir_graph *g, const char *name) {
    return ir_graph_find_or_add_hashed(g, name, ir_names_hash(name));
}

int32_t ir_graph_find_or_add_hashed(ir_graph *g, const char *name, uint32_t hash) {
    if (!ir_graph_index_names(g)) return -1;
    if (!grow_values(g, g->n_values + 1)) return -1;
    int32_t idx = ir_names_get_or_put_hashed(g->names, name, hash, g->n_values);
    if (idx == g->n_values) {
        value_init(&g->values[g->n_values++], name);
        if (g->value_docs) g->value_docs[idx] = NULL;
    }
    return idx < 0 ? -1 : idx;
}

int32_t ir_graph_find(const ir_graph *g, const char *name) {
    if (g->names) return ir_names_get(g->names, name);
    for (int32_t v = 0; v < g->n_values; v++) /* the map was dropped: rare lookups scan */
        if (strcmp(g->values[v].name, name) == 0) return v;
    return -1;
}

int32_t ir_graph_add_node(ir_graph *g) {
    if (!grow_nodes(g, g->n_nodes + 1)) return -1;
    int32_t idx = g->n_nodes++;
    memset(&g->nodes[idx], 0, sizeof(ir_node));
    if (g->node_docs) g->node_docs[idx] = NULL;
    if (g->folded_ops) g->folded_ops[idx] = NULL;
    return idx;
}

void ir_graph_remove_nodes(ir_graph *g, const bool *dead) {
    int32_t o = 0;
    for (int32_t i = 0; i < g->n_nodes; i++) {
        if (dead[i]) continue;
        g->nodes[o] = g->nodes[i];
        if (g->node_docs) g->node_docs[o] = g->node_docs[i];
        if (g->folded_ops) g->folded_ops[o] = g->folded_ops[i];
        o++;
    }
    g->n_nodes = o;
}

bool ir_model_own(struct seam_model *m, void *p) {
    if (m->n_owned == m->cap_owned) {
        int32_t cap = m->cap_owned ? m->cap_owned * 2 : 16;
        void **n = realloc(m->owned, (size_t)cap * sizeof(void *));
        if (!n) return false;
        m->owned = n;
        m->cap_owned = cap;
    }
    m->owned[m->n_owned++] = p;
    return true;
}

const char *ir_node_label(const ir_graph *g, int32_t node, char *buf, size_t n) {
    const ir_node *nd = &g->nodes[node];
    snprintf(buf, n, "node %d '%s' (%s%s%s)", node, nd->name, nd->domain[0] ? nd->domain : "",
             nd->domain[0] ? "." : "", nd->op_type);
    return buf;
}

const ir_attr *ir_node_attr(const ir_node *n, const char *name) {
    for (int32_t k = 0; k < n->n_attrs; k++)
        if (strcmp(n->attrs[k].name, name) == 0) return &n->attrs[k];
    return NULL;
}

int64_t ir_numel(const int64_t *dims, int32_t rank) { return seam_shape_numel(dims, rank); }

/* ---- linking ---- */

static bool value_defined(const ir_value *v) {
    return v->producer >= 0 || (v->flags & (IR_VALUE_INPUT | IR_VALUE_INIT | IR_VALUE_OUTER));
}

/* Calls fn for every body graph held by node n's attributes. */
#define FOR_EACH_BODY(n, body, ...)                                                  \
    for (int32_t a_ = 0; a_ < (n)->n_attrs; a_++) {                                  \
        const ir_attr *at_ = &(n)->attrs[a_];                                        \
        int32_t nb_ = at_->kind == IR_ATTR_GRAPH ? 1 : at_->kind == IR_ATTR_GRAPHS ? at_->n : 0; \
        for (int32_t b_ = 0; b_ < nb_; b_++) {                                       \
            ir_graph *body = at_->kind == IR_ATTR_GRAPH ? at_->g : at_->graphs[b_];  \
            if (body) { __VA_ARGS__ }                                                \
        }                                                                            \
    }

/* The values of g that n's bodies read from outside (each once), stored
 * right after n's inputs: the node's outputs and inputs move to a new
 * block [outputs | inputs | implicit]; the old one is left as it was (a
 * copy of the node elsewhere may still point at it). */
static seam_status collect_implicit(seam_context *ctx, ir_graph *g, ir_node *n) {
    int32_t count = 0;
    FOR_EACH_BODY(n, body, {
        for (int32_t k = 0; k < body->n_values; k++)
            if (body->values[k].flags & IR_VALUE_OUTER) count++;
    })
    n->n_implicit = 0;
    if (!count) return SEAM_STATUS_OK;
    int32_t *block = seam_arena_alloc_aligned(&g->model->arena,
                                              sizeof(int32_t) * ((size_t)n->n_outputs + (size_t)n->n_inputs + (size_t)count + 1), 4);
    if (!block) return seam_error(ctx, SEAM_STATUS_OUT_OF_MEMORY, "out of memory");
    if (n->n_outputs) memcpy(block, n->outputs, sizeof(int32_t) * (size_t)n->n_outputs);
    if (n->n_inputs) memcpy(block + n->n_outputs, n->inputs, sizeof(int32_t) * (size_t)n->n_inputs);
    n->outputs = block;
    n->inputs = block + n->n_outputs;
    int32_t *implicit = n->inputs + n->n_inputs;
    FOR_EACH_BODY(n, body, {
        for (int32_t k = 0; k < body->n_values; k++) {
            const ir_value *v = &body->values[k];
            if (!(v->flags & IR_VALUE_OUTER)) continue;
            bool dup = false;
            for (int32_t j = 0; j < n->n_implicit && !dup; j++) dup = implicit[j] == v->outer;
            if (!dup) implicit[n->n_implicit++] = v->outer;
        }
    })
    return SEAM_STATUS_OK;
}

/* Finds and reports a cycle among the nodes not yet ordered (indeg > 0):
 * every such node has an input made by another such node, so walking
 * producers from any of them must come back to a node already seen. */
static seam_status report_cycle(seam_context *ctx, const ir_graph *g, const int32_t *indeg) {
    int32_t start = 0;
    while (indeg[start] == 0) start++;
    int32_t *seen = malloc(sizeof(int32_t) * (size_t)g->n_nodes);
    int32_t *path = malloc(sizeof(int32_t) * (size_t)g->n_nodes);
    if (!seen || !path) {
        free(seen);
        free(path);
        return seam_error(ctx, SEAM_STATUS_INVALID_MODEL, "the graph has a cycle");
    }
    for (int32_t k = 0; k < g->n_nodes; k++) seen[k] = -1;
    int32_t len = 0, cur = start;
    while (seen[cur] < 0) {
        seen[cur] = len;
        path[len++] = cur;
        const ir_node *n = &g->nodes[cur];
        int32_t next = -1;
        for (int32_t k = 0; k < n->n_inputs + n->n_implicit && next < 0; k++) {
            int32_t v = n->inputs[k]; /* implicit inputs follow the inputs */
            if (v < 0) continue;
            int32_t p = g->values[v].producer;
            if (p >= 0 && indeg[p] > 0) next = p;
        }
        if (next < 0) break; /* cannot happen; keep the report finite */
        cur = next;
    }
    /* The walk followed producers backwards: path[first] feeds path[len-1],
     * which feeds path[len-2], ... back to path[first]. Print it in
     * data-flow order. */
    int32_t first = seen[cur] >= 0 ? seen[cur] : 0;
    char msg[1024], lab[256];
    size_t off = (size_t)snprintf(msg, sizeof(msg), "the graph has a cycle: %s",
                                  ir_node_label(g, path[first], lab, sizeof(lab)));
    for (int32_t k = len - 1; k >= first && off < sizeof(msg); k--) {
        ir_node_label(g, path[k], lab, sizeof(lab));
        off += (size_t)snprintf(msg + off, sizeof(msg) - off, " -> %s", lab);
    }
    free(seen);
    free(path);
    return seam_error(ctx, SEAM_STATUS_INVALID_MODEL, "%s", msg);
}

static seam_status link_topo(seam_context *ctx, ir_graph *g, bool sorted) {
    seam_arena *a = &g->model->arena;
    int32_t nn = g->n_nodes;
    g->topo = seam_arena_alloc(a, sizeof(int32_t) * (size_t)(nn + 1));
    if (!g->topo) return seam_error(ctx, SEAM_STATUS_OUT_OF_MEMORY, "out of memory");
    /* Files are nearly always already sorted: keep their order when so. */
    if (sorted) {
        for (int32_t i = 0; i < nn; i++) g->topo[i] = i;
        return SEAM_STATUS_OK;
    }
    /* Kahn's algorithm, taking ready nodes in file order. */
    int32_t *indeg = calloc((size_t)nn + 1, sizeof(int32_t));
    if (!indeg) return seam_error(ctx, SEAM_STATUS_OUT_OF_MEMORY, "out of memory");
    for (int32_t i = 0; i < nn; i++) {
        const ir_node *n = &g->nodes[i];
        for (int32_t k = 0; k < n->n_inputs + n->n_implicit; k++) {
            int32_t v = n->inputs[k]; /* implicit inputs follow the inputs */
            if (v >= 0 && g->values[v].producer >= 0) indeg[i]++;
        }
    }
    int32_t head = 0, tail = 0;
    for (int32_t i = 0; i < nn; i++)
        if (indeg[i] == 0) g->topo[tail++] = i;
    while (head < tail) {
        const ir_node *n = &g->nodes[g->topo[head++]];
        for (int32_t k = 0; k < n->n_outputs; k++) {
            int32_t v = n->outputs[k];
            if (v < 0) continue;
            const ir_value *val = &g->values[v];
            for (int32_t c = 0; c < val->n_consumers; c++)
                if (--indeg[val->consumers[c]] == 0) g->topo[tail++] = val->consumers[c];
        }
    }
    seam_status st = SEAM_STATUS_OK;
    if (tail < nn) st = report_cycle(ctx, g, indeg);
    free(indeg);
    return st;
}

seam_status ir_graph_link(seam_context *ctx, ir_graph *g) {
    char lab[256];
    seam_arena *a = &g->model->arena;
    seam_status st;
    for (int32_t i = 0; i < g->n_nodes; i++) {
        ir_node *n = &g->nodes[i];
        FOR_EACH_BODY(n, body, {
            body->parent_node = i;
            if ((st = ir_graph_link(ctx, body)) != SEAM_STATUS_OK) {
                seam_error_prefix(ctx, "in a body of %s", ir_node_label(g, i, lab, sizeof(lab)));
                return st;
            }
        })
        if ((st = collect_implicit(ctx, g, n)) != SEAM_STATUS_OK) return st;
    }
    for (int32_t v = 0; v < g->n_values; v++) {
        g->values[v].producer = -1;
        g->values[v].n_consumers = 0;
    }
    /* one pass: producers, and how many readers each value has */
    int64_t total = 0;
    for (int32_t i = 0; i < g->n_nodes; i++) {
        const ir_node *n = &g->nodes[i];
        for (int32_t k = 0; k < n->n_outputs; k++) {
            int32_t v = n->outputs[k];
            if (v < 0) continue;
            ir_value *val = &g->values[v];
            if (val->producer >= 0) {
                char lab2[256];
                return seam_error(ctx, SEAM_STATUS_INVALID_MODEL,
                                  "value '%s' is produced twice: by %s and by %s", val->name,
                                  ir_node_label(g, val->producer, lab2, sizeof(lab2)),
                                  ir_node_label(g, i, lab, sizeof(lab)));
            }
            if (val->flags & (IR_VALUE_INPUT | IR_VALUE_INIT | IR_VALUE_OUTER)) {
                return seam_error(ctx, SEAM_STATUS_INVALID_MODEL,
                                  "value '%s' is produced twice: it is a graph %s and an output of %s",
                                  val->name,
                                  val->flags & IR_VALUE_INIT ? "initializer"
                                  : val->flags & IR_VALUE_INPUT ? "input" : "outer-scope value",
                                  ir_node_label(g, i, lab, sizeof(lab)));
            }
            val->producer = i;
        }
        for (int32_t k = 0; k < n->n_inputs + n->n_implicit; k++) {
            int32_t v = n->inputs[k]; /* implicit inputs follow the inputs */
            if (v < 0) continue;
            g->values[v].n_consumers++;
            total++;
        }
    }
    int32_t *pool = seam_arena_alloc(a, sizeof(int32_t) * (size_t)(total + 1));
    if (!pool) return seam_error(ctx, SEAM_STATUS_OUT_OF_MEMORY, "out of memory");
    for (int32_t v = 0; v < g->n_values; v++) {
        g->values[v].consumers = pool;
        pool += g->values[v].n_consumers;
        g->values[v].n_consumers = 0;
    }
    /* one pass: fill the consumers, check every input is defined, and see
     * whether the file's order is already topological */
    bool sorted = true;
    for (int32_t i = 0; i < g->n_nodes; i++) {
        const ir_node *n = &g->nodes[i];
        for (int32_t k = 0; k < n->n_inputs + n->n_implicit; k++) {
            int32_t v = n->inputs[k]; /* implicit inputs follow the inputs */
            if (v < 0) continue;
            ir_value *val = &g->values[v];
            if (!value_defined(val)) {
                return seam_error(ctx, SEAM_STATUS_INVALID_MODEL,
                                  "value '%s' is used by %s but never defined", val->name,
                                  ir_node_label(g, i, lab, sizeof(lab)));
            }
            if (val->producer >= i) sorted = false;
            val->consumers[val->n_consumers++] = i;
        }
    }
    for (int32_t k = 0; k < g->n_outputs; k++) {
        const ir_value *val = &g->values[g->outputs[k]];
        if (!value_defined(val))
            return seam_error(ctx, SEAM_STATUS_INVALID_MODEL,
                              "graph output '%s' is not produced by any node, nor is it an input or initializer",
                              val->name);
    }
    return link_topo(ctx, g, sorted);
}

bool ir_model_import(struct seam_model *m, const char *domain, int64_t version) {
    for (int32_t k = 0; k < m->n_opsets; k++)
        if (strcmp(m->opsets[k].domain, domain) == 0) return true;
    ir_opset *os = seam_arena_alloc(&m->arena, sizeof(ir_opset) * (size_t)(m->n_opsets + 1));
    if (!os) return false;
    if (m->n_opsets) memcpy(os, m->opsets, sizeof(ir_opset) * (size_t)m->n_opsets);
    os[m->n_opsets] = (ir_opset){domain, version};
    m->opsets = os;
    m->n_opsets++;
    return true;
}

bool ir_model_add_note(struct seam_model *m, const char *text) {
    const char **notes = seam_arena_alloc(&m->arena, sizeof(char *) * (size_t)(m->n_rewrites + 1));
    const char *t = seam_arena_strdup(&m->arena, text);
    if (!notes || !t) return false;
    if (m->n_rewrites) memcpy(notes, m->rewrites, sizeof(char *) * (size_t)m->n_rewrites);
    notes[m->n_rewrites++] = t;
    m->rewrites = notes;
    return true;
}
