/* The memory planner: values whose shape is known before the run share
 * one slab, placed from their lifetimes (see exec.h). */
#include <stdlib.h>

#include "core/arena.h"
#include "core/context.h"
#include "runtime/exec_impl.h"

/* Bytes of a value whose type is fully known, or 0. */
static size_t static_bytes(const ir_value *v) {
    const ir_type *t = &v->type;
    if (t->kind != IR_TYPE_TENSOR || t->rank < 0 || t->rank > SEAM_MAX_RANK) return 0;
    size_t es = exec_elem_bytes(t->elem);
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
    int64_t offset;      /* where place_items put it */
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

/* Greedy by size: each item goes at the lowest 64-byte aligned offset that
 * does not overlap, in bytes, a placed item whose lifetime overlaps its
 * own. Big items first gives tight packing (as in TFLite's planner).
 * busy: room for 2 * n offsets. Returns the bytes the placement spans. */
static int64_t place_items(plan_item *items, int32_t n, int64_t *busy) {
    qsort(items, (size_t)n, sizeof(plan_item), cmp_plan);
    int64_t total = 0;
    for (int32_t i = 0; i < n; i++) {
        /* (offset, end) pairs of placed items alive at the same time */
        int32_t nb = 0;
        for (int32_t j = 0; j < i; j++) {
            if (items[j].last < items[i].first || items[i].last < items[j].first) continue;
            busy[2 * nb] = items[j].offset;
            busy[2 * nb + 1] = items[j].offset + (int64_t)items[j].bytes;
            nb++;
        }
        qsort(busy, (size_t)nb, 2 * sizeof(int64_t), cmp_off);
        int64_t at = 0;
        for (int32_t j = 0; j < nb; j++) {
            if (busy[2 * j] - at >= (int64_t)items[i].bytes) break;
            if (busy[2 * j + 1] > at) at = busy[2 * j + 1];
        }
        items[i].offset = at;
        if (at + (int64_t)items[i].bytes > total) total = at + (int64_t)items[i].bytes;
    }
    return total;
}

/* Values whose size is known before the run. Constants, outer values and
 * aliases are not planned. */
seam_status exec_plan_memory(seam_exec *e) {
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
        if (b > SEAM_MAX_TENSOR_BYTES) { /* as kernel_out refuses it at run time */
            char lab[300];
            free(items);
            free(busy);
            return seam_error(e->ctx, SEAM_STATUS_UNSUPPORTED,
                              "%s: its output '%s' would take %zu bytes, over seam's limit of %zu for one tensor",
                              ir_node_label(g, val->producer, lab, sizeof(lab)), val->name, b, SEAM_MAX_TENSOR_BYTES);
        }
        b = (b + 63) & ~(size_t)63;
        items[n++] = (plan_item){v, e->pos[val->producer], e->vals[v].last_use, b, 0};
    }
    int64_t total = place_items(items, n, busy);
    for (int32_t i = 0; i < n; i++) {
        e->vals[items[i].v].offset = items[i].offset;
        e->vals[items[i].v].planned = items[i].bytes;
    }
    free(items);
    free(busy);
    e->slab_size = (size_t)total;
    if (total) {
        e->slab = seam_alloc_resident((size_t)total);
        if (!e->slab) return seam_error(e->ctx, SEAM_STATUS_OUT_OF_MEMORY, "out of memory: %lld bytes for activations",
                                        (long long)total);
    }
    return SEAM_STATUS_OK;
}

/* Values whose size is known only at run time, from the sizes the runs so
 * far gave them (exec_value.seen): the same placement in a second slab,
 * kept across runs. Each run of a model with data-dependent shapes
 * would otherwise allocate its large values afresh, and a fresh
 * allocation is paid again in page faults on every run (retinanet's
 * backbone at a size computed at run time: a fifth of its time). A value
 * that outgrows its place takes malloc for that run and gets a larger
 * place from the next run on: its largest size so far when it first
 * grows past the plan, then powers of two, so a size that keeps growing
 * costs a few new plans, not one a run. Out of memory leaves every such
 * value to malloc, as before. */
void exec_plan_dynamic(seam_exec *e) {
    const ir_graph *g = e->g;
    e->dyn_missed = false;
    plan_item *items = malloc(sizeof(plan_item) * ((size_t)g->n_values + 1));
    int64_t *busy = malloc(sizeof(int64_t) * 2 * ((size_t)g->n_values + 1));
    int32_t n = 0;
    for (int32_t v = 0; items && busy && v < g->n_values; v++) {
        exec_value *ev = &e->vals[v];
        if (!ev->seen) continue;
        size_t b = ev->seen;
        if (ev->dyn_offset >= 0 && b > ev->dyn_planned) { /* it grew past its place: leave room to grow */
            size_t p = 64;
            while (p < b && p <= SEAM_MAX_TENSOR_BYTES) p *= 2;
            b = p;
        }
        b = (b + 63) & ~(size_t)63;
        items[n++] = (plan_item){v, e->pos[g->values[v].producer], ev->last_use, b, 0};
    }
    int64_t total = items && busy ? place_items(items, n, busy) : 0;
    if (items && busy && (size_t)total > e->dyn_slab_size) {
        free(e->dyn_slab);
        e->dyn_slab = seam_alloc_resident((size_t)total);
        e->dyn_slab_size = e->dyn_slab ? (size_t)total : 0;
    }
    bool ok = items && busy && e->dyn_slab_size >= (size_t)total;
    for (int32_t v = 0; v < g->n_values; v++) e->vals[v].dyn_offset = -1;
    for (int32_t i = 0; ok && i < n; i++) {
        e->vals[items[i].v].dyn_offset = items[i].offset;
        e->vals[items[i].v].dyn_planned = items[i].bytes;
    }
    free(items);
    free(busy);
}
