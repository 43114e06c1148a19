/*
 * ONNX file -> seam IR. Protobuf ends here: the file is parsed by protobuf-c
 * into structures allocated from a scratch arena, converted into the
 * model's own arena, and the scratch is freed.
 *
 * The top graph's nodes are not unpacked all at once: a million-node graph
 * would hold a few hundred megabytes of protobuf structures next to the IR.
 * The loader walks the wire format of ModelProto and GraphProto (tags and
 * lengths only) and hands each part to protobuf-c's own unpack: everything
 * but the graph as one ModelProto, the graph's other fields one message at
 * a time, and each NodeProto, graph output and value_info when it is
 * converted, into a small scratch that is reset after it. Those last are
 * decoded by hand when they have the common shape (wire.c), by protobuf-c
 * otherwise. A file whose layout the walk does not expect (the graph field
 * repeated, an unexpected wire type) is unpacked whole.
 *
 * Big byte fields (tensor raw_data) are the exception to "copy then free":
 * protobuf-c already copied them out of the file once, into blocks that the
 * scratch allocator hands out with malloc. The model adopts those blocks
 * instead of copying them a second time, so loading a 100 MB model costs
 * about one pass over its bytes.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/context.h"
#include "ir/ir.h"
#include "ir/names.h"
#include "onnx/load.h"
#include "onnx/onnx.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "seam assumes a little-endian host, as ONNX raw_data is little-endian"
#endif

/* ---- the scratch allocator handed to protobuf-c ---- */

void *scratch_alloc(void *data, size_t size) {
    scratch *s = data;
    if (size < BIG_BLOCK) {
        void *p = seam_arena_alloc(&s->arena, size);
        if (!p) s->oom = true;
        return p;
    }
    if (s->n_big == s->cap_big) {
        size_t cap = s->cap_big ? s->cap_big * 2 : 64;
        void **n = realloc(s->big, cap * sizeof(void *));
        if (!n) {
            s->oom = true;
            return NULL;
        }
        s->big = n;
        s->cap_big = cap;
    }
    void *p = malloc(size);
    if (!p) {
        s->oom = true;
        return NULL;
    }
    s->big[s->n_big++] = p;
    return p;
}

void scratch_free(void *data, void *p) {
    (void)data;
    (void)p; /* everything goes at once in scratch_release */
}

int scratch_cmp_ptr(const void *a, const void *b) {
    uintptr_t x = (uintptr_t)*(void *const *)a, y = (uintptr_t)*(void *const *)b;
    return (x > y) - (x < y);
}

bool scratch_adopt(scratch *s, const void *p) {
    void *key = (void *)p;
    void **hit = bsearch(&key, s->big, s->n_big, sizeof(void *), scratch_cmp_ptr);
    if (!hit) return false;
    *hit = NULL; /* NULL sorts first; bsearch keys are never NULL */
    return true;
}

void scratch_release(scratch *s) {
    for (size_t k = 0; k < s->n_big; k++) free(s->big[k]);
    free(s->big);
    seam_arena_free(&s->arena);
}

/* ---- conversion state (the loader, load.h) ---- */

/* Op types and domains repeat: keep one copy of each. */
static const char *intern(loader *L, const char *s) {
    if (!s) s = "";
    /* a few op types and domains make most of a graph: try the last few */
    for (int j = 0; j < 4; j++) {
        const char *r = L->recent[j];
        if (r && r[0] == s[0] && (!s[0] || strcmp(r + 1, s + 1) == 0)) return r;
    }
    memmove(L->recent + 1, L->recent, sizeof(L->recent) - sizeof(L->recent[0]));
    int32_t k = ir_names_get(L->interned, s);
    if (k >= 0) return L->recent[0] = L->strings[k];
    if (L->n_interned == L->cap_interned) {
        int32_t cap = L->cap_interned ? L->cap_interned * 2 : 64;
        const char **n = seam_arena_alloc(&L->tmp, sizeof(char *) * (size_t)cap);
        if (!n) return NULL;
        if (L->n_interned) memcpy(n, L->strings, sizeof(char *) * (size_t)L->n_interned);
        L->strings = n;
        L->cap_interned = cap;
    }
    const char *c = seam_arena_strdup(L->a, s);
    if (!c || !ir_names_put(L->interned, c, L->n_interned)) return NULL;
    L->strings[L->n_interned++] = c;
    return L->recent[0] = c;
}

/* ---- types ---- */

static seam_status convert_shape(loader *L, const Onnx__TensorShapeProto *sh, const char *what, ir_type *t) {
    if (!sh) {
        t->rank = -1;
        return SEAM_STATUS_OK;
    }
    if (sh->n_dim > 64) return seam_error(L->ctx, SEAM_STATUS_INVALID_MODEL, "value '%s' has an absurd rank %zu", what, sh->n_dim);
    t->rank = (int32_t)sh->n_dim;
    t->dims = seam_arena_calloc(L->a, sh->n_dim + 1, sizeof(ir_dim));
    if (!t->dims) return OOM(L);
    for (size_t k = 0; k < sh->n_dim; k++) {
        const Onnx__TensorShapeProto__Dimension *d = sh->dim[k];
        t->dims[k] = IR_DIM_UNKNOWN;
        if (d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE) {
            if (d->dim_value < 0)
                return seam_error(L->ctx, SEAM_STATUS_INVALID_MODEL,
                                  "value '%s' has a negative dimension %lld at axis %zu", what, (long long)d->dim_value, k);
            if (d->dim_value > IR_MAX_DIM)
                return seam_error(L->ctx, SEAM_STATUS_INVALID_MODEL,
                                  "value '%s' has an absurd dimension %lld at axis %zu", what, (long long)d->dim_value, k);
            t->dims[k].v = d->dim_value;
        } else if (d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM && d->dim_param && d->dim_param[0]) {
            t->dims[k].sym = dup_str(L, d->dim_param);
        }
    }
    return SEAM_STATUS_OK;
}

static seam_status convert_type(loader *L, const Onnx__TypeProto *tp, const char *what, ir_type *t, int depth) {
    memset(t, 0, sizeof(*t));
    t->rank = -1;
    if (!tp) return SEAM_STATUS_OK;
    if (depth > 32) return seam_error(L->ctx, SEAM_STATUS_INVALID_MODEL, "value '%s' has a type nested too deeply", what);
    if (tp->denotation && tp->denotation[0]) t->denotation = dup_str(L, tp->denotation);
    int32_t elem = 0;
    bool has_elem = false;
    const Onnx__TypeProto *inner = NULL;
    switch (tp->value_case) {
    case ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE:
    case ONNX__TYPE_PROTO__VALUE_SPARSE_TENSOR_TYPE: {
        bool sparse = tp->value_case == ONNX__TYPE_PROTO__VALUE_SPARSE_TENSOR_TYPE;
        t->kind = sparse ? IR_TYPE_SPARSE_TENSOR : IR_TYPE_TENSOR;
        has_elem = sparse ? tp->sparse_tensor_type->has_elem_type : tp->tensor_type->has_elem_type;
        elem = sparse ? tp->sparse_tensor_type->elem_type : tp->tensor_type->elem_type;
        seam_status st = convert_shape(L, sparse ? tp->sparse_tensor_type->shape : tp->tensor_type->shape, what, t);
        if (st) return st;
        break;
    }
    case ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE:
        t->kind = IR_TYPE_SEQUENCE;
        inner = tp->sequence_type->elem_type;
        break;
    case ONNX__TYPE_PROTO__VALUE_OPTIONAL_TYPE:
        t->kind = IR_TYPE_OPTIONAL;
        inner = tp->optional_type->elem_type;
        break;
    case ONNX__TYPE_PROTO__VALUE_MAP_TYPE:
        t->kind = IR_TYPE_MAP;
        has_elem = tp->map_type->has_key_type;
        elem = tp->map_type->key_type;
        inner = tp->map_type->value_type;
        break;
    default:
        return SEAM_STATUS_OK;
    }
    if (has_elem && elem != 0 && !ir_dtype_valid(elem))
        return seam_error(L->ctx, SEAM_STATUS_INVALID_MODEL, "value '%s' has an unknown element type %d", what, elem);
    t->elem = has_elem ? elem : 0;
    if (inner) {
        t->inner = seam_arena_alloc(L->a, sizeof(ir_type));
        if (!t->inner) return OOM(L);
        return convert_type(L, inner, what, t->inner, depth + 1);
    }
    return SEAM_STATUS_OK;
}

/* ---- attributes and graphs ---- */

static seam_status convert_graph(loader *L, const Onnx__GraphProto *gp, node_src *ns, ir_graph *parent, int depth,
                                 ir_graph **out);

static ir_attr_kind guess_attr_kind(const Onnx__AttributeProto *ap) {
    /* Files from before IR version 2 may leave `type` unset. */
    if (ap->has_f) return IR_ATTR_FLOAT;
    if (ap->has_i) return IR_ATTR_INT;
    if (ap->has_s) return IR_ATTR_STRING;
    if (ap->t) return IR_ATTR_TENSOR;
    if (ap->g) return IR_ATTR_GRAPH;
    if (ap->sparse_tensor) return IR_ATTR_SPARSE_TENSOR;
    if (ap->tp) return IR_ATTR_TYPE_PROTO;
    if (ap->n_floats) return IR_ATTR_FLOATS;
    if (ap->n_ints) return IR_ATTR_INTS;
    if (ap->n_strings) return IR_ATTR_STRINGS;
    if (ap->n_tensors) return IR_ATTR_TENSORS;
    if (ap->n_graphs) return IR_ATTR_GRAPHS;
    if (ap->n_sparse_tensors) return IR_ATTR_SPARSE_TENSORS;
    if (ap->n_type_protos) return IR_ATTR_TYPE_PROTOS;
    return IR_ATTR_UNDEFINED;
}

/* "attribute 'x' of node 3 'conv' (Conv)", made into buf. */
static const char *attr_label(char *buf, size_t n, const ir_graph *g, int32_t node, const char *attr) {
    char lab[300];
    snprintf(buf, n, "attribute '%s' of %s", attr, ir_node_label(g, node, lab, sizeof(lab)));
    return buf;
}

static seam_status convert_attr(loader *L, const Onnx__AttributeProto *ap, ir_graph *g, int32_t node,
                                int depth, ir_attr *at) {
    memset(at, 0, sizeof(*at));
    at->name = dup_str(L, ap->name);
    at->doc = dup_str(L, ap->doc_string);
    at->ref_attr_name = ap->ref_attr_name ? dup_str(L, ap->ref_attr_name) : NULL;
    at->kind = ap->has_type && ap->type != 0 ? (ir_attr_kind)ap->type : guess_attr_kind(ap);
    /* Most attributes are plain numbers: the label is made only for the
     * kinds whose conversion can report an error. */
    char what[700] = "";
    if (at->kind != IR_ATTR_FLOAT && at->kind != IR_ATTR_INT && at->kind != IR_ATTR_INTS &&
        at->kind != IR_ATTR_FLOATS && at->kind != IR_ATTR_STRING && at->kind != IR_ATTR_STRINGS)
        attr_label(what, sizeof(what), g, node, at->name);
    seam_status st = SEAM_STATUS_OK;
    switch (at->kind) {
    case IR_ATTR_FLOAT: at->f = ap->f; break;
    case IR_ATTR_INT: at->i = ap->i; break;
    case IR_ATTR_STRING:
        at->s.len = ap->s.len;
        at->s.data = (const uint8_t *)seam_arena_strndup(L->a, (const char *)ap->s.data, ap->s.len);
        if (!at->s.data) return OOM(L);
        break;
    case IR_ATTR_TENSOR:
        if (!ap->t) return seam_error(L->ctx, SEAM_STATUS_INVALID_MODEL, "%s is a tensor attribute without a tensor", what);
        st = onnx_convert_tensor(L, ap->t, what, &at->t);
        break;
    case IR_ATTR_GRAPH:
        if (!ap->g) return seam_error(L->ctx, SEAM_STATUS_INVALID_MODEL, "%s is a graph attribute without a graph", what);
        st = convert_graph(L, ap->g, NULL, g, depth + 1, &at->g);
        if (st) seam_error_prefix(L->ctx, "in %s", what);
        break;
    case IR_ATTR_SPARSE_TENSOR:
        if (!ap->sparse_tensor) return seam_error(L->ctx, SEAM_STATUS_INVALID_MODEL, "%s has no sparse tensor", what);
        st = onnx_convert_sparse(L, ap->sparse_tensor, what, &at->sparse);
        break;
    case IR_ATTR_TYPE_PROTO:
        at->tp = seam_arena_alloc(L->a, sizeof(ir_type));
        if (!at->tp) return OOM(L);
        st = convert_type(L, ap->tp, what, at->tp, 0);
        break;
    case IR_ATTR_FLOATS:
        at->n = (int32_t)ap->n_floats;
        at->floats = seam_arena_memdup(L->a, ap->floats, sizeof(float) * ap->n_floats);
        if (!at->floats) return OOM(L);
        break;
    case IR_ATTR_INTS:
        at->n = (int32_t)ap->n_ints;
        at->ints = seam_arena_memdup(L->a, ap->ints, sizeof(int64_t) * ap->n_ints);
        if (!at->ints) return OOM(L);
        break;
    case IR_ATTR_STRINGS:
        at->n = (int32_t)ap->n_strings;
        at->strings = seam_arena_calloc(L->a, ap->n_strings + 1, sizeof(ir_bytes));
        if (!at->strings) return OOM(L);
        for (size_t k = 0; k < ap->n_strings; k++) {
            at->strings[k].len = ap->strings[k].len;
            at->strings[k].data = (const uint8_t *)seam_arena_strndup(L->a, (const char *)ap->strings[k].data, ap->strings[k].len);
            if (!at->strings[k].data) return OOM(L);
        }
        break;
    case IR_ATTR_TENSORS:
        at->n = (int32_t)ap->n_tensors;
        at->tensors = seam_arena_calloc(L->a, ap->n_tensors + 1, sizeof(ir_tensor *));
        if (!at->tensors) return OOM(L);
        for (size_t k = 0; k < ap->n_tensors && !st; k++) st = onnx_convert_tensor(L, ap->tensors[k], what, &at->tensors[k]);
        break;
    case IR_ATTR_GRAPHS:
        at->n = (int32_t)ap->n_graphs;
        at->graphs = seam_arena_calloc(L->a, ap->n_graphs + 1, sizeof(ir_graph *));
        if (!at->graphs) return OOM(L);
        for (size_t k = 0; k < ap->n_graphs && !st; k++) st = convert_graph(L, ap->graphs[k], NULL, g, depth + 1, &at->graphs[k]);
        if (st) seam_error_prefix(L->ctx, "in %s", what);
        break;
    case IR_ATTR_SPARSE_TENSORS:
        at->n = (int32_t)ap->n_sparse_tensors;
        at->sparse_tensors = seam_arena_calloc(L->a, ap->n_sparse_tensors + 1, sizeof(ir_sparse_tensor *));
        if (!at->sparse_tensors) return OOM(L);
        for (size_t k = 0; k < ap->n_sparse_tensors && !st; k++)
            st = onnx_convert_sparse(L, ap->sparse_tensors[k], what, &at->sparse_tensors[k]);
        break;
    case IR_ATTR_TYPE_PROTOS:
        at->n = (int32_t)ap->n_type_protos;
        at->type_protos = seam_arena_calloc(L->a, ap->n_type_protos + 1, sizeof(ir_type *));
        if (!at->type_protos) return OOM(L);
        for (size_t k = 0; k < ap->n_type_protos && !st; k++) {
            at->type_protos[k] = seam_arena_alloc(L->a, sizeof(ir_type));
            if (!at->type_protos[k]) return OOM(L);
            st = convert_type(L, ap->type_protos[k], what, at->type_protos[k], 0);
        }
        break;
    default:
        return seam_error(L->ctx, SEAM_STATUS_INVALID_MODEL, "%s has an unknown attribute type %d", what, (int)at->kind);
    }
    return st;
}

/* The value named `name` as seen from g: defined in g, or an outer-scope
 * value of an enclosing graph (then a local OUTER value is made, chained
 * through every graph in between). -1 if nothing defines it. */
static int32_t resolve_outer(loader *L, ir_graph *g, const char *name) {
    int32_t v = ir_graph_find(g, name);
    if (v >= 0) return v;
    if (!g->parent) return -1;
    int32_t o = resolve_outer(L, g->parent, name);
    if (o < 0) return -1;
    v = ir_graph_add_value(g, g->parent->values[o].name);
    if (v < 0) return -2;
    g->values[v].flags |= IR_VALUE_OUTER;
    g->values[v].outer = o;
    return v;
}

/* A value to use as a node input or graph output. Names nothing defines
 * get a plain value with no flags, so that linking reports them with the
 * node that uses them. */
static int32_t use_value(loader *L, ir_graph *g, const char *name) {
    int32_t v = resolve_outer(L, g, name);
    if (v == -1) v = ir_graph_add_value(g, dup_str(L, name));
    return v < 0 ? -2 : v;
}

static seam_status convert_value_info(loader *L, ir_graph *g, const Onnx__ValueInfoProto *vi, int32_t v) {
    ir_value *val = &g->values[v];
    if (vi->doc_string && vi->doc_string[0]) {
        const char *doc = dup_str(L, vi->doc_string);
        if (!doc || !ir_value_set_doc(g, v, doc)) return OOM(L);
    }
    if (!vi->type) return SEAM_STATUS_OK;
    ir_type t;
    seam_status st = convert_type(L, vi->type, val->name, &t, 0);
    if (st) return st;
    g->values[v].type = t;
    g->values[v].flags |= IR_VALUE_DECLARED;
    return SEAM_STATUS_OK;
}

/* Gives unnamed nodes "<op>_<index>", made unique against every node name
 * of the graph; the same file always gets the same names. */
static seam_status name_nodes(loader *L, ir_graph *g) {
    bool any = false;
    for (int32_t i = 0; i < g->n_nodes && !any; i++) any = !g->nodes[i].name[0];
    if (!any) return SEAM_STATUS_OK;
    ir_name_map *used = ir_names_new(&L->tmp, (uint32_t)g->n_nodes);
    if (!used) return OOM(L);
    for (int32_t i = 0; i < g->n_nodes; i++)
        if (g->nodes[i].name[0] && !ir_names_put(used, g->nodes[i].name, i)) return OOM(L);
    char buf[256];
    for (int32_t i = 0; i < g->n_nodes; i++) {
        ir_node *n = &g->nodes[i];
        if (n->name[0]) continue;
        snprintf(buf, sizeof(buf), "%.200s_%d", n->op_type[0] ? n->op_type : "node", i);
        size_t base = strlen(buf);
        for (int k = 1; ir_names_get(used, buf) >= 0; k++) snprintf(buf + base, sizeof(buf) - base, "_%d", k);
        n->name = dup_str(L, buf);
        n->name_generated = true;
        if (!n->name || !ir_names_put(used, n->name, i)) return OOM(L);
    }
    return SEAM_STATUS_OK;
}

/* Inputs and attributes of node i from np; with inputs_found, node_ready
 * has already filled n->inputs. */
static seam_status convert_node_rest(loader *L, ir_graph *g, const Onnx__NodeProto *np, int32_t i, int depth,
                                     bool inputs_found) {
    ir_node *n = &g->nodes[i];
    char lab[300];
    /* n->inputs was sized from the first pass's NodeProto; a second
     * unpack of the same bytes must agree with it (the file's pages may
     * have been read again, from a file changed in between). */
    if (np->n_input != (size_t)n->n_inputs || np->n_output != (size_t)n->n_outputs)
        return seam_error(L->ctx, SEAM_STATUS_IO_ERROR,
                          "%s changed while the file was read (it had %d inputs and %d outputs, now %zu and %zu): "
                          "was the file written to during loading?",
                          ir_node_label(g, i, lab, sizeof(lab)), n->n_inputs, n->n_outputs, np->n_input, np->n_output);
    for (size_t k = 0; k < np->n_input && !inputs_found; k++) {
        const char *nm = np->input[k] ? np->input[k] : "";
        n->inputs[k] = nm[0] ? use_value(L, g, nm) : -1;
        if (n->inputs[k] == -2) return OOM(L);
    }
    n->n_attrs = (int32_t)np->n_attribute;
    n->attrs = np->n_attribute ? seam_arena_calloc(L->a, np->n_attribute, sizeof(ir_attr)) : NULL;
    if (np->n_attribute && !n->attrs) return OOM(L);
    seam_status st;
    for (size_t k = 0; k < np->n_attribute; k++) {
        if ((st = convert_attr(L, np->attribute[k], g, i, depth, &n->attrs[k]))) return st;
        for (size_t j = 0; j < k; j++)
            if (strcmp(n->attrs[j].name, n->attrs[k].name) == 0)
                return seam_error(L->ctx, SEAM_STATUS_INVALID_MODEL, "%s has attribute '%s' twice",
                                  ir_node_label(g, i, lab, sizeof(lab)), n->attrs[k].name);
    }
    return SEAM_STATUS_OK;
}

/* True when np's inputs are all defined in g already (their indices are
 * then in n->inputs) and it holds no body, so converting it now gives what
 * the second pass would. */
static bool node_ready(const ir_graph *g, const Onnx__NodeProto *np, ir_node *n, const uint32_t *hashes) {
    for (size_t k = 0; k < np->n_attribute; k++) {
        const Onnx__AttributeProto *ap = np->attribute[k];
        if (ap->g || ap->n_graphs) return false;
    }
    for (size_t k = 0; k < np->n_input; k++) {
        if (!np->input[k] || !np->input[k][0]) n->inputs[k] = -1;
        else if (hashes) n->inputs[k] = ir_names_get_hashed(g->names, np->input[k], hashes[k]);
        else n->inputs[k] = ir_graph_find(g, np->input[k]);
        if (n->inputs[k] < 0 && np->input[k] && np->input[k][0]) return false;
    }
    return true;
}

/* Presizes g's values and nodes: every value is an input, an initializer
 * or a node output. */
static seam_status graph_presize(loader *L, const Onnx__GraphProto *gp, const node_src *ns, ir_graph *parent,
                                 ir_graph *g) {
    size_t n_node = ns->n;
    size_t nv = gp->n_input + gp->n_initializer + gp->n_sparse_initializer;
    if (ns->bytes) nv += L->n_stream_outputs;
    else
        for (size_t i = 0; i < n_node; i++) nv += gp->node[i]->n_output;
    if (n_node > INT32_MAX / 2 || nv > INT32_MAX / 2)
        return seam_error(L->ctx, SEAM_STATUS_INVALID_MODEL, "graph '%s' is too big", g->name);
    g->values = seam_arena_alloc(L->a, sizeof(ir_value) * (nv + 1));
    g->nodes = seam_arena_alloc(L->a, sizeof(ir_node) * (n_node + 1));
    if (!g->values || !g->nodes) return OOM(L);
    g->cap_values = (int32_t)nv + 1;
    g->cap_nodes = (int32_t)n_node + 1;
    /* the top graph's map is dropped after loading; bodies keep theirs */
    g->names = ir_names_new(parent ? L->a : &L->tmp, (uint32_t)nv);
    if (!g->names) return OOM(L);
    return SEAM_STATUS_OK;
}

/* A value of g for an initializer of the given shape and element type. */
static seam_status init_value(loader *L, ir_graph *g, const char *name, int32_t elem, int32_t rank, const int64_t *dims,
                              int32_t *v_out) {
    int32_t v = ir_graph_add_value(g, name);
    if (v < 0) return OOM(L);
    ir_value *val = &g->values[v];
    val->flags |= IR_VALUE_INIT;
    val->type.kind = IR_TYPE_TENSOR;
    val->type.elem = elem;
    val->type.rank = rank;
    val->type.dims = seam_arena_calloc(L->a, (size_t)rank + 1, sizeof(ir_dim));
    if (!val->type.dims) return OOM(L);
    for (int32_t d = 0; d < rank; d++) val->type.dims[d].v = dims[d];
    *v_out = v;
    return SEAM_STATUS_OK;
}

/* gp's initializers and sparse initializers, each a value of g. */
static seam_status convert_inits(loader *L, const Onnx__GraphProto *gp, ir_graph *g) {
    seam_status st;
    g->inits = seam_arena_alloc(L->a, sizeof(int32_t) * (gp->n_initializer + 1));
    if (!g->inits) return OOM(L);
    for (size_t k = 0; k < gp->n_initializer; k++) {
        ir_tensor *t;
        if ((st = onnx_convert_tensor(L, gp->initializer[k], "initializer", &t))) return st;
        if (!t->name[0]) return seam_error(L->ctx, SEAM_STATUS_INVALID_MODEL, "initializer %zu has no name", k);
        if (ir_graph_find(g, t->name) >= 0)
            return seam_error(L->ctx, SEAM_STATUS_INVALID_MODEL, "initializer '%s' appears twice", t->name);
        int32_t v;
        if ((st = init_value(L, g, t->name, t->dtype, t->rank, t->dims, &v))) return st;
        g->values[v].init = t;
        g->inits[g->n_inits++] = v;
    }
    g->sparse_inits = seam_arena_alloc(L->a, sizeof(ir_sparse_tensor *) * (gp->n_sparse_initializer + 1));
    if (!g->sparse_inits) return OOM(L);
    for (size_t k = 0; k < gp->n_sparse_initializer; k++) {
        ir_sparse_tensor *s;
        if ((st = onnx_convert_sparse(L, gp->sparse_initializer[k], "sparse initializer", &s))) return st;
        const char *nm = s->values->name;
        if (!nm[0] || ir_graph_find(g, nm) >= 0)
            return seam_error(L->ctx, SEAM_STATUS_INVALID_MODEL, "sparse initializer '%s' has no name or appears twice", nm);
        int32_t v; /* init stays NULL: the data is sparse */
        if ((st = init_value(L, g, nm, s->values->dtype, s->rank, s->dims, &v))) return st;
        g->sparse_inits[g->n_sparse_inits++] = s;
    }
    return SEAM_STATUS_OK;
}

/* gp's inputs (old files list initializers here too). */
static seam_status convert_inputs(loader *L, const Onnx__GraphProto *gp, ir_graph *g) {
    seam_status st;
    g->inputs = seam_arena_alloc(L->a, sizeof(int32_t) * (gp->n_input + 1));
    if (!g->inputs) return OOM(L);
    for (size_t k = 0; k < gp->n_input; k++) {
        const Onnx__ValueInfoProto *vi = gp->input[k];
        const char *nm = vi->name ? vi->name : "";
        if (!nm[0]) return seam_error(L->ctx, SEAM_STATUS_INVALID_MODEL, "graph '%s': input %zu has no name", g->name, k);
        int32_t v = ir_graph_find(g, nm);
        if (v >= 0 && (g->values[v].flags & IR_VALUE_INPUT))
            return seam_error(L->ctx, SEAM_STATUS_INVALID_MODEL, "graph '%s': input '%s' is listed twice", g->name, nm);
        if (v < 0) {
            v = ir_graph_add_value(g, dup_str(L, nm));
            if (v < 0) return OOM(L);
            if ((st = convert_value_info(L, g, vi, v))) return st;
        } else if (vi->type) {
            /* an initializer that is also an input: keep the initializer's
             * exact shape, but check the declared type agrees */
            ir_type t;
            if ((st = convert_type(L, vi->type, nm, &t, 0))) return st;
            g->values[v].flags |= IR_VALUE_DECLARED;
        }
        g->values[v].flags |= IR_VALUE_INPUT;
        g->inputs[g->n_inputs++] = v;
    }
    return SEAM_STATUS_OK;
}

/* Node i of g from np, but for its inputs and attributes: name, op type,
 * domain, doc string, outputs (defined here, so that bodies and unsorted
 * files can refer to values defined further down). hashes: the outputs'
 * name hashes, or NULL. */
static seam_status node_head(loader *L, ir_graph *g, const Onnx__NodeProto *np, size_t i, const uint32_t *hashes,
                             ir_node **n_out) {
    int32_t idx = ir_graph_add_node(g);
    if (idx < 0) return OOM(L);
    ir_node *n = &g->nodes[idx];
    n->name = dup_str(L, np->name);
    n->op_type = intern(L, np->op_type);
    n->domain = intern(L, np->domain);
    n->opset = -1;
    if (!n->name || !n->op_type || !n->domain) return OOM(L);
    if (np->doc_string && np->doc_string[0]) {
        const char *doc = dup_str(L, np->doc_string);
        if (!doc || !ir_node_set_doc(g, idx, doc)) return OOM(L);
    }
    if (!n->op_type[0]) return seam_error(L->ctx, SEAM_STATUS_INVALID_MODEL, "node %zu '%s' has no op_type", i, n->name);
    if (np->n_input > INT32_MAX / 4 || np->n_output > INT32_MAX / 4 || np->n_attribute > INT32_MAX / 4)
        return seam_error(L->ctx, SEAM_STATUS_INVALID_MODEL, "node %zu '%s' (%s) is too big", i, n->name, n->op_type);
    /* inputs and outputs share one allocation */
    n->n_outputs = (int32_t)np->n_output;
    n->n_inputs = (int32_t)np->n_input;
    n->outputs = seam_arena_alloc_aligned(L->a, sizeof(int32_t) * (np->n_output + np->n_input + 1), 4);
    if (!n->outputs) return OOM(L);
    n->inputs = n->outputs + np->n_output;
    for (size_t k = 0; k < np->n_output; k++) {
        const char *nm = np->output[k] ? np->output[k] : "";
        if (!nm[0]) {
            n->outputs[k] = -1;
            continue;
        }
        const char *copy = dup_str(L, nm);
        int32_t v = !copy ? -1 : hashes ? ir_graph_find_or_add_hashed(g, copy, hashes[k]) : ir_graph_find_or_add(g, copy);
        if (v < 0) return OOM(L);
        n->outputs[k] = v; /* a second producer is reported by linking */
    }
    *n_out = n;
    return SEAM_STATUS_OK;
}

/* A node left for the second pass: its index, and its bytes when
 * streamed. */
typedef struct pending {
    size_t i, len;
    const uint8_t *data;
} pending;

typedef struct pending_list {
    pending *at;
    size_t n, cap;
} pending_list;

static seam_status pending_add(loader *L, pending_list *pl, pending p) {
    if (pl->n == pl->cap) {
        size_t cap = pl->cap ? pl->cap * 2 : 64;
        pending *nl = seam_arena_alloc(&L->tmp, sizeof(pending) * cap);
        if (!nl) return OOM(L);
        if (pl->n) memcpy(nl, pl->at, sizeof(pending) * pl->n);
        pl->at = nl;
        pl->cap = cap;
    }
    pl->at[pl->n++] = p;
    return SEAM_STATUS_OK;
}

/* The first pass over the nodes: every node's head (node_head). Most nodes
 * are finished now, while their NodeProto is at hand: a named node whose
 * inputs are all defined and which holds no body. The others wait for the
 * second pass (later), as does any node whose inputs or attributes fail
 * here (the errors then come in the order the passes give them). */
static seam_status first_pass(loader *L, node_src *ns, ir_graph *g, int depth, pending_list *later) {
    seam_status st;
    node_src_rewind(ns);
    for (size_t i = 0; i < ns->n; i++) {
        const Onnx__NodeProto *np = node_src_next(L, ns, &st);
        if (!np) return st;
        /* the names' hashes, outputs then inputs, each computed once and
         * its slot prefetched */
        uint32_t hashes[16];
        bool hashed = g->names && np->n_output + np->n_input <= 16;
        for (size_t k = 0; hashed && k < np->n_output + np->n_input; k++) {
            const char *nm = k < np->n_output ? np->output[k] : np->input[k - np->n_output];
            hashes[k] = ir_names_hash(nm ? nm : "");
            ir_names_prefetch(g->names, hashes[k]);
        }
        ir_node *n = NULL;
        if ((st = node_head(L, g, np, i, hashed ? hashes : NULL, &n))) return st;
        if (n->name[0] && node_ready(g, np, n, hashed ? hashes + np->n_output : NULL)) {
            scratch *outer_sc = L->sc;
            if (ns->bytes) L->sc = &ns->sc; /* a Constant's big tensor is adopted from the node's scratch */
            st = convert_node_rest(L, g, np, (int32_t)i, depth, true);
            L->sc = outer_sc;
            if (!st) continue;
        }
        if ((st = pending_add(L, later, (pending){i, ns->cur_len, ns->cur}))) return st;
    }
    return SEAM_STATUS_OK;
}

/* The second pass: the nodes the first left, every name now defined. */
static seam_status second_pass(loader *L, const Onnx__GraphProto *gp, node_src *ns, ir_graph *g, int depth,
                               const pending_list *later) {
    seam_status st = SEAM_STATUS_OK;
    scratch *outer_sc = L->sc;
    if (ns->bytes) L->sc = &ns->sc;
    for (size_t k = 0; k < later->n; k++) {
        size_t i = later->at[k].i;
        const Onnx__NodeProto *np =
            ns->bytes ? node_src_unpack(L, ns, later->at[k].data, later->at[k].len, &st) : gp->node[i];
        if (!np || (st = convert_node_rest(L, g, np, (int32_t)i, depth, false))) {
            L->sc = outer_sc;
            return st;
        }
    }
    L->sc = outer_sc;
    if (ns->bytes) node_src_reset(ns);
    return SEAM_STATUS_OK;
}

/* gp's outputs, and the types its value_info gives. */
static seam_status convert_outputs(loader *L, const Onnx__GraphProto *gp, node_src *ns, ir_graph *g) {
    seam_status st;
    g->outputs = seam_arena_alloc(L->a, sizeof(int32_t) * (gp->n_output + 1));
    if (!g->outputs) return OOM(L);
    for (size_t k = 0; k < gp->n_output; k++) {
        const Onnx__ValueInfoProto *vi = node_src_value_info(L, ns, gp, false, k, &st);
        if (!vi) return st;
        const char *nm = vi->name ? vi->name : "";
        if (!nm[0]) return seam_error(L->ctx, SEAM_STATUS_INVALID_MODEL, "graph '%s': output %zu has no name", g->name, k);
        int32_t v = use_value(L, g, nm);
        if (v < 0) return OOM(L);
        if ((st = convert_value_info(L, g, vi, v))) return st;
        g->values[v].flags |= IR_VALUE_OUTPUT;
        g->outputs[g->n_outputs++] = v;
    }
    for (size_t k = 0; k < gp->n_value_info; k++) {
        const Onnx__ValueInfoProto *vi = node_src_value_info(L, ns, gp, true, k, &st);
        if (!vi) return st;
        int32_t v = ir_graph_find(g, vi->name ? vi->name : "");
        if (v < 0 || (g->values[v].flags & (IR_VALUE_INIT | IR_VALUE_INPUT | IR_VALUE_OUTPUT | IR_VALUE_OUTER)))
            continue; /* a value_info for nothing, or for a value typed elsewhere */
        if ((st = convert_value_info(L, g, vi, v))) return st;
    }
    return SEAM_STATUS_OK;
}

/* Converts gp; its nodes come from ns when streamed (the top graph), else
 * from gp->node (ns NULL). */
static seam_status convert_graph(loader *L, const Onnx__GraphProto *gp, node_src *ns, ir_graph *parent, int depth,
                                 ir_graph **out) {
    if (depth > 64) return seam_error(L->ctx, SEAM_STATUS_INVALID_MODEL, "graphs are nested more than 64 deep");
    ir_graph *g = ir_graph_new(L->m, parent);
    if (!g) return OOM(L);
    *out = g;
    g->name = dup_str(L, gp->name);
    g->doc = dup_str(L, gp->doc_string);
    node_src own = {.gp = gp, .n = gp->n_node};
    if (!ns) ns = &own;
    pending_list later = {0};
    seam_status st;
    if ((st = graph_presize(L, gp, ns, parent, g)) || (st = convert_inits(L, gp, g)) || (st = convert_inputs(L, gp, g)) ||
        (st = first_pass(L, ns, g, depth, &later)) || (st = name_nodes(L, g)))
        return st;
    if (ns->bytes && L->ctx->load_between_passes) L->ctx->load_between_passes(L->ctx->load_between_passes_arg);
    if ((st = second_pass(L, gp, ns, g, depth, &later))) return st;
    return convert_outputs(L, gp, ns, g);
}

/* ---- model ---- */

static seam_status pack_blob(loader *L, const ProtobufCMessage *msg, ir_bytes *out) {
    size_t n = protobuf_c_message_get_packed_size(msg);
    uint8_t *buf = seam_arena_alloc(L->a, n + 1);
    if (!buf) return OOM(L);
    protobuf_c_message_pack(msg, buf);
    out->data = buf;
    out->len = n;
    return SEAM_STATUS_OK;
}

/* gp and ns: the streamed top graph, or NULL to use mp->graph. */
static seam_status convert_model(loader *L, const Onnx__ModelProto *mp, const Onnx__GraphProto *gp, node_src *ns) {
    struct seam_model *m = L->m;
    seam_status st;
    if (!gp) gp = mp->graph;
    if (!gp) return seam_error(L->ctx, SEAM_STATUS_INVALID_MODEL, "the model has no graph (is this an ONNX file?)");
    m->ir_version = mp->has_ir_version ? mp->ir_version : 0;
    m->model_version = mp->has_model_version ? mp->model_version : 0;
    m->producer_name = dup_str(L, mp->producer_name);
    m->producer_version = dup_str(L, mp->producer_version);
    m->domain = dup_str(L, mp->domain);
    m->doc = dup_str(L, mp->doc_string);
    m->opsets = seam_arena_calloc(L->a, mp->n_opset_import + 1, sizeof(ir_opset));
    m->metadata = seam_arena_calloc(L->a, mp->n_metadata_props + 1, sizeof(ir_string_pair));
    m->functions = seam_arena_calloc(L->a, mp->n_functions + 1, sizeof(ir_bytes));
    m->training_infos = seam_arena_calloc(L->a, mp->n_training_info + 1, sizeof(ir_bytes));
    if (!m->opsets || !m->metadata || !m->functions || !m->training_infos) return OOM(L);
    for (size_t k = 0; k < mp->n_opset_import; k++) {
        const Onnx__OperatorSetIdProto *o = mp->opset_import[k];
        const char *d = o->domain ? o->domain : "";
        for (int32_t j = 0; j < m->n_opsets; j++)
            if (strcmp(m->opsets[j].domain, d) == 0)
                return seam_error(L->ctx, SEAM_STATUS_INVALID_MODEL, "opset for domain '%s' is imported twice", d);
        if (!o->has_version || o->version < 1)
            return seam_error(L->ctx, SEAM_STATUS_INVALID_MODEL, "opset import for domain '%s' has no valid version", d);
        m->opsets[m->n_opsets++] = (ir_opset){dup_str(L, d), o->version};
    }
    for (size_t k = 0; k < mp->n_metadata_props; k++) {
        const Onnx__StringStringEntryProto *e = mp->metadata_props[k];
        m->metadata[m->n_metadata++] = (ir_string_pair){dup_str(L, e->key), dup_str(L, e->value)};
    }
    for (size_t k = 0; k < mp->n_functions; k++)
        if ((st = pack_blob(L, &mp->functions[k]->base, &m->functions[m->n_functions++]))) return st;
    for (size_t k = 0; k < mp->n_training_info; k++)
        if ((st = pack_blob(L, &mp->training_info[k]->base, &m->training_infos[m->n_training_infos++]))) return st;
    return convert_graph(L, gp, ns, NULL, 0, &m->graph);
}

static void model_free(struct seam_model *m) {
    if (!m) return;
    for (int32_t k = 0; k < m->n_owned; k++) free(m->owned[k]);
    free(m->owned);
    seam_arena_free(&m->arena);
    free(m);
}

void seam_model_free(seam_model *model) { model_free(model); }

/* own_map: data is the loader's private map of the file, whose pages it
 * may give back once read. */
static seam_status load_bytes(seam_context *ctx, const void *data, size_t size, const char *base_dir, bool own_map,
                              seam_model **model_out) {
    if (size == 0) return seam_error(ctx, SEAM_STATUS_PARSE_ERROR, "the file is empty");
    struct seam_model *m = calloc(1, sizeof(*m));
    if (!m) return seam_error(ctx, SEAM_STATUS_OUT_OF_MEMORY, "out of memory");
    m->ctx = ctx;
    seam_arena_init(&m->arena, (size_t)1 << 20);
    scratch sc = {0};
    seam_arena_init(&sc.arena, (size_t)1 << 20);
    ProtobufCAllocator alloc = {scratch_alloc, scratch_free, &sc};
    node_src ns = {0};
    ns.release = own_map;
    seam_arena_init(&ns.sc.arena, (size_t)1 << 16);
    ns.alloc = (ProtobufCAllocator){scratch_alloc, scratch_free, &ns.sc};
    Onnx__ModelProto *mp = NULL;
    Onnx__GraphProto *gp = NULL;
    size_t n_stream_outputs = 0;
    if (ctx->load_whole || !onnx_stream_model(&sc, &alloc, data, size, &mp, &gp, &ns, &n_stream_outputs)) {
        /* not the expected layout: unpack the whole model, which also
         * reports what is wrong with it */
        scratch_release(&sc);
        sc = (scratch){0};
        seam_arena_init(&sc.arena, (size_t)1 << 20);
        gp = NULL;
        ns.bytes = NULL;
        mp = onnx__model_proto__unpack(&alloc, size, data);
    }
    seam_status st = SEAM_STATUS_OK;
    if (!mp) {
        st = sc.oom ? seam_error(ctx, SEAM_STATUS_OUT_OF_MEMORY, "out of memory while parsing the model")
                    : seam_error(ctx, SEAM_STATUS_PARSE_ERROR,
                                 "not an ONNX model: the protobuf is malformed or truncated");
    } else {
        if (sc.n_big) qsort(sc.big, sc.n_big, sizeof(void *), scratch_cmp_ptr);
        loader L = {ctx, m, &m->arena, &sc, base_dir, NULL, NULL, 0, 0, n_stream_outputs, {0}, {0}};
        seam_arena_init(&L.tmp, (size_t)1 << 16);
        L.interned = ir_names_new(&L.tmp, 256);
        m->base_dir = base_dir ? seam_arena_strdup(&m->arena, base_dir) : NULL;
        L.base_dir = m->base_dir;
        st = L.interned ? convert_model(&L, mp, gp, gp ? &ns : NULL) : OOM(&L);
        seam_arena_free(&L.tmp);
        if (m->graph) m->graph->names = NULL; /* it lived in L.tmp */
    }
    scratch_release(&ns.sc);
    scratch_release(&sc); /* the protobuf structures end here */
    seam_phase(ctx, "load: convert");
    if (!st) st = ir_graph_link(ctx, m->graph);
    seam_phase(ctx, "load: link");
    if (!st) st = ir_infer_model(m);
    seam_phase(ctx, "load: infer");
    if (st) {
        model_free(m);
        return st;
    }
    *model_out = m;
    return SEAM_STATUS_OK;
}

seam_status seam_model_load_buffer(seam_context *ctx, const void *data, size_t size, const char *base_dir,
                                   seam_model **model_out) {
    if (!model_out) return seam_error(ctx, SEAM_STATUS_INVALID_ARGUMENT, "model_out is NULL");
    *model_out = NULL;
    if (!data && size) return seam_error(ctx, SEAM_STATUS_INVALID_ARGUMENT, "data is NULL");
    char real[PATH_MAX];
    if (base_dir && !realpath(base_dir, real))
        return seam_error(ctx, SEAM_STATUS_IO_ERROR, "cannot resolve folder '%s': %s", base_dir, strerror(errno));
    return load_bytes(ctx, data, size, base_dir ? real : NULL, false, model_out);
}

seam_status seam_model_load(seam_context *ctx, const char *path, seam_model **model_out) {
    if (!model_out) return seam_error(ctx, SEAM_STATUS_INVALID_ARGUMENT, "model_out is NULL");
    *model_out = NULL;
    if (!path) return seam_error(ctx, SEAM_STATUS_INVALID_ARGUMENT, "path is NULL");
    int fd = open(path, O_RDONLY);
    if (fd < 0) return seam_error(ctx, SEAM_STATUS_IO_ERROR, "%s: cannot open: %s", path, strerror(errno));
    struct stat sb;
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        close(fd);
        return seam_error(ctx, SEAM_STATUS_IO_ERROR, "%s: not a regular file", path);
    }
    /* The folder that external data is relative to. */
    char dir[PATH_MAX], real[PATH_MAX];
    snprintf(dir, sizeof(dir), "%s", path);
    char *slash = strrchr(dir, '/');
    seam_phase(ctx, "start");
    if (slash) {
        if (slash == dir) slash[1] = 0;
        else *slash = 0;
    } else {
        snprintf(dir, sizeof(dir), ".");
    }
    if (!realpath(dir, real)) {
        close(fd);
        return seam_error(ctx, SEAM_STATUS_IO_ERROR, "%s: cannot resolve its folder: %s", path, strerror(errno));
    }
    size_t size = (size_t)sb.st_size;
    seam_status st;
    if (size == 0) {
        close(fd);
        st = seam_error(ctx, SEAM_STATUS_PARSE_ERROR, "the file is empty");
    } else {
        /* mmap + one copy by protobuf-c costs about one read(2). */
        void *p = mmap(NULL, size, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0);
        close(fd);
        if (p == MAP_FAILED) return seam_error(ctx, SEAM_STATUS_IO_ERROR, "%s: cannot map: %s", path, strerror(errno));
        st = load_bytes(ctx, p, size, real, true, model_out);
        munmap(p, size);
    }
    if (st) seam_error_prefix(ctx, "%s", path);
    return st;
}
