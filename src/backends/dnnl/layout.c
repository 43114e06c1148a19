/*
 * dnnl: slots, views and layouts. Every value the program touches is a
 * slot (see program.h); this file makes them, views them in other
 * shapes and strides, moves them between layouts with reorders, and turns
 * primitive descriptors into the program's steps.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/arena.h"
#include "builder.h"

dnnl_format_tag_t dx_plain_tag(int32_t rank) {
    static const dnnl_format_tag_t tags[] = {dnnl_a, dnnl_a, dnnl_ab, dnnl_abc, dnnl_abcd, dnnl_abcde, dnnl_abcdef};
    return rank >= 0 && rank <= MAXR ? tags[rank] : dnnl_format_tag_undef;
}

int32_t dx_slot_of(program *p, const char *name) {
    for (int32_t k = 0; k < p->n_slots; k++)
        if (!strcmp(p->slots[k].name, name)) return k;
    return -1;
}

int32_t dx_add_slot(program *p, const char *name, const seam_value_info *v) {
    if (p->n_slots == p->cap_slots) {
        int32_t cap = p->cap_slots ? p->cap_slots * 2 : 64;
        slot *s = realloc(p->slots, sizeof(slot) * (size_t)cap);
        if (!s) return -1;
        p->slots = s;
        p->cap_slots = cap;
    }
    slot *s = &p->slots[p->n_slots];
    memset(s, 0, sizeof(*s));
    s->name = name;
    s->alias = -1;
    s->plain = -1;
    s->other = -1;
    s->scale = 1.0f;
    s->rank = v ? v->rank : 0;
    for (int32_t d = 0; v && d < v->rank; d++) s->dims[d] = v->dims[d];
    return p->n_slots++;
}

/* A slot reading base's bytes (found at run time) with the shape of
 * `shape`, in the plain layout or in md: a view, no copy. */
int32_t dx_view_slot(program *p, int32_t base, const slot *shape, const dnnl_memory_desc_t *md) {
    int32_t a = dx_add_slot(p, "(view)", NULL);
    if (a < 0) return -1;
    slot *v = &p->slots[a];
    v->rank = shape->rank;
    memcpy(v->dims, shape->dims, sizeof(v->dims));
    v->alias = base;
    dnnl_memory_desc_t m, bm;
    /* a shape dnnl cannot describe (a dim < 0) leaves m unset: refused,
     * never read (it was a SIGSEGV in dnnl_memory_create, by chance) */
    if (!dx_md_of(v, &m)) {
        p->view_error = true;
        return -1;
    }
    if (md && !dnnl_memory_desc_equal(&m, md)) v->has_md = true, v->md = *md, m = *md;
    /* a view never reaches past the bytes it views (a file whose shapes do
     * not agree is refused here, not read out of bounds at run time) */
    if (!dx_md_of(&p->slots[base], &bm) || dnnl_memory_desc_get_size(&m) > dnnl_memory_desc_get_size(&bm)) {
        p->view_error = true;
        return -1;
    }
    return dnnl_memory_create(&v->mem, &m, dx_ctx.engine, DNNL_MEMORY_NONE) == dnnl_success ? a : -1;
}

bool dx_md_of(const slot *s, dnnl_memory_desc_t *md) {
    if (s->has_md) {
        *md = s->md;
        return true;
    }
    int32_t r = s->rank ? s->rank : 1;
    dnnl_dims_t dims;
    for (int32_t d = 0; d < r; d++) dims[d] = s->rank ? s->dims[d] : 1;
    return dnnl_memory_desc_init_by_tag(md, r, dims, dnnl_f32, dx_plain_tag(r)) == dnnl_success;
}

void *dx_fail(builder *b, const char *what) {
    snprintf(b->err, b->err_size, "node %d '%s' (%s): %s", b->n->index, b->n->name, b->n->op_type, what);
    return NULL;
}

/* The slot of an input value: made earlier, a boundary input, or a weight. */
int32_t dx_input_slot(builder *b, const seam_value_info *v) {
    int32_t s = dx_slot_of(b->p, v->name);
    if (s >= 0) return s;
    seam_tensor_view c;
    if (!seam_subgraph_constant(b->sg, v->name, &c)) return -1;
    if (c.dtype != SEAM_DTYPE_FLOAT32) return -1;
    s = dx_add_slot(b->p, v->name, v);
    if (s < 0) return -1;
    dnnl_memory_desc_t md;
    if (!dx_md_of(&b->p->slots[s], &md) || dnnl_memory_create(&b->p->slots[s].mem, &md, dx_ctx.engine, (void *)c.data) != dnnl_success)
        return -1;
    b->p->slots[s].constant = true;
    return s;
}

int32_t dx_output_slot(builder *b, const seam_value_info *v) {
    int32_t s = dx_slot_of(b->p, v->name);
    if (s >= 0) return s; /* a boundary output made up front */
    s = dx_add_slot(b->p, v->name, v);
    if (s < 0) return -1;
    slot *sl = &b->p->slots[s];
    dnnl_memory_desc_t md;
    if (!dx_md_of(sl, &md)) return -1;
    size_t bytes = dnnl_memory_desc_get_size(&md);
    sl->bytes = bytes ? bytes : 4;
    if (dnnl_memory_create(&sl->mem, &md, dx_ctx.engine, DNNL_MEMORY_NONE) != dnnl_success) return -1;
    return s;
}

static step *new_step(program *p) {
    if (p->n_steps == p->cap_steps) {
        int32_t cap = p->cap_steps ? p->cap_steps * 2 : 64;
        step *st = realloc(p->steps, sizeof(step) * (size_t)cap);
        if (!st) return NULL;
        p->steps = st;
        p->cap_steps = cap;
    }
    return &p->steps[p->n_steps];
}

/* A step from a primitive descriptor (which stays the caller's). */
bool dx_add_prim(builder *b, const_dnnl_primitive_desc_t pd, int32_t n_args, const int32_t *kinds, const int32_t *slots) {
    step *st = new_step(b->p);
    if (!st) return dx_fail(b, "out of memory"), false;
    st->scratch = NULL, st->host = NULL, st->host_data = NULL;
    if (dnnl_primitive_create(&st->prim, pd) != dnnl_success)
        return dx_fail(b, "oneDNN could not create the primitive"), false;
    const dnnl_memory_desc_t *smd = dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
    size_t sbytes = smd ? dnnl_memory_desc_get_size(smd) : 0;
    if (sbytes) {
        if (dnnl_memory_create(&st->scratch, smd, dx_ctx.engine, DNNL_MEMORY_NONE) != dnnl_success) {
            dnnl_primitive_destroy(st->prim);
            return dx_fail(b, "out of memory"), false;
        }
        if (sbytes > b->p->scratch_bytes) b->p->scratch_bytes = sbytes;
    }
    st->n_args = n_args;
    for (int32_t k = 0; k < n_args; k++) st->arg_kind[k] = kinds[k], st->arg_slot[k] = slots[k];
    b->p->n_steps++;
    dx_log_prim(b, pd);
    return true;
}

bool dx_add_host(builder *b, const char *name, dx_host_fn fn, void *data, int32_t n_args, const int32_t *kinds, const int32_t *slots) {
    step *st = new_step(b->p);
    if (!st) return free(data), dx_fail(b, "out of memory"), false;
    memset(st, 0, sizeof(*st));
    st->host = fn, st->host_data = data, st->host_name = name;
    st->n_args = n_args;
    for (int32_t k = 0; k < n_args; k++) st->arg_kind[k] = kinds[k], st->arg_slot[k] = slots[k];
    b->p->n_steps++;
    return true;
}

bool dx_add_step(builder *b, const_dnnl_op_desc_t desc, const_dnnl_primitive_attr_t attr, int32_t n_args,
                 const int32_t *kinds, const int32_t *slots) {
    dnnl_primitive_desc_t pd;
    if (dnnl_primitive_desc_create(&pd, desc, attr ? attr : dx_ctx.user_scratch, dx_ctx.engine, NULL) != dnnl_success)
        return dx_fail(b, "oneDNN has no implementation for these shapes and attributes"), false;
    bool ok = dx_add_prim(b, pd, n_args, kinds, slots);
    dnnl_primitive_desc_destroy(pd);
    return ok;
}

/* A new intermediate slot in layout md (a temporary, named for messages). */
int32_t dx_temp_slot(builder *b, const slot *like, const dnnl_memory_desc_t *md) {
    int32_t t = dx_add_slot(b->p, like->name, NULL); /* a copy of the value: its name, for read_later */
    if (t < 0) return -1;
    slot *sl = &b->p->slots[t];
    sl->rank = like->rank;
    memcpy(sl->dims, like->dims, sizeof(sl->dims));
    sl->has_md = true;
    sl->md = *md;
    size_t bytes = dnnl_memory_desc_get_size(md);
    sl->bytes = bytes ? bytes : 4;
    if (dnnl_memory_create(&sl->mem, md, dx_ctx.engine, DNNL_MEMORY_NONE) != dnnl_success) return -1;
    return t;
}

bool dx_add_reorder(builder *b, int32_t from, int32_t to) {
    dnnl_memory_desc_t a, c;
    dx_md_of(&b->p->slots[from], &a);
    dx_md_of(&b->p->slots[to], &c);
    dnnl_primitive_desc_t pd;
    if (dnnl_reorder_primitive_desc_create(&pd, &a, dx_ctx.engine, &c, dx_ctx.engine, dx_ctx.user_scratch) != dnnl_success)
        return dx_fail(b, "oneDNN has no reorder between these layouts"), false;
    int32_t kinds[2] = {DNNL_ARG_FROM, DNNL_ARG_TO}, slots[2] = {from, to};
    bool ok = dx_add_prim(b, pd, 2, kinds, slots);
    dnnl_primitive_desc_destroy(pd);
    return ok;
}

/* Slot s in layout md: s itself, or a reordered copy. */
int32_t dx_in_layout(builder *b, int32_t s, const dnnl_memory_desc_t *md) {
    dnnl_memory_desc_t cur;
    dx_md_of(&b->p->slots[s], &cur);
    if (dnnl_memory_desc_equal(&cur, md)) return s;
    int32_t o = b->p->slots[s].other;
    if (o >= 0 && dnnl_memory_desc_equal(&b->p->slots[o].md, md)) return o; /* made for an earlier reader */
    slot like = b->p->slots[s];
    int32_t t = dx_temp_slot(b, &like, md);
    if (t < 0 || !dx_add_reorder(b, s, t)) return -1;
    if (!b->p->slots[s].has_md) b->p->slots[s].other = t; /* a plain value's blocked copy */
    return t;
}

/* Slot s in the plain ONNX layout (reordered once, then reused). */
int32_t dx_as_plain(builder *b, int32_t s) {
    if (!b->p->slots[s].has_md) return s;
    if (b->p->slots[s].plain >= 0) return b->p->slots[s].plain;
    slot like = b->p->slots[s];
    like.has_md = false;
    dnnl_memory_desc_t md;
    dx_md_of(&like, &md);
    int32_t t = dx_temp_slot(b, &like, &md);
    if (t < 0) return -1;
    b->p->slots[t].has_md = false;
    if (!dx_add_reorder(b, s, t)) return -1;
    b->p->slots[s].plain = t;
    return t;
}

/* Where a step writing value v in layout md puts it: a new slot in md; or,
 * for a boundary output (always plain), a temporary whose reorder into the
 * boundary slot the caller adds after the step (*final_out >= 0). */
int32_t dx_result_slot(builder *b, const seam_value_info *v, const dnnl_memory_desc_t *md, int32_t *final_out) {
    *final_out = -1;
    int32_t s = dx_slot_of(b->p, v->name);
    if (s >= 0) { /* a boundary output */
        dnnl_memory_desc_t plain;
        dx_md_of(&b->p->slots[s], &plain);
        if (dnnl_memory_desc_equal(&plain, md)) return s;
        slot like = b->p->slots[s];
        *final_out = s;
        int32_t t = dx_temp_slot(b, &like, md);
        /* readers in this subgraph that want md take t: the value crosses
         * the boundary with one reorder, not one out and one back */
        if (t >= 0 && b->p->slots[t].has_md) b->p->slots[s].other = t;
        return t;
    }
    s = dx_add_slot(b->p, v->name, v);
    if (s < 0) return -1;
    slot *sl = &b->p->slots[s];
    dnnl_memory_desc_t plain;
    dx_md_of(sl, &plain);
    sl->has_md = !dnnl_memory_desc_equal(&plain, md);
    sl->md = *md;
    size_t bytes = dnnl_memory_desc_get_size(md);
    sl->bytes = bytes ? bytes : 4;
    if (dnnl_memory_create(&sl->mem, md, dx_ctx.engine, DNNL_MEMORY_NONE) != dnnl_success) return -1;
    return s;
}

/* A step whose dst layout the primitive chose (the layout of its input,
 * for pools and batch norm): SRC and DST, plus extra arguments. The pd is
 * consumed. */
bool dx_layout_step_with(builder *b, dnnl_primitive_desc_t pd, int32_t sin, const seam_value_info *out, int32_t n_extra,
                         const int32_t *extra_kinds, const int32_t *extra_slots) {
    const dnnl_memory_desc_t *dst = dnnl_primitive_desc_query_md(pd, dnnl_query_dst_md, 0);
    int32_t final_slot = -1;
    int32_t sd = dx_result_slot(b, out, dst, &final_slot);
    if (sd < 0) {
        dnnl_primitive_desc_destroy(pd);
        return dx_fail(b, "out of memory"), false;
    }
    int32_t kinds[8] = {DNNL_ARG_SRC, DNNL_ARG_DST}, slots[8] = {sin, sd};
    for (int32_t k = 0; k < n_extra; k++) kinds[2 + k] = extra_kinds[k], slots[2 + k] = extra_slots[k];
    bool ok = dx_add_prim(b, pd, 2 + n_extra, kinds, slots);
    dnnl_primitive_desc_destroy(pd);
    if (ok && final_slot >= 0) ok = dx_add_reorder(b, sd, final_slot);
    return ok;
}

bool dx_layout_step(builder *b, dnnl_primitive_desc_t pd, int32_t sin, const seam_value_info *out) {
    return dx_layout_step_with(b, pd, sin, out, 0, NULL, NULL);
}

/* Weights in layout md, reordered once now into a resident buffer. */
int32_t dx_resident_copy(builder *b, int32_t from, const dnnl_memory_desc_t *md) {
    slot like = b->p->slots[from];
    int32_t t = dx_temp_slot(b, &like, md);
    if (t < 0) return -1;
    slot *ts = &b->p->slots[t]; /* resident: its own buffer, out of the arena */
    ts->owned = seam_alloc_resident(ts->bytes);
    ts->bytes = 0;
    if (!ts->owned || dnnl_memory_set_data_handle(ts->mem, ts->owned) != dnnl_success) return -1;
    dnnl_primitive_desc_t rpd;
    dnnl_memory_desc_t src;
    dx_md_of(&b->p->slots[from], &src);
    if (dnnl_reorder_primitive_desc_create(&rpd, &src, dx_ctx.engine, md, dx_ctx.engine, NULL) != dnnl_success)
        return -1;
    dnnl_primitive_t rp;
    bool ok = dnnl_primitive_create(&rp, rpd) == dnnl_success;
    dnnl_primitive_desc_destroy(rpd);
    if (!ok) return -1;
    /* a view of a weight (grouped weights): point it at the weight's bytes */
    const slot *base = &b->p->slots[from];
    while (base->alias >= 0) base = &b->p->slots[base->alias];
    void *h = NULL;
    dnnl_memory_get_data_handle(base->mem, &h);
    if (base != &b->p->slots[from]) dnnl_memory_set_data_handle(b->p->slots[from].mem, h);
    dnnl_exec_arg_t args[2] = {{DNNL_ARG_FROM, b->p->slots[from].mem}, {DNNL_ARG_TO, b->p->slots[t].mem}};
    ok = dnnl_primitive_execute(rp, b->p->stream, 2, args) == dnnl_success;
    dnnl_stream_wait(b->p->stream);
    dnnl_primitive_destroy(rp);
    return ok ? t : -1;
}

int32_t dx_root_of(const program *p, int32_t s) {
    while (p->slots[s].alias >= 0) s = p->slots[s].alias;
    return s;
}

/* Integers of a constant input (int64 or int32), at most max; -1 when
 * the input is not a constant of those types. */
int32_t dx_const_ints(builder *b, const seam_value_info *v, int64_t *out, int32_t max) {
    seam_tensor_view c;
    if (!v->name || !seam_subgraph_constant(b->sg, v->name, &c)) return -1;
    size_t esz = c.dtype == SEAM_DTYPE_INT64 ? 8 : c.dtype == SEAM_DTYPE_INT32 ? 4 : 0;
    if (!esz || c.nbytes / esz > (size_t)max) return -1;
    int32_t n = (int32_t)(c.nbytes / esz);
    for (int32_t k = 0; k < n; k++) {
        if (esz == 8) memcpy(&out[k], (const char *)c.data + 8 * k, 8);
        else {
            int32_t x;
            memcpy(&x, (const char *)c.data + 4 * k, 4);
            out[k] = x;
        }
    }
    return n;
}

int64_t dx_slot_numel(const slot *s) {
    int64_t n = 1;
    for (int32_t d = 0; d < s->rank; d++) n *= s->dims[d];
    return n;
}

void dx_plain_strides(const slot *s, int64_t *st) {
    int64_t acc = 1;
    for (int32_t d = s->rank - 1; d >= 0; d--) st[d] = acc, acc *= s->dims[d];
}

/* The dims and element strides of a slot in a plain or strided layout. */
void dx_dense_strides(const slot *s, int64_t *st) {
    if (s->has_md && s->md.format_kind == dnnl_blocked && s->md.format_desc.blocking.inner_nblks == 0) {
        for (int32_t d = 0; d < s->rank; d++) st[d] = s->md.format_desc.blocking.strides[d];
        return;
    }
    dx_plain_strides(s, st);
}

/* The strided layout of `in`'s bytes seen with shape `out`, when one exists
 * (numpy's no-copy reshape: each run of merged dims must be contiguous
 * within itself). */
bool dx_reshape_view(const slot *in, const slot *out, dnnl_memory_desc_t *md) {
    int64_t ist[MAXR], od[MAXR], os[MAXR], id[MAXR], is[MAXR];
    dx_dense_strides(in, ist);
    int32_t ni = 0, no = out->rank;
    for (int32_t d = 0; d < in->rank; d++) /* 1-sized dims carry no stride */
        if (in->dims[d] != 1) id[ni] = in->dims[d], is[ni++] = ist[d];
    for (int32_t d = 0; d < no; d++) od[d] = out->dims[d], os[d] = 1;
    if (dx_slot_numel(in) != dx_slot_numel(out) || dx_slot_numel(in) == 0) return false;
    int32_t oi = 0, oj = 1, ki = 0, kj = 1;
    while (ki < no && oi < ni) {
        int64_t np = od[ki], op = id[oi];
        while (np != op) {
            if (np < op) {
                if (kj >= no) return false;
                np *= od[kj++];
            } else {
                if (oj >= ni) return false;
                op *= id[oj++];
            }
        }
        for (int32_t k = oi; k < oj - 1; k++)
            if (is[k] != id[k + 1] * is[k + 1]) return false;
        os[kj - 1] = is[oj - 1];
        for (int32_t k = kj - 1; k > ki; k--) os[k - 1] = os[k] * od[k];
        ki = kj++, oi = oj++;
    }
    for (int32_t d = ki; d < no; d++) os[d] = 1; /* trailing 1-sized dims */
    dnnl_dims_t dims, strides;
    int32_t r = no ? no : 1;
    for (int32_t d = 0; d < r; d++) dims[d] = no ? od[d] : 1, strides[d] = no ? os[d] : 1;
    return dnnl_memory_desc_init_by_strides(md, r, dims, dnnl_f32, strides) == dnnl_success;
}

void dx_shape_of(slot *shape, const seam_value_info *v) {
    memset(shape, 0, sizeof(*shape));
    shape->rank = v->rank;
    for (int32_t d = 0; d < v->rank; d++) shape->dims[d] = v->dims[d];
}

/* The slot of a value known by name only: made earlier, or a constant
 * (with the constant's own shape). */
int32_t dx_named_slot(builder *b, const char *name) {
    int32_t s = dx_slot_of(b->p, name);
    if (s >= 0) return s;
    seam_tensor_view c;
    if (!seam_subgraph_constant(b->sg, name, &c) || c.rank > MAXR) return -1;
    seam_value_info vi = {name, c.dtype, c.rank, c.dims, NULL};
    return dx_input_slot(b, &vi);
}

bool dx_is_strided(const slot *s) {
    return s->has_md && s->md.data_type == dnnl_f32 && s->md.format_kind == dnnl_blocked &&
           s->md.format_desc.blocking.inner_nblks == 0 && !s->pad_pending;
}

bool dx_dense_md_in_order(const slot *s, const int32_t *order, dnnl_memory_desc_t *md) {
    int32_t r = s->rank;
    dnnl_dims_t dims, strides;
    int64_t acc = 1;
    for (int32_t i = r - 1; i >= 0; i--) {
        int32_t d = order[i];
        dims[d] = s->dims[d], strides[d] = acc;
        acc *= s->dims[d] > 0 ? s->dims[d] : 1;
    }
    return r >= 1 && dnnl_memory_desc_init_by_strides(md, r, dims, dnnl_f32, strides) == dnnl_success;
}

int32_t dx_as_dense(builder *b, int32_t s) {
    const slot *sl = &b->p->slots[s];
    if (!sl->lazy || !dx_is_strided(sl)) return s;
    if (sl->other >= 0) return sl->other;
    int32_t r = sl->rank, order[MAXR];
    int64_t st[MAXR];
    dx_dense_strides(sl, st);
    for (int32_t d = 0; d < r; d++) order[d] = d;
    for (int32_t i = 1; i < r; i++) /* outermost first: larger strides, then the dims' order */
        for (int32_t j = i; j > 0 && st[order[j]] > st[order[j - 1]]; j--) {
            int32_t t = order[j];
            order[j] = order[j - 1], order[j - 1] = t;
        }
    bool plain = true;
    for (int32_t d = 0; d < r; d++) plain &= order[d] == d;
    if (plain || r < 1) return dx_as_plain(b, s);
    dnnl_memory_desc_t md;
    if (!dx_dense_md_in_order(sl, order, &md)) return -1;
    slot like = *sl;
    int32_t t = dx_temp_slot(b, &like, &md);
    if (t < 0 || !dx_add_reorder(b, s, t)) return -1;
    b->p->slots[s].other = t;
    return t;
}

bool dx_is_channels_last(const slot *s) {
    if (!dx_is_strided(s) || s->rank < 3 || s->rank > MAXR) return false;
    dnnl_dims_t dims, strides;
    int64_t acc = 1;
    strides[1] = acc, acc *= s->dims[1];
    for (int32_t d = s->rank - 1; d >= 2; d--) strides[d] = acc, acc *= s->dims[d];
    strides[0] = acc;
    for (int32_t d = 0; d < s->rank; d++) dims[d] = s->dims[d];
    dnnl_memory_desc_t md;
    return dnnl_memory_desc_init_by_strides(&md, s->rank, dims, dnnl_f32, strides) == dnnl_success &&
           dnnl_memory_desc_equal(&md, &s->md);
}

bool dx_inner_md(const slot *s, const bool *inner, dnnl_memory_desc_t *md) {
    int32_t order[MAXR], n = 0, r = s->rank;
    for (int32_t d = 0; d < r; d++)
        if (!inner[d]) order[n++] = d;
    for (int32_t d = 0; d < r; d++)
        if (inner[d]) order[n++] = d;
    return dx_dense_md_in_order(s, order, md);
}

bool dx_refuse(char *why, size_t n, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, n, fmt, ap);
    va_end(ap);
    return false;
}

/* ---- who reads each value ---- */

static int cmp_reader(const void *a, const void *b) {
    const reader *x = a, *y = b;
    int c = strcmp(x->name, y->name);
    return c ? c : (x->node > y->node) - (x->node < y->node);
}

bool dx_readers_build(const seam_subgraph_view *sg, readers_index *ix) {
    int64_t cap = sg->n_outputs;
    for (int32_t i = 0; i < sg->n_nodes; i++) {
        seam_node_view st;
        cap += seam_subgraph_node(sg, i, &st)->n_inputs;
    }
    ix->n = 0;
    ix->r = malloc(sizeof(reader) * (size_t)(cap + 1));
    if (!ix->r) return false;
    for (int32_t k = 0; k < sg->n_outputs; k++) ix->r[ix->n++] = (reader){sg->outputs[k].name, -1};
    for (int32_t i = 0; i < sg->n_nodes; i++) {
        seam_node_view st;
        const seam_node_view *m = seam_subgraph_node(sg, i, &st);
        for (int32_t k = 0; k < m->n_inputs; k++)
            if (m->inputs[k].name) ix->r[ix->n++] = (reader){m->inputs[k].name, i};
    }
    qsort(ix->r, (size_t)ix->n, sizeof(reader), cmp_reader);
    return true;
}

/* The entries for value name (node -1 first, then ascending, a node once
 * per input that reads it). */
const reader *dx_readers_range(const readers_index *ix, const char *name, int32_t *count) {
    int32_t lo = 0, hi = ix->n;
    while (lo < hi) {
        int32_t mid = lo + (hi - lo) / 2;
        if (strcmp(ix->r[mid].name, name) < 0) lo = mid + 1;
        else hi = mid;
    }
    int32_t e = lo;
    while (e < ix->n && !strcmp(ix->r[e].name, name)) e++;
    *count = e - lo;
    return ix->r + lo;
}

/* The nodes that read value `name` (each once, at most max, ascending),
 * or -1 when it leaves the subgraph or has more readers. */
int32_t dx_readers(const builder *b, const char *name, int32_t *out, int32_t max) {
    int32_t n, cnt = 0;
    const reader *r = dx_readers_range(b->readers, name, &n);
    for (int32_t k = 0; k < n; k++) {
        if (r[k].node < 0) return -1;
        if (cnt && out[cnt - 1] == r[k].node) continue;
        if (cnt == max) return -1;
        out[cnt++] = r[k].node;
    }
    return cnt;
}

/* Index of the node (in the subgraph) that alone reads value name, or -1;
 * also -1 when the value leaves the subgraph. */
int32_t dx_sole_reader(const builder *b, const char *name) {
    int32_t r;
    return dx_readers(b, name, &r, 1) == 1 ? r : -1;
}
