/*
 * The ai.seam Subgraph runner. An applied plan (partition/apply.c) turns
 * each device subgraph into one node of domain "ai.seam", op "Subgraph",
 * whose "body" attribute is the subgraph and whose "target" names where it
 * runs. The executor runs these nodes itself (seam_exec_kernel_find): they
 * are not an op of any backend but the seam between backends.
 *
 *   a backend that compiles   compiled once at session creation when the
 *                             body's boundary shapes are static; each run
 *                             hands it the boundary values (out of device
 *                             memory at compile: the body on the CPU, said
 *                             once in the session's log). Otherwise
 *                             specialized at run time: the first run with a
 *                             new shape signature (its inputs' dtypes and
 *                             shapes, and the values of small integer inputs
 *                             that only parameterize nodes, a Reshape's
 *                             target) infers the body's shapes for it on a
 *                             copy of the body, compiles, and keeps the
 *                             program in a bounded LRU cache; a shape the
 *                             backend cannot compile runs the body on the
 *                             CPU, said once in the session's log
 *   "cpu"                     the body runs on an executor of its own,
 *                             on the CPU kernels
 *   a rules target, or a      the same, but the device has memory of its
 *   backend without compile   own: every boundary value is copied in and
 *                             out (weights, read as outer values, stay
 *                             resident); a backend in host memory is not
 *                             copied
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backends/backend.h"
#include "core/context.h"
#include "core/pool.h"
#include "backends/view.h"
#include "runtime/exec_impl.h"
#include "runtime/subgraph.h"
#include "seam_backend.h"

/* Shape signatures a specialized subgraph keeps compiled, unless the
 * session says otherwise (seam_session_options.shape_cache). */
#define SUBGRAPH_CACHE_DEFAULT 8
/* A small integer input (at most this many elements) that only
 * parameterizes nodes is part of the shape signature. */
#define PARAM_MAX_NUMEL 64

/* One shape signature of a specialized subgraph: the body copied with the
 * shapes of that signature inferred, and its compiled program (or the
 * reason the backend gave for not compiling it: that shape runs on the
 * CPU). */
typedef struct variant {
    int64_t *sig;
    int32_t sig_len;
    uint64_t last_use;   /* LRU clock */
    bool bucket;         /* compiled at session creation (a saved bucket): never evicted */
    ir_graph *g;         /* the body's copy (values and nodes its own) */
    seam_arena arena;    /* the copy's inferred types and constants */
    void *compiled;      /* NULL: runs on the CPU */
    void *view_impl;
} variant;

typedef struct subgraph_state {
    const ir_graph *body;
    seam_exec *exec;     /* the body's executor, when seam runs it */
    bool device;         /* copy at the boundary */
    int64_t bytes_in, bytes_out; /* moved by the last run */
    /* a backend that compiles its subgraphs */
    const seam_backend *be;
    void *compiled;
    void *view_impl;
    /* specialized at run time (the boundary shapes are not static) */
    bool dynamic;
    bool *param;         /* per body input: a small integer parameter input (its values are in the signature) */
    const ir_node *node; /* the Subgraph node, for messages and its target options */
    variant *cache;
    int32_t n_cache, cap_cache;
    uint64_t clock;
    bool told_slow;      /* the CPU fallback of a shape was logged */
    bool no_jit;         /* saved with --no-jit: a shape that is no bucket is refused */
    subgraph_counts counts;
} subgraph_state;

static void free_variant(const seam_backend *be, variant *v) {
    if (v->compiled) backend_release_compiled(be, v->compiled);
    subgraph_impl_free(v->view_impl);
    if (v->g) {
        free(v->g->values);
        free(v->g->nodes);
        free(v->g->inputs);
        free(v->g);
    }
    seam_arena_free(&v->arena);
    free(v->sig);
    memset(v, 0, sizeof(*v));
}

static void free_subgraph_state(void *p) {
    subgraph_state *s = p;
    if (!s) return;
    if (s->compiled) backend_release_compiled(s->be, s->compiled);
    subgraph_impl_free(s->view_impl);
    for (int32_t k = 0; k < s->n_cache; k++) free_variant(s->be, &s->cache[k]);
    free(s->cache);
    free(s->param);
    seam_exec_free(s->exec);
    free(s);
}

static seam_status refuse_oom(seam_check *c) {
    snprintf(c->reason, c->reason_size, "out of memory");
    return SEAM_STATUS_OUT_OF_MEMORY;
}

static const ir_graph *graph_attr(const ir_node *n, const char *name) {
    const ir_attr *a = node_attr(n, name);
    return a && a->kind == IR_ATTR_GRAPH ? a->g : NULL;
}

static const char *str_attr(const ir_node *n, const char *name, size_t *len) {
    const ir_attr *a = node_attr(n, name);
    if (!a || a->kind != IR_ATTR_STRING) return NULL;
    *len = a->s.len;
    return (const char *)a->s.data;
}

/* The length of an instance's base name ("dnnl" of "dnnl:1",
 * seam_backend_instance), or len when the name is not an instance's. */
static size_t instance_base_len(const char *name, size_t len) {
    size_t c = len;
    while (c > 0 && name[c - 1] >= '0' && name[c - 1] <= '9') c--;
    return c > 1 && c < len && name[c - 1] == ':' ? c - 1 : len;
}

/* A target the session was given, by name (the root executor holds
 * them); for an instance's subgraph ("dnnl:1") without that instance, its
 * base target (the instance's options are in the node's target_options). */
static const seam_backend *find_target(const seam_exec *e, const char *name, size_t len) {
    while (e && !e->targets) e = e->parent;
    size_t base = instance_base_len(name, len);
    for (int pass = 0; pass < (base < len ? 2 : 1); pass++) {
        size_t n = pass ? base : len;
        for (int32_t k = 0; e && k < e->n_targets; k++) {
            const seam_backend *b = e->targets[k];
            if (b && b->name && strlen(b->name) == n && memcmp(b->name, name, n) == 0) return b;
        }
    }
    return NULL;
}

/* Static value infos of a body's boundary, for the compile view; false if
 * a shape is not fully known. */
static bool boundary_infos(const ir_graph *body, const int32_t *vals, int32_t n, seam_value_info *out, int64_t *dims_pool) {
    for (int32_t k = 0; k < n; k++) {
        const ir_value *v = &body->values[vals[k]];
        const ir_type *t = &v->type;
        if (t->kind != IR_TYPE_TENSOR || t->rank < 0 || t->rank > SEAM_MAX_RANK) return false;
        int64_t *d = dims_pool + k * SEAM_MAX_RANK;
        for (int32_t i = 0; i < t->rank; i++) {
            if (t->dims[i].v < 0) return false;
            d[i] = t->dims[i].v;
        }
        out[k] = (seam_value_info){v->name, (seam_dtype)t->elem, t->rank, d, NULL};
    }
    return true;
}

/* SEAM_CPU_TEAM=0: the session's CPU loops stay on the pool's own
 * workers even beside a backend that lends its threads (run_team), to
 * compare the two. */
static bool team_on(void) {
    const char *e = getenv("SEAM_CPU_TEAM");
    return !(e && strcmp(e, "0") == 0);
}

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

/* Compiles body (its boundary shapes static) for be with node's
 * "target_options": *compiled and *view_impl, or a status with the reason
 * in err (SEAM_STATUS_UNSUPPORTED: the backend or a shape refused). */
static seam_status compile_body(const seam_backend *be, const ir_node *node, const ir_graph *body, void **compiled,
                                void **view_impl, char *err, size_t err_size) {
    seam_value_info *infos = calloc((size_t)(body->n_inputs + body->n_outputs) + 1, sizeof(seam_value_info));
    int64_t *dims = calloc((size_t)(body->n_inputs + body->n_outputs) * SEAM_MAX_RANK + 1, sizeof(int64_t));
    seam_status st = SEAM_STATUS_OK;
    *compiled = *view_impl = NULL;
    if (!infos || !dims) {
        snprintf(err, err_size, "out of memory");
        st = SEAM_STATUS_OUT_OF_MEMORY;
        goto done;
    }
    if (!boundary_infos(body, body->inputs, body->n_inputs, infos, dims) ||
        !boundary_infos(body, body->outputs, body->n_outputs, infos + body->n_inputs, dims + body->n_inputs * SEAM_MAX_RANK)) {
        snprintf(err, err_size, "a boundary value's shape is not static");
        st = SEAM_STATUS_UNSUPPORTED;
        goto done;
    }
    *view_impl = subgraph_impl_new(body->model, body);
    if (!*view_impl) {
        snprintf(err, err_size, "out of memory");
        st = SEAM_STATUS_OUT_OF_MEMORY;
        goto done;
    }
    seam_subgraph_view v = {node->name, body->n_nodes, body->n_inputs, body->n_outputs, infos, infos + body->n_inputs,
                            *view_impl};
    /* target options: the node's "target_options" strings */
    const ir_attr *oa = node_attr(node, "target_options");
    const char *opts[64];
    int32_t n_opts = 0;
    for (int32_t k = 0; oa && oa->kind == IR_ATTR_STRINGS && k < oa->n && n_opts < 64; k++)
        opts[n_opts++] = (const char *)oa->strings[k].data;
    err[0] = 0;
    *compiled = backend_compile(be, &v, opts, n_opts, err, err_size);
    if (!*compiled) {
        if (!err[0]) snprintf(err, err_size, "(no reason given)");
        st = SEAM_STATUS_UNSUPPORTED;
    }
done:
    if (st) {
        subgraph_impl_free(*view_impl);
        *view_impl = NULL;
    }
    free(infos);
    free(dims);
    return st;
}

/* The backend's compile log, into the session's log. */
static bool log_compile(seam_exec *e, const seam_backend *be, const ir_node *node, void *compiled) {
    const char *log = backend_compile_log(be, compiled);
    if (!log || !log[0]) return true;
    char prefix[256];
    snprintf(prefix, sizeof(prefix), "subgraph '%s' (%s): ", node->name ? node->name : "", be->name);
    return exec_log(e, prefix, log);
}

static seam_status compile_subgraph(seam_check *c, const seam_backend *be, const ir_graph *body, subgraph_state *s) {
    char err[512];
    double t0 = now_ms();
    seam_status st = compile_body(be, c->n, body, &s->compiled, &s->view_impl, err, sizeof(err));
    if (st == SEAM_STATUS_OUT_OF_MEMORY) return refuse_oom(c);
    size_t oom = strlen(SEAM_COMPILE_OUT_OF_MEMORY);
    if (st && !strncmp(err, SEAM_COMPILE_OUT_OF_MEMORY, oom)) {
        /* the device's memory is short: the body on the CPU, said once */
        seam_status est = seam_exec_create(c->ctx, body, c->exec, c->pool, &s->exec);
        if (est) {
            snprintf(c->reason, c->reason_size, "ai.seam Subgraph: %s could not compile it (%s), nor can the CPU run it: %s",
                     be->name, err, seam_context_last_error(c->ctx));
            return est;
        }
        s->counts.cpu_shapes++;
        char line[1024], prefix[256];
        snprintf(prefix, sizeof(prefix), "subgraph '%s' (%s): ", c->n->name ? c->n->name : "", be->name);
        snprintf(line, sizeof(line), "slow: not compiled, %s; it runs on the CPU; fix: free device memory, or split the "
                 "model smaller (--max-subgraph-count, --cpu-ops)", err);
        return exec_log(c->exec, prefix, line) ? SEAM_STATUS_OK : refuse_oom(c);
    }
    if (st) return check_refuse(c, "ai.seam Subgraph: %s could not compile it: %s", be->name, err);
    s->counts.compiles++;
    s->counts.compile_ms += now_ms() - t0;
    if (!log_compile(c->exec, be, c->n, s->compiled)) return refuse_oom(c);
    return SEAM_STATUS_OK;
}

/* Whether every boundary value of body has a static shape. */
static bool boundary_static(const ir_graph *body) {
    for (int32_t k = 0; k < body->n_inputs + body->n_outputs; k++) {
        const ir_type *t = &body->values[k < body->n_inputs ? body->inputs[k] : body->outputs[k - body->n_inputs]].type;
        if (t->kind != IR_TYPE_TENSOR || t->rank < 0) return false;
        for (int32_t d = 0; d < t->rank; d++)
            if (t->dims[d].v < 0) return false;
    }
    return true;
}

/* Input k of body is a parameter: an integer tensor that every reader
 * takes as a shape, bounds or axes (input 1 and after of Reshape, Slice,
 * Expand, ...), never as data. Its values at a run fix the shapes the body
 * computes, so they are part of the shape signature and the compile sees
 * them as constants. */
static bool param_input(const ir_graph *body, int32_t k) {
    static const char *const ops[] = {"Reshape", "Squeeze", "Unsqueeze", "Slice", "Pad", "Resize", "Split", "Expand",
                                      "Tile", "ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin", "ConstantOfShape"};
    const ir_value *v = &body->values[body->inputs[k]];
    if (v->type.kind != IR_TYPE_TENSOR || (v->type.elem != SEAM_DTYPE_INT64 && v->type.elem != SEAM_DTYPE_INT32) ||
        v->n_consumers < 1 || v->type.rank > 1)
        return false;
    for (int32_t c = 0; c < v->n_consumers; c++) {
        const ir_node *n = &body->nodes[v->consumers[c]];
        bool known = false;
        for (size_t o = 0; o < sizeof(ops) / sizeof(ops[0]) && !known; o++) known = !n->domain[0] && !strcmp(n->op_type, ops[o]);
        if (!known) return false;
        for (int32_t i = 0; i < n->n_inputs && known; i++) known = !(i == 0 && n->inputs[i] == body->inputs[k]);
        if (!known && strcmp(n->op_type, "ConstantOfShape")) return false;
    }
    return true;
}

/* ---- specialization at run time ---- */

/* (subgraph.h) */
bool subgraph_signature(const seam_tensor *const *xs, int32_t n_in, const bool *param, int64_t **sig, int32_t *len) {
    int32_t n = 0;
    for (int32_t i = 0; i < n_in; i++)
        n += 2 + xs[i]->rank + (param[i] && xs[i]->numel <= PARAM_MAX_NUMEL ? (int32_t)xs[i]->numel : 0);
    int64_t *q = malloc(sizeof(int64_t) * (size_t)(n + 1));
    if (!q) return false;
    n = 0;
    for (int32_t i = 0; i < n_in; i++) {
        const seam_tensor *x = xs[i];
        q[n++] = x->dtype, q[n++] = x->rank;
        for (int32_t d = 0; d < x->rank; d++) q[n++] = x->dims[d];
        for (int64_t e = 0; param[i] && x->numel <= PARAM_MAX_NUMEL && e < x->numel; e++)
            q[n++] = x->dtype == SEAM_DTYPE_INT64 ? ((const int64_t *)x->data)[e] : ((const int32_t *)x->data)[e];
    }
    *sig = q, *len = n;
    return true;
}

/* "[1,3,320,320], [7]": the shapes of xs, for messages. */
static void format_shapes(const seam_tensor *const *xs, int32_t n_in, char *buf, size_t n) {
    size_t off = 0;
    buf[0] = 0;
    for (int32_t i = 0; i < n_in && off < n; i++) {
        off += (size_t)snprintf(buf + off, n - off, "%s[", i ? ", " : "");
        for (int32_t d = 0; d < xs[i]->rank && off < n; d++)
            off += (size_t)snprintf(buf + off, n - off, "%s%lld", d ? "," : "", (long long)xs[i]->dims[d]);
        if (off < n) off += (size_t)snprintf(buf + off, n - off, "]");
    }
}

/* The body copied for this run's shapes: boundary inputs take the run's
 * dtypes and shapes, parameter inputs become constants with the run's
 * values (and leave the boundary), every computed value is inferred again
 * by the op layer. The copy owns its values, nodes and inputs; it shares
 * the body's names, attributes and topological order (read only). */
static seam_status specialize_body(const seam_tensor *const *xs, const subgraph_state *s, variant *v, char *err,
                                   size_t err_size) {
    const ir_graph *body = s->body;
    ir_graph *g = calloc(1, sizeof(*g));
    if (!g) goto oom;
    v->g = g;
    *g = *body;
    g->values = malloc(sizeof(ir_value) * (size_t)body->n_values + 1);
    g->nodes = malloc(sizeof(ir_node) * (size_t)body->n_nodes + 1);
    g->inputs = malloc(sizeof(int32_t) * (size_t)body->n_inputs + 1);
    if (!g->values || !g->nodes || !g->inputs) goto oom;
    memcpy(g->values, body->values, sizeof(ir_value) * (size_t)body->n_values);
    memcpy(g->nodes, body->nodes, sizeof(ir_node) * (size_t)body->n_nodes);
    for (int32_t i = 0; i < g->n_values; i++) {
        ir_value *val = &g->values[i];
        if (val->producer < 0) continue;
        val->type = (ir_type){IR_TYPE_NONE, 0, -1, NULL, NULL, NULL};
        val->konst = NULL;
    }
    g->n_inputs = 0;
    for (int32_t i = 0; i < body->n_inputs; i++) {
        const seam_tensor *x = xs[i];
        ir_value *val = &g->values[body->inputs[i]];
        ir_dim *dims = seam_arena_calloc(&v->arena, (size_t)x->rank + 1, sizeof(ir_dim));
        if (!dims) goto oom;
        for (int32_t d = 0; d < x->rank; d++) dims[d] = (ir_dim){x->dims[d], NULL};
        val->type = (ir_type){IR_TYPE_TENSOR, x->dtype, x->rank, dims, NULL, NULL};
        val->konst = NULL;
        if (s->param[i] && x->numel <= PARAM_MAX_NUMEL) {
            ir_tensor *t = seam_arena_calloc(&v->arena, 1, sizeof(*t));
            if (!t) goto oom;
            *t = (ir_tensor){val->name, NULL, x->dtype, x->rank, NULL, x->numel, NULL, x->nbytes, NULL};
            t->dims = seam_arena_memdup(&v->arena, x->dims, sizeof(int64_t) * (size_t)x->rank);
            t->data = seam_arena_memdup(&v->arena, x->data, x->nbytes);
            if (!t->dims || !t->data) goto oom;
            val->init = t, val->konst = t;
            val->flags = (val->flags & ~(uint32_t)IR_VALUE_INPUT) | IR_VALUE_INIT;
        } else {
            g->inputs[g->n_inputs++] = body->inputs[i];
        }
    }
    /* inference on a model that is the original but for its graph (the
     * copy) and its arena (the variant's) */
    struct seam_model tm = *body->model;
    tm.graph = g;
    tm.arena = v->arena;
    seam_status st = ir_infer_model(&tm);
    v->arena = tm.arena;
    if (st) {
        snprintf(err, err_size, "shape inference for these shapes failed: %s", seam_context_last_error(tm.ctx));
        return SEAM_STATUS_UNSUPPORTED;
    }
    return SEAM_STATUS_OK;
oom:
    snprintf(err, err_size, "out of memory");
    return SEAM_STATUS_OUT_OF_MEMORY;
}

/* Drops the least recently used variant that is not a bucket; false when
 * every one is a bucket. */
static bool evict_one(subgraph_state *s) {
    int32_t old = -1;
    for (int32_t c = 0; c < s->n_cache; c++)
        if (!s->cache[c].bucket && (old < 0 || s->cache[c].last_use < s->cache[old].last_use)) old = c;
    if (old < 0) return false;
    free_variant(s->be, &s->cache[old]);
    s->cache[old] = s->cache[--s->n_cache];
    s->counts.evictions++;
    return true;
}

/* A new variant for inputs xs (signature sig, which it takes): compiled,
 * or (the backend refused the shape) to run on the CPU, said once in e's
 * log. NULL when out of memory (sig freed). */
static variant *new_variant(seam_exec *e, subgraph_state *s, const seam_tensor *const *xs, int64_t *sig, int32_t len) {
    if (s->n_cache >= s->cap_cache && !evict_one(s) && s->n_cache >= s->cap_cache) {
        variant *grown = realloc(s->cache, sizeof(variant) * (size_t)(s->cap_cache + 1));
        if (!grown) return free(sig), NULL;
        s->cache = grown, s->cap_cache++; /* every one is a bucket: room for one more */
    }
    if (!s->cache && !(s->cache = calloc((size_t)s->cap_cache, sizeof(variant)))) return free(sig), NULL;
    variant *v = &s->cache[s->n_cache++];
    memset(v, 0, sizeof(*v));
    seam_arena_init(&v->arena, 16384);
    v->sig = sig, v->sig_len = len, v->last_use = ++s->clock;
    char err[512] = "";
    double t0 = now_ms();
    seam_status st = specialize_body(xs, s, v, err, sizeof(err));
    /* a shape where some value has no elements (a detector's boxes after a
     * score filter kept none) runs on the CPU, where it costs nothing:
     * backends need not take empty tensors (oneDNN divides by zero on
     * them) */
    bool empty = false;
    for (int32_t i = 0; !st && i < v->g->n_values && !empty; i++) {
        /* values the body makes (an empty parameter, Resize's roi [0], is
         * no empty value; an empty input makes empty values) */
        if (v->g->values[i].producer < 0) continue;
        const ir_type *t = &v->g->values[i].type;
        for (int32_t d = 0; t->kind == IR_TYPE_TENSOR && d < t->rank && !empty; d++) empty = t->dims[d].v == 0;
    }
    if (!st && empty) st = SEAM_STATUS_UNSUPPORTED;
    if (!st) st = compile_body(s->be, s->node, v->g, &v->compiled, &v->view_impl, err, sizeof(err));
    if (st == SEAM_STATUS_OUT_OF_MEMORY) {
        free_variant(s->be, v);
        s->n_cache--;
        return NULL;
    }
    if (!st) {
        s->counts.compiles++;
        s->counts.compile_ms += now_ms() - t0;
        /* the backend's log of the first shape (later ones pick alike) */
        if (s->counts.compiles == 1 && !log_compile(e, s->be, s->node, v->compiled)) return NULL;
        return v;
    }
    s->counts.cpu_shapes++;
    if (!s->told_slow && !empty) {
        char shapes[256], line[1024], prefix[256];
        format_shapes(xs, s->body->n_inputs, shapes, sizeof(shapes));
        snprintf(prefix, sizeof(prefix), "subgraph '%s' (%s): ", s->node->name ? s->node->name : "", s->be->name);
        snprintf(line, sizeof(line),
                 "slow: inputs of shape %s not compiled: %s; this shape runs on the CPU; fix: give the model static "
                 "shapes (--shape) or a shape the backend takes", shapes, err);
        s->told_slow = true;
        if (!exec_log(e, prefix, line)) return NULL;
    }
    return v;
}

/* The variant of this run's shape signature: found in the cache (a hit),
 * or made now. NULL with the kernel's error set and its status in *st. */
static variant *find_variant(seam_kernel *k, subgraph_state *s, seam_status *st) {
    *st = SEAM_STATUS_OUT_OF_MEMORY;
    int32_t n_in = kernel_n_in(k);
    const seam_tensor **xs = calloc((size_t)n_in + 1, sizeof(*xs));
    if (!xs) return kernel_oom(k), NULL;
    for (int32_t i = 0; i < n_in; i++)
        if (!(xs[i] = kernel_in(k, i))) {
            free(xs);
            *st = kernel_fail(k, "input %d is missing", i);
            return NULL;
        }
    int64_t *sig = NULL;
    int32_t len = 0;
    variant *v = NULL;
    if (!subgraph_signature(xs, n_in, s->param, &sig, &len)) {
        free(xs);
        return kernel_oom(k), NULL;
    }
    for (int32_t c = 0; c < s->n_cache && !v; c++)
        if (s->cache[c].sig_len == len && !memcmp(s->cache[c].sig, sig, sizeof(int64_t) * (size_t)len)) v = &s->cache[c];
    if (v) {
        free(sig);
        v->last_use = ++s->clock;
        s->counts.cache_hits++;
    } else if (s->no_jit) {
        char shapes[256];
        format_shapes(xs, n_in, shapes, sizeof(shapes));
        free(sig);
        *st = kernel_error(k, SEAM_STATUS_INVALID_ARGUMENT,
                     "inputs of shape %s match none of its %d compiled buckets, and the model was saved with "
                     "--no-jit (no compile at run time); fix: run a bucket's shape, or partition with a --bucket "
                     "for this shape (or without --no-jit)", shapes, s->n_cache);
    } else {
        int64_t before = s->counts.compiles;
        v = new_variant(k->exec, s, xs, sig, len);
        if (!v) kernel_oom(k);
        else s->counts.run_compiles += s->counts.compiles - before;
    }
    free(xs);
    return v;
}

/* ---- buckets: shapes compiled ahead of time ----
 * A Subgraph node may carry "buckets" (ints), written by seam_plan_apply
 * for each --bucket of `seam partition`: the count, then per bucket and
 * per body input its dtype, rank, dims, and the number of its values that
 * follow (-1: none; a parameter input's values, known at that shape), and
 * "jit" (int, 0: a shape that is no bucket is refused at run time). */

/* Bucket b's inputs, read from the attribute at *pos, into xs (tensors
 * whose data is vals); false with why when the attribute is malformed or
 * does not fit the body. *usable is false when a parameter's values are
 * not known for it. */
static bool read_bucket(const ir_attr *a, int32_t *pos, const ir_graph *body, const bool *param, seam_tensor *xs,
                        int64_t (*vals)[PARAM_MAX_NUMEL], bool *usable, char *why, size_t wn) {
    *usable = true;
    for (int32_t i = 0; i < body->n_inputs; i++) {
        seam_tensor *x = &xs[i];
        memset(x, 0, sizeof(*x));
        if (*pos + 2 > a->n) return snprintf(why, wn, "it ends early"), false;
        const ir_type *t = &body->values[body->inputs[i]].type;
        x->dtype = (int32_t)a->ints[(*pos)++];
        int64_t rank = a->ints[(*pos)++];
        if (rank < 0 || rank > SEAM_MAX_RANK || (t->kind == IR_TYPE_TENSOR && t->rank >= 0 && t->rank != rank) ||
            (t->kind == IR_TYPE_TENSOR && t->elem && t->elem != x->dtype) || !seam_dtype_size((seam_dtype)x->dtype))
            return snprintf(why, wn, "input %d: dtype %d, rank %lld do not fit the body's input '%s'", i, x->dtype,
                            (long long)rank, body->values[body->inputs[i]].name), false;
        x->rank = (int32_t)rank;
        if (*pos + x->rank + 1 > a->n) return snprintf(why, wn, "it ends early"), false;
        for (int32_t d = 0; d < x->rank; d++) {
            x->dims[d] = a->ints[(*pos)++];
            if (x->dims[d] < 0 || x->dims[d] > IR_MAX_DIM ||
                (t->kind == IR_TYPE_TENSOR && t->rank == x->rank && t->dims[d].v >= 0 && t->dims[d].v != x->dims[d]))
                return snprintf(why, wn, "input '%s': dim %d (%lld) does not fit the body", body->values[body->inputs[i]].name,
                                d, (long long)x->dims[d]), false;
        }
        x->numel = seam_shape_numel(x->dims, x->rank);
        if (x->numel < 0) return snprintf(why, wn, "input %d: too many elements", i), false;
        x->nbytes = (size_t)x->numel * seam_dtype_size((seam_dtype)x->dtype);
        int64_t nv = a->ints[(*pos)++];
        if (nv >= 0 && (nv != x->numel || nv > PARAM_MAX_NUMEL || *pos + nv > a->n || !param[i] ||
                        (x->dtype != SEAM_DTYPE_INT64 && x->dtype != SEAM_DTYPE_INT32)))
            return snprintf(why, wn, "input %d: %lld values that do not fit it", i, (long long)nv), false;
        if (param[i] && x->numel <= PARAM_MAX_NUMEL) {
            if (nv < 0) {
                *usable = false;
                continue;
            }
            for (int64_t e = 0; e < nv; e++) {
                int64_t q = a->ints[(*pos)++];
                if (x->dtype == SEAM_DTYPE_INT64) vals[i][e] = q;
                else ((int32_t *)vals[i])[e] = (int32_t)q;
            }
            x->data = vals[i];
        }
    }
    return true;
}

/* Compiles the node's buckets now (a specialized subgraph), or, for a
 * subgraph already static, checks that its shape is a bucket when the
 * model was saved with --no-jit. */
static seam_status check_buckets(seam_check *c, subgraph_state *s) {
    const ir_attr *jit = node_attr(c->n, "jit");
    s->no_jit = jit && jit->kind == IR_ATTR_INT && jit->i == 0;
    const ir_attr *a = node_attr(c->n, "buckets");
    if (!a) return SEAM_STATUS_OK;
    const ir_graph *body = s->body;
    if (a->kind != IR_ATTR_INTS || a->n < 1 || a->ints[0] < 0 || a->ints[0] > 1024)
        return check_refuse(c, "ai.seam Subgraph: 'buckets' must be ints starting with their count");
    seam_tensor *xs = calloc((size_t)body->n_inputs + 1, sizeof(seam_tensor));
    const seam_tensor **px = calloc((size_t)body->n_inputs + 1, sizeof(*px));
    int64_t (*vals)[PARAM_MAX_NUMEL] = calloc((size_t)body->n_inputs + 1, sizeof(*vals));
    seam_status st = SEAM_STATUS_OK;
    if (!xs || !px || !vals) {
        st = refuse_oom(c);
        goto done;
    }
    for (int32_t i = 0; i < body->n_inputs; i++) px[i] = &xs[i];
    int32_t pos = 1, n_buckets = (int32_t)a->ints[0];
    bool found = false; /* a static subgraph's shape among them */
    int64_t *mine = NULL;
    int32_t mine_len = 0;
    if (!s->dynamic) { /* its signature, from its static types */
        for (int32_t i = 0; i < body->n_inputs; i++) {
            const ir_type *t = &body->values[body->inputs[i]].type;
            xs[i] = (seam_tensor){.dtype = t->elem, .rank = t->rank};
            for (int32_t d = 0; d < t->rank; d++) xs[i].dims[d] = t->dims[d].v;
        }
        if (!subgraph_signature(px, body->n_inputs, s->param, &mine, &mine_len)) {
            st = refuse_oom(c);
            goto done;
        }
    }
    if (s->dynamic && s->cap_cache < n_buckets + 1) s->cap_cache = n_buckets + 1;
    for (int32_t b = 0; b < n_buckets; b++) {
        char why[256];
        bool usable;
        if (!read_bucket(a, &pos, body, s->param, xs, vals, &usable, why, sizeof(why))) {
            st = check_refuse(c, "ai.seam Subgraph: bad 'buckets' attribute (bucket %d): %s", b, why);
            break;
        }
        if (!usable) continue;
        int64_t *sig;
        int32_t len;
        if (!subgraph_signature(px, body->n_inputs, s->param, &sig, &len)) {
            st = refuse_oom(c);
            break;
        }
        if (!s->dynamic) {
            found |= len == mine_len && !memcmp(sig, mine, sizeof(int64_t) * (size_t)len);
            free(sig);
            continue;
        }
        bool seen = false;
        for (int32_t k = 0; k < s->n_cache && !seen; k++)
            seen = s->cache[k].sig_len == len && !memcmp(s->cache[k].sig, sig, sizeof(int64_t) * (size_t)len);
        if (seen) {
            free(sig);
            continue;
        }
        variant *v = new_variant(c->exec, s, px, sig, len);
        if (!v) {
            st = refuse_oom(c);
            break;
        }
        v->bucket = true;
    }
    if (!st && !s->dynamic && s->no_jit && !found) {
        char shapes[256];
        format_shapes(px, body->n_inputs, shapes, sizeof(shapes));
        st = check_refuse(c, "ai.seam Subgraph: inputs of shape %s match none of its %d buckets, and the model was "
                          "saved with --no-jit; fix: run a bucket's shape, or partition with a --bucket for this "
                          "shape (or without --no-jit)", shapes, n_buckets);
    }
    free(mine);
done:
    free(xs);
    free(px);
    free(vals);
    return st;
}

static seam_status check_subgraph(seam_check *c) {
    size_t tlen = 0, rlen = 0;
    const char *target = str_attr(c->n, "target", &tlen), *rules = str_attr(c->n, "rules", &rlen);
    const ir_graph *body = graph_attr(c->n, "body");
    if (!node_attr(c->n, "body")) return check_refuse(c, "ai.seam Subgraph without its 'body' attribute");
    if (!body) return check_refuse(c, "ai.seam Subgraph: 'body' must be a graph");
    if (!node_attr(c->n, "target")) return check_refuse(c, "ai.seam Subgraph without its 'target' attribute");
    if (!target || tlen == 0) return check_refuse(c, "ai.seam Subgraph: 'target' must be a non-empty string");
    if (node_attr(c->n, "rules") && !rules) return check_refuse(c, "ai.seam Subgraph: 'rules' must be a string");
    if (body->n_inputs != c->n->n_inputs || body->n_outputs != c->n->n_outputs)
        return check_refuse(c, "ai.seam Subgraph: the body has %d inputs and %d outputs, the node %d and %d",
                      body->n_inputs, body->n_outputs, c->n->n_inputs, c->n->n_outputs);
    bool is_cpu = tlen == 3 && memcmp(target, "cpu", 3) == 0;
    const seam_backend *be = is_cpu ? NULL : find_target(c->exec, target, tlen);
    if (be && backend_compiles(be)) { /* the backend compiles and runs it */
        subgraph_state *s = calloc(1, sizeof(*s));
        if (!s) return refuse_oom(c);
        *c->state = s;
        *c->free_state = free_subgraph_state;
        s->be = be;
        s->body = body;
        s->node = c->n;
        /* the backend's threads run the session's CPU loops too (run_team) */
        if (backend_run_team(be) && team_on()) seam_pool_set_team(c->pool, backend_run_team(be), be->ctx);
        if (!(s->param = calloc((size_t)body->n_inputs + 1, sizeof(bool)))) return refuse_oom(c);
        bool params = false;
        for (int32_t k = 0; k < body->n_inputs; k++) params |= s->param[k] = param_input(body, k);
        if (!params && boundary_static(body)) {
            seam_status st = check_buckets(c, s);
            return st ? st : compile_subgraph(c, be, body, s);
        }
        /* compiled at the first run with each shape signature (the
         * buckets now) */
        s->dynamic = true;
        s->cap_cache = SUBGRAPH_CACHE_DEFAULT;
        return check_buckets(c, s);
    }
    if (!is_cpu && !rules && !be)
        return check_refuse(c, "ai.seam Subgraph: unknown target '%.*s' (not cpu, no rules to stand in for it, and "
                         "no such backend given or found: load it with --backend-lib PATH, or put NAME.so or "
                         "libseam_NAME.so on $SEAM_BACKEND_PATH)", (int)tlen, target);
    if (rules) { /* the rules must still parse: they are the target's description */
        char *text = malloc(rlen + 1);
        if (!text) return refuse_oom(c);
        memcpy(text, rules, rlen);
        text[rlen] = 0;
        seam_backend *rb = NULL;
        seam_status st = seam_rules_parse(c->ctx, text, "its 'rules' attribute", &rb);
        free(text);
        if (st) return check_refuse(c, "ai.seam Subgraph: bad 'rules': %s", seam_context_last_error(c->ctx));
        seam_backend_free(rb);
    }
    subgraph_state *s = calloc(1, sizeof(*s));
    if (!s) return refuse_oom(c);
    *c->state = s;
    *c->free_state = free_subgraph_state;
    /* a rules target, or a backend without compile: the CPU kernels, in the
     * device's own memory unless the backend works in host memory */
    s->device = !is_cpu && !(be && backend_memory(be) == SEAM_MEMORY_HOST);
    s->body = body;
    seam_status st = seam_exec_create(c->ctx, body, c->exec, c->pool, &s->exec);
    if (st) { /* the body's own status: unsupported, or out of memory */
        snprintf(c->reason, c->reason_size, "in its body: %s", seam_context_last_error(c->ctx));
        return st;
    }
    return SEAM_STATUS_OK;
}

static seam_status run_compiled(seam_kernel *k, subgraph_state *s, const ir_graph *body, void *compiled) {
    int32_t n_in = kernel_n_in(k), n_out = kernel_n_out(k);
    seam_tensor_view *ins = calloc((size_t)n_in + 1, sizeof(seam_tensor_view));
    seam_buffer *outs = calloc((size_t)n_out + 1, sizeof(seam_buffer));
    void **dev = calloc((size_t)n_in + 1, sizeof(void *));
    seam_status st = SEAM_STATUS_OK;
    if (!ins || !outs || !dev) {
        st = kernel_oom(k);
        goto done;
    }
    bool device = backend_memory(s->be) == SEAM_MEMORY_DEVICE;
    int32_t n_prog = 0; /* the program's inputs: the node's, but for parameters made constants */
    for (int32_t i = 0; i < n_in; i++) {
        const seam_tensor *x = kernel_in(k, i);
        if (!x) {
            st = kernel_fail(k, "input %d is missing", i);
            goto done;
        }
        if (s->dynamic && s->param[i] && x->numel <= PARAM_MAX_NUMEL) continue;
        const void *data = x->data;
        if (device) { /* a copy into "device" memory */
            if (!(dev[n_prog] = malloc(x->nbytes ? x->nbytes : 1))) {
                st = kernel_oom(k);
                goto done;
            }
            double t0 = now_ms();
            if (x->nbytes) memcpy(dev[n_prog], x->data, x->nbytes);
            k->copy_ms += now_ms() - t0;
            data = dev[n_prog];
            k->bytes_in += (int64_t)x->nbytes;
        }
        ins[n_prog] = (seam_tensor_view){body->values[body->inputs[n_prog]].name, (seam_dtype)x->dtype, x->rank, x->dims,
                                         data, x->nbytes};
        n_prog++;
    }
    for (int32_t o = 0; o < n_out; o++) {
        const ir_type *t = &body->values[body->outputs[o]].type;
        int64_t dims[SEAM_MAX_RANK];
        for (int32_t d = 0; d < t->rank; d++) dims[d] = t->dims[d].v;
        seam_tensor *y = kernel_out(k, o, t->elem, t->rank, dims);
        if (!y) {
            st = kernel_oom(k);
            goto done;
        }
        outs[o] = (seam_buffer){body->values[body->outputs[o]].name, (seam_dtype)y->dtype, y->rank, y->dims, y->data, y->nbytes};
        if (device) k->bytes_out += (int64_t)y->nbytes;
    }
    char err[512] = "";
    st = backend_run(s->be, compiled, ins, n_prog, outs, n_out, err, sizeof(err));
    /* the run failed at this node, unless the backend ran out of memory */
    if (st)
        st = kernel_error(k, st == SEAM_STATUS_OUT_OF_MEMORY ? st : SEAM_STATUS_RUN_FAILED, "%s failed to run it: %s",
                          s->be->name, err[0] ? err : seam_status_string(st));
done:
    for (int32_t i = 0; dev && i < n_in; i++) free(dev[i]);
    free(dev);
    free(ins);
    free(outs);
    return st;
}

static seam_status run_subgraph(seam_kernel *k) {
    subgraph_state *s = k->state;
    if (s->compiled) return run_compiled(k, s, s->body, s->compiled);
    if (s->dynamic) {
        seam_status st;
        variant *v = find_variant(k, s, &st);
        if (!v) return st;
        if (v->compiled) return run_compiled(k, s, v->g, v->compiled);
        /* this shape on the CPU: the body on an executor of its own */
        if (!s->exec) {
            st = seam_exec_create(k->ctx, s->body, k->exec, k->pool, &s->exec);
            if (st) return kernel_error(k, st, "running it on the CPU: %s", seam_context_last_error(k->ctx));
        }
    }
    seam_exec *e = s->exec;
    int32_t n_in = kernel_n_in(k);
    void **dev = calloc((size_t)n_in + 1, sizeof(void *));
    if (!dev) return kernel_oom(k);
    seam_status st = SEAM_STATUS_OK;
    s->bytes_in = s->bytes_out = 0;
    for (int32_t i = 0; i < n_in; i++) {
        const seam_tensor *x = kernel_in(k, i);
        if (!x) {
            st = kernel_fail(k, "input %d is missing", i);
            goto done;
        }
        seam_tensor t = *x;
        if (s->device) { /* to the device's memory */
            dev[i] = malloc(x->nbytes ? x->nbytes : 1);
            if (!dev[i]) {
                st = kernel_oom(k);
                goto done;
            }
            double t0 = now_ms();
            if (x->nbytes) memcpy(dev[i], x->data, x->nbytes);
            k->copy_ms += now_ms() - t0;
            t.data = dev[i];
            s->bytes_in += (int64_t)x->nbytes;
        }
        seam_exec_set_input(e, i, &t);
    }
    if ((st = seam_exec_run(e))) goto done;
    for (int32_t o = 0; o < kernel_n_out(k); o++) { /* back to host memory */
        const seam_tensor *t = seam_exec_output(e, o);
        double t0 = now_ms();
        if ((st = kernel_out_copy(k, o, t))) goto done;
        if (s->device) k->copy_ms += now_ms() - t0;
        if (s->device) s->bytes_out += (int64_t)t->nbytes;
    }
done:
    k->bytes_in = s->bytes_in;
    k->bytes_out = s->bytes_out;
    for (int32_t i = 0; i < n_in; i++) free(dev[i]);
    free(dev);
    return st;
}

const seam_kernel_def exec_subgraph_kernel = {run_subgraph, check_subgraph};

bool subgraph_add_counts(const seam_exec *e, int32_t node, subgraph_counts *sum) {
    if (!e || node < 0 || node >= e->g->n_nodes || e->defs[node] != &exec_subgraph_kernel) return false;
    const subgraph_state *s = e->kernels[node].state;
    if (!s) return false;
    sum->compiles += s->counts.compiles;
    sum->run_compiles += s->counts.run_compiles;
    sum->cache_hits += s->counts.cache_hits;
    sum->evictions += s->counts.evictions;
    sum->cpu_shapes += s->counts.cpu_shapes;
    sum->compile_ms += s->counts.compile_ms;
    return true;
}

void subgraph_set_cache_size(seam_exec *e, int32_t node, int32_t n) {
    if (!e || node < 0 || node >= e->g->n_nodes || e->defs[node] != &exec_subgraph_kernel || n < 1) return;
    subgraph_state *s = e->kernels[node].state;
    if (!s || !s->dynamic) return;
    while (s->n_cache > n && evict_one(s)) { /* the least recently used go (buckets stay) */
    }
    if (n < s->n_cache) n = s->n_cache;
    variant *grown = s->cache ? realloc(s->cache, sizeof(variant) * (size_t)n) : NULL;
    if (s->cache && !grown) return; /* keeps the old size */
    if (grown) s->cache = grown;
    s->cap_cache = n;
}

int32_t subgraph_find_targets(seam_context *ctx, const seam_model *m, const seam_backend **targets, int32_t n,
                              int32_t cap) {
    const ir_graph *g = m->graph;
    for (int32_t i = 0; i < g->n_nodes && n < cap; i++) {
        const ir_node *nd = &g->nodes[i];
        if (strcmp(nd->domain, "ai.seam") || strcmp(nd->op_type, "Subgraph") || node_attr(nd, "rules")) continue;
        size_t len = 0;
        const char *t = str_attr(nd, "target", &len);
        char name[64];
        len = instance_base_len(t, len); /* an instance's subgraph runs on its base */
        if (!t || !len || len >= sizeof(name)) continue;
        memcpy(name, t, len);
        name[len] = 0;
        if (!strcmp(name, "cpu") || !strcmp(name, "dnnl") || strchr(name, '/')) continue;
        bool have = false;
        for (int32_t k = 0; k < n && !have; k++) have = targets[k] && !strcmp(targets[k]->name, name);
        const seam_backend *found = NULL;
        if (!have && seam_backend_find(ctx, name, &found) == SEAM_STATUS_OK && found) targets[n++] = found;
    }
    return n;
}
