/*
 * The ai.seam Subgraph runner. An applied plan (partition/apply.c) turns
 * each device subgraph into one node of domain "ai.seam", op "Subgraph",
 * whose "body" attribute is the subgraph and whose "target" names where it
 * runs. The executor runs these nodes itself (seam_exec_kernel_find): they
 * are not an op of any backend but the seam between backends.
 *
 *   a backend that compiles   compiled once at session creation; each run
 *                             hands it the boundary values
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
#include "partition/partition.h"
#include "runtime/exec_impl.h"
#include "seam_backend.h"

typedef struct subgraph_state {
    const ir_graph *body;
    seam_exec *exec;     /* the body's executor, when seam runs it */
    bool device;         /* copy at the boundary */
    int64_t bytes_in, bytes_out; /* moved by the last run */
    /* a backend that compiles its subgraphs */
    const seam_backend *be;
    void *compiled;
    void *view_impl;
} subgraph_state;

static void free_subgraph_state(void *p) {
    subgraph_state *s = p;
    if (!s) return;
    if (s->compiled) backend_release_compiled(s->be, s->compiled);
    subgraph_impl_free(s->view_impl);
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

/* A target the session was given, by name (the root executor holds them). */
static const seam_backend *find_target(const seam_exec *e, const char *name, size_t len) {
    while (e && !e->targets) e = e->parent;
    for (int32_t k = 0; e && k < e->n_targets; k++) {
        const seam_backend *b = e->targets[k];
        if (b && b->name && strlen(b->name) == len && memcmp(b->name, name, len) == 0) return b;
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

static seam_status compile_subgraph(seam_check *c, const seam_backend *be, const ir_graph *body, subgraph_state *s) {
    seam_value_info *infos = calloc((size_t)(body->n_inputs + body->n_outputs) + 1, sizeof(seam_value_info));
    int64_t *dims = calloc((size_t)(body->n_inputs + body->n_outputs) * SEAM_MAX_RANK + 1, sizeof(int64_t));
    seam_status st = SEAM_STATUS_OK;
    if (!infos || !dims) {
        st = refuse_oom(c);
        goto done;
    }
    if (!boundary_infos(body, body->inputs, body->n_inputs, infos, dims) ||
        !boundary_infos(body, body->outputs, body->n_outputs, infos + body->n_inputs, dims + body->n_inputs * SEAM_MAX_RANK)) {
        st = check_refuse(c, "ai.seam Subgraph for '%s': a boundary value's shape is not static; the backend compiles "
                    "static shapes only (fix them with --shape)", be->name);
        goto done;
    }
    s->view_impl = subgraph_impl_new(body->model, body);
    if (!s->view_impl) {
        st = refuse_oom(c);
        goto done;
    }
    seam_subgraph_view v = {c->n->name, body->n_nodes, body->n_inputs, body->n_outputs, infos, infos + body->n_inputs,
                            s->view_impl};
    /* target options: the node's "target_options" strings */
    const ir_attr *oa = node_attr(c->n, "target_options");
    const char *opts[64];
    int32_t n_opts = 0;
    for (int32_t k = 0; oa && oa->kind == IR_ATTR_STRINGS && k < oa->n && n_opts < 64; k++)
        opts[n_opts++] = (const char *)oa->strings[k].data;
    char err[512] = "";
    s->compiled = backend_compile(be, &v, opts, n_opts, err, sizeof(err));
    if (!s->compiled) {
        st = check_refuse(c, "ai.seam Subgraph: %s could not compile it: %s", be->name, err[0] ? err : "(no reason given)");
        goto done;
    }
    const char *log = backend_compile_log(be, s->compiled);
    if (log && log[0]) {
        char prefix[256];
        snprintf(prefix, sizeof(prefix), "subgraph '%s' (%s): ", c->n->name ? c->n->name : "", be->name);
        if (!exec_log(c->exec, prefix, log)) st = refuse_oom(c);
    }
done:
    free(infos);
    free(dims);
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
        return compile_subgraph(c, be, body, s);
    }
    if (!is_cpu && !rules && !be)
        return check_refuse(c, "ai.seam Subgraph: unknown target '%.*s' (not cpu, no rules to stand in for it, and "
                         "no such backend given: load it with --backend-lib)", (int)tlen, target);
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

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static seam_status run_compiled(seam_kernel *k, subgraph_state *s) {
    const ir_graph *body = s->body;
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
    for (int32_t i = 0; i < n_in; i++) {
        const seam_tensor *x = kernel_in(k, i);
        if (!x) {
            st = kernel_fail(k, "input %d is missing", i);
            goto done;
        }
        const void *data = x->data;
        if (device) { /* a copy into "device" memory */
            if (!(dev[i] = malloc(x->nbytes ? x->nbytes : 1))) {
                st = kernel_oom(k);
                goto done;
            }
            double t0 = now_ms();
            if (x->nbytes) memcpy(dev[i], x->data, x->nbytes);
            k->copy_ms += now_ms() - t0;
            data = dev[i];
            k->bytes_in += (int64_t)x->nbytes;
        }
        ins[i] = (seam_tensor_view){body->values[body->inputs[i]].name, (seam_dtype)x->dtype, x->rank, x->dims, data, x->nbytes};
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
    st = backend_run(s->be, s->compiled, ins, n_in, outs, n_out, err, sizeof(err));
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
    if (s->compiled) return run_compiled(k, s);
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
