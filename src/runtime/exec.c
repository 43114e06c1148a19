/* The executor (see exec.h). */
#include "runtime/exec.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backends/cpu/kernels.h"
#include "core/context.h"

int64_t seam_shape_numel(const int64_t *dims, int32_t rank) { return ir_numel(dims, rank); }

/* ---- kernel-side helpers ---- */

int32_t kernel_n_in(const seam_kernel *k) { return k->n->n_inputs; }
int32_t kernel_n_out(const seam_kernel *k) { return k->n->n_outputs; }

bool kernel_has_out(const seam_kernel *k, int32_t i) {
    return i >= 0 && i < k->n->n_outputs && k->n->outputs[i] >= 0;
}

const seam_tensor *kernel_in(seam_kernel *k, int32_t i) {
    if (i < 0 || i >= k->n->n_inputs || k->n->inputs[i] < 0) return NULL;
    return &k->exec->vals[k->n->inputs[i]].t;
}

static size_t elem_bytes(int32_t dtype) {
    return dtype == SEAM_DTYPE_STRING ? sizeof(ir_bytes) : seam_dtype_size((seam_dtype)dtype);
}

seam_tensor *kernel_out(seam_kernel *k, int32_t i, int32_t dtype, int32_t rank, const int64_t *dims) {
    if (!kernel_has_out(k, i) || rank < 0 || rank > SEAM_MAX_RANK) return NULL;
    exec_value *ev = &k->exec->vals[k->n->outputs[i]];
    int64_t numel = seam_shape_numel(dims, rank);
    size_t es = elem_bytes(dtype);
    if (numel < 0 || es == 0 || (uint64_t)numel > SIZE_MAX / es) return NULL;
    size_t nbytes = (size_t)numel * es;
    /* a size no machine here has (hostile shapes): fail as out of memory
     * rather than ask the allocator */
    if (nbytes > ((size_t)1 << 38)) return NULL;
    if (ev->dynamic) { /* produced twice in one run cannot happen; be safe */
        free(ev->t.data);
        ev->dynamic = false;
    }
    if (ev->user && nbytes <= ev->capacity) {
        ev->t.data = ev->user;
    } else if (ev->offset >= 0 && nbytes <= ev->planned) {
        ev->t.data = k->exec->slab + ev->offset;
    } else {
        ev->t.data = malloc(nbytes ? nbytes : 1);
        if (!ev->t.data) return NULL;
        ev->dynamic = true;
    }
    ev->t.dtype = dtype;
    ev->t.rank = rank;
    for (int32_t d = 0; d < rank; d++) ev->t.dims[d] = dims[d];
    ev->t.numel = numel;
    ev->t.nbytes = nbytes;
    return &ev->t;
}

void *kernel_scratch(seam_kernel *k, size_t n) {
    seam_exec *e = k->exec;
    if (n > e->scratch_size) {
        free(e->scratch);
        e->scratch = malloc(n);
        e->scratch_size = e->scratch ? n : 0;
    }
    return e->scratch;
}

seam_status kernel_oom(seam_kernel *k) { return kernel_fail(k, "out of memory"); }

seam_status kernel_fail(seam_kernel *k, const char *fmt, ...) {
    char msg[1024], lab[300];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    return seam_error(k->ctx, SEAM_STATUS_INVALID_ARGUMENT, "%s: %s", ir_node_label(k->g, k->node, lab, sizeof(lab)),
                      msg);
}

int32_t check_in_dtype(const seam_check *c, int32_t i) {
    if (i < 0 || i >= c->n->n_inputs || c->n->inputs[i] < 0) return SEAM_DTYPE_UNDEFINED;
    const ir_type *t = &c->g->values[c->n->inputs[i]].type;
    return t->kind == IR_TYPE_TENSOR ? t->elem : SEAM_DTYPE_UNDEFINED;
}

/* ---- planning ---- */

/* Bytes of a value whose type is fully known, or 0. */
static size_t static_bytes(const ir_value *v) {
    const ir_type *t = &v->type;
    if (t->kind != IR_TYPE_TENSOR || t->rank < 0 || t->rank > SEAM_MAX_RANK) return 0;
    size_t es = elem_bytes(t->elem);
    if (!es || t->elem == SEAM_DTYPE_STRING) return 0;
    int64_t dims[SEAM_MAX_RANK];
    for (int32_t d = 0; d < t->rank; d++) {
        if (t->dims[d].v < 0) return 0;
        dims[d] = t->dims[d].v;
    }
    int64_t n = seam_shape_numel(dims, t->rank);
    if (n <= 0 || (uint64_t)n > SIZE_MAX / es / 2) return 0;
    return (size_t)n * es;
}

typedef struct plan_item {
    int32_t v;
    int32_t first, last; /* lifetime in topo positions */
    size_t bytes;
} plan_item;

static int cmp_plan(const void *a, const void *b) {
    const plan_item *x = a, *y = b;
    if (x->bytes != y->bytes) return x->bytes < y->bytes ? 1 : -1;
    return x->v - y->v; /* deterministic */
}

static int cmp_off(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* Greedy by size: each value goes at the lowest 64-byte aligned offset that
 * does not overlap, in bytes, a placed value whose lifetime overlaps its
 * own. Big values first gives tight packing (as in TFLite's planner). */
static seam_status plan_memory(seam_exec *e) {
    const ir_graph *g = e->g;
    plan_item *items = malloc(sizeof(plan_item) * ((size_t)g->n_values + 1));
    int64_t *busy = malloc(sizeof(int64_t) * 2 * ((size_t)g->n_values + 1));
    if (!items || !busy) {
        free(items);
        free(busy);
        return seam_error(e->ctx, SEAM_STATUS_OUT_OF_MEMORY, "out of memory while planning");
    }
    int32_t n = 0;
    for (int32_t v = 0; v < g->n_values; v++) {
        const ir_value *val = &g->values[v];
        if (val->producer < 0 || e->vals[v].fixed || e->vals[v].alias) continue;
        size_t b = static_bytes(val);
        if (!b) continue;
        b = (b + 63) & ~(size_t)63;
        items[n++] = (plan_item){v, e->pos[val->producer], e->vals[v].last_use, b};
    }
    qsort(items, (size_t)n, sizeof(plan_item), cmp_plan);
    int64_t total = 0;
    for (int32_t i = 0; i < n; i++) {
        /* (offset, end) pairs of placed values alive at the same time */
        int32_t nb = 0;
        for (int32_t j = 0; j < i; j++) {
            if (items[j].last < items[i].first || items[i].last < items[j].first) continue;
            int64_t off = e->vals[items[j].v].offset;
            busy[2 * nb] = off;
            busy[2 * nb + 1] = off + (int64_t)items[j].bytes;
            nb++;
        }
        qsort(busy, (size_t)nb, 2 * sizeof(int64_t), cmp_off);
        int64_t at = 0;
        for (int32_t j = 0; j < nb; j++) {
            if (busy[2 * j] - at >= (int64_t)items[i].bytes) break;
            if (busy[2 * j + 1] > at) at = busy[2 * j + 1];
        }
        e->vals[items[i].v].offset = at;
        e->vals[items[i].v].planned = items[i].bytes;
        if (at + (int64_t)items[i].bytes > total) total = at + (int64_t)items[i].bytes;
    }
    free(items);
    free(busy);
    e->slab_size = (size_t)total;
    if (total) {
        e->slab = aligned_alloc(64, (size_t)total);
        if (!e->slab) return seam_error(e->ctx, SEAM_STATUS_OUT_OF_MEMORY, "out of memory: %lld bytes for activations",
                                        (long long)total);
    }
    return SEAM_STATUS_OK;
}

/* ---- creation ---- */

static void tensor_from_ir(seam_tensor *t, const ir_tensor *x) {
    t->dtype = x->dtype;
    t->rank = x->rank;
    for (int32_t d = 0; d < x->rank && d < SEAM_MAX_RANK; d++) t->dims[d] = x->dims[d];
    t->numel = x->numel;
    t->data = x->data;
    t->nbytes = x->dtype == SEAM_DTYPE_STRING ? (size_t)x->numel * sizeof(ir_bytes) : x->nbytes;
}

/* ---- fusion and aliases ----
 *
 * Many nodes of an exported model compute nothing (Constant, Identity),
 * or little: the activation after each Conv is a separate pass over a
 * tensor that has left the cache. Before planning:
 *
 *   Constant(value=T)          the output is bound to T, like an
 *                              initializer; the node does not run
 *   Identity(x)                the output is an alias of x: the same
 *                              tensor, set when the node's turn comes
 *   Conv -> v -> Relu -> y     when v has no other reader and the Conv's
 *                              kernel takes post-ops (its check set
 *                              post_ops: Conv, Gemm, MatMul), the Conv
 *                              applies the Relu as it writes v, and y is
 *                              an alias of v (also Clip with constant
 *                              bounds, LeakyRelu, HardSigmoid, HardSwish)
 *
 * An alias shares its root's bytes, so the root's lifetime is stretched to
 * the alias's last reader. Graph outputs are never aliases or bound (the
 * caller may hand in their buffers). */

static bool is_std(const ir_node *n, const char *op) { return n->domain[0] == 0 && strcmp(n->op_type, op) == 0; }

static bool is_float32(const ir_value *v) { return v->type.kind == IR_TYPE_TENSOR && v->type.elem == SEAM_DTYPE_FLOAT32; }

/* Input i of n as a constant float32 scalar (an initializer or a bound
 * Constant). Absent inputs give def. */
static bool const_scalar(const seam_exec *e, const ir_node *n, int32_t i, float def, float *out) {
    *out = def;
    if (i >= n->n_inputs || n->inputs[i] < 0) return true;
    const exec_value *ev = &e->vals[n->inputs[i]];
    if (!ev->fixed || (e->g->values[n->inputs[i]].flags & IR_VALUE_OUTER) || !ev->t.data) return false;
    if (ev->t.dtype != SEAM_DTYPE_FLOAT32 || ev->t.numel != 1) return false;
    *out = *(const float *)ev->t.data;
    return true;
}

/* The post-op an activation node stands for, or false. */
static bool post_op_of(const seam_exec *e, const ir_node *n, act_params *op) {
    *op = (act_params){ACT_NONE, 0, 0, -INFINITY, INFINITY, 0};
    if (n->domain[0]) return false;
    if (strcmp(n->op_type, "Relu") == 0) {
        op->kind = ACT_RELU;
    } else if (strcmp(n->op_type, "LeakyRelu") == 0) {
        op->kind = ACT_LEAKY_RELU;
        op->alpha = node_attr_float(n, "alpha", 0.01f);
    } else if (strcmp(n->op_type, "HardSigmoid") == 0) {
        op->kind = ACT_HARD_SIGMOID;
        op->alpha = node_attr_float(n, "alpha", 0.2f);
        op->beta = node_attr_float(n, "beta", 0.5f);
    } else if (strcmp(n->op_type, "HardSwish") == 0) {
        op->kind = ACT_HARD_SWISH;
    } else if (strcmp(n->op_type, "Clip") == 0) {
        op->kind = ACT_CLIP;
        if (n->opset < 11) {
            op->lo = node_attr_float(n, "min", -INFINITY);
            op->hi = node_attr_float(n, "max", INFINITY);
        } else if (!const_scalar(e, n, 1, -INFINITY, &op->lo) || !const_scalar(e, n, 2, INFINITY, &op->hi)) {
            return false;
        }
    } else {
        return false;
    }
    return true;
}

/* Follows aliases to the value that owns the bytes. */
static int32_t alias_root(const seam_exec *e, int32_t v) {
    while (e->vals[v].alias) v = e->how[e->g->values[v].producer];
    return v;
}

static void fuse_nodes(seam_exec *e) {
    const ir_graph *g = e->g;
    for (int32_t p = 0; p < g->n_nodes; p++) {
        int32_t i = g->topo[p];
        const ir_node *n = &g->nodes[i];
        if (n->n_outputs < 1 || n->outputs[0] < 0) continue;
        int32_t y = n->outputs[0];
        if (g->values[y].flags & IR_VALUE_OUTPUT) continue;
        if (is_std(n, "Constant") && n->n_outputs == 1) {
            const ir_attr *a = ir_node_attr(n, "value");
            if (!a || a->kind != IR_ATTR_TENSOR || !a->t || a->t->dtype == SEAM_DTYPE_STRING) continue;
            tensor_from_ir(&e->vals[y].t, a->t);
            e->vals[y].fixed = true;
            e->how[i] = EXEC_SKIP;
            continue;
        }
        if (n->n_inputs < 1 || n->inputs[0] < 0 || n->n_outputs != 1) continue;
        int32_t x = n->inputs[0];
        const ir_value *xv = &g->values[x];
        if (is_std(n, "Identity")) {
            /* (strings keep the copying kernel, which refuses them) */
            if (xv->type.kind != IR_TYPE_TENSOR || xv->type.elem == SEAM_DTYPE_STRING) continue;
            e->how[i] = x;
            e->vals[y].alias = true;
            continue;
        }
        act_params op;
        if (!post_op_of(e, n, &op) || !is_float32(xv) || !is_float32(&g->values[y])) continue;
        /* x: output 0 of a kernel that takes post-ops, read by this node only */
        if (xv->producer < 0 || xv->n_consumers != 1 || (xv->flags & (IR_VALUE_OUTPUT | IR_VALUE_OUTER))) continue;
        int32_t pi = xv->producer;
        seam_kernel *pk = &e->kernels[pi];
        if (!e->post_ok[pi] || e->how[pi] != EXEC_RUN || pk->post.kind != ACT_NONE ||
            g->nodes[pi].outputs[0] != x)
            continue;
        pk->post = op;
        e->how[i] = x;
        e->vals[y].alias = true;
    }
    /* each root lives until the last reader of any of its aliases */
    for (int32_t v = 0; v < g->n_values; v++) {
        if (!e->vals[v].alias) continue;
        int32_t r = alias_root(e, v);
        if (e->vals[v].last_use > e->vals[r].last_use) e->vals[r].last_use = e->vals[v].last_use;
    }
}

typedef struct state_entry {
    void *state;
    void (*free_state)(void *);
} state_entry;

seam_status seam_exec_create(seam_context *ctx, const ir_graph *g, seam_exec *parent, seam_pool *pool,
                             seam_exec **out) {
    return seam_exec_create_with(ctx, g, parent, pool, NULL, 0, NULL, NULL, out);
}

seam_status seam_exec_create_with(seam_context *ctx, const ir_graph *g, seam_exec *parent, seam_pool *pool,
                                  const struct seam_backend *const *backends, int32_t n_backends,
                                  void (*progress)(void *user, int32_t done, int32_t total), void *progress_user,
                                  seam_exec **out) {
    *out = NULL;
    seam_exec *e = calloc(1, sizeof(*e));
    if (!e) return seam_error(ctx, SEAM_STATUS_OUT_OF_MEMORY, "out of memory");
    e->backends = backends;
    e->n_backends = n_backends;
    e->progress = progress;
    e->progress_user = progress_user;
    e->ctx = ctx;
    e->g = g;
    e->parent = parent;
    e->pool = pool;
    e->vals = calloc((size_t)g->n_values + 1, sizeof(exec_value));
    e->kernels = calloc((size_t)g->n_nodes + 1, sizeof(seam_kernel));
    e->defs = calloc((size_t)g->n_nodes + 1, sizeof(e->defs[0]));
    e->pos = calloc((size_t)g->n_nodes + 1, sizeof(int32_t));
    e->states = calloc((size_t)g->n_nodes + 1, sizeof(state_entry));
    e->how = malloc(sizeof(int32_t) * ((size_t)g->n_nodes + 1));
    e->post_ok = calloc((size_t)g->n_nodes + 1, sizeof(bool));
    if (!e->vals || !e->kernels || !e->defs || !e->pos || !e->states || !e->how || !e->post_ok) {
        seam_exec_free(e);
        return seam_error(ctx, SEAM_STATUS_OUT_OF_MEMORY, "out of memory");
    }
    for (int32_t p = 0; p < g->n_nodes; p++) e->pos[g->topo[p]] = p;
    for (int32_t i = 0; i < g->n_nodes; i++) e->how[i] = EXEC_RUN;
    char lab[300], reason[512];
    for (int32_t v = 0; v < g->n_values; v++) {
        const ir_value *val = &g->values[v];
        exec_value *ev = &e->vals[v];
        ev->offset = -1;
        ev->last_use = val->producer >= 0 ? e->pos[val->producer] : -1;
        for (int32_t c = 0; c < val->n_consumers; c++)
            if (e->pos[val->consumers[c]] > ev->last_use) ev->last_use = e->pos[val->consumers[c]];
        if (val->flags & IR_VALUE_OUTPUT) ev->last_use = g->n_nodes;
        if (val->init) {
            tensor_from_ir(&ev->t, val->init);
            ev->fixed = true;
        } else if (val->flags & IR_VALUE_INIT) {
            seam_exec_free(e);
            return seam_error(ctx, SEAM_STATUS_UNSUPPORTED, "sparse initializer '%s' is not supported yet", val->name);
        } else if (val->flags & IR_VALUE_OUTER) {
            ev->fixed = true;
        }
    }
    int32_t n_sub = 0, done_sub = 0;
    for (int32_t i = 0; progress && i < g->n_nodes; i++) n_sub += strcmp(g->nodes[i].domain, "ai.seam") == 0;
    for (int32_t i = 0; i < g->n_nodes; i++) {
        const ir_node *n = &g->nodes[i];
        seam_kernel *k = &e->kernels[i];
        *k = (seam_kernel){.g = g, .n = n, .node = i, .pool = pool, .ctx = ctx, .exec = e};
        const seam_kernel_def *kd = cpu_kernel_find(n->domain, n->op_type, n->opset);
        if (!kd || !kd->run) {
            seam_exec_free(e);
            return seam_error(ctx, SEAM_STATUS_UNSUPPORTED, "%s: %s", ir_node_label(g, i, lab, sizeof(lab)),
                              !n->def ? "unknown op: seam has no definition of it"
                                      : "the CPU backend has no kernel for this op");
        }
        e->defs[i] = kd;
        if (kd->check) {
            reason[0] = 0;
            seam_check c = {g, n, i, reason, sizeof(reason), &e->states[i].state, &e->states[i].free_state,
                            ctx, pool, e, false};
            seam_status st = kd->check(&c);
            e->post_ok[i] = c.post_ops;
            if (st) {
                if (reason[0]) seam_error(ctx, st, "%s: %s", ir_node_label(g, i, lab, sizeof(lab)), reason);
                seam_exec_free(e);
                return st;
            }
            k->state = e->states[i].state;
        }
        if (progress && strcmp(n->domain, "ai.seam") == 0) progress(progress_user, ++done_sub, n_sub);
    }
    fuse_nodes(e);
    seam_status st = plan_memory(e);
    if (st) {
        seam_exec_free(e);
        return st;
    }
    *out = e;
    return SEAM_STATUS_OK;
}

void seam_exec_reset(seam_exec *e) {
    for (int32_t v = 0; v < e->g->n_values; v++) {
        exec_value *ev = &e->vals[v];
        if (ev->dynamic) {
            free(ev->t.data);
            ev->t.data = NULL;
            ev->dynamic = false;
        }
    }
}

void seam_exec_free(seam_exec *e) {
    if (!e) return;
    if (e->vals) seam_exec_reset(e);
    if (e->states)
        for (int32_t i = 0; i < e->g->n_nodes; i++)
            if (e->states[i].free_state) e->states[i].free_state(e->states[i].state);
    free(e->states);
    free(e->node_ms);
    free(e->vals);
    free(e->kernels);
    free(e->defs);
    free(e->pos);
    free(e->how);
    free(e->post_ok);
    free(e->slab);
    free(e->scratch);
    free(e);
}

seam_status seam_exec_run(seam_exec *e) {
    const ir_graph *g = e->g;
    seam_exec_reset(e);
    /* outer values: the parent's current tensors */
    if (e->parent)
        for (int32_t v = 0; v < g->n_values; v++)
            if (g->values[v].flags & IR_VALUE_OUTER) e->vals[v].t = e->parent->vals[g->values[v].outer].t;
    for (int32_t p = 0; p < g->n_nodes; p++) {
        int32_t i = g->topo[p];
        const ir_node *n = &g->nodes[i];
        if (e->how[i] != EXEC_RUN) {
            /* an alias takes its source's tensor as it is now (its shape may
             * be known only at run time) */
            if (e->how[i] >= 0) e->vals[n->outputs[0]].t = e->vals[e->how[i]].t;
            continue;
        }
        for (int32_t k = 0; k < n->n_inputs; k++) {
            int32_t v = n->inputs[k];
            if (v >= 0 && !e->vals[v].t.data && e->vals[v].t.numel != 0 && !e->vals[v].fixed &&
                !(g->values[v].flags & IR_VALUE_INPUT)) {
                char lab[300];
                return seam_error(e->ctx, SEAM_STATUS_INTERNAL, "%s: input '%s' has no data",
                                  ir_node_label(g, i, lab, sizeof(lab)), g->values[v].name);
            }
        }
        struct timespec t0, t1;
        if (e->profile) clock_gettime(CLOCK_MONOTONIC, &t0);
        e->kernels[i].bytes_in = e->kernels[i].bytes_out = 0;
        seam_status st = e->defs[i]->run(&e->kernels[i]);
        if (st) return st;
        if (e->profile) {
            clock_gettime(CLOCK_MONOTONIC, &t1);
            e->node_ms[i] = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
        }
        /* free dynamic values whose last reader was this node */
        for (int32_t k = 0; k < n->n_inputs; k++) {
            int32_t v = n->inputs[k];
            if (v < 0) continue;
            exec_value *ev = &e->vals[v];
            if (ev->dynamic && ev->last_use == p) {
                free(ev->t.data);
                ev->t.data = NULL;
                ev->dynamic = false;
            }
        }
    }
    return SEAM_STATUS_OK;
}
