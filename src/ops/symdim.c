/*
 * Symbolic dims as expressions through inference, and DimExpr
 * (symdim.h). The expressions themselves are symexpr.c's.
 *
 * The pass runs beside the ops' inference on the top graph, in its order:
 * after each node's own inference (which copies dims and their names
 * through elementwise ops, MatMul, Transpose, ...), sym_node gives the
 * node's outputs what only expressions can say: the elements of small
 * integer values (the shape arithmetic torch exports for symbolic dims)
 * and the dims of ops whose sizes are computed (Reshape, Expand, Range,
 * Concat, Slice, Pad, Flatten, Conv and pools, Resize). A dim's expression
 * travels as its printed form in ir_dim.sym, which the state maps back to
 * the expression (names).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/context.h"
#include "ir/ir.h"
#include "ops/attr.h"
#include "ops/infer.h"
#include "ops/ops.h"
#include "ops/symdim.h"
#include "ops/symexpr.h"

#define SV_MAX 16

/* A small integer value's elements (rank 0 or 1). */
typedef struct sv {
    int32_t n, rank;
    bool known[SV_MAX];
    sx e[SV_MAX];
} sv;

typedef struct sym_name {
    const char *s;
    sx e;
} sym_name;

struct sym_state {
    struct seam_model *m;
    ir_graph *g;
    sx_atoms atoms;
    sym_name *names; /* printed form -> expression; open addressing */
    int32_t n_names, cap_names;
    sv **val;        /* per value of g: its elements, or NULL */
    int32_t cap_val;
};

static uint32_t hash_str(const char *s) {
    uint32_t h = 2166136261u;
    while (*s) h = (h ^ (uint8_t)*s++) * 16777619u;
    return h;
}

static sym_name *name_find(sym_state *s, const char *str) {
    if (!s->cap_names) return NULL;
    for (uint32_t k = hash_str(str) & (uint32_t)(s->cap_names - 1);; k = (k + 1) & (uint32_t)(s->cap_names - 1)) {
        if (!s->names[k].s) return NULL;
        if (!strcmp(s->names[k].s, str)) return &s->names[k];
    }
}

static bool name_add(sym_state *s, const char *str, const sx *e) {
    if (2 * (s->n_names + 1) > s->cap_names) {
        int32_t cap = s->cap_names ? 2 * s->cap_names : 64;
        sym_name *nw = seam_arena_calloc(&s->m->arena, (size_t)cap, sizeof(sym_name));
        if (!nw) return false;
        for (int32_t k = 0; k < s->cap_names; k++) {
            if (!s->names[k].s) continue;
            uint32_t j = hash_str(s->names[k].s) & (uint32_t)(cap - 1);
            while (nw[j].s) j = (j + 1) & (uint32_t)(cap - 1);
            nw[j] = s->names[k];
        }
        s->names = nw, s->cap_names = cap;
    }
    uint32_t j = hash_str(str) & (uint32_t)(s->cap_names - 1);
    while (s->names[j].s) j = (j + 1) & (uint32_t)(s->cap_names - 1);
    s->names[j].s = str, s->names[j].e = *e;
    s->n_names++;
    return true;
}

/* The printed form of e, one string per expression; NULL when another
 * expression (an input's dim named like it) holds the name. */
static const char *intern(sym_state *s, const sx *e) {
    char buf[400];
    if (!sx_print(&s->atoms, e, buf, sizeof(buf), NULL, NULL, 0)) return NULL;
    sym_name *f = name_find(s, buf);
    if (f) return sx_eq(&f->e, e) ? f->s : NULL;
    const char *str = seam_arena_strdup(&s->m->arena, buf);
    return str && name_add(s, str, e) ? str : NULL;
}

static bool has_symbolic_input(const ir_graph *g) {
    for (int32_t k = 0; k < g->n_inputs; k++) {
        const ir_value *v = &g->values[g->inputs[k]];
        if ((v->flags & IR_VALUE_INIT) || v->type.kind != IR_TYPE_TENSOR) continue;
        for (int32_t d = 0; d < v->type.rank; d++)
            if (v->type.dims[d].v < 0 && v->type.dims[d].sym) return true;
    }
    return false;
}

sym_state *sym_begin(struct seam_model *m, ir_graph *g) {
    if (m->sym && m->sym->m == m) m->sym->g = NULL; /* (what the last inference found is stale now) */
    if (!has_symbolic_input(g)) return NULL;
    sym_state *s = m->sym;
    if (!s || s->m != m) { /* (a model struct copied for a body keeps the pointer: not its state) */
        s = seam_arena_calloc(&m->arena, 1, sizeof(*s));
        if (!s) return NULL;
        s->m = m;
        s->atoms.arena = &m->arena;
        m->sym = s;
    }
    if (s->cap_val < g->n_values) {
        sv **val = seam_arena_calloc(&m->arena, (size_t)g->n_values + 1, sizeof(sv *));
        if (!val) return NULL;
        s->val = val, s->cap_val = g->n_values;
    } else {
        memset(s->val, 0, sizeof(sv *) * (size_t)s->cap_val);
    }
    s->g = g;
    for (int32_t k = 0; k < g->n_inputs; k++) {
        const ir_value *v = &g->values[g->inputs[k]];
        if ((v->flags & IR_VALUE_INIT) || v->type.kind != IR_TYPE_TENSOR) continue;
        for (int32_t d = 0; d < v->type.rank; d++) {
            const char *nm = v->type.dims[d].sym;
            if (v->type.dims[d].v >= 0 || !nm || name_find(s, nm)) continue;
            int32_t a = sx_symbol(&s->atoms, nm, g->inputs[k], d);
            sx e;
            if (a < 0) continue;
            sx_atom_expr(&e, a);
            if (!name_add(s, nm, &e)) return NULL;
        }
    }
    return s;
}

/* ---- reading inputs ---- */

static bool dim_sx(sym_state *s, const ir_type *t, int32_t k, sx *out) {
    if (!t || t->kind != IR_TYPE_TENSOR || k < 0 || k >= t->rank) return false;
    if (t->dims[k].v >= 0) return sx_const(out, t->dims[k].v), true;
    const sym_name *f = t->dims[k].sym ? name_find(s, t->dims[k].sym) : NULL;
    if (f) *out = f->e;
    return f != NULL;
}

static bool dims_sx(sym_state *s, const ir_type *t, sx *d, bool *known) {
    if (!t || t->kind != IR_TYPE_TENSOR || t->rank < 0 || t->rank > INFER_MAX_RANK) return false;
    for (int32_t k = 0; k < t->rank; k++) known[k] = dim_sx(s, t, k, &d[k]);
    return true;
}

static bool small_int(int32_t dt) {
    return dt == SEAM_DTYPE_INT64 || dt == SEAM_DTYPE_INT32 || dt == SEAM_DTYPE_BOOL;
}

static bool in_sv(sym_state *s, seam_infer *ic, int32_t i, sv *o) {
    if (!infer_has_input(ic, i)) return false;
    int32_t v = ic->n->inputs[i];
    if (v < s->cap_val && s->val[v]) return *o = *s->val[v], true;
    const ir_tensor *t = ic->g->values[v].konst;
    if (!t || t->rank > 1 || t->numel > SV_MAX || !small_int(t->dtype)) return false;
    o->n = (int32_t)t->numel, o->rank = t->rank;
    for (int32_t k = 0; k < o->n; k++) {
        int64_t x;
        if (t->dtype == SEAM_DTYPE_INT64) memcpy(&x, (const char *)t->data + 8 * k, 8);
        else if (t->dtype == SEAM_DTYPE_INT32) x = ((const int32_t *)t->data)[k];
        else x = ((const uint8_t *)t->data)[k] != 0;
        o->known[k] = true;
        sx_const(&o->e[k], x);
    }
    return true;
}

/* A known constant element of an input, or false. */
static bool in_const(sym_state *s, seam_infer *ic, int32_t i, int32_t k, int64_t *x) {
    sv a;
    return in_sv(s, ic, i, &a) && k < a.n && a.known[k] && sx_is_const(&a.e[k], x);
}

/* ---- writing outputs ---- */

static void set_sv(sym_state *s, seam_infer *ic, int32_t i, const sv *o) {
    if (!infer_has_output(ic, i) || o->n > SV_MAX || o->rank > 1 || (o->rank == 0 && o->n != 1)) return;
    int32_t v = ic->n->outputs[i];
    ir_value *val = &ic->g->values[v];
    int32_t dt = val->type.elem;
    if (v >= s->cap_val || !small_int(dt) || val->konst) return;
    if (val->type.kind == IR_TYPE_TENSOR && val->type.rank >= 0 && val->type.rank != o->rank) return;
    int64_t c[SV_MAX];
    bool all = true, any = false;
    for (int32_t k = 0; k < o->n; k++) {
        all &= o->known[k] && sx_is_const(&o->e[k], &c[k]);
        any |= o->known[k];
    }
    if (all) {
        int64_t dims[1] = {o->n};
        int32_t w[SV_MAX];
        uint8_t b[SV_MAX];
        for (int32_t k = 0; k < o->n; k++) w[k] = (int32_t)c[k], b[k] = c[k] != 0;
        const void *data = dt == SEAM_DTYPE_INT64 ? (const void *)c : dt == SEAM_DTYPE_INT32 ? (const void *)w : b;
        infer_set_const(ic, i, dt, o->rank, dims, data);
        return;
    }
    if (!any) return;
    sv *p = seam_arena_alloc(&s->m->arena, sizeof(sv));
    if (p) *p = *o, s->val[v] = p;
}

/* Gives output i the dims d where known (declared and inferred dims stay). */
static void set_dims(sym_state *s, seam_infer *ic, int32_t i, int32_t rank, const sx *d, const bool *known) {
    if (!infer_has_output(ic, i) || rank < 0 || rank > INFER_MAX_RANK) return;
    const ir_type *t = &ic->g->values[ic->n->outputs[i]].type;
    if (t->kind != IR_TYPE_TENSOR || (t->rank >= 0 && t->rank != rank)) return;
    ir_dim dims[INFER_MAX_RANK];
    bool any = false;
    for (int32_t k = 0; k < rank; k++) {
        dims[k] = IR_DIM_UNKNOWN;
        if (t->rank == rank && (t->dims[k].v >= 0 || t->dims[k].sym)) {
            dims[k] = t->dims[k];
            continue;
        }
        int64_t c;
        if (!known[k]) continue;
        if (sx_is_const(&d[k], &c)) dims[k].v = c >= 0 && c <= IR_MAX_DIM ? c : -1;
        else dims[k].sym = intern(s, &d[k]);
        any |= dims[k].v >= 0 || dims[k].sym;
    }
    if (any) infer_set_tensor(ic, i, t->elem, rank, dims);
}

/* ---- the elements of small integer values ---- */

static bool sv_unary(sym_state *s, seam_infer *ic, const char *op, sv *o) {
    if (!in_sv(s, ic, 0, o)) return false;
    const ir_type *t = &ic->g->values[ic->n->outputs[0]].type;
    int32_t rank = t->kind == IR_TYPE_TENSOR ? t->rank : -1;
    if (!strcmp(op, "Cast")) {
        int64_t to = node_attr_int(ic->n, "to", 0);
        if (to != SEAM_DTYPE_INT64 && to != SEAM_DTYPE_INT32) return false;
    } else if (!strcmp(op, "Neg")) {
        for (int32_t k = 0; k < o->n; k++) {
            sx z;
            sx_const(&z, 0);
            o->known[k] = o->known[k] && sx_sub(&z, &o->e[k], &o->e[k]);
        }
    } else if (!strcmp(op, "Abs")) {
        for (int32_t k = 0; k < o->n; k++) o->known[k] = o->known[k] && sx_nonneg(&s->atoms, &o->e[k]);
    }
    if (rank == 0 || rank == 1) o->rank = rank;
    return rank <= 1 && (rank != 0 || o->n == 1);
}

static bool sv_shape(sym_state *s, seam_infer *ic, sv *o) {
    const ir_type *t = infer_in(ic, 0);
    if (!t || t->kind != IR_TYPE_TENSOR || t->rank < 0) return false;
    int64_t r = t->rank, start = node_attr_int(ic->n, "start", 0), end = node_attr_int(ic->n, "end", r);
    if (start < 0) start += r;
    if (end < 0) end += r;
    start = start < 0 ? 0 : start > r ? r : start;
    end = end < 0 ? 0 : end > r ? r : end;
    o->rank = 1, o->n = end > start ? (int32_t)(end - start) : 0;
    if (o->n > SV_MAX) return false;
    for (int32_t k = 0; k < o->n; k++) o->known[k] = dim_sx(s, t, (int32_t)start + k, &o->e[k]);
    return true;
}

static bool sv_size(sym_state *s, seam_infer *ic, sv *o) {
    sx d[INFER_MAX_RANK];
    bool known[INFER_MAX_RANK];
    const ir_type *t = infer_in(ic, 0);
    if (!dims_sx(s, t, d, known)) return false;
    o->n = 1, o->rank = 0, o->known[0] = true;
    sx_const(&o->e[0], 1);
    for (int32_t k = 0; k < t->rank && o->known[0]; k++) o->known[0] = known[k] && sx_mul(&o->e[0], &d[k], &o->e[0]);
    return o->known[0];
}

static bool sv_gather(sym_state *s, seam_infer *ic, sv *o) {
    sv d, ix;
    if (node_attr_int(ic->n, "axis", 0) != 0 || !in_sv(s, ic, 0, &d) || d.rank != 1) return false;
    int32_t v = ic->n->inputs[1];
    if (!ic->g->values[v].konst || !in_sv(s, ic, 1, &ix)) return false; /* constant indices only */
    o->n = ix.n, o->rank = ix.rank;
    for (int32_t k = 0; k < ix.n; k++) {
        int64_t j;
        sx_is_const(&ix.e[k], &j);
        if (j < 0) j += d.n;
        if (j < 0 || j >= d.n) return false;
        o->known[k] = d.known[j];
        o->e[k] = d.e[j];
    }
    return true;
}

static bool sv_concat(sym_state *s, seam_infer *ic, sv *o) {
    o->n = 0, o->rank = 1;
    for (int32_t i = 0; i < infer_n_inputs(ic); i++) {
        sv a;
        if (!in_sv(s, ic, i, &a) || a.rank != 1 || o->n + a.n > SV_MAX) return false;
        for (int32_t k = 0; k < a.n; k++) o->known[o->n] = a.known[k], o->e[o->n++] = a.e[k];
    }
    return true;
}

static bool sv_slice(sym_state *s, seam_infer *ic, sv *o) {
    sv d;
    int64_t start, end, axis = 0, step = 1;
    if (!in_sv(s, ic, 0, &d) || d.rank != 1 || !in_const(s, ic, 1, 0, &start) || !in_const(s, ic, 2, 0, &end))
        return false;
    if (infer_has_input(ic, 3) && !in_const(s, ic, 3, 0, &axis)) return false;
    if (infer_has_input(ic, 4) && !in_const(s, ic, 4, 0, &step)) return false;
    if ((axis != 0 && axis != -1) || step == 0) return false;
    int64_t n = d.n;
    if (start < 0) start += n;
    if (end < 0) end += n;
    if (step > 0) {
        start = start < 0 ? 0 : start > n ? n : start;
        end = end < 0 ? 0 : end > n ? n : end;
    } else {
        start = start < 0 ? -1 : start > n - 1 ? n - 1 : start;
        end = end < -1 ? -1 : end > n - 1 ? n - 1 : end;
    }
    o->n = 0, o->rank = 1;
    for (int64_t j = start; step > 0 ? j < end : j > end; j += step) o->known[o->n] = d.known[j], o->e[o->n++] = d.e[j];
    return true;
}

enum { B_ADD, B_SUB, B_MUL, B_DIV, B_MOD, B_MIN, B_MAX, B_EQ, B_LT, B_GT, B_LE, B_GE, B_NONE };

static int32_t binary_kind(const char *op) {
    static const char *const names[] = {"Add", "Sub", "Mul", "Div", "Mod", "Min", "Max",
                                        "Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual"};
    for (int32_t k = 0; k < B_NONE; k++)
        if (!strcmp(op, names[k])) return k;
    return B_NONE;
}

/* a < b (lt) or a <= b: 1 or 0 when the difference's sign is known, else -1 */
static int32_t compare(sym_state *s, const sx *a, const sx *b, bool strict) {
    sx d;
    int64_t c;
    if (!sx_sub(b, a, &d)) return -1;
    if (sx_is_const(&d, &c)) return strict ? c > 0 : c >= 0;
    if (sx_nonneg(&s->atoms, &d) && !strict) return 1; /* b - a >= 0 */
    sx z, nd;
    sx_const(&z, 0);
    if (sx_sub(&z, &d, &nd) && sx_nonneg(&s->atoms, &nd) && strict) return 0; /* a - b >= 0 */
    return -1;
}

static bool binary_elem(sym_state *s, int32_t kind, const sx *a, const sx *b, sx *e) {
    int32_t r = -1;
    switch (kind) {
    case B_ADD: return sx_add(a, b, e);
    case B_SUB: return sx_sub(a, b, e);
    case B_MUL: return sx_mul(a, b, e);
    case B_DIV: return sx_div(&s->atoms, a, b, e);
    case B_MOD: return sx_mod(&s->atoms, a, b, e);
    case B_MIN: return sx_min(&s->atoms, a, b, e);
    case B_MAX: return sx_max(&s->atoms, a, b, e);
    case B_EQ: {
        sx d;
        int64_t c;
        if (sx_sub(a, b, &d) && sx_is_const(&d, &c)) r = c == 0;
        else if ((sx_nonneg(&s->atoms, a) && sx_is_const(b, &c) && c < 0) ||
                 (sx_nonneg(&s->atoms, b) && sx_is_const(a, &c) && c < 0))
            r = 0;
        break;
    }
    case B_LT: r = compare(s, a, b, true); break;
    case B_GT: r = compare(s, b, a, true); break;
    case B_LE: r = compare(s, a, b, false); break;
    case B_GE: r = compare(s, b, a, false); break;
    default: return false;
    }
    if (r < 0) return false;
    sx_const(e, r);
    return true;
}

static bool sv_binary(sym_state *s, seam_infer *ic, int32_t kind, sv *o) {
    sv a, b;
    if (!in_sv(s, ic, 0, &a) || !in_sv(s, ic, 1, &b)) return false;
    if (kind == B_MOD && node_attr_int(ic->n, "fmod", 0) != 0) return false;
    if (a.n != b.n && a.n != 1 && b.n != 1) return false;
    o->n = a.n > b.n ? a.n : b.n;
    o->rank = a.rank > b.rank ? a.rank : b.rank;
    for (int32_t k = 0; k < o->n; k++) {
        int32_t i = a.n == 1 ? 0 : k, j = b.n == 1 ? 0 : k;
        o->known[k] = a.known[i] && b.known[j] && binary_elem(s, kind, &a.e[i], &b.e[j], &o->e[k]);
    }
    return true;
}

static bool sv_where(sym_state *s, seam_infer *ic, sv *o) {
    sv c, a, b;
    if (!in_sv(s, ic, 0, &c) || !in_sv(s, ic, 1, &a) || !in_sv(s, ic, 2, &b)) return false;
    int32_t n = c.n > a.n ? c.n : a.n;
    n = n > b.n ? n : b.n;
    if ((c.n != n && c.n != 1) || (a.n != n && a.n != 1) || (b.n != n && b.n != 1)) return false;
    o->n = n;
    o->rank = c.rank > a.rank ? c.rank : a.rank;
    o->rank = o->rank > b.rank ? o->rank : b.rank;
    for (int32_t k = 0; k < n; k++) {
        int64_t t;
        const sv *pick;
        int32_t ck = c.n == 1 ? 0 : k;
        if (!c.known[ck] || !sx_is_const(&c.e[ck], &t)) {
            o->known[k] = false;
            continue;
        }
        pick = t ? &a : &b;
        int32_t j = pick->n == 1 ? 0 : k;
        o->known[k] = pick->known[j];
        o->e[k] = pick->e[j];
    }
    return true;
}

static bool sv_range(sym_state *s, seam_infer *ic, sv *o) {
    sv a, l;
    int64_t delta, n;
    sx d;
    if (!in_sv(s, ic, 0, &a) || !in_sv(s, ic, 1, &l) || !in_const(s, ic, 2, 0, &delta) || delta == 0) return false;
    if (!a.known[0] || !l.known[0] || !sx_sub(&l.e[0], &a.e[0], &d) || !sx_is_const(&d, &n)) return false;
    n = n <= 0 ? 0 : (n + (delta > 0 ? delta - 1 : delta + 1)) / delta;
    if (n < 0 || n > SV_MAX) return false;
    o->n = (int32_t)n, o->rank = 1;
    for (int32_t k = 0; k < o->n; k++) {
        sx step;
        sx_const(&step, delta * k);
        o->known[k] = sx_add(&a.e[0], &step, &o->e[k]);
    }
    return true;
}

static bool sv_reduce(sym_state *s, seam_infer *ic, bool prod, sv *o) {
    sv a;
    if (!in_sv(s, ic, 0, &a) || a.rank != 1 || infer_n_inputs(ic) > 1) return false;
    o->rank = node_attr_int(ic->n, "keepdims", 1) ? 1 : 0, o->n = 1, o->known[0] = true;
    sx_const(&o->e[0], prod ? 1 : 0);
    for (int32_t k = 0; k < a.n && o->known[0]; k++)
        o->known[0] = a.known[k] && (prod ? sx_mul(&o->e[0], &a.e[k], &o->e[0]) : sx_add(&o->e[0], &a.e[k], &o->e[0]));
    return true;
}

static void values_of(sym_state *s, seam_infer *ic, const char *op) {
    sv o;
    memset(&o, 0, sizeof(o));
    bool ok = false;
    int32_t b = binary_kind(op);
    if (b != B_NONE) ok = sv_binary(s, ic, b, &o);
    else if (!strcmp(op, "Shape")) ok = sv_shape(s, ic, &o);
    else if (!strcmp(op, "Size")) ok = sv_size(s, ic, &o);
    else if (!strcmp(op, "Gather")) ok = sv_gather(s, ic, &o);
    else if (!strcmp(op, "Concat")) ok = sv_concat(s, ic, &o);
    else if (!strcmp(op, "Slice")) ok = sv_slice(s, ic, &o);
    else if (!strcmp(op, "Where")) ok = sv_where(s, ic, &o);
    else if (!strcmp(op, "Range")) ok = sv_range(s, ic, &o);
    else if (!strcmp(op, "ReduceProd") || !strcmp(op, "ReduceSum")) ok = sv_reduce(s, ic, op[6] == 'P', &o);
    else if (!strcmp(op, "Identity") || !strcmp(op, "Cast") || !strcmp(op, "Unsqueeze") ||
             !strcmp(op, "Squeeze") || !strcmp(op, "Reshape") || !strcmp(op, "Flatten") || !strcmp(op, "Neg") ||
             !strcmp(op, "Abs"))
        ok = sv_unary(s, ic, op, &o);
    if (ok) set_sv(s, ic, 0, &o);
}

/* ---- the dims of ops whose sizes are computed ---- */

static void dims_reshape(sym_state *s, seam_infer *ic) {
    sv shp;
    sx xd[INFER_MAX_RANK], d[INFER_MAX_RANK];
    bool xk[INFER_MAX_RANK], known[INFER_MAX_RANK];
    const ir_type *x = infer_in(ic, 0);
    if (!in_sv(s, ic, 1, &shp) || shp.rank != 1 || shp.n > INFER_MAX_RANK) return;
    bool have_x = dims_sx(s, x, xd, xk), allowzero = node_attr_int(ic->n, "allowzero", 0) != 0;
    int32_t neg = -1;
    for (int32_t j = 0; j < shp.n; j++) {
        int64_t c;
        known[j] = shp.known[j];
        d[j] = shp.e[j];
        if (!known[j] || !sx_is_const(&shp.e[j], &c)) continue;
        if (c == 0 && !allowzero) known[j] = have_x && j < x->rank && xk[j], d[j] = known[j] ? xd[j] : d[j];
        else if (c == -1) neg = j, known[j] = false;
        else if (c < 0) return;
    }
    if (neg >= 0 && have_x) { /* the inferred dim: all of x's elements over the others */
        sx num, den;
        bool ok = true;
        sx_const(&num, 1), sx_const(&den, 1);
        for (int32_t k = 0; k < x->rank && ok; k++) ok = xk[k] && sx_mul(&num, &xd[k], &num);
        for (int32_t j = 0; j < shp.n && ok; j++) ok = j == neg || (known[j] && sx_mul(&den, &d[j], &den));
        known[neg] = ok && sx_div(&s->atoms, &num, &den, &d[neg]);
    }
    set_dims(s, ic, 0, shp.n, d, known);
}

static void dims_expand(sym_state *s, seam_infer *ic) {
    sv shp;
    sx xd[INFER_MAX_RANK], d[INFER_MAX_RANK];
    bool xk[INFER_MAX_RANK], known[INFER_MAX_RANK];
    const ir_type *x = infer_in(ic, 0);
    if (!in_sv(s, ic, 1, &shp) || shp.rank != 1 || !dims_sx(s, x, xd, xk)) return;
    int32_t rank = x->rank > shp.n ? x->rank : shp.n;
    if (rank > INFER_MAX_RANK) return;
    sx one;
    sx_const(&one, 1);
    for (int32_t k = 0; k < rank; k++) {
        int32_t i = k - (rank - x->rank), j = k - (rank - shp.n);
        const sx *a = i >= 0 ? (xk[i] ? &xd[i] : NULL) : &one, *b = j >= 0 ? (shp.known[j] ? &shp.e[j] : NULL) : &one;
        int64_t ca = -1, cb = -1;
        if (a) sx_is_const(a, &ca);
        if (b) sx_is_const(b, &cb);
        const sx *r = NULL;
        if (b && cb == 1) r = a;
        else if (a && ca == 1) r = b;
        else if (a && b && sx_eq(a, b)) r = a;
        else if (b && cb > 1) r = b;
        else if (a && ca > 1) r = a;
        known[k] = r != NULL;
        if (r) d[k] = *r;
    }
    set_dims(s, ic, 0, rank, d, known);
}

static void dims_from_sv(sym_state *s, seam_infer *ic, int32_t input) {
    sv shp;
    if (in_sv(s, ic, input, &shp) && shp.rank == 1 && shp.n <= INFER_MAX_RANK) set_dims(s, ic, 0, shp.n, shp.e, shp.known);
}

static void dims_range(sym_state *s, seam_infer *ic) {
    sv a, l;
    int64_t delta;
    sx d, t;
    if (!in_sv(s, ic, 0, &a) || !in_sv(s, ic, 1, &l) || !in_const(s, ic, 2, 0, &delta) || delta <= 0) return;
    if (!a.known[0] || !l.known[0] || !sx_sub(&l.e[0], &a.e[0], &d)) return;
    sx_const(&t, delta - 1);
    bool known = sx_add(&d, &t, &d) && (sx_const(&t, delta), sx_div(&s->atoms, &d, &t, &d));
    sx_const(&t, 0);
    known = known && sx_max(&s->atoms, &d, &t, &d);
    set_dims(s, ic, 0, 1, &d, &known);
}

static void dims_concat(sym_state *s, seam_infer *ic) {
    const ir_type *t0 = infer_in(ic, 0);
    sx d[INFER_MAX_RANK], e[INFER_MAX_RANK];
    bool known[INFER_MAX_RANK], k2[INFER_MAX_RANK];
    if (!dims_sx(s, t0, d, known)) return;
    int32_t axis = op_axis(node_attr_int(ic->n, "axis", 0), t0->rank);
    if (axis < 0) return;
    for (int32_t i = 1; i < infer_n_inputs(ic) && known[axis]; i++) {
        const ir_type *t = infer_in(ic, i);
        if (!dims_sx(s, t, e, k2) || t->rank != t0->rank) return;
        known[axis] = k2[axis] && sx_add(&d[axis], &e[axis], &d[axis]);
        for (int32_t k = 0; k < t->rank; k++)
            if (k != axis && !known[k] && k2[k]) known[k] = true, d[k] = e[k];
    }
    set_dims(s, ic, 0, t0->rank, d, known);
}

/* one sliced axis of dim D from start to end, step 1: max(min(end', D) - start', 0) */
static bool slice_len(sym_state *s, const sx *D, const sx *st, const sx *en, sx *out) {
    int64_t c;
    sx z, a, b;
    sx_const(&z, 0);
    if (sx_is_const(st, &c) && c < 0) {
        if (!sx_add(D, st, &a) || !sx_max(&s->atoms, &a, &z, &a)) return false;
    } else if (sx_nonneg(&s->atoms, st)) {
        if (!sx_min(&s->atoms, st, D, &a)) return false;
    } else {
        return false;
    }
    if (sx_is_const(en, &c) && c >= (int64_t)1 << 31) b = *D;
    else if (sx_is_const(en, &c) && c < 0) {
        if (!sx_add(D, en, &b) || !sx_max(&s->atoms, &b, &z, &b)) return false;
    } else if (sx_nonneg(&s->atoms, en)) {
        if (!sx_min(&s->atoms, en, D, &b)) return false;
    } else {
        return false;
    }
    return sx_sub(&b, &a, out) && sx_max(&s->atoms, out, &z, out);
}

static void dims_slice(sym_state *s, seam_infer *ic) {
    const ir_type *x = infer_in(ic, 0);
    sx d[INFER_MAX_RANK];
    bool known[INFER_MAX_RANK];
    sv st, en, ax;
    if (!dims_sx(s, x, d, known) || !in_sv(s, ic, 1, &st) || !in_sv(s, ic, 2, &en) || st.n != en.n) return;
    bool have_axes = infer_has_input(ic, 3);
    if ((have_axes && !in_sv(s, ic, 3, &ax)) || (have_axes && ax.n != st.n)) return;
    for (int32_t j = 0; j < st.n; j++) {
        int64_t a = j, step = 1;
        if (have_axes && (!ax.known[j] || !sx_is_const(&ax.e[j], &a))) return;
        a = op_axis(a, x->rank);
        if (a < 0 || (infer_has_input(ic, 4) && !in_const(s, ic, 4, j, &step))) return;
        known[a] = known[a] && step == 1 && st.known[j] && en.known[j] && slice_len(s, &d[a], &st.e[j], &en.e[j], &d[a]);
    }
    set_dims(s, ic, 0, x->rank, d, known);
}

static void dims_pad(sym_state *s, seam_infer *ic) {
    const ir_type *x = infer_in(ic, 0);
    sx d[INFER_MAX_RANK];
    bool known[INFER_MAX_RANK];
    sv pads;
    const int64_t *ap;
    if (!dims_sx(s, x, d, known) || infer_has_input(ic, 3)) return;
    if (infer_has_input(ic, 1)) {
        if (!in_sv(s, ic, 1, &pads)) return;
    } else {
        pads.n = node_attr_ints(ic->n, "pads", &ap);
        for (int32_t k = 0; k < pads.n && k < SV_MAX; k++) pads.known[k] = true, sx_const(&pads.e[k], ap[k]);
    }
    if (pads.n != 2 * x->rank) return;
    for (int32_t k = 0; k < x->rank; k++)
        known[k] = known[k] && pads.known[k] && pads.known[k + x->rank] && sx_add(&d[k], &pads.e[k], &d[k]) &&
                   sx_add(&d[k], &pads.e[k + x->rank], &d[k]);
    set_dims(s, ic, 0, x->rank, d, known);
}

static void dims_tile(sym_state *s, seam_infer *ic) {
    const ir_type *x = infer_in(ic, 0);
    sx d[INFER_MAX_RANK];
    bool known[INFER_MAX_RANK];
    sv rep;
    if (!dims_sx(s, x, d, known) || !in_sv(s, ic, 1, &rep) || rep.n != x->rank) return;
    for (int32_t k = 0; k < x->rank; k++) known[k] = known[k] && rep.known[k] && sx_mul(&d[k], &rep.e[k], &d[k]);
    set_dims(s, ic, 0, x->rank, d, known);
}

static void dims_flatten(sym_state *s, seam_infer *ic) {
    const ir_type *x = infer_in(ic, 0);
    sx xd[INFER_MAX_RANK], d[2];
    bool xk[INFER_MAX_RANK], known[2] = {true, true};
    if (!dims_sx(s, x, xd, xk)) return;
    int64_t axis = node_attr_int(ic->n, "axis", 1);
    if (axis < 0) axis += x->rank;
    if (axis < 0 || axis > x->rank) return;
    sx_const(&d[0], 1), sx_const(&d[1], 1);
    for (int32_t k = 0; k < x->rank; k++) {
        int32_t o = k >= axis;
        known[o] = known[o] && xk[k] && sx_mul(&d[o], &xd[k], &d[o]);
    }
    set_dims(s, ic, 0, 2, d, known);
}

/* Conv, MaxPool, AveragePool, LpPool: the window arithmetic, floor mode. */
static void dims_window(sym_state *s, seam_infer *ic, bool conv) {
    const ir_type *x = infer_in(ic, 0), *w = conv ? infer_in(ic, 1) : NULL;
    sx d[INFER_MAX_RANK];
    bool known[INFER_MAX_RANK];
    if (!dims_sx(s, x, d, known) || x->rank < 3 || node_attr_int(ic->n, "ceil_mode", 0)) return;
    int32_t nsp = x->rank - 2;
    int64_t ks[INFER_MAX_RANK];
    const int64_t *kk, *st, *dl, *pd;
    int32_t nk = node_attr_ints(ic->n, "kernel_shape", &kk);
    for (int32_t k = 0; k < nsp; k++) {
        if (nk == nsp) ks[k] = kk[k];
        else if (conv && w && w->kind == IR_TYPE_TENSOR && w->rank == x->rank && w->dims[2 + k].v > 0) ks[k] = w->dims[2 + k].v;
        else return;
    }
    int32_t ns = node_attr_ints(ic->n, "strides", &st), nd = node_attr_ints(ic->n, "dilations", &dl);
    int32_t np = node_attr_ints(ic->n, "pads", &pd);
    const char *ap = node_attr_string(ic->n, "auto_pad", "NOTSET");
    bool same = !strncmp(ap, "SAME", 4), valid = !strcmp(ap, "VALID");
    if (!same && !valid && strcmp(ap, "NOTSET")) return;
    for (int32_t k = 0; k < nsp; k++) {
        int64_t sk = ns == nsp ? st[k] : 1, dk = nd == nsp ? dl[k] : 1, eff = (ks[k] - 1) * dk + 1;
        int64_t pads = same || valid || np != 2 * nsp ? 0 : pd[k] + pd[k + nsp];
        if (sk <= 0) return;
        sx a, c;
        sx *D = &d[2 + k];
        bool ok = known[2 + k];
        if (same) ok = ok && (sx_const(&c, sk - 1), sx_add(D, &c, &a)) && (sx_const(&c, sk), sx_div(&s->atoms, &a, &c, D));
        else ok = ok && (sx_const(&c, pads - eff), sx_add(D, &c, &a)) && (sx_const(&c, sk), sx_div(&s->atoms, &a, &c, &a)) &&
                  (sx_const(&c, 1), sx_add(&a, &c, D));
        known[2 + k] = ok;
    }
    known[0] = known[1] = false; /* (the op's own inference has N and C) */
    set_dims(s, ic, 0, x->rank, d, known);
}

/* Resize and Upsample: sizes given as a value, or integer scales. */
static void dims_resize(sym_state *s, seam_infer *ic, bool upsample) {
    const ir_type *x = infer_in(ic, 0);
    sx d[INFER_MAX_RANK];
    bool known[INFER_MAX_RANK];
    if (!upsample && infer_has_input(ic, 3)) return dims_from_sv(s, ic, 3);
    const ir_tensor *sc = infer_in_const(ic, upsample ? 1 : 2);
    if (!dims_sx(s, x, d, known) || !sc || sc->dtype != SEAM_DTYPE_FLOAT32 || sc->numel != x->rank ||
        node_attr(ic->n, "axes"))
        return;
    for (int32_t k = 0; k < x->rank; k++) {
        float f;
        memcpy(&f, (const char *)sc->data + 4 * k, 4);
        sx m;
        known[k] = known[k] && f >= 1 && f <= 64 && f == (float)(int64_t)f &&
                   (sx_const(&m, (int64_t)f), sx_mul(&d[k], &m, &d[k]));
    }
    set_dims(s, ic, 0, x->rank, d, known);
}

/* One broadcast dim of a and b that a valid run has: 1 and x give x, equal
 * dims themselves, a constant above 1 itself; and x with min(x, c): x (the
 * run is valid only where min(x, c) is x, or 1 where x is 1). */
static bool bcast_dim(sym_state *s, const sx *a, const sx *b, sx *out) {
    int64_t ca = -1, cb = -1;
    sx_is_const(a, &ca), sx_is_const(b, &cb);
    if (cb == 1 || sx_eq(a, b) || ca > 1) return *out = *a, true;
    if (ca == 1 || cb > 1) return *out = *b, true;
    for (int32_t side = 0; side < 2; side++) {
        const sx *x = side ? b : a, *m = side ? a : b;
        if (m->n != 1 || m->t[0].c != 1 || m->t[0].n != 1) continue;
        const sx_atom *at = &s->atoms.v[m->t[0].a[0]];
        if (at->kind == SX_MIN && (sx_eq(&at->a, x) || sx_eq(&at->b, x))) return *out = *x, true;
    }
    return false;
}

/* Elementwise ops with numpy broadcasting: each output dim from the
 * inputs' where the ops' own inference could not tell it. */
static void dims_broadcast(sym_state *s, seam_infer *ic) {
    sx d[INFER_MAX_RANK], e[INFER_MAX_RANK];
    bool known[INFER_MAX_RANK], k2[INFER_MAX_RANK];
    int32_t rank = 0, n = infer_n_inputs(ic);
    for (int32_t i = 0; i < n; i++) {
        const ir_type *t = infer_in(ic, i);
        if (!t || t->kind != IR_TYPE_TENSOR || t->rank < 0 || t->rank > INFER_MAX_RANK) return;
        rank = t->rank > rank ? t->rank : rank;
    }
    for (int32_t k = 0; k < rank; k++) known[k] = true, sx_const(&d[k], 1);
    for (int32_t i = 0; i < n; i++) {
        const ir_type *t = infer_in(ic, i);
        dims_sx(s, t, e, k2);
        for (int32_t k = 0; k < t->rank; k++) {
            int32_t o = k + rank - t->rank;
            known[o] = known[o] && k2[k] && bcast_dim(s, &d[o], &e[k], &d[o]);
        }
    }
    set_dims(s, ic, 0, rank, d, known);
}

static bool broadcasting(const char *op) {
    static const char *const ops[] = {"Add", "Sub", "Mul", "Div", "Pow", "Mod", "Min", "Max", "Sum", "Mean", "Where",
                                      "Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual", "And", "Or",
                                      "Xor", "BitShift", "PRelu", "BitwiseAnd", "BitwiseOr", "BitwiseXor"};
    for (size_t k = 0; k < sizeof(ops) / sizeof(ops[0]); k++)
        if (!strcmp(op, ops[k])) return true;
    return false;
}

static void dims_of(sym_state *s, seam_infer *ic, const char *op) {
    if (broadcasting(op)) return dims_broadcast(s, ic);
    if (!strcmp(op, "Reshape")) dims_reshape(s, ic);
    else if (!strcmp(op, "Expand")) dims_expand(s, ic);
    else if (!strcmp(op, "ConstantOfShape")) dims_from_sv(s, ic, 0);
    else if (!strcmp(op, "Range")) dims_range(s, ic);
    else if (!strcmp(op, "Concat")) dims_concat(s, ic);
    else if (!strcmp(op, "Slice")) dims_slice(s, ic);
    else if (!strcmp(op, "Pad")) dims_pad(s, ic);
    else if (!strcmp(op, "Tile")) dims_tile(s, ic);
    else if (!strcmp(op, "Flatten")) dims_flatten(s, ic);
    else if (!strcmp(op, "Conv")) dims_window(s, ic, true);
    else if (!strcmp(op, "MaxPool") || !strcmp(op, "AveragePool") || !strcmp(op, "LpPool")) dims_window(s, ic, false);
    else if (!strcmp(op, "Resize")) dims_resize(s, ic, false);
    else if (!strcmp(op, "Upsample")) dims_resize(s, ic, true);
}

void sym_node(sym_state *s, seam_infer *ic) {
    ir_node *n = ic->n;
    if (n->domain[0] || n->n_outputs < 1 || !infer_has_output(ic, 0) || ic->g != s->g) return;
    values_of(s, ic, n->op_type);
    dims_of(s, ic, n->op_type);
}

/* ---- DimExpr ---- */

/* The expressions of a DimExpr node's symbols: input sym_input[k]'s dim
 * sym_axis[k]; false where one is not known. */
static bool dimexpr_syms(sym_state *s, seam_infer *ic, const dimexpr_form *f, sx *syms) {
    for (int32_t k = 0; k < f->n_syms; k++)
        if (f->sym_input[k] < 0 || f->sym_input[k] >= infer_n_inputs(ic) ||
            !dim_sx(s, infer_in(ic, (int32_t)f->sym_input[k]), (int32_t)f->sym_axis[k], &syms[k]))
            return false;
    return true;
}

static void dimexpr_values(sym_state *s, seam_infer *ic, const dimexpr_form *f) {
    sx syms[16];
    if (f->n > SV_MAX || !dimexpr_syms(s, ic, f, syms)) return;
    sv o;
    memset(&o, 0, sizeof(o));
    o.n = f->n, o.rank = f->rank;
    for (int32_t k = 0; k < f->n; k++) o.known[k] = dimexpr_form_parse(f, k, &s->atoms, syms, &o.e[k]);
    set_sv(s, ic, 0, &o);
}

/* Its elements as numbers where the dims its symbols read are known. */
static void dimexpr_known(seam_infer *ic, const dimexpr_form *f) {
    int64_t vals[16], out[SV_MAX];
    int32_t w[SV_MAX];
    if (f->n > SV_MAX) return;
    for (int32_t k = 0; k < f->n_syms; k++) {
        int64_t i = f->sym_input[k], a = f->sym_axis[k];
        const ir_type *t = i >= 0 && i < infer_n_inputs(ic) ? infer_in(ic, (int32_t)i) : NULL;
        if (!t || t->kind != IR_TYPE_TENSOR || a < 0 || a >= t->rank || t->dims[a].v < 0) return;
        vals[k] = t->dims[a].v;
    }
    for (int32_t k = 0; k < f->n; k++) {
        if (!dimexpr_form_eval(f, k, vals, &out[k], NULL, 0)) return; /* (the run says why) */
        w[k] = (int32_t)out[k];
    }
    int64_t dims[1] = {f->n};
    infer_set_const(ic, 0, f->to, f->rank, dims, f->to == SEAM_DTYPE_INT64 ? (const void *)out : w);
}

void infer_dimexpr(seam_infer *ic) {
    dimexpr_form f;
    if (!dimexpr_form_read(ic->n, &f)) return; /* (the session refuses it, naming the node) */
    int64_t n = f.n;
    infer_set_tensor_i64(ic, 0, f.to, f.rank, &n);
    dimexpr_known(ic, &f);
    if (ic->model->sym && ic->model->sym->g == ic->g && !ic->g->values[ic->n->outputs[0]].konst)
        dimexpr_values(ic->model->sym, ic, &f);
}

/* ---- materializing ---- */

static bool expressed(const sym_state *s, const ir_graph *g, int32_t v) {
    if (v < 0 || v >= s->cap_val || !s->val[v]) return false;
    for (int32_t k = 0; k < s->val[v]->n; k++)
        if (!s->val[v]->known[k]) return false;
    int32_t dt = g->values[v].type.elem;
    return dt == SEAM_DTYPE_INT64 || dt == SEAM_DTYPE_INT32;
}

static bool strings_attr(seam_arena *a, ir_attr *at, const char *name, char **strs, int32_t n) {
    at->name = name, at->kind = IR_ATTR_STRINGS, at->n = n;
    at->strings = seam_arena_calloc(a, (size_t)n + 1, sizeof(ir_bytes));
    if (!at->strings) return false;
    for (int32_t k = 0; k < n; k++) {
        char *c = seam_arena_strdup(a, strs[k]);
        if (!c) return false;
        at->strings[k] = (ir_bytes){(const uint8_t *)c, strlen(c)};
    }
    return true;
}

static bool ints_attr(seam_arena *a, ir_attr *at, const char *name, const int64_t *v, int32_t n) {
    at->name = name, at->kind = IR_ATTR_INTS, at->n = n;
    at->ints = seam_arena_alloc(a, sizeof(int64_t) * (size_t)(n + 1));
    if (at->ints && n) memcpy(at->ints, v, sizeof(int64_t) * (size_t)n);
    return at->ints != NULL;
}

/* Node i, whose one output s has fully expressed, as a DimExpr node
 * reading the graph inputs its symbols come from. */
static bool to_dimexpr(sym_state *s, ir_graph *g, int32_t i, const seam_op_def *def) {
    seam_arena *a = &s->m->arena;
    ir_node *n = &g->nodes[i];
    const sv *o = s->val[n->outputs[0]];
    int32_t atoms[INFER_MAX_RANK], n_atoms = 0, ins[INFER_MAX_RANK], n_ins = 0;
    char *exprs[SV_MAX], buf[SV_MAX][400];
    char *names[INFER_MAX_RANK];
    for (int32_t k = 0; k < o->n; k++) {
        if (!sx_print(&s->atoms, &o->e[k], buf[k], sizeof(buf[k]), atoms, &n_atoms, INFER_MAX_RANK)) return false;
        exprs[k] = buf[k];
    }
    int64_t sym_input[INFER_MAX_RANK], sym_axis[INFER_MAX_RANK], shape[1] = {o->n};
    for (int32_t k = 0; k < n_atoms; k++) {
        const sx_atom *x = &s->atoms.v[atoms[k]];
        int32_t j = 0;
        while (j < n_ins && ins[j] != x->input) j++;
        if (j == n_ins) ins[n_ins++] = x->input;
        sym_input[k] = j, sym_axis[k] = x->axis;
        names[k] = (char *)x->name;
    }
    ir_attr *at = seam_arena_calloc(a, 6, sizeof(ir_attr));
    int32_t *in = seam_arena_alloc(a, sizeof(int32_t) * (size_t)(n_ins + 1));
    if (!at || !in || !strings_attr(a, &at[0], "exprs", exprs, o->n) || !strings_attr(a, &at[1], "symbols", names, n_atoms) ||
        !ints_attr(a, &at[2], "sym_input", sym_input, n_atoms) || !ints_attr(a, &at[3], "sym_axis", sym_axis, n_atoms) ||
        !ints_attr(a, &at[4], "shape", shape, o->rank))
        return false;
    at[5] = (ir_attr){.name = "to", .kind = IR_ATTR_INT, .i = g->values[n->outputs[0]].type.elem};
    memcpy(in, ins, sizeof(int32_t) * (size_t)n_ins);
    n->op_type = "DimExpr", n->domain = "ai.seam", n->opset = 1, n->def = def;
    n->inputs = in, n->n_inputs = n_ins, n->attrs = at, n->n_attrs = 6;
    return true;
}

seam_status sym_materialize(struct seam_model *m, int32_t *n_out) {
    if (n_out) *n_out = 0;
    ir_graph *g = m->graph;
    sym_state *s = m->sym;
    if (!s || s->m != m || s->g != g || !has_symbolic_input(g)) return SEAM_STATUS_OK;
    const seam_op_def *def = seam_op_find("ai.seam", "DimExpr", 1);
    if (!def) return seam_error(m->ctx, SEAM_STATUS_INTERNAL, "the DimExpr op is not registered");
    int32_t converted = 0, front = 0;
    seam_status st = SEAM_STATUS_OK;
    /* every node of the arithmetic: each keeps its index, name and output
     * (plans describe the model passed); one that nothing outside the
     * arithmetic reads is skipped by the executor */
    for (int32_t i = 0; i < g->n_nodes && !st; i++) {
        ir_node *n = &g->nodes[i];
        if (n->domain[0] || n->n_outputs != 1 || n->n_implicit || ir_node_has_body(n) ||
            !expressed(s, g, n->outputs[0]))
            continue;
        const ir_value *v = &g->values[n->outputs[0]];
        bool read = (v->flags & IR_VALUE_OUTPUT) != 0;
        for (int32_t c = 0; c < v->n_consumers && !read; c++) {
            const ir_node *r = &g->nodes[v->consumers[c]];
            read = r->domain[0] || r->n_outputs != 1 || !expressed(s, g, r->outputs[0]);
        }
        const char *op = n->op_type;
        if (!ir_node_set_folded_op(g, i, op) || !to_dimexpr(s, g, i, def))
            st = seam_error(m->ctx, SEAM_STATUS_OUT_OF_MEMORY, "out of memory");
        converted++, front += read;
    }
    if (!st && converted) {
        char note[400];
        snprintf(note, sizeof(note),
                 "shape arithmetic on the inputs' named dims: %d nodes are DimExpr nodes computed from the inputs' "
                 "shapes alone (%d of them read by the model's other nodes; their expressions: seam inspect "
                 "--values); it reads no device subgraph's output, so it cuts none (--no-fold keeps the nodes)",
                 converted, front);
        if (!ir_model_import(m, "ai.seam", 1) || !ir_model_add_note(m, note)) st = seam_error(m->ctx, SEAM_STATUS_OUT_OF_MEMORY, "out of memory");
        if (!st) st = ir_graph_link(m->ctx, g);
        if (!st) st = ir_infer_model(m);
    }
    if (n_out) *n_out = converted;
    return st;
}
