/* CPU kernels: If, Loop, Scan and SequenceMap. Each body gets its own executor, made at
 * session creation (so an unsupported op inside a body fails there too)
 * with the running graph's executor as parent, which is where the body's
 * outer values come from. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cpu/cpu.h"

#define MAX_BODIES 2

typedef struct bodies {
    seam_body *e[MAX_BODIES];
    const ir_graph *g[MAX_BODIES];
} bodies;

static void free_bodies(void *p) {
    bodies *b = p;
    if (!b) return;
    for (int32_t i = 0; i < MAX_BODIES; i++) kernel_body_free(b->e[i]);
    free(b);
}

static const ir_graph *graph_attr(const ir_node *n, const char *name) {
    const ir_attr *a = node_attr(n, name);
    return a && a->kind == IR_ATTR_GRAPH ? a->g : NULL;
}

static seam_status check_bodies(seam_check *c, const char *a, const char *b) {
    bodies *s = calloc(1, sizeof(*s));
    if (!s) {
        snprintf(c->reason, c->reason_size, "out of memory");
        return SEAM_STATUS_OUT_OF_MEMORY;
    }
    *c->state = s;
    *c->free_state = free_bodies;
    const char *names[MAX_BODIES] = {a, b};
    for (int32_t i = 0; i < MAX_BODIES && names[i]; i++) {
        s->g[i] = graph_attr(c->n, names[i]);
        if (!s->g[i]) return check_refuse(c, "missing graph attribute '%s'", names[i]);
        seam_status st = kernel_body_create(c, s->g[i], &s->e[i]);
        if (st) { /* the body's own status: unsupported, or out of memory */
            snprintf(c->reason, c->reason_size, "in its '%s' body: %s", names[i], seam_context_last_error(c->ctx));
            return st;
        }
    }
    return SEAM_STATUS_OK;
}

static seam_status check_if(seam_check *c) { return check_bodies(c, "then_branch", "else_branch"); }
static seam_status check_loop(seam_check *c) { return check_bodies(c, "body", NULL); }

static seam_status check_scan(seam_check *c) { return check_bodies(c, "body", NULL); }

/* A value with its own malloc'd copy of the data (a sequence with its
 * elements). */
typedef struct owned {
    seam_tensor t;
} owned;

static bool own_copy(owned *o, const seam_tensor *t) {
    seam_tensor c;
    if (!seam_value_copy(&c, t)) return false;
    seam_value_free(&o->t);
    o->t = c;
    return true;
}

static seam_status run_if(seam_kernel *k) {
    bodies *b = k->state;
    const seam_tensor *c = kernel_in(k, 0);
    if (!c || c->numel != 1 || c->dtype != SEAM_DTYPE_BOOL) return kernel_fail(k, "cond must be one bool");
    int32_t which = ((const uint8_t *)c->data)[0] ? 0 : 1;
    seam_body *e = b->e[which];
    if (b->g[which]->n_outputs != kernel_n_out(k))
        return kernel_fail(k, "the %s branch has %d outputs, the node %d", which ? "else" : "then",
                           b->g[which]->n_outputs, kernel_n_out(k));
    seam_status st = kernel_body_run(e);
    if (st) return st;
    for (int32_t i = 0; i < kernel_n_out(k); i++)
        if ((st = kernel_out_copy(k, i, kernel_body_output(e, i)))) return st;
    return SEAM_STATUS_OK;
}

/* Scan outputs grow one slice per iteration. */
typedef struct stack {
    char *data;
    size_t used, cap;
    seam_tensor first; /* dtype and shape of a slice */
    int64_t count;
} stack;

static bool stack_push(stack *s, const seam_tensor *t) {
    if (seam_is_value(t->dtype)) return false;
    if (s->count == 0) s->first = *t;
    if (t->dtype != s->first.dtype || t->nbytes != s->first.nbytes) return false;
    if (s->used + t->nbytes > s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 4096;
        while (cap < s->used + t->nbytes) cap *= 2;
        char *d = realloc(s->data, cap);
        if (!d) return false;
        s->data = d;
        s->cap = cap;
    }
    if (t->nbytes) memcpy(s->data + s->used, t->data, t->nbytes);
    s->used += t->nbytes;
    s->count++;
    return true;
}

static seam_status run_loop(seam_kernel *k) {
    bodies *b = k->state;
    seam_body *e = b->e[0];
    const ir_graph *g = b->g[0];
    const seam_tensor *tm = kernel_in(k, 0), *tc = kernel_in(k, 1);
    int32_t n_carried = kernel_n_in(k) - 2, n_scan = g->n_outputs - 1 - n_carried;
    if (n_carried < 0 || g->n_inputs != 2 + n_carried || n_scan < 0 || kernel_n_out(k) != n_carried + n_scan)
        return kernel_fail(k, "the body's inputs and outputs do not match the node's");
    if ((tm && seam_is_value(tm->dtype)) || (tc && seam_is_value(tc->dtype)))
        return kernel_fail(k, "the trip count and the condition must be tensors");
    int64_t max_trip = tm && tm->numel == 1 ? cpu_get_i64(tm->data, tm->dtype, 0) : INT64_MAX;
    bool cond = tc && tc->numel == 1 ? ((const uint8_t *)tc->data)[0] != 0 : true;
    owned *carried = calloc((size_t)n_carried + 1, sizeof(owned));
    stack *scans = calloc((size_t)n_scan + 1, sizeof(stack));
    seam_status st = SEAM_STATUS_OK;
    if (!carried || !scans) {
        st = kernel_oom(k);
        goto done;
    }
    for (int32_t i = 0; i < n_carried; i++) {
        const seam_tensor *v = kernel_in(k, 2 + i);
        if (!v) {
            st = kernel_fail(k, "loop-carried input %d is missing", i);
            goto done;
        }
        if (!own_copy(&carried[i], v)) {
            st = kernel_oom(k);
            goto done;
        }
    }
    int64_t iter = 0;
    uint8_t cond_in = cond;
    for (; iter < max_trip && cond; iter++) {
        seam_tensor it = {.dtype = SEAM_DTYPE_INT64, .rank = 0, .numel = 1, .data = &iter, .nbytes = 8};
        seam_tensor ct = {.dtype = SEAM_DTYPE_BOOL, .rank = 0, .numel = 1, .data = &cond_in, .nbytes = 1};
        kernel_body_set_input(e, 0, &it);
        kernel_body_set_input(e, 1, &ct);
        for (int32_t i = 0; i < n_carried; i++) kernel_body_set_input(e, 2 + i, &carried[i].t);
        if ((st = kernel_body_run(e))) goto done;
        const seam_tensor *co = kernel_body_output(e, 0);
        if (co->numel != 1 || seam_is_value(co->dtype)) {
            st = kernel_fail(k, "the body's condition output must be one bool");
            goto done;
        }
        cond = cpu_get_i64(co->data, co->dtype, 0) != 0;
        cond_in = cond;
        for (int32_t i = 0; i < n_carried; i++)
            if (!own_copy(&carried[i], kernel_body_output(e, 1 + i))) {
                st = kernel_oom(k);
                goto done;
            }
        for (int32_t i = 0; i < n_scan; i++) {
            const seam_tensor *y = kernel_body_output(e, 1 + n_carried + i);
            if (seam_is_value(y->dtype)) {
                st = kernel_fail(k, "scan output %d is not a tensor (sequences cannot be stacked)", i);
                goto done;
            }
            if (!stack_push(&scans[i], y)) {
                st = kernel_fail(k, "scan output %d changes shape across iterations (or out of memory)", i);
                goto done;
            }
        }
    }
    for (int32_t i = 0; i < n_carried; i++)
        if ((st = kernel_out_copy(k, i, &carried[i].t))) goto done;
    for (int32_t i = 0; i < n_scan; i++) {
        if (!kernel_has_out(k, n_carried + i)) continue;
        const ir_value *bv = &g->values[g->outputs[1 + n_carried + i]];
        seam_tensor first = scans[i].first;
        if (scans[i].count == 0) { /* no iteration: an empty stack of the body's declared type */
            first.dtype = bv->type.elem ? bv->type.elem : SEAM_DTYPE_FLOAT32;
            first.rank = bv->type.rank > 0 && bv->type.rank < SEAM_MAX_RANK ? bv->type.rank : 0;
            for (int32_t d = 0; d < first.rank; d++) first.dims[d] = bv->type.dims[d].v > 0 ? bv->type.dims[d].v : 0;
        }
        if (first.rank + 1 > SEAM_MAX_RANK) {
            st = kernel_fail(k, "scan output rank too large");
            goto done;
        }
        int64_t dims[SEAM_MAX_RANK];
        dims[0] = scans[i].count;
        for (int32_t d = 0; d < first.rank; d++) dims[d + 1] = first.dims[d];
        seam_tensor *y = kernel_out(k, n_carried + i, first.dtype, first.rank + 1, dims);
        if (!y) {
            st = kernel_oom(k);
            goto done;
        }
        if (scans[i].used) memcpy(y->data, scans[i].data, scans[i].used);
    }
done:
    for (int32_t i = 0; carried && i < n_carried; i++) seam_value_free(&carried[i].t);
    for (int32_t i = 0; scans && i < n_scan; i++) free(scans[i].data);
    free(carried);
    free(scans);
    return st;
}

/* A new tensor: slice `index` of x along its first axis (x's dims from
 * `from` on; with from = 2, x is [B, seq, ...] and index b * seq + t). */
static bool take_slice(owned *o, const seam_tensor *x, int32_t from, int64_t index) {
    seam_tensor s = {.dtype = x->dtype, .rank = x->rank - from};
    for (int32_t d = from; d < x->rank; d++) s.dims[d - from] = x->dims[d];
    s.numel = seam_shape_numel(s.dims, s.rank);
    s.nbytes = (size_t)s.numel * seam_dtype_size((seam_dtype)x->dtype);
    s.data = (char *)x->data + (size_t)index * s.nbytes;
    return own_copy(o, &s);
}

/* Scan (opset 8): optional sequence_lens, N states [B, ...], then M scan
 * inputs [B, seq, ...] (reversed where directions says 1); each batch
 * entry scans on its own. Outputs: the final states [B, ...] and the scan
 * outputs [B, seq, ...]. Every batch entry must scan the whole sequence
 * (sequence_lens absent or all seq). */
static seam_status run_scan8(seam_kernel *k) {
    bodies *b = k->state;
    seam_body *e = b->e[0];
    const ir_graph *g = b->g[0];
    int64_t m64 = node_attr_int(k->n, "num_scan_inputs", 0);
    int32_t n_in = kernel_n_in(k);
    int32_t m = m64 > 0 && m64 < n_in ? (int32_t)m64 : 0, n_states = n_in - 1 - m, n_scan_out = g->n_outputs - n_states;
    if (m <= 0 || m > 64 || n_states < 0 || n_scan_out < 0 || g->n_inputs != n_states + m || kernel_n_out(k) != g->n_outputs)
        return kernel_fail(k, "the body's inputs and outputs do not match the node's");
    const int64_t *dirs = NULL;
    int32_t nd = node_attr_ints(k->n, "directions", &dirs);
    if (nd >= 0 && nd != m) return kernel_fail(k, "directions has the wrong length");
    int64_t batch = -1, seq = -1;
    for (int32_t i = 1; i < n_in; i++) {
        const seam_tensor *x = kernel_in(k, i);
        bool scan = i > n_states;
        if (!x || seam_is_value(x->dtype) || x->dtype == SEAM_DTYPE_STRING || x->rank < (scan ? 2 : 1))
            return kernel_fail(k, "input %d must be a numeric tensor with a batch axis%s", i, scan ? " and a sequence axis" : "");
        if (batch >= 0 && x->dims[0] != batch) return kernel_fail(k, "the inputs disagree on the batch size");
        batch = x->dims[0];
        if (scan && seq >= 0 && x->dims[1] != seq) return kernel_fail(k, "the scan inputs disagree on the sequence length");
        if (scan) seq = x->dims[1];
    }
    if (batch <= 0 || seq <= 0) return kernel_fail(k, "an empty batch or sequence is not supported");
    const seam_tensor *lens = kernel_in(k, 0);
    if (lens) {
        if (seam_is_value(lens->dtype) || !cpu_is_int(lens->dtype) || lens->numel != batch)
            return kernel_fail(k, "sequence_lens must hold one integer per batch entry");
        for (int64_t i = 0; i < batch; i++)
            if (cpu_get_i64(lens->data, lens->dtype, i) != seq)
                return kernel_fail(k, "sequence_lens shorter than the sequence (%lld) is not supported", (long long)seq);
    }
    owned *states = calloc((size_t)n_states + 1, sizeof(owned));
    owned *slices = calloc((size_t)m + 1, sizeof(owned));
    stack *outs = calloc((size_t)g->n_outputs + 1, sizeof(stack));
    seam_status st = SEAM_STATUS_OK;
    if (!states || !slices || !outs) {
        st = kernel_oom(k);
        goto done;
    }
    for (int64_t bi = 0; bi < batch; bi++) {
        for (int32_t i = 0; i < n_states; i++)
            if (!take_slice(&states[i], kernel_in(k, 1 + i), 1, bi)) {
                st = kernel_oom(k);
                goto done;
            }
        for (int64_t t = 0; t < seq; t++) {
            for (int32_t j = 0; j < m; j++) {
                int64_t pos = nd >= 0 && dirs[j] ? seq - 1 - t : t;
                if (!take_slice(&slices[j], kernel_in(k, 1 + n_states + j), 2, bi * seq + pos)) {
                    st = kernel_oom(k);
                    goto done;
                }
            }
            for (int32_t i = 0; i < n_states; i++) kernel_body_set_input(e, i, &states[i].t);
            for (int32_t j = 0; j < m; j++) kernel_body_set_input(e, n_states + j, &slices[j].t);
            if ((st = kernel_body_run(e))) goto done;
            for (int32_t i = 0; i < n_states; i++)
                if (!own_copy(&states[i], kernel_body_output(e, i))) {
                    st = kernel_oom(k);
                    goto done;
                }
            for (int32_t i = 0; i < n_scan_out; i++)
                if (!stack_push(&outs[n_states + i], kernel_body_output(e, n_states + i))) {
                    st = kernel_fail(k, "scan output %d changes shape across iterations (or out of memory)", i);
                    goto done;
                }
        }
        for (int32_t i = 0; i < n_states; i++)
            if (!stack_push(&outs[i], &states[i].t)) {
                st = kernel_fail(k, "state %d changes shape across batch entries (or out of memory)", i);
                goto done;
            }
    }
    for (int32_t o = 0; o < g->n_outputs; o++) {
        if (!kernel_has_out(k, o)) continue;
        const seam_tensor *f = &outs[o].first;
        int32_t lead = o < n_states ? 1 : 2;
        if (f->rank + lead > SEAM_MAX_RANK) {
            st = kernel_fail(k, "output %d: rank too large", o);
            goto done;
        }
        int64_t dims[SEAM_MAX_RANK] = {batch, seq};
        for (int32_t d = 0; d < f->rank; d++) dims[lead + d] = f->dims[d];
        seam_tensor *y = kernel_out(k, o, f->dtype, f->rank + lead, dims);
        if (!y) {
            st = kernel_oom(k);
            goto done;
        }
        if (outs[o].used) memcpy(y->data, outs[o].data, outs[o].used);
    }
done:
    for (int32_t i = 0; states && i < n_states; i++) seam_value_free(&states[i].t);
    for (int32_t j = 0; slices && j < m; j++) seam_value_free(&slices[j].t);
    for (int32_t i = 0; outs && i < g->n_outputs; i++) free(outs[i].data);
    free(states);
    free(slices);
    free(outs);
    return st;
}

/* Scan (opset 9+): N states, then M scan inputs sliced along their scan
 * axes (reversed where scan_input_directions says 1); K scan outputs are
 * stacked along scan_output_axes. */
static seam_status run_scan(seam_kernel *k) {
    if (k->n->opset < 9) return run_scan8(k);
    bodies *b = k->state;
    seam_body *e = b->e[0];
    const ir_graph *g = b->g[0];
    int64_t m64 = node_attr_int(k->n, "num_scan_inputs", 0);
    int32_t n_in = kernel_n_in(k);
    int32_t m = m64 > 0 && m64 <= n_in ? (int32_t)m64 : 0, n_states = n_in - m, n_scan_out = g->n_outputs - n_states;
    if (m <= 0 || n_states < 0 || n_scan_out < 0 || g->n_inputs != n_in || kernel_n_out(k) != g->n_outputs)
        return kernel_fail(k, "the body's inputs and outputs do not match the node's");
    const int64_t *in_axes = NULL, *in_dirs = NULL, *out_axes = NULL, *out_dirs = NULL;
    int32_t nia = node_attr_ints(k->n, "scan_input_axes", &in_axes), nid = node_attr_ints(k->n, "scan_input_directions", &in_dirs);
    int32_t noa = node_attr_ints(k->n, "scan_output_axes", &out_axes), nod = node_attr_ints(k->n, "scan_output_directions", &out_dirs);
    if ((nia >= 0 && nia != m) || (nid >= 0 && nid != m) || (noa >= 0 && noa != n_scan_out) || (nod >= 0 && nod != n_scan_out))
        return kernel_fail(k, "scan axes/directions have the wrong length");
    int64_t seq = -1;
    int32_t axis_of[64];
    if (m > 64) return kernel_fail(k, "too many scan inputs");
    for (int32_t j = 0; j < m; j++) {
        const seam_tensor *x = kernel_in(k, n_states + j);
        if (!x) return kernel_fail(k, "scan input %d is missing", j);
        axis_of[j] = op_axis(nia >= 0 ? in_axes[j] : 0, x->rank);
        if (axis_of[j] < 0) return kernel_fail(k, "scan input %d: axis out of range", j);
        if (seq >= 0 && x->dims[axis_of[j]] != seq) return kernel_fail(k, "scan inputs disagree on the sequence length");
        seq = x->dims[axis_of[j]];
    }
    owned *states = calloc((size_t)n_states + 1, sizeof(owned));
    owned *slices = calloc((size_t)m + 1, sizeof(owned));
    stack *outs = calloc((size_t)n_scan_out + 1, sizeof(stack));
    seam_status st = SEAM_STATUS_OK;
    if (!states || !slices || !outs) {
        st = kernel_oom(k);
        goto done;
    }
    for (int32_t i = 0; i < n_states; i++)
        if (!own_copy(&states[i], kernel_in(k, i))) {
            st = kernel_oom(k);
            goto done;
        }
    for (int64_t t = 0; t < seq; t++) {
        for (int32_t j = 0; j < m; j++) {
            const seam_tensor *x = kernel_in(k, n_states + j);
            int32_t a = axis_of[j];
            int64_t pos = nid >= 0 && in_dirs[j] ? seq - 1 - t : t;
            seam_tensor s = {.dtype = x->dtype, .rank = x->rank - 1};
            for (int32_t d = 0, r = 0; d < x->rank; d++)
                if (d != a) s.dims[r++] = x->dims[d];
            s.numel = seam_shape_numel(s.dims, s.rank);
            size_t es = seam_dtype_size(x->dtype);
            s.nbytes = (size_t)s.numel * es;
            void *buf = malloc(s.nbytes ? s.nbytes : 1);
            if (!buf) {
                st = kernel_oom(k);
                goto done;
            }
            int64_t outer = cpu_span(x->dims, 0, a), inner = cpu_span(x->dims, a + 1, x->rank);
            for (int64_t o = 0; o < outer; o++)
                memcpy((char *)buf + (size_t)(o * inner) * es,
                       (const char *)x->data + (size_t)((o * seq + pos) * inner) * es, (size_t)inner * es);
            free(slices[j].t.data);
            s.data = buf;
            slices[j].t = s;
        }
        for (int32_t i = 0; i < n_states; i++) kernel_body_set_input(e, i, &states[i].t);
        for (int32_t j = 0; j < m; j++) kernel_body_set_input(e, n_states + j, &slices[j].t);
        if ((st = kernel_body_run(e))) goto done;
        for (int32_t i = 0; i < n_states; i++)
            if (!own_copy(&states[i], kernel_body_output(e, i))) {
                st = kernel_oom(k);
                goto done;
            }
        for (int32_t i = 0; i < n_scan_out; i++)
            if (!stack_push(&outs[i], kernel_body_output(e, n_states + i))) {
                st = kernel_fail(k, "scan output %d changes shape across iterations (or out of memory)", i);
                goto done;
            }
    }
    for (int32_t i = 0; i < n_states; i++)
        if ((st = kernel_out_copy(k, i, &states[i].t))) goto done;
    for (int32_t i = 0; i < n_scan_out; i++) {
        if (!kernel_has_out(k, n_states + i)) continue;
        seam_tensor f = outs[i].first;
        if (outs[i].count == 0) f.rank = 0, f.dtype = SEAM_DTYPE_FLOAT32;
        int32_t r = f.rank + 1;
        int32_t a = op_axis(noa >= 0 ? out_axes[i] : 0, r);
        bool rev = nod >= 0 && out_dirs[i];
        if (a < 0 || r > SEAM_MAX_RANK) {
            st = kernel_fail(k, "scan output %d: axis out of range", i);
            goto done;
        }
        int64_t dims[SEAM_MAX_RANK];
        for (int32_t d = 0, q = 0; d < r; d++) dims[d] = d == a ? outs[i].count : f.dims[q++];
        seam_tensor *y = kernel_out(k, n_states + i, f.dtype, r, dims);
        if (!y) {
            st = kernel_oom(k);
            goto done;
        }
        size_t es = seam_dtype_size(f.dtype);
        int64_t outer = cpu_span(dims, 0, a), inner = cpu_span(dims, a + 1, r), cnt = outs[i].count;
        for (int64_t t = 0; t < cnt; t++) {
            int64_t pos = rev ? cnt - 1 - t : t;
            const char *slice = outs[i].data + (size_t)t * f.nbytes;
            for (int64_t o = 0; o < outer; o++)
                memcpy((char *)y->data + (size_t)((o * cnt + pos) * inner) * es, slice + (size_t)(o * inner) * es,
                       (size_t)inner * es);
        }
    }
done:
    for (int32_t i = 0; states && i < n_states; i++) seam_value_free(&states[i].t);
    for (int32_t j = 0; slices && j < m; j++) free(slices[j].t.data);
    for (int32_t i = 0; outs && i < n_scan_out; i++) free(outs[i].data);
    free(states);
    free(slices);
    free(outs);
    return st;
}

/* SequenceMap: the body once per position of the sequence inputs (all of
 * one length); each output gathers the body's output of every run. */
static seam_status run_sequence_map(seam_kernel *k) {
    bodies *b = k->state;
    seam_body *e = b->e[0];
    const ir_graph *g = b->g[0];
    int32_t n_in = kernel_n_in(k), n_out = kernel_n_out(k);
    if (g->n_inputs != n_in || g->n_outputs != n_out || n_in < 1)
        return kernel_fail(k, "the body's inputs and outputs do not match the node's");
    int64_t len = -1;
    for (int32_t i = 0; i < n_in; i++) {
        const seam_tensor *x = kernel_in(k, i);
        if (!x || x->dtype == SEAM_VALUE_NONE || (i == 0 && x->dtype != SEAM_VALUE_SEQUENCE))
            return kernel_fail(k, "input %d must be %s", i, i == 0 ? "a sequence" : "a sequence or a tensor");
        if (x->dtype != SEAM_VALUE_SEQUENCE) continue;
        if (len >= 0 && x->numel != len) return kernel_fail(k, "the sequence inputs differ in length");
        len = x->numel;
    }
    seam_tensor *outs = calloc((size_t)n_out + 1, sizeof(seam_tensor));
    if (!outs) return kernel_oom(k);
    seam_status st = SEAM_STATUS_OK;
    for (int32_t j = 0; j < n_out; j++) {
        outs[j] = (seam_tensor){.dtype = SEAM_VALUE_SEQUENCE, .numel = len, .nbytes = (size_t)len * sizeof(seam_tensor)};
        outs[j].elem = g->values[g->outputs[j]].type.elem;
        if (!(outs[j].data = calloc((size_t)len + 1, sizeof(seam_tensor)))) {
            st = kernel_oom(k);
            goto done;
        }
    }
    for (int64_t p = 0; p < len; p++) {
        for (int32_t i = 0; i < n_in; i++) {
            const seam_tensor *x = kernel_in(k, i);
            kernel_body_set_input(e, i, x->dtype == SEAM_VALUE_SEQUENCE ? &((const seam_tensor *)x->data)[p] : x);
        }
        if ((st = kernel_body_run(e))) goto done;
        for (int32_t j = 0; j < n_out; j++) {
            const seam_tensor *y = kernel_body_output(e, j);
            if (seam_is_value(y->dtype)) {
                st = kernel_fail(k, "the body's output %d must be a tensor", j);
                goto done;
            }
            if (!seam_value_copy(&((seam_tensor *)outs[j].data)[p], y)) {
                st = kernel_oom(k);
                goto done;
            }
            outs[j].elem = y->dtype;
        }
    }
    for (int32_t j = 0; j < n_out; j++) {
        st = kernel_out_value(k, j, &outs[j]);
        outs[j].data = NULL; /* the executor's now */
        if (st) goto done;
    }
done:
    for (int32_t j = 0; j < n_out; j++) seam_value_free(&outs[j]);
    free(outs);
    return st;
}

const seam_cpu_binding seam_cpu_control[] = {
    {"", "If", 1, {run_if, check_if}},
    {"", "Loop", 1, {run_loop, check_loop}},
    {"", "Scan", 8, {run_scan, check_scan}},
    {"", "SequenceMap", 17, {run_sequence_map, check_loop}},
};
const size_t seam_cpu_control_count = sizeof(seam_cpu_control) / sizeof(seam_cpu_control[0]);
