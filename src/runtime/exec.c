/* The executor (see exec.h): create, run, reset, free. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/context.h"
#include "runtime/exec_impl.h"

typedef struct state_entry {
    void *state;
    void (*free_state)(void *);
} state_entry;

static bool is_seam_subgraph(const char *domain, const char *op_type) {
    return domain && strcmp(domain, "ai.seam") == 0 && strcmp(op_type, "Subgraph") == 0;
}

/* The kernel the executor runs for a node of (domain, op) at opset; NULL
 * if there is none. ai.seam Subgraph nodes run in the runtime itself
 * (subgraph.c): they hand their body to the backend that compiled it, or
 * run it on an executor of their own. Every other op runs the host kernel
 * the executor was given (the CPU backend's). */
static const seam_kernel_def *exec_kernel_find(const seam_exec *e, const char *domain, const char *op_type,
                                               int64_t opset) {
    if (is_seam_subgraph(domain, op_type)) return &exec_subgraph_kernel;
    return e->lookup->find(domain, op_type, opset);
}

void exec_tensor_from_ir(seam_tensor *t, const ir_tensor *x) {
    t->dtype = x->dtype;
    t->rank = x->rank;
    for (int32_t d = 0; d < x->rank && d < SEAM_MAX_RANK; d++) t->dims[d] = x->dims[d];
    t->numel = x->numel;
    t->data = x->data;
    t->nbytes = x->dtype == SEAM_DTYPE_STRING ? (size_t)x->numel * sizeof(ir_bytes) : x->nbytes;
}

seam_status seam_exec_create(seam_context *ctx, const ir_graph *g, seam_exec *parent, seam_pool *pool,
                             seam_exec **out) {
    if (!parent) return seam_error(ctx, SEAM_STATUS_INTERNAL, "a body's executor needs its parent");
    return seam_exec_create_with(ctx, g, parent, pool, parent->lookup, NULL, 0, NULL, NULL, out);
}

seam_status seam_exec_create_with(seam_context *ctx, const ir_graph *g, seam_exec *parent, seam_pool *pool,
                                  const seam_kernel_lookup *lookup, const struct seam_backend *const *targets,
                                  int32_t n_targets, void (*progress)(void *user, int32_t done, int32_t total),
                                  void *progress_user, seam_exec **out) {
    *out = NULL;
    if (!lookup) return seam_error(ctx, SEAM_STATUS_INTERNAL, "an executor needs a kernel lookup");
    seam_exec *e = calloc(1, sizeof(*e));
    if (!e) return seam_error(ctx, SEAM_STATUS_OUT_OF_MEMORY, "out of memory");
    e->lookup = lookup;
    e->targets = targets;
    e->n_targets = n_targets;
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
    e->qadd_ok = calloc((size_t)g->n_nodes + 1, sizeof(bool));
    e->values_ok = calloc((size_t)g->n_nodes + 1, sizeof(bool));
    if (!e->vals || !e->kernels || !e->defs || !e->pos || !e->states || !e->how || !e->post_ok || !e->qadd_ok || !e->values_ok) {
        seam_exec_free(e);
        return seam_error(ctx, SEAM_STATUS_OUT_OF_MEMORY, "out of memory");
    }
    for (int32_t p = 0; p < g->n_nodes; p++) e->pos[g->topo[p]] = p;
    for (int32_t i = 0; i < g->n_nodes; i++) e->how[i] = EXEC_RUN;
    char lab[300], reason[512];
    for (int32_t v = 0; v < g->n_values; v++) {
        const ir_value *val = &g->values[v];
        exec_value *ev = &e->vals[v];
        ev->offset = ev->dyn_offset = -1;
        ev->last_use = val->producer >= 0 ? e->pos[val->producer] : -1;
        for (int32_t c = 0; c < val->n_consumers; c++)
            if (e->pos[val->consumers[c]] > ev->last_use) ev->last_use = e->pos[val->consumers[c]];
        if (val->flags & IR_VALUE_OUTPUT) ev->last_use = g->n_nodes;
        if (val->init) {
            exec_tensor_from_ir(&ev->t, val->init);
            ev->fixed = true;
        } else if (val->flags & IR_VALUE_INIT) {
            seam_exec_free(e);
            return seam_error(ctx, SEAM_STATUS_UNSUPPORTED, "sparse initializer '%s' is not supported yet", val->name);
        } else if (val->flags & IR_VALUE_OUTER) {
            ev->fixed = true;
        }
    }
    int32_t n_sub = 0, done_sub = 0;
    for (int32_t i = 0; progress && i < g->n_nodes; i++) n_sub += is_seam_subgraph(g->nodes[i].domain, g->nodes[i].op_type);
    for (int32_t i = 0; i < g->n_nodes; i++) {
        const ir_node *n = &g->nodes[i];
        seam_kernel *k = &e->kernels[i];
        *k = (seam_kernel){.g = g, .n = n, .node = i, .pool = pool, .ctx = ctx, .exec = e};
        const seam_kernel_def *kd = exec_kernel_find(e, n->domain, n->op_type, n->opset);
        if (!kd || !kd->run) {
            seam_exec_free(e);
            bool ms = !n->def && !strcmp(n->domain, "com.microsoft");
            return seam_error(ctx, SEAM_STATUS_UNSUPPORTED, "%s: %s", ir_node_label(g, i, lab, sizeof(lab)),
                              ms ? "unknown op: an ONNX Runtime contrib op seam has no definition of (of "
                                   "com.microsoft's, seam reads the quantized ones ONNX Runtime's quantizer "
                                   "writes: QLinearAdd, QLinearMul, QLinearConcat, QLinearGlobalAveragePool, "
                                   "QLinearAveragePool, QLinearLeakyRelu, QLinearSigmoid, QLinearSoftmax, QGemm, "
                                   "MatMulIntegerToFloat, DynamicQuantizeMatMul, QuantizeLinear, DequantizeLinear)"
                              : !n->def ? "unknown op: seam has no definition of it"
                                        : "the CPU backend has no kernel for this op");
        }
        e->defs[i] = kd;
        e->values_ok[i] = kd != &exec_subgraph_kernel && lookup->takes_values(kd);
        if (kd->check) {
            reason[0] = 0;
            seam_check c = {g, n, i, reason, sizeof(reason), &e->states[i].state, &e->states[i].free_state,
                            ctx, pool, e, false, false};
            bool timed = kd == &exec_subgraph_kernel;
            struct timespec t0, t1;
            if (timed) clock_gettime(CLOCK_MONOTONIC, &t0);
            seam_status st = kd->check(&c);
            if (timed) {
                clock_gettime(CLOCK_MONOTONIC, &t1);
                k->check_ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
            }
            e->post_ok[i] = c.post_ops;
            e->qadd_ok[i] = c.qadd;
            if (st) {
                if (reason[0]) seam_error(ctx, st, "%s: %s", ir_node_label(g, i, lab, sizeof(lab)), reason);
                seam_exec_free(e);
                return st;
            }
            k->state = e->states[i].state;
        }
        if (progress && is_seam_subgraph(n->domain, n->op_type)) progress(progress_user, ++done_sub, n_sub);
    }
    exec_fuse(e);
    seam_status st = exec_plan_memory(e);
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
            seam_value_free(&ev->t);
            ev->dynamic = false;
        }
    }
    exec_free_bytes(e);
}

void seam_exec_free(seam_exec *e) {
    if (!e) return;
    if (e->vals) seam_exec_reset(e);
    if (e->states)
        for (int32_t i = 0; i < e->g->n_nodes; i++)
            if (e->states[i].free_state) e->states[i].free_state(e->states[i].state);
    free(e->states);
    free(e->node_ms);
    free(e->node_start_ms);
    free(e->vals);
    free(e->kernels);
    free(e->defs);
    free(e->pos);
    free(e->how);
    free(e->post_ok);
    free(e->qadd_ok);
    free(e->values_ok);
    free(e->slab);
    free(e->dyn_slab);
    free(e->scratch);
    free(e->log);
    free(e);
}

bool exec_log(seam_exec *e, const char *prefix, const char *text) {
    while (e->parent) e = e->parent;
    size_t plen = strlen(prefix), need = e->log_len + 1;
    for (const char *p = text; *p;) { /* each line: prefix, the line, '\n' */
        const char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p) : strlen(p);
        need += plen + len + 1;
        p += len + (nl ? 1 : 0);
    }
    char *log = realloc(e->log, need);
    if (!log) return false;
    e->log = log;
    for (const char *p = text; *p;) {
        const char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p) : strlen(p);
        if (len > 0) {
            memcpy(log + e->log_len, prefix, plen);
            memcpy(log + e->log_len + plen, p, len);
            e->log_len += plen + len;
            log[e->log_len++] = '\n';
        }
        p += len + (nl ? 1 : 0);
    }
    log[e->log_len] = 0;
    return true;
}

void seam_exec_set_input(seam_exec *e, int32_t k, const seam_tensor *t) {
    exec_value *ev = &e->vals[e->g->inputs[k]];
    ev->t = *t;
    ev->bound = true;
}

const seam_tensor *seam_exec_output(const seam_exec *e, int32_t k) { return &e->vals[e->g->outputs[k]].t; }

/* ---- the shape self-check (SEAM_SELF_CHECK; see core/context.h) ---- */

/* "float32 [1,12,?,80]": a type as inference left it. */
static void format_type(const ir_type *t, char *buf, size_t n) {
    size_t off = (size_t)snprintf(buf, n, "%s", t->elem ? seam_dtype_name((seam_dtype)t->elem) : "?");
    if (t->rank < 0) {
        if (off < n) snprintf(buf + off, n - off, " of unknown rank");
        return;
    }
    for (int32_t d = 0; d < t->rank && off < n; d++) {
        const ir_dim *x = &t->dims[d];
        if (x->v >= 0) off += (size_t)snprintf(buf + off, n - off, "%s%lld", d ? "," : " [", (long long)x->v);
        else off += (size_t)snprintf(buf + off, n - off, "%s%s", d ? "," : " [", x->sym ? x->sym : "?");
    }
    if (off < n) snprintf(buf + off, n - off, t->rank ? "]" : " []");
}

static void format_tensor(const seam_tensor *t, char *buf, size_t n) {
    size_t off = (size_t)snprintf(buf, n, "%s [", seam_dtype_name((seam_dtype)t->dtype));
    for (int32_t d = 0; d < t->rank && off < n; d++)
        off += (size_t)snprintf(buf + off, n - off, "%s%lld", d ? "," : "", (long long)t->dims[d]);
    if (off < n) snprintf(buf + off, n - off, "]");
}

/* Whether tensor t agrees with type ty in what ty knows: its dtype, rank
 * and every known dim (a symbolic or unknown dim agrees with any size). */
static bool agrees(const ir_type *ty, const seam_tensor *t) {
    if (seam_is_value(t->dtype)) return false;
    if (ty->elem != SEAM_DTYPE_UNDEFINED && t->dtype != ty->elem) return false;
    if (ty->rank < 0) return true;
    if (t->rank != ty->rank) return false;
    for (int32_t d = 0; d < t->rank; d++)
        if (ty->dims[d].v >= 0 && ty->dims[d].v != t->dims[d]) return false;
    return true;
}

/* After node i ran: each output of a tensor type agrees with inference, or
 * the run fails naming the node, the value, both shapes and whether the
 * file declared the type (then the file, or inference where the file
 * left dims out, contradicts what ran). */
static seam_status check_outputs(seam_exec *e, int32_t i) {
    const ir_graph *g = e->g;
    const ir_node *n = &g->nodes[i];
    for (int32_t k = 0; k < n->n_outputs; k++) {
        int32_t v = n->outputs[k];
        if (v < 0) continue;
        const ir_value *val = &g->values[v];
        const seam_tensor *t = &e->vals[v].t;
        if (val->type.kind != IR_TYPE_TENSOR || agrees(&val->type, t)) continue;
        char lab[300], said[256], got[256];
        format_type(&val->type, said, sizeof(said));
        if (t->dtype == SEAM_VALUE_SEQUENCE) snprintf(got, sizeof(got), "a sequence");
        else if (t->dtype == SEAM_VALUE_NONE) snprintf(got, sizeof(got), "an empty optional");
        else format_tensor(t, got, sizeof(got));
        return seam_error(e->ctx, SEAM_STATUS_INTERNAL,
                          "%s: output %d '%s' is %s where %s %s (the shape self-check, SEAM_SELF_CHECK)",
                          ir_node_label(g, i, lab, sizeof(lab)), k, val->name, got,
                          (val->flags & IR_VALUE_DECLARED) ? "the file's declaration, completed by inference, says"
                                                           : "shape inference said",
                          said);
    }
    return SEAM_STATUS_OK;
}

seam_status seam_exec_run(seam_exec *e) {
    const ir_graph *g = e->g;
    seam_exec_reset(e);
    if (e->dyn_missed) exec_plan_dynamic(e);
    struct timespec run_t0;
    if (e->profile) clock_gettime(CLOCK_MONOTONIC, &run_t0);
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
            if (e->how[i] >= 0 && e->ctx->self_check) {
                seam_status st = check_outputs(e, i);
                if (st) return st;
            }
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
            if (v >= 0 && seam_is_value(e->vals[v].t.dtype) && !e->values_ok[i]) {
                char lab[300];
                return seam_error(e->ctx, SEAM_STATUS_RUN_FAILED, "%s: input '%s' is %s; this op takes tensors",
                                  ir_node_label(g, i, lab, sizeof(lab)), g->values[v].name,
                                  e->vals[v].t.dtype == SEAM_VALUE_SEQUENCE ? "a sequence" : "an empty optional");
            }
        }
        struct timespec t0, t1;
        if (e->profile) clock_gettime(CLOCK_MONOTONIC, &t0);
        e->kernels[i].bytes_in = e->kernels[i].bytes_out = 0;
        e->kernels[i].copy_ms = 0;
        seam_status st = e->defs[i]->run(&e->kernels[i]);
        if (!st && e->ctx->self_check) st = check_outputs(e, i);
        if (st) return st;
        if (e->profile) {
            clock_gettime(CLOCK_MONOTONIC, &t1);
            e->node_ms[i] = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
            e->node_start_ms[i] = (double)(t0.tv_sec - run_t0.tv_sec) * 1e3 + (double)(t0.tv_nsec - run_t0.tv_nsec) / 1e6;
        }
        /* free dynamic values whose last reader was this node */
        for (int32_t k = 0; k < n->n_inputs; k++) {
            int32_t v = n->inputs[k];
            if (v < 0) continue;
            exec_value *ev = &e->vals[v];
            if (ev->dynamic && ev->last_use == p) {
                seam_value_free(&ev->t);
                ev->dynamic = false;
            }
        }
    }
    return SEAM_STATUS_OK;
}
