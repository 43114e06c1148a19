/* The CUDA backend's values: errors and the compile log, the value table
 * (a hash of names), constants and the weights staged on the host, device
 * addresses, and the nodes read from the subgraph view. */
#define _GNU_SOURCE
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "prog.h"

/* ---- errors and the log ------------------------------------------------- */

void logf_(prog *P, const char *fmt, ...) {
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    if (n < 0) return;
    size_t len = strlen(line);
    if (P->log_len + len + 2 > P->log_cap) {
        size_t cap = (P->log_cap ? P->log_cap * 2 : 4096) + len;
        char *l = realloc(P->log, cap);
        if (!l) return;
        P->log = l, P->log_cap = cap;
    }
    memcpy(P->log + P->log_len, line, len);
    P->log_len += len;
    P->log[P->log_len++] = '\n';
    P->log[P->log_len] = 0;
}

bool cuda_ok(cudaError_t e, const char *call, const prog *P, const char *what, char *err, size_t es) {
    if (e == cudaSuccess) return true;
    snprintf(err, es, "subgraph '%s': %s%s%s: %s (%s)", P->name, what ? what : "", what ? ": " : "", call,
             cudaGetErrorString(e), cudaGetErrorName(e));
    (void)cudaGetLastError();
    return false;
}
bool dnn_ok(cudnnStatus_t e, const char *call, const prog *P, const char *what, char *err, size_t es) {
    if (e == CUDNN_STATUS_SUCCESS) return true;
    snprintf(err, es, "subgraph '%s': %s%s%s: cuDNN %s", P->name, what ? what : "", what ? ": " : "", call,
             cudnnGetErrorString(e));
    return false;
}
bool lt_ok(cublasStatus_t e, const char *call, const prog *P, const char *what, char *err, size_t es) {
    if (e == CUBLAS_STATUS_SUCCESS) return true;
    snprintf(err, es, "subgraph '%s': %s%s%s: cuBLASLt %s (%s)", P->name, what ? what : "", what ? ": " : "", call,
             cublasLtGetStatusName(e), cublasLtGetStatusString(e));
    return false;
}
/* ---- values ------------------------------------------------------------------ */

static uint64_t hash_str(const char *s) {
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

int find_value(const prog *P, const char *name) {
    if (!P->ht_cap) return -1;
    for (uint64_t i = hash_str(name) & (uint64_t)(P->ht_cap - 1);; i = (i + 1) & (uint64_t)(P->ht_cap - 1)) {
        int id = P->ht[i];
        if (id < 0) return -1;
        if (!strcmp(P->v[id].name, name)) return id;
    }
}

static bool rehash(prog *P, int cap) {
    int *ht = malloc((size_t)cap * sizeof(int));
    if (!ht) return false;
    for (int i = 0; i < cap; i++) ht[i] = -1;
    for (int id = 0; id < P->nv; id++) {
        uint64_t i = hash_str(P->v[id].name) & (uint64_t)(cap - 1);
        while (ht[i] >= 0) i = (i + 1) & (uint64_t)(cap - 1);
        ht[i] = id;
    }
    free(P->ht);
    P->ht = ht, P->ht_cap = cap;
    return true;
}

/* The value of that name, made from info if new; -1 when out of memory. */
int value_of(prog *P, const char *name, seam_dtype dtype, int32_t rank, const int64_t *dims) {
    int id = find_value(P, name);
    if (id >= 0) return id;
    if (P->nv == P->cap_v) {
        int cap = P->cap_v ? 2 * P->cap_v : 64;
        cval *v = realloc(P->v, (size_t)cap * sizeof(cval));
        if (!v) return -1;
        P->v = v, P->cap_v = cap;
    }
    if (2 * (P->nv + 1) > P->ht_cap && !rehash(P, P->ht_cap ? 2 * P->ht_cap : 256)) return -1;
    cval *v = &P->v[P->nv];
    memset(v, 0, sizeof(*v));
    if (!(v->name = strdup(name))) return -1;
    v->dtype = dtype;
    v->rank = rank < 0 ? 0 : rank;
    size_t e = 1;
    for (int32_t d = 0; d < v->rank; d++) v->dims[d] = dims[d], e *= (size_t)dims[d];
    v->nbytes = e * cu_dtype_size(dtype);
    v->root = P->nv;
    v->def = v->last = -2;
    v->out_k = -1;
    id = P->nv++;
    uint64_t i = hash_str(name) & (uint64_t)(P->ht_cap - 1);
    while (P->ht[i] >= 0) i = (i + 1) & (uint64_t)(P->ht_cap - 1);
    P->ht[i] = id;
    return id;
}

int64_t vnumel(const cval *v) {
    int64_t e = 1;
    for (int32_t d = 0; d < v->rank; d++) e *= v->dims[d];
    return e;
}

/* Copies a constant's bytes into the weights (once). */
bool upload(prog *P, int id, char *err, size_t es) {
    cval *v = &P->v[P->v[id].root];
    if (!v->is_const || v->uploaded) return true;
    size_t off = (P->wbytes + ALIGN - 1) / ALIGN * ALIGN;
    if (off + v->nbytes > P->wcap) {
        size_t cap = (off + v->nbytes) * 2 + (1u << 20);
        unsigned char *w = realloc(P->wh, cap);
        if (!w) return FAIL("subgraph '%s': out of host memory staging the weights", P->name);
        P->wh = w, P->wcap = cap;
    }
    if (v->nbytes) memcpy(P->wh + off, v->host, v->nbytes);
    v->woff = off;
    v->uploaded = true;
    P->wbytes = off + v->nbytes;
    return true;
}

/* A constant of the backend's own (folded weights): a new value. */
int new_const(prog *P, const char *name, int32_t rank, const int64_t *dims, const float *data, char *err, size_t es) {
    int id = value_of(P, name, SEAM_DTYPE_FLOAT32, rank, dims);
    if (id < 0) {
        snprintf(err, es, "subgraph '%s': out of memory", P->name);
        return -1;
    }
    P->v[id].is_const = P->v[id].ready = true;
    P->v[id].host = data;
    P->v[id].uploaded = false;
    return upload(P, id, err, es) ? id : -1;
}

void *dptr(const prog *P, int id) {
    if (id < 0) return NULL;
    const cval *r = &P->v[P->v[id].root];
    return r->is_const ? (char *)P->weights + r->woff : (char *)P->arena + r->off;
}

bool read_nodes(prog *P, const seam_subgraph_view *sg, char *err, size_t es) {
    if (!(P->nodes = calloc((size_t)sg->n_nodes + 1, sizeof(cnode)))) return FAIL("subgraph '%s': out of memory", P->name);
    for (int32_t k = 0; k < sg->n_inputs; k++) {
        const seam_value_info *vi = &sg->inputs[k];
        if (!cu_dtype_size(vi->dtype)) return FAIL("subgraph '%s': input '%s' is of a type cuda does not hold", P->name, vi->name);
        if ((P->in_vals[k] = value_of(P, vi->name, vi->dtype, vi->rank, vi->dims)) < 0) return FAIL("subgraph '%s': out of memory", P->name);
        P->v[P->in_vals[k]].is_input = P->v[P->in_vals[k]].ready = true;
    }
    for (int32_t i = 0; i < sg->n_nodes; i++) {
        seam_node_view storage;
        const seam_node_view *nv = seam_subgraph_node(sg, i, &storage);
        cnode *n = &P->nodes[i];
        char why[400] = "";
        if (!nv) return FAIL("subgraph '%s': node %d of the subgraph cannot be read", P->name, i);
        n->index = nv->index;
        if (!(n->name = strdup(nv->name ? nv->name : ""))) return FAIL("subgraph '%s': out of memory", P->name);
        snprintf(n->op, sizeof(n->op), "%s", nv->op_type);
        P->n_nodes = i + 1;
        if (!cu_parse(nv, sg, &n->p, why, sizeof(why)))
            return FAIL("subgraph '%s': node %d '%s' (%s): %s", P->name, nv->index, n->name, n->op, why);
        n->n_in = nv->n_inputs;
        if (!(n->in = malloc((size_t)nv->n_inputs * sizeof(int) + 1))) return FAIL("subgraph '%s': out of memory", P->name);
        for (int32_t k = 0; k < nv->n_inputs; k++) {
            const seam_value_info *vi = &nv->inputs[k];
            n->in[k] = -1;
            if (!vi->name || !vi->name[0]) continue;
            int id = value_of(P, vi->name, vi->dtype, vi->rank, vi->dims);
            if (id < 0) return FAIL("subgraph '%s': out of memory", P->name);
            seam_tensor_view c;
            if (!P->v[id].host && !P->v[id].is_input && seam_subgraph_constant(sg, vi->name, &c)) {
                if (c.nbytes != P->v[id].nbytes && cu_dtype_size(c.dtype))
                    return FAIL("subgraph '%s': node %d '%s': constant '%s' has %zu bytes, its shape says %zu", P->name,
                                nv->index, n->name, vi->name, c.nbytes, P->v[id].nbytes);
                P->v[id].is_const = P->v[id].ready = true;
                P->v[id].host = c.data;
            }
            n->in[k] = id;
            P->v[id].readers++;
            P->v[id].reader = i;
        }
        const seam_value_info *yo = &nv->outputs[0];
        if ((n->out = value_of(P, yo->name, yo->dtype, yo->rank, yo->dims)) < 0) return FAIL("subgraph '%s': out of memory", P->name);
        n->xout[0] = n->xout[1] = -1;
        for (int32_t k = 1; k < nv->n_outputs && k < 3 && n->p.kind == K_RNN; k++) { /* Y_h, Y_c */
            const seam_value_info *vo = &nv->outputs[k];
            if (vo->name && vo->name[0] && (n->xout[k - 1] = value_of(P, vo->name, vo->dtype, vo->rank, vo->dims)) < 0)
                return FAIL("subgraph '%s': out of memory", P->name);
        }
    }
    for (int32_t k = 0; k < sg->n_outputs; k++) {
        const seam_value_info *vi = &sg->outputs[k];
        int id = find_value(P, vi->name);
        if (id < 0) return FAIL("subgraph '%s': output '%s' is computed by no node", P->name, vi->name);
        if (!cu_dtype_size(vi->dtype)) return FAIL("subgraph '%s': output '%s' is of a type cuda does not hold", P->name, vi->name);
        P->out_vals[k] = id;
        P->v[id].out_k = k;
    }
    return true;
}