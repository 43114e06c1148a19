/* Staged models (staged.h): the cut of an applied plan's top-level nodes
 * into stages, recorded as JSON in the model's metadata, read back without
 * loading the model, and one stage's model cut from the file
 * (onnx/stage_bytes.c). */
#include "staged.h"

#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/context.h"
#include "ir/ir.h"
#include "onnx/stage_bytes.h"

static seam_status oom(seam_context *ctx) { return seam_error(ctx, SEAM_STATUS_OUT_OF_MEMORY, "out of memory"); }

/* ---- recording ---------------------------------------------------------- */

typedef struct named_stage {
    const char *name;
    int32_t stage;
} named_stage;

static int cmp_named(const void *a, const void *b) {
    return strcmp(((const named_stage *)a)->name, ((const named_stage *)b)->name);
}

/* The stage src gave the node called name: >= 0, -1 a constant, -2 not a
 * node of the plan (one that applying the plan made). */
static int32_t stage_of(const named_stage *by_name, int32_t n, const char *name) {
    if (!name) return -2;
    named_stage key = {name, 0};
    const named_stage *f = bsearch(&key, by_name, (size_t)n, sizeof(named_stage), cmp_named);
    return f ? f->stage : -2;
}

static bool is_subgraph_node(const ir_node *n) {
    return !strcmp(n->domain, "ai.seam") && !strcmp(n->op_type, "Subgraph");
}

static seam_status set_metadata(seam_model *m, const char *key, const char *value) {
    const char *v = seam_arena_strdup(&m->arena, value);
    if (!v) return oom(m->ctx);
    for (int32_t k = 0; k < m->n_metadata; k++)
        if (!strcmp(m->metadata[k].key, key)) return m->metadata[k].value = v, SEAM_STATUS_OK;
    ir_string_pair *md = seam_arena_alloc(&m->arena, sizeof(ir_string_pair) * (size_t)(m->n_metadata + 1));
    if (!md) return oom(m->ctx);
    if (m->n_metadata) memcpy(md, m->metadata, sizeof(ir_string_pair) * (size_t)m->n_metadata);
    md[m->n_metadata++] = (ir_string_pair){key, v};
    m->metadata = md;
    return SEAM_STATUS_OK;
}

/* A note line appended to *notes (malloc'd, grown). */
static void note(char **notes, size_t *len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void note(char **notes, size_t *len, const char *fmt, ...) {
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    if (n < 0) return;
    if ((size_t)n >= sizeof(line)) n = (int)sizeof(line) - 1;
    char *p = realloc(*notes, *len + (size_t)n + 2);
    if (!p) return;
    memcpy(p + *len, line, (size_t)n);
    *len += (size_t)n;
    p[(*len)++] = '\n';
    p[*len] = 0;
    *notes = p;
}

/* What staged_record works on. */
typedef struct recorder {
    seam_model *m;
    const ir_graph *g;
    int32_t ns, words;
    int32_t *stage;    /* node -> its stage; -1: a constant, in every stage member marks */
    uint64_t *member;  /* node -> bitset of stages (words each) */
    int32_t *pos;      /* node -> position in the saved file's node list */
    char *notes;
    size_t notes_len;
} recorder;

static bool is_member(const recorder *r, int32_t node, int32_t s) {
    return (r->member[(size_t)node * (size_t)r->words + (size_t)(s / 64)] >> (s % 64)) & 1u;
}
static void add_member(recorder *r, int32_t node, int32_t s) {
    r->member[(size_t)node * (size_t)r->words + (size_t)(s / 64)] |= (uint64_t)1 << (s % 64);
}

/* Each top-level node's stage from the plan's: a Subgraph node takes the
 * stage most of its body's nodes are in; a node the plan did not have
 * takes the latest stage of what it reads. */
static seam_status assign(recorder *r, const staged_source *src) {
    const ir_graph *g = r->g;
    seam_context *ctx = r->m->ctx;
    named_stage *by_name = malloc(sizeof(named_stage) * ((size_t)src->n_nodes + 1));
    int32_t *count = calloc((size_t)r->ns, sizeof(int32_t));
    if (!by_name || !count) return free(by_name), free(count), oom(ctx);
    int32_t nb = 0;
    for (int32_t i = 0; i < src->n_nodes; i++)
        if (src->names[i]) by_name[nb++] = (named_stage){src->names[i], src->stage[i]};
    qsort(by_name, (size_t)nb, sizeof(named_stage), cmp_named);
    for (int32_t i = 0; i < g->n_nodes; i++) {
        const ir_node *n = &g->nodes[i];
        const ir_attr *body = is_subgraph_node(n) ? ir_node_attr(n, "body") : NULL;
        if (!body || body->kind != IR_ATTR_GRAPH || !body->g) {
            r->stage[i] = stage_of(by_name, nb, n->name);
            continue;
        }
        memset(count, 0, sizeof(int32_t) * (size_t)r->ns);
        int32_t best = -2, lo = r->ns, hi = -1, in_body = body->g->n_nodes;
        for (int32_t k = 0; k < body->g->n_nodes; k++) {
            int32_t s = stage_of(by_name, nb, body->g->nodes[k].name);
            if (s < 0) continue;
            count[s]++;
            if (best < 0 || count[s] > count[best] || (count[s] == count[best] && s < best)) best = s;
            lo = s < lo ? s : lo, hi = s > hi ? s : hi;
        }
        r->stage[i] = best;
        if (hi > lo) {
            const ir_attr *t = ir_node_attr(n, "target");
            note(&r->notes, &r->notes_len,
                 "stages: the cut fell inside subgraph '%s' (%.*s, %d nodes, in stages %d to %d); all of it runs in "
                 "stage %d, the cut moved to its boundary (the estimates above are for the planned cut)",
                 n->name, t && t->kind == IR_ATTR_STRING ? (int)t->s.len : 1,
                 t && t->kind == IR_ATTR_STRING ? (const char *)t->s.data : "?", in_body, lo, hi, best);
        }
    }
    free(by_name);
    free(count);
    /* in topological order: a node the plan did not place takes the
     * latest stage of the values it reads (none: a constant), and no node
     * may read a value made in a later stage */
    for (int32_t p = 0; p < g->n_nodes; p++) {
        int32_t i = g->topo ? g->topo[p] : p;
        const ir_node *n = &g->nodes[i];
        int32_t latest = -1;
        bool computed = false;
        const char *late = NULL;
        for (int32_t k = 0; k < n->n_inputs + n->n_implicit; k++) {
            int32_t v = n->inputs[k];
            if (v < 0 || (g->values[v].flags & IR_VALUE_INIT)) continue;
            int32_t pr = g->values[v].producer, s = pr >= 0 ? r->stage[pr] : (g->values[v].flags & IR_VALUE_INPUT) ? 0 : -1;
            if (pr < 0 && !(g->values[v].flags & IR_VALUE_INPUT)) continue;
            if (s < 0) continue;
            computed = true;
            if (s > latest) latest = s, late = g->values[v].name;
        }
        if (r->stage[i] < 0) r->stage[i] = computed ? latest : -1;
        else if (latest > r->stage[i])
            return seam_error(ctx, SEAM_STATUS_INTERNAL, "stages: node '%s' (stage %d) reads '%s', made in stage %d",
                              n->name, r->stage[i], late, latest);
    }
    return SEAM_STATUS_OK;
}

/* A constant node belongs to every stage that reads it (transitively);
 * one that makes a graph output, to stage 0 as well. */
static void memberships(recorder *r) {
    const ir_graph *g = r->g;
    for (int32_t p = g->n_nodes - 1; p >= 0; p--) {
        int32_t i = g->topo ? g->topo[p] : p;
        if (r->stage[i] >= 0) {
            add_member(r, i, r->stage[i]);
            continue;
        }
        const ir_node *n = &g->nodes[i];
        for (int32_t o = 0; o < n->n_outputs; o++) {
            int32_t v = n->outputs[o];
            if (v < 0) continue;
            if (g->values[v].flags & IR_VALUE_OUTPUT) add_member(r, i, 0);
            for (int32_t c = 0; c < g->values[v].n_consumers; c++)
                for (int32_t w = 0; w < r->words; w++)
                    r->member[(size_t)i * (size_t)r->words + (size_t)w] |=
                        r->member[(size_t)g->values[v].consumers[c] * (size_t)r->words + (size_t)w];
        }
    }
}

static json_t *shape_json(const ir_type *t) {
    if (t->rank < 0) return json_null();
    json_t *a = json_array();
    for (int32_t d = 0; a && d < t->rank; d++)
        json_array_append_new(a, t->dims[d].v >= 0 ? json_integer(t->dims[d].v)
                                 : t->dims[d].sym ? json_string(t->dims[d].sym)
                                                  : json_null());
    return a;
}

/* The "values" entry of value v, or NULL when v needs none; *err set to
 * a status after a message when v cannot cross stages. */
static json_t *value_json(recorder *r, int32_t v, json_t *weights0, seam_status *err) {
    const ir_graph *g = r->g;
    const ir_value *val = &g->values[v];
    bool output = val->flags & IR_VALUE_OUTPUT;
    int32_t from;
    if (val->flags & IR_VALUE_INIT) {
        if (!output) return NULL;
        json_array_append_new(weights0, json_string(val->name)); /* a weight that is an output: rank 0 holds it */
        from = 0;
    } else if (val->producer >= 0) {
        from = r->stage[val->producer] >= 0 ? r->stage[val->producer] : output ? 0 : -2;
        if (from == -2) return NULL; /* a constant's value: computed where it is read */
    } else if (val->flags & IR_VALUE_INPUT) {
        from = -1;
    } else {
        return NULL;
    }
    json_t *to = json_array();
    bool *seen = calloc((size_t)r->ns, sizeof(bool));
    if (!to || !seen) {
        json_decref(to), free(seen);
        *err = oom(r->m->ctx);
        return NULL;
    }
    int32_t first_to = -1;
    for (int32_t c = 0; c < val->n_consumers; c++) {
        int32_t s = r->stage[val->consumers[c]];
        if (s < 0 || s == from || seen[s]) continue;
        seen[s] = true;
        if (first_to < 0) first_to = s;
    }
    for (int32_t s = 0; s < r->ns; s++)
        if (seen[s]) json_array_append_new(to, json_integer(s));
    free(seen);
    if (from != -1 && !output && json_array_size(to) == 0) {
        json_decref(to);
        return NULL;
    }
    const ir_type *t = &val->type;
    bool crosses = json_array_size(to) > 0 || (output && from != 0);
    if (crosses && (t->kind != IR_TYPE_TENSOR || !t->elem || t->elem == SEAM_DTYPE_STRING)) {
        json_decref(to);
        *err = seam_error(r->m->ctx, SEAM_STATUS_UNSUPPORTED,
                          "stages: value '%s' goes from %s%d to stage %d, but it is %s; only numeric tensors travel between "
                          "stages (a different --stages count moves the cut)", val->name,
                          from < 0 ? "the inputs (rank " : "stage ", from < 0 ? 0 : from, first_to >= 0 ? first_to : 0,
                          t->kind == IR_TYPE_SEQUENCE ? "a sequence" : t->kind == IR_TYPE_OPTIONAL ? "an optional"
                          : t->elem == SEAM_DTYPE_STRING ? "a string tensor" : "of a type not known");
        return NULL;
    }
    return json_pack("{s:s, s:i, s:o, s:b, s:i, s:o}", "name", val->name, "from", from, "to", to, "output", output,
                     "dtype", t->elem, "shape", shape_json(t));
}

static int cmp_int(const void *a, const void *b) {
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

/* The "stage" array: per stage its nodes (file positions, sorted), their
 * names, its weights and their bytes. */
static json_t *stages_json(recorder *r, json_t *weights0, seam_status *err) {
    const ir_graph *g = r->g;
    json_t *arr = json_array();
    int32_t *nodes = malloc(sizeof(int32_t) * ((size_t)g->n_nodes + 1));
    int32_t *stamp = malloc(sizeof(int32_t) * ((size_t)g->n_values + 1));
    int32_t *at = malloc(sizeof(int32_t) * ((size_t)g->n_nodes + 1)); /* file position -> node */
    if (!arr || !nodes || !stamp || !at) {
        json_decref(arr), free(nodes), free(stamp), free(at);
        *err = oom(r->m->ctx);
        return NULL;
    }
    for (int32_t v = 0; v < g->n_values; v++) stamp[v] = -1;
    for (int32_t i = 0; i < g->n_nodes; i++) at[r->pos[i]] = i;
    for (int32_t s = 0; s < r->ns && !*err; s++) {
        int32_t n = 0, own = 0;
        for (int32_t i = 0; i < g->n_nodes; i++)
            if (is_member(r, i, s)) nodes[n++] = r->pos[i], own += r->stage[i] == s;
        if (!own) {
            *err = seam_error(r->m->ctx, SEAM_STATUS_INVALID_ARGUMENT,
                              "stages: stage %d has no nodes once the cuts are at subgraph boundaries; use fewer stages, "
                              "or smaller device subgraphs (--max-subgraph-count, --cpu-ops)", s);
            break;
        }
        qsort(nodes, (size_t)n, sizeof(int32_t), cmp_int);
        json_t *jn = json_array(), *names = json_array(), *w = s == 0 ? json_incref(weights0) : json_array();
        int64_t bytes = 0;
        for (int32_t k = 0; k < n; k++) {
            const ir_node *nd = &g->nodes[at[nodes[k]]];
            json_array_append_new(jn, json_integer(nodes[k]));
            json_array_append_new(names, json_string(nd->name));
            for (int32_t q = 0; q < nd->n_inputs + nd->n_implicit; q++) {
                int32_t v = nd->inputs[q];
                if (v < 0 || !(g->values[v].flags & IR_VALUE_INIT) || stamp[v] == s) continue;
                stamp[v] = s;
                json_array_append_new(w, json_string(g->values[v].name));
                bytes += g->values[v].init ? (int64_t)g->values[v].init->nbytes : 0;
            }
        }
        json_array_append_new(arr, json_pack("{s:i, s:o, s:o, s:o, s:I}", "rank", s, "nodes", jn, "names", names,
                                             "weights", w, "weight_bytes", (json_int_t)bytes));
    }
    free(nodes), free(stamp), free(at);
    if (*err) json_decref(arr), arr = NULL;
    return arr;
}

seam_status staged_record(seam_model *m, const staged_source *src, char **notes_out) {
    if (notes_out) *notes_out = NULL;
    seam_context *ctx = m->ctx;
    const ir_graph *g = m->graph;
    if (src->n_stages < 1) return seam_error(ctx, SEAM_STATUS_INVALID_ARGUMENT, "stages: at least one stage");
    recorder r = {m, g, src->n_stages, (src->n_stages + 63) / 64, NULL, NULL, NULL, NULL, 0};
    r.stage = malloc(sizeof(int32_t) * ((size_t)g->n_nodes + 1));
    r.member = calloc(((size_t)g->n_nodes + 1) * (size_t)r.words, sizeof(uint64_t));
    r.pos = malloc(sizeof(int32_t) * ((size_t)g->n_nodes + 1));
    seam_status st = r.stage && r.member && r.pos ? SEAM_STATUS_OK : oom(ctx);
    /* the saved file lists the nodes in g->topo's order (onnx/save.c) */
    for (int32_t p = 0; !st && p < g->n_nodes; p++) r.pos[g->topo ? g->topo[p] : p] = p;
    if (!st) st = assign(&r, src);
    if (!st) memberships(&r);
    json_t *root = NULL, *weights0 = json_array(), *values = json_array(), *ins = json_array(), *outs = json_array();
    if (!st && (!weights0 || !values || !ins || !outs)) st = oom(ctx);
    for (int32_t v = 0; !st && v < g->n_values; v++) {
        json_t *e = value_json(&r, v, weights0, &st);
        if (e) json_array_append_new(values, e);
    }
    for (int32_t k = 0; !st && k < g->n_inputs; k++)
        if (!(g->values[g->inputs[k]].flags & IR_VALUE_INIT))
            json_array_append_new(ins, json_string(g->values[g->inputs[k]].name));
    for (int32_t k = 0; !st && k < g->n_outputs; k++) json_array_append_new(outs, json_string(g->values[g->outputs[k]].name));
    json_t *stages = st ? NULL : stages_json(&r, weights0, &st);
    if (!st) {
        root = json_pack("{s:i, s:i, s:i, s:o, s:O, s:O, s:O}", "version", SEAM_STAGES_VERSION, "stages", r.ns, "nodes",
                         g->n_nodes, "stage", stages, "values", values, "inputs", ins, "outputs", outs);
        char *text = root ? json_dumps(root, JSON_COMPACT) : NULL;
        st = text ? set_metadata(m, SEAM_STAGES_KEY, text) : oom(ctx);
        free(text);
    }
    json_decref(root), json_decref(weights0), json_decref(values), json_decref(ins), json_decref(outs);
    free(r.stage), free(r.member), free(r.pos);
    if (!st && notes_out) *notes_out = r.notes ? r.notes : strdup("");
    else free(r.notes);
    return st;
}

/* ---- reading ------------------------------------------------------------ */

void staged_free(staged_plan *p) {
    if (!p) return;
    for (int32_t s = 0; p->stages && s < p->n_stages; s++) {
        free(p->stages[s].nodes), free(p->stages[s].names), free(p->stages[s].weights);
    }
    for (int32_t v = 0; p->values && v < p->n_values; v++) free(p->values[v].to);
    free(p->stages), free(p->values), free(p->inputs), free(p->outputs);
    json_decref((json_t *)p->json);
    free(p);
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static int32_t find_value(const staged_plan *p, const char *name) {
    for (int32_t v = 0; v < p->n_values; v++)
        if (!strcmp(p->values[v].name, name)) return v;
    return -1;
}

#define BAD(...) (st = seam_error(ctx, SEAM_STATUS_INVALID_MODEL, "seam.stages: " __VA_ARGS__))

static seam_status parse_stage(seam_context *ctx, staged_plan *p, int32_t s, json_t *js) {
    seam_status st = SEAM_STATUS_OK;
    staged_stage *sg = &p->stages[s];
    json_t *nodes = json_object_get(js, "nodes"), *names = json_object_get(js, "names"), *w = json_object_get(js, "weights");
    if (!json_is_array(nodes) || !json_is_array(w)) return BAD("stage %d has no \"nodes\" or \"weights\" list", s);
    sg->rank = (int32_t)json_integer_value(json_object_get(js, "rank"));
    sg->weight_bytes = (int64_t)json_integer_value(json_object_get(js, "weight_bytes"));
    sg->n_nodes = (int32_t)json_array_size(nodes);
    sg->n_weights = (int32_t)json_array_size(w);
    sg->nodes = malloc(sizeof(int32_t) * ((size_t)sg->n_nodes + 1));
    sg->names = calloc((size_t)sg->n_nodes + 1, sizeof(char *));
    sg->weights = malloc(sizeof(char *) * ((size_t)sg->n_weights + 1));
    if (!sg->nodes || !sg->names || !sg->weights) return oom(ctx);
    for (int32_t k = 0; k < sg->n_nodes && !st; k++) {
        json_t *e = json_array_get(nodes, (size_t)k);
        json_int_t x = json_integer_value(e);
        if (!json_is_integer(e) || x < 0 || x >= p->n_file_nodes) BAD("stage %d: node position out of range", s);
        sg->nodes[k] = (int32_t)x;
        sg->names[k] = json_string_value(json_array_get(names, (size_t)k));
    }
    for (int32_t k = 0; k < sg->n_weights && !st; k++)
        if (!(sg->weights[k] = json_string_value(json_array_get(w, (size_t)k)))) BAD("stage %d: a weight is not a name", s);
    if (!st) qsort(sg->weights, (size_t)sg->n_weights, sizeof(char *), cmp_str);
    if (!st && sg->n_nodes == 0) BAD("stage %d has no nodes", s);
    return st;
}

static seam_status parse_value(seam_context *ctx, staged_plan *p, int32_t v, json_t *jv) {
    seam_status st = SEAM_STATUS_OK;
    staged_value *val = &p->values[v];
    json_t *to = json_object_get(jv, "to"), *shape = json_object_get(jv, "shape");
    val->name = json_string_value(json_object_get(jv, "name"));
    if (!val->name || !json_is_array(to) || !json_is_integer(json_object_get(jv, "from")))
        return BAD("value %d lacks \"name\", \"from\" or \"to\"", v);
    val->from = (int32_t)json_integer_value(json_object_get(jv, "from"));
    val->output = json_is_true(json_object_get(jv, "output"));
    val->dtype = (int32_t)json_integer_value(json_object_get(jv, "dtype"));
    if (val->from < -1 || val->from >= p->n_stages) return BAD("value '%s' comes from stage %d", val->name, val->from);
    val->n_to = (int32_t)json_array_size(to);
    val->to = malloc(sizeof(int32_t) * ((size_t)val->n_to + 1));
    if (!val->to) return oom(ctx);
    for (int32_t k = 0; k < val->n_to && !st; k++) {
        json_int_t x = json_integer_value(json_array_get(to, (size_t)k));
        if (x < 0 || x >= p->n_stages || x == val->from || (val->from >= 0 && x < val->from))
            BAD("value '%s' goes from stage %d to stage %lld", val->name, val->from, (long long)x);
        val->to[k] = (int32_t)x;
    }
    val->rank = json_is_array(shape) ? (int32_t)json_array_size(shape) : -1;
    if (val->rank > SEAM_MAX_RANK) return BAD("value '%s' has rank %d", val->name, val->rank);
    for (int32_t d = 0; d < val->rank; d++) {
        json_t *e = json_array_get(shape, (size_t)d);
        val->dims[d] = json_is_integer(e) ? (int64_t)json_integer_value(e) : -1;
        val->syms[d] = json_string_value(e);
    }
    return st;
}

/* The names in arr as value indices into *idx (malloc'd). */
static seam_status parse_names(seam_context *ctx, staged_plan *p, json_t *arr, const char *what, int32_t **idx,
                               int32_t *n) {
    seam_status st = SEAM_STATUS_OK;
    if (!json_is_array(arr)) return BAD("no \"%s\" list", what);
    *n = (int32_t)json_array_size(arr);
    *idx = malloc(sizeof(int32_t) * ((size_t)*n + 1));
    if (!*idx) return oom(ctx);
    for (int32_t k = 0; k < *n && !st; k++) {
        const char *name = json_string_value(json_array_get(arr, (size_t)k));
        if (!name || ((*idx)[k] = find_value(p, name)) < 0) BAD("%s '%s' has no \"values\" entry", what, name ? name : "?");
    }
    return st;
}

seam_status staged_parse(seam_context *ctx, const char *text, staged_plan **out) {
    *out = NULL;
    json_error_t jerr;
    json_t *root = json_loads(text, 0, &jerr);
    if (!root) return seam_error(ctx, SEAM_STATUS_INVALID_MODEL, "seam.stages is not JSON: %s", jerr.text);
    staged_plan *p = calloc(1, sizeof(*p));
    if (!p) return json_decref(root), oom(ctx);
    p->json = root;
    seam_status st = SEAM_STATUS_OK;
    json_int_t version = json_integer_value(json_object_get(root, "version"));
    json_t *stages = json_object_get(root, "stage"), *values = json_object_get(root, "values");
    p->n_stages = (int32_t)json_integer_value(json_object_get(root, "stages"));
    p->n_file_nodes = (int32_t)json_integer_value(json_object_get(root, "nodes"));
    if (version != SEAM_STAGES_VERSION)
        st = seam_error(ctx, SEAM_STATUS_UNSUPPORTED, "seam.stages is version %lld; this seam reads version %d",
                        (long long)version, SEAM_STAGES_VERSION);
    else if (p->n_stages < 1 || !json_is_array(stages) || (int32_t)json_array_size(stages) != p->n_stages ||
             !json_is_array(values))
        BAD("\"stages\" disagrees with the \"stage\" list, or \"values\" is missing");
    if (!st) {
        p->stages = calloc((size_t)p->n_stages, sizeof(staged_stage));
        p->n_values = (int32_t)json_array_size(values);
        p->values = calloc((size_t)p->n_values + 1, sizeof(staged_value));
        if (!p->stages || !p->values) st = oom(ctx);
    }
    for (int32_t s = 0; !st && s < p->n_stages; s++) st = parse_stage(ctx, p, s, json_array_get(stages, (size_t)s));
    for (int32_t v = 0; !st && v < p->n_values; v++) st = parse_value(ctx, p, v, json_array_get(values, (size_t)v));
    if (!st) st = parse_names(ctx, p, json_object_get(root, "inputs"), "input", &p->inputs, &p->n_inputs);
    if (!st) st = parse_names(ctx, p, json_object_get(root, "outputs"), "output", &p->outputs, &p->n_outputs);
    if (st) {
        staged_free(p);
        return st;
    }
    *out = p;
    return SEAM_STATUS_OK;
}

#undef BAD

/* The file at path mapped read-only (not paged in: what is read of it is
 * what is touched). */
static seam_status map_file(seam_context *ctx, const char *path, const uint8_t **data, size_t *size) {
    *data = NULL, *size = 0;
    int fd = open(path, O_RDONLY);
    if (fd < 0) return seam_error(ctx, SEAM_STATUS_IO_ERROR, "%s: cannot open: %s", path, strerror(errno));
    struct stat sb;
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode) || sb.st_size == 0) {
        close(fd);
        return seam_error(ctx, SEAM_STATUS_IO_ERROR, "%s: not a regular file, or empty", path);
    }
    void *p = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (p == MAP_FAILED) return seam_error(ctx, SEAM_STATUS_IO_ERROR, "%s: cannot map: %s", path, strerror(errno));
    *data = p;
    *size = (size_t)sb.st_size;
    return SEAM_STATUS_OK;
}

seam_status staged_read(seam_context *ctx, const char *path, staged_plan **out) {
    *out = NULL;
    const uint8_t *data = NULL;
    size_t size = 0;
    seam_status st = map_file(ctx, path, &data, &size);
    if (st) return st;
    char *text = NULL;
    st = onnx_peek_metadata(ctx, data, size, SEAM_STAGES_KEY, &text);
    munmap((void *)data, size);
    if (!st && text) st = staged_parse(ctx, text, out);
    free(text);
    if (st) seam_error_prefix(ctx, "%s", path);
    return st;
}

int32_t staged_stage_inputs(const staged_plan *p, int32_t stage, int32_t *idx) {
    int32_t n = 0;
    for (int32_t v = 0; v < p->n_values; v++)
        for (int32_t k = 0; k < p->values[v].n_to; k++)
            if (p->values[v].to[k] == stage) {
                if (idx) idx[n] = v;
                n++;
                break;
            }
    return n;
}

int32_t staged_stage_outputs(const staged_plan *p, int32_t stage, int32_t *idx) {
    int32_t n = 0;
    for (int32_t v = 0; v < p->n_values; v++) {
        const staged_value *val = &p->values[v];
        if (val->from != stage || (!val->n_to && !val->output)) continue;
        if (idx) idx[n] = v;
        n++;
    }
    return n;
}

static onnx_stage_io io_of(const staged_value *v) {
    return (onnx_stage_io){v->name, v->dtype, v->rank, v->dims, v->syms};
}

seam_status staged_load_stage(seam_context *ctx, const char *path, const staged_plan *p, int32_t stage,
                              seam_model **out) {
    *out = NULL;
    if (stage < 0 || stage >= p->n_stages)
        return seam_error(ctx, SEAM_STATUS_INVALID_ARGUMENT, "stage %d of %d", stage, p->n_stages);
    const staged_stage *sg = &p->stages[stage];
    int32_t n_in = staged_stage_inputs(p, stage, NULL), n_out = staged_stage_outputs(p, stage, NULL);
    int32_t *idx = malloc(sizeof(int32_t) * ((size_t)(n_in + n_out) + 1));
    onnx_stage_io *io = malloc(sizeof(onnx_stage_io) * ((size_t)(n_in + n_out) + 1));
    bool *keep = calloc((size_t)p->n_file_nodes + 1, sizeof(bool));
    if (!idx || !io || !keep) return free(idx), free(io), free(keep), oom(ctx);
    staged_stage_inputs(p, stage, idx);
    staged_stage_outputs(p, stage, idx + n_in);
    for (int32_t k = 0; k < n_in + n_out; k++) io[k] = io_of(&p->values[idx[k]]);
    for (int32_t k = 0; k < sg->n_nodes; k++) keep[sg->nodes[k]] = true;
    onnx_stage_cut cut = {keep, p->n_file_nodes, sg->weights, sg->n_weights, io, io + n_in, n_in, n_out, SEAM_STAGES_KEY};
    const uint8_t *data = NULL;
    size_t size = 0;
    uint8_t *bytes = NULL;
    size_t n_bytes = 0;
    seam_status st = map_file(ctx, path, &data, &size);
    if (!st) {
        st = onnx_stage_bytes(ctx, data, size, &cut, &bytes, &n_bytes);
        munmap((void *)data, size);
    }
    free(idx), free(io), free(keep);
    /* external data is found next to the file, as seam_model_load finds it */
    char dir[PATH_MAX];
    snprintf(dir, sizeof(dir), "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash) slash == dir ? (void)(slash[1] = 0) : (void)(*slash = 0);
    else snprintf(dir, sizeof(dir), ".");
    if (!st) st = seam_model_load_buffer(ctx, bytes, n_bytes, dir, out);
    free(bytes);
    if (st) seam_error_prefix(ctx, "%s (stage %d)", path, stage);
    return st;
}
