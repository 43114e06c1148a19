/* The kernel contract's helpers (see backends/kernel.h): what a kernel
 * reads, where it writes, and how it fails. */
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/context.h"
#include "runtime/exec_impl.h"

struct bytes_block {
    struct bytes_block *next;
    max_align_t data[];
};

void *kernel_bytes(seam_kernel *k, size_t n) {
    seam_exec *e = k->exec;
    while (e->parent) e = e->parent;
    if (n > SEAM_MAX_TENSOR_BYTES) return NULL;
    struct bytes_block *b = malloc(sizeof(*b) + n);
    if (!b) return NULL;
    b->next = e->bytes;
    e->bytes = b;
    return b->data;
}

void exec_free_bytes(seam_exec *e) {
    while (e->bytes) {
        struct bytes_block *b = e->bytes;
        e->bytes = b->next;
        free(b);
    }
}

size_t exec_elem_bytes(int32_t dtype) {
    return dtype == SEAM_DTYPE_STRING ? sizeof(ir_bytes) : seam_dtype_size((seam_dtype)dtype);
}

int32_t kernel_n_in(const seam_kernel *k) { return k->n->n_inputs; }
int32_t kernel_n_out(const seam_kernel *k) { return k->n->n_outputs; }

bool kernel_has_out(const seam_kernel *k, int32_t i) {
    return i >= 0 && i < k->n->n_outputs && k->n->outputs[i] >= 0;
}

const seam_tensor *kernel_in(seam_kernel *k, int32_t i) {
    if (i < 0 || i >= k->n->n_inputs || k->n->inputs[i] < 0) return NULL;
    return &k->exec->vals[k->n->inputs[i]].t;
}

const seam_tensor *kernel_node_in(seam_kernel *k, int32_t node, int32_t i) {
    if (node < 0 || node >= k->g->n_nodes) return NULL;
    const ir_node *n = &k->g->nodes[node];
    if (i < 0 || i >= n->n_inputs || n->inputs[i] < 0) return NULL;
    return &k->exec->vals[n->inputs[i]].t;
}

seam_tensor *kernel_out(seam_kernel *k, int32_t i, int32_t dtype, int32_t rank, const int64_t *dims) {
    if (!kernel_has_out(k, i) || rank < 0 || rank > SEAM_MAX_RANK) return NULL;
    exec_value *ev = &k->exec->vals[k->n->outputs[i]];
    int64_t numel = seam_shape_numel(dims, rank);
    size_t es = exec_elem_bytes(dtype);
    if (numel < 0 || es == 0 || (uint64_t)numel > SIZE_MAX / es) return NULL;
    size_t nbytes = (size_t)numel * es;
    /* One tensor made at run time holds at most SEAM_MAX_TENSOR_BYTES: a
     * hostile shape fails as out of memory at once, rather than asking the
     * allocator for it and spending minutes filling it. */
    if (nbytes > SEAM_MAX_TENSOR_BYTES) return NULL;
    if (ev->dynamic) { /* produced twice in one run cannot happen; be safe */
        seam_value_free(&ev->t);
        ev->dynamic = false;
    }
    if (ev->user && nbytes <= ev->capacity) {
        ev->t.data = ev->user;
    } else if (ev->offset >= 0 && nbytes <= ev->planned) {
        ev->t.data = k->exec->slab + ev->offset;
    } else if (ev->dyn_offset >= 0 && nbytes <= ev->dyn_planned) {
        ev->t.data = k->exec->dyn_slab + ev->dyn_offset;
    } else {
        ev->t.data = malloc(nbytes ? nbytes : 1);
        if (!ev->t.data) return NULL;
        ev->dynamic = true;
        if (nbytes && ev->offset < 0) { /* the next run plans a place for it (exec_plan_dynamic) */
            if (nbytes > ev->seen) ev->seen = nbytes;
            k->exec->dyn_missed = true;
        }
    }
    ev->t.dtype = dtype;
    ev->t.rank = rank;
    for (int32_t d = 0; d < rank; d++) ev->t.dims[d] = dims[d];
    ev->t.numel = numel;
    ev->t.nbytes = nbytes;
    ev->t.elem = 0;
    return &ev->t;
}

seam_status kernel_out_value(seam_kernel *k, int32_t i, seam_tensor *v) {
    if (!kernel_has_out(k, i)) {
        seam_value_free(v);
        return SEAM_STATUS_OK;
    }
    exec_value *ev = &k->exec->vals[k->n->outputs[i]];
    if (ev->dynamic) seam_value_free(&ev->t);
    ev->t = *v;
    ev->dynamic = v->data != NULL;
    return SEAM_STATUS_OK;
}

seam_status kernel_out_copy(seam_kernel *k, int32_t i, const seam_tensor *t) {
    if (!kernel_has_out(k, i)) return SEAM_STATUS_OK;
    if (seam_is_value(t->dtype)) {
        seam_tensor c;
        if (!seam_value_copy(&c, t)) return kernel_oom(k);
        return kernel_out_value(k, i, &c);
    }
    seam_tensor *y = kernel_out(k, i, t->dtype, t->rank, t->dims);
    if (!y) return kernel_oom(k);
    if (t->nbytes) memcpy(y->data, t->data, t->nbytes);
    return SEAM_STATUS_OK;
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

static seam_status kernel_verror(seam_kernel *k, seam_status status, const char *fmt, va_list ap) {
    char msg[1024], lab[300];
    vsnprintf(msg, sizeof(msg), fmt, ap);
    return seam_error(k->ctx, status, "%s: %s", ir_node_label(k->g, k->node, lab, sizeof(lab)), msg);
}

seam_status kernel_error(seam_kernel *k, seam_status status, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    seam_status st = kernel_verror(k, status, fmt, ap);
    va_end(ap);
    return st;
}

seam_status kernel_oom(seam_kernel *k) { return kernel_error(k, SEAM_STATUS_OUT_OF_MEMORY, "out of memory"); }

seam_status kernel_fail(seam_kernel *k, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    seam_status st = kernel_verror(k, SEAM_STATUS_RUN_FAILED, fmt, ap);
    va_end(ap);
    return st;
}

int32_t check_in_dtype(const seam_check *c, int32_t i) {
    if (i < 0 || i >= c->n->n_inputs || c->n->inputs[i] < 0) return SEAM_DTYPE_UNDEFINED;
    const ir_type *t = &c->g->values[c->n->inputs[i]].type;
    return t->kind == IR_TYPE_TENSOR ? t->elem : SEAM_DTYPE_UNDEFINED;
}

seam_status check_refuse(seam_check *c, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->reason, c->reason_size, fmt, ap);
    va_end(ap);
    return SEAM_STATUS_UNSUPPORTED;
}

/* Control-flow bodies (backends/kernel.h): executors below the node's. */
seam_status kernel_body_create(seam_check *c, const ir_graph *g, seam_body **out) {
    return seam_exec_create(c->ctx, g, c->exec, c->pool, out);
}

void kernel_body_free(seam_body *b) { seam_exec_free(b); }

void kernel_body_set_input(seam_body *b, int32_t k, const seam_tensor *t) { seam_exec_set_input(b, k, t); }

seam_status kernel_body_run(seam_body *b) { return seam_exec_run(b); }

const seam_tensor *kernel_body_output(const seam_body *b, int32_t k) { return seam_exec_output(b, k); }
