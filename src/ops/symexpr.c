/* Dimensions as expressions (symexpr.h): sums of products of atoms, in
 * one order, so that equal expressions compare equal. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/arena.h"
#include "ops/attr.h"
#include "ops/symexpr.h"

void sx_const(sx *e, int64_t v) {
    memset(e, 0, sizeof(*e));
    if (v) e->n = 1, e->t[0].c = v;
}

bool sx_is_const(const sx *e, int64_t *v) {
    if (e->n == 0) return *v = 0, true;
    if (e->n == 1 && e->t[0].n == 0) return *v = e->t[0].c, true;
    return false;
}

/* Terms of more atoms first, then by their atoms; the constant last. */
static int term_cmp(const sx_term *x, const sx_term *y) {
    if (x->n != y->n) return x->n > y->n ? -1 : 1;
    for (int32_t k = 0; k < x->n; k++)
        if (x->a[k] != y->a[k]) return x->a[k] < y->a[k] ? -1 : 1;
    return 0;
}

static bool same_atoms(const sx_term *x, const sx_term *y) { return term_cmp(x, y) == 0; }

bool sx_eq(const sx *a, const sx *b) {
    if (a->n != b->n) return false;
    for (int32_t k = 0; k < a->n; k++)
        if (a->t[k].c != b->t[k].c || !same_atoms(&a->t[k], &b->t[k])) return false;
    return true;
}

/* Sorts terms, merges equal products, drops zeros; false when more than
 * SX_MAX_TERMS remain or a sum overflows. t holds n terms (any count). */
static bool normalize(sx_term *t, int32_t n, sx *e) {
    for (int32_t i = 1; i < n; i++) { /* (insertion sort: a few dozen terms at most) */
        sx_term x = t[i];
        int32_t j = i;
        while (j > 0 && term_cmp(&t[j - 1], &x) > 0) t[j] = t[j - 1], j--;
        t[j] = x;
    }
    memset(e, 0, sizeof(*e));
    for (int32_t i = 0; i < n;) {
        sx_term x = t[i++];
        while (i < n && same_atoms(&t[i], &x))
            if (__builtin_add_overflow(x.c, t[i++].c, &x.c)) return false;
        if (x.c == 0) continue;
        if (e->n == SX_MAX_TERMS) return false;
        e->t[e->n++] = x;
    }
    return true;
}

bool sx_add(const sx *a, const sx *b, sx *e) {
    sx_term t[2 * SX_MAX_TERMS];
    memcpy(t, a->t, sizeof(sx_term) * (size_t)a->n);
    memcpy(t + a->n, b->t, sizeof(sx_term) * (size_t)b->n);
    return normalize(t, a->n + b->n, e);
}

bool sx_sub(const sx *a, const sx *b, sx *e) {
    sx nb = *b;
    for (int32_t k = 0; k < nb.n; k++)
        if (__builtin_sub_overflow((int64_t)0, nb.t[k].c, &nb.t[k].c)) return false;
    return sx_add(a, &nb, e);
}

bool sx_mul(const sx *a, const sx *b, sx *e) {
    sx_term t[SX_MAX_TERMS * SX_MAX_TERMS];
    int32_t n = 0;
    for (int32_t i = 0; i < a->n; i++)
        for (int32_t j = 0; j < b->n; j++) {
            const sx_term *x = &a->t[i], *y = &b->t[j];
            sx_term r = {0};
            if (x->n + y->n > SX_MAX_DEG || __builtin_mul_overflow(x->c, y->c, &r.c)) return false;
            int32_t p = 0, q = 0;
            while (p < x->n || q < y->n) /* merge the two ascending atom lists */
                r.a[r.n++] = q >= y->n || (p < x->n && x->a[p] <= y->a[q]) ? x->a[p++] : y->a[q++];
            t[n++] = r;
        }
    return normalize(t, n, e);
}

void sx_atom_expr(sx *e, int32_t atom) {
    memset(e, 0, sizeof(*e));
    e->n = 1;
    e->t[0].c = 1;
    e->t[0].n = 1;
    e->t[0].a[0] = (int16_t)atom;
}

static int32_t atom_add(sx_atoms *at, const sx_atom *x) {
    for (int32_t k = 0; k < at->n; k++) {
        const sx_atom *y = &at->v[k];
        if (y->kind != x->kind) continue;
        if (x->kind == SX_SYM ? !strcmp(y->name, x->name) : sx_eq(&y->a, &x->a) && sx_eq(&y->b, &x->b)) return k;
    }
    if (at->n == SX_MAX_ATOMS) return -1;
    if (at->n == at->cap) {
        int32_t cap = at->cap ? 2 * at->cap : 16;
        sx_atom *v = seam_arena_alloc(at->arena, sizeof(sx_atom) * (size_t)cap);
        if (!v) return -1;
        if (at->n) memcpy(v, at->v, sizeof(sx_atom) * (size_t)at->n);
        at->v = v, at->cap = cap;
    }
    at->v[at->n] = *x;
    return at->n++;
}

int32_t sx_symbol(sx_atoms *at, const char *name, int32_t input, int32_t axis) {
    sx_atom x;
    memset(&x, 0, sizeof(x));
    x.kind = SX_SYM, x.name = name, x.input = input, x.axis = axis, x.nonneg = true;
    return atom_add(at, &x);
}

bool sx_nonneg(const sx_atoms *at, const sx *e) {
    for (int32_t k = 0; k < e->n; k++) {
        if (e->t[k].c < 0) return false;
        for (int32_t j = 0; j < e->t[k].n; j++)
            if (!at->v[e->t[k].a[j]].nonneg) return false;
    }
    return true;
}

static bool new_atom(sx_atoms *at, sx_atom_kind kind, const sx *a, const sx *b, bool nonneg, sx *e) {
    sx_atom x;
    memset(&x, 0, sizeof(x));
    x.kind = kind, x.a = *a, x.b = *b, x.nonneg = nonneg;
    int32_t k = atom_add(at, &x);
    if (k < 0) return false;
    sx_atom_expr(e, k);
    return true;
}

/* ONNX's integer Div (truncating) and Mod (the divisor's sign). */
static int64_t div_trunc(int64_t a, int64_t b) { return a / b; }
static int64_t mod_floor(int64_t a, int64_t b) {
    int64_t r = a % b;
    return r != 0 && ((r < 0) != (b < 0)) ? r + b : r;
}

bool sx_div(sx_atoms *at, const sx *a, const sx *b, sx *e) {
    int64_t c, va;
    if (sx_is_const(b, &c)) {
        if (c == 0 || (c == -1 && sx_is_const(a, &va) && va == INT64_MIN)) return false;
        if (sx_is_const(a, &va)) return sx_const(e, div_trunc(va, c)), true;
        bool exact = true;
        for (int32_t k = 0; k < a->n && exact; k++) exact = a->t[k].c % c == 0;
        if (exact) {
            *e = *a;
            for (int32_t k = 0; k < e->n; k++) e->t[k].c /= c;
            return true;
        }
        if (c < 0) return false;
        return new_atom(at, SX_DIV, a, b, sx_nonneg(at, a), e);
    }
    /* by one product: exact when it divides every term */
    if (b->n != 1 || b->t[0].c == 0) return false;
    const sx_term *d = &b->t[0];
    sx_term t[SX_MAX_TERMS];
    for (int32_t k = 0; k < a->n; k++) {
        const sx_term *x = &a->t[k];
        if (x->c % d->c) return false;
        sx_term r = {x->c / d->c, 0, {0}};
        int32_t q = 0;
        for (int32_t p = 0; p < x->n; p++) {
            if (q < d->n && x->a[p] == d->a[q]) q++;
            else r.a[r.n++] = x->a[p];
        }
        if (q < d->n) return false;
        t[k] = r;
    }
    return normalize(t, a->n, e);
}

bool sx_mod(sx_atoms *at, const sx *a, const sx *b, sx *e) {
    int64_t c, va;
    if (!sx_is_const(b, &c) || c == 0) return false;
    if (sx_is_const(a, &va)) return sx_const(e, c == -1 ? 0 : mod_floor(va, c)), true;
    bool exact = true;
    for (int32_t k = 0; k < a->n && exact; k++) exact = a->t[k].c % c == 0;
    if (exact) return sx_const(e, 0), true;
    if (c < 0) return false;
    return new_atom(at, SX_MOD, a, b, true, e);
}

/* The two operands of a min or max in one order, so that min(a, b) and
 * min(b, a) are one atom. */
static bool sx_before(const sx *a, const sx *b) {
    if (a->n != b->n) return a->n < b->n;
    for (int32_t k = 0; k < a->n; k++) {
        int c = term_cmp(&a->t[k], &b->t[k]);
        if (c) return c < 0;
        if (a->t[k].c != b->t[k].c) return a->t[k].c < b->t[k].c;
    }
    return false;
}

static bool minmax(sx_atoms *at, const sx *a, const sx *b, bool is_min, sx *e) {
    sx d;
    int64_t v;
    if (sx_sub(a, b, &d) && sx_is_const(&d, &v)) return *e = (v <= 0) == is_min ? *a : *b, true;
    /* max(x, 0) of an x never negative is x; min(x, 0) is 0 */
    if (sx_is_const(b, &v) && v == 0 && sx_nonneg(at, a)) return *e = is_min ? *b : *a, true;
    if (sx_is_const(a, &v) && v == 0 && sx_nonneg(at, b)) return *e = is_min ? *a : *b, true;
    if (sx_before(b, a)) {
        const sx *t = a;
        a = b, b = t;
    }
    bool nn = is_min ? sx_nonneg(at, a) && sx_nonneg(at, b) : sx_nonneg(at, a) || sx_nonneg(at, b);
    return new_atom(at, is_min ? SX_MIN : SX_MAX, a, b, nn, e);
}

bool sx_min(sx_atoms *at, const sx *a, const sx *b, sx *e) { return minmax(at, a, b, true, e); }
bool sx_max(sx_atoms *at, const sx *a, const sx *b, sx *e) { return minmax(at, a, b, false, e); }

/* ---- printing ---- */

typedef struct pbuf {
    char *s;
    size_t size, len;
    bool ok;
    int32_t *syms, *n_syms, max_syms;
} pbuf;

static void put_text(pbuf *p, const char *s) {
    size_t l = s ? strlen(s) : 0;
    if (!p->ok || l >= p->size - p->len) {
        p->ok = false;
        return;
    }
    memcpy(p->s + p->len, s, l);
    p->len += l;
    p->s[p->len] = 0;
}

static void put_int(pbuf *p, const char *fmt, long long v) {
    char b[32];
    snprintf(b, sizeof(b), fmt, v);
    put_text(p, b);
}

static void print_sx(const sx_atoms *at, const sx *e, pbuf *p);

static void print_atom(const sx_atoms *at, int32_t k, bool alone, pbuf *p) {
    const sx_atom *x = &at->v[k];
    bool form = p->syms != NULL;
    if (x->kind == SX_SYM) {
        if (!form) return put_text(p, x->name);
        int32_t j = 0;
        while (j < *p->n_syms && p->syms[j] != k) j++;
        if (j == *p->n_syms) {
            if (j == p->max_syms) return (void)(p->ok = false);
            p->syms[(*p->n_syms)++] = k;
        }
        return put_int(p, "$%lld", j);
    }
    if (x->kind == SX_MIN || x->kind == SX_MAX) {
        put_text(p, x->kind == SX_MIN ? "min(" : "max(");
        print_sx(at, &x->a, p);
        put_text(p, ",");
        print_sx(at, &x->b, p);
        return put_text(p, ")");
    }
    int64_t c = 0;
    sx_is_const(&x->b, &c);
    bool wrap = form || !alone;
    bool simple = x->a.n == 1 && x->a.t[0].c == 1 && x->a.t[0].n == 1 && at->v[x->a.t[0].a[0]].kind == SX_SYM;
    if (wrap) put_text(p, "(");
    if (!simple || form) put_text(p, "(");
    print_sx(at, &x->a, p);
    if (!simple || form) put_text(p, ")");
    put_text(p, x->kind == SX_DIV ? (form ? "/" : "//") : "%");
    put_int(p, "%lld", c);
    if (wrap) put_text(p, ")");
}

static void print_sx(const sx_atoms *at, const sx *e, pbuf *p) {
    if (e->n == 0) return put_text(p, "0");
    for (int32_t k = 0; k < e->n; k++) {
        const sx_term *t = &e->t[k];
        long long c = t->c;
        if (c == INT64_MIN) return (void)(p->ok = false);
        if (c < 0) put_text(p, "-"), c = -c;
        else if (k > 0) put_text(p, "+");
        if (t->n == 0 || c != 1) put_int(p, t->n ? "%lld*" : "%lld", c);
        for (int32_t j = 0; j < t->n; j++) {
            if (j) put_text(p, "*");
            print_atom(at, t->a[j], t->n == 1 && t->c == 1, p); /* (-(H%7), never -H%7) */
        }
    }
}

bool sx_print(const sx_atoms *at, const sx *e, char *buf, size_t size, int32_t *syms, int32_t *n_syms,
              int32_t max_syms) {
    if (!size) return false;
    pbuf p = {buf, size, 0, true, syms, n_syms, max_syms};
    buf[0] = 0;
    print_sx(at, e, &p);
    return p.ok;
}

/* ---- reading DimExpr's form: into numbers, or into expressions ---- */

typedef struct num {
    int64_t v;
    sx e;
} num;

typedef struct parser {
    const char *s;
    int32_t depth;
    const char *err;
    const int64_t *vals; /* numbers: $k's values */
    int32_t n_vals;
    sx_atoms *at;        /* expressions: the atoms, and $k's expressions */
    const sx *syms;
} parser;

static bool parse_sum(parser *p, num *out);

static bool fail(parser *p, const char *why) {
    if (!p->err) p->err = why;
    return false;
}

static bool parse_int(parser *p, int64_t *out) {
    if (*p->s < '0' || *p->s > '9') return fail(p, "a number was expected");
    int64_t v = 0;
    while (*p->s >= '0' && *p->s <= '9')
        if (__builtin_mul_overflow(v, 10, &v) || __builtin_add_overflow(v, *p->s++ - '0', &v))
            return fail(p, "a number overflows int64");
    *out = v;
    return true;
}

/* a op b into a; op one of + - * / % m (min) M (max) */
static bool apply(parser *p, char op, num *a, const num *b) {
    if (p->at) {
        bool ok = op == '+'   ? sx_add(&a->e, &b->e, &a->e)
                  : op == '-' ? sx_sub(&a->e, &b->e, &a->e)
                  : op == '*' ? sx_mul(&a->e, &b->e, &a->e)
                  : op == '/' ? sx_div(p->at, &a->e, &b->e, &a->e)
                  : op == '%' ? sx_mod(p->at, &a->e, &b->e, &a->e)
                  : op == 'm' ? sx_min(p->at, &a->e, &b->e, &a->e)
                              : sx_max(p->at, &a->e, &b->e, &a->e);
        return ok || fail(p, "not an expression seam can hold");
    }
    int64_t x = a->v, y = b->v;
    switch (op) {
    case '+': return !__builtin_add_overflow(x, y, &a->v) || fail(p, "overflow");
    case '-': return !__builtin_sub_overflow(x, y, &a->v) || fail(p, "overflow");
    case '*': return !__builtin_mul_overflow(x, y, &a->v) || fail(p, "overflow");
    case 'm': return a->v = x < y ? x : y, true;
    case 'M': return a->v = x > y ? x : y, true;
    default:
        if (y == 0 || (y == -1 && x == INT64_MIN)) return fail(p, "division by zero or overflow");
        a->v = op == '/' ? div_trunc(x, y) : mod_floor(x, y);
        return true;
    }
}

static bool parse_atom(parser *p, num *out) {
    if (++p->depth > 64) return fail(p, "nested too deeply");
    bool ok;
    if (*p->s == '-') {
        p->s++;
        num v;
        ok = parse_atom(p, &v);
        sx_const(&out->e, 0), out->v = 0;
        ok = ok && apply(p, '-', out, &v);
    } else if (*p->s == '(') {
        p->s++;
        ok = parse_sum(p, out) && (*p->s++ == ')' || fail(p, "')' was expected"));
    } else if (*p->s == '$') {
        p->s++;
        int64_t k;
        ok = parse_int(p, &k) && (k < p->n_vals || fail(p, "a symbol past the node's inputs"));
        if (ok && p->at) out->e = p->syms[k];
        else if (ok) out->v = p->vals[k];
    } else if (!strncmp(p->s, "min(", 4) || !strncmp(p->s, "max(", 4)) {
        char op = p->s[1] == 'i' ? 'm' : 'M';
        p->s += 4;
        num b;
        ok = parse_sum(p, out) && (*p->s++ == ',' || fail(p, "',' was expected")) && parse_sum(p, &b) &&
             (*p->s++ == ')' || fail(p, "')' was expected")) && apply(p, op, out, &b);
    } else {
        ok = parse_int(p, &out->v);
        if (ok && p->at) sx_const(&out->e, out->v);
    }
    p->depth--;
    return ok;
}

static bool parse_product(parser *p, num *out) {
    if (!parse_atom(p, out)) return false;
    while (*p->s == '*' || *p->s == '/' || *p->s == '%') {
        char op = *p->s++;
        num b;
        if (!parse_atom(p, &b) || !apply(p, op, out, &b)) return false;
    }
    return true;
}

static bool parse_sum(parser *p, num *out) {
    if (!parse_product(p, out)) return false;
    while (*p->s == '+' || *p->s == '-') {
        char op = *p->s++;
        num b;
        if (!parse_product(p, &b) || !apply(p, op, out, &b)) return false;
    }
    return true;
}

bool sx_eval(const char *s, const int64_t *vals, int32_t n_vals, int64_t *out, char *why, size_t why_size) {
    parser p = {s, 0, NULL, vals, n_vals, NULL, NULL};
    num r;
    bool ok = parse_sum(&p, &r) && (*p.s == 0 || fail(&p, "unexpected text"));
    if (ok) *out = r.v;
    else if (why) snprintf(why, why_size, "expression '%.200s': %s at offset %d", s, p.err, (int)(p.s - s));
    return ok;
}

bool sx_parse(sx_atoms *at, const char *s, const sx *syms, int32_t n_syms, sx *out) {
    parser p = {s, 0, NULL, NULL, n_syms, at, syms};
    num r;
    bool ok = parse_sum(&p, &r) && (*p.s == 0 || fail(&p, "unexpected text"));
    if (ok) *out = r.e;
    return ok;
}

/* ---- DimExpr's attributes ---- */

bool dimexpr_form_read(const ir_node *node, dimexpr_form *f) {
    const int64_t *shape;
    memset(f, 0, sizeof(*f));
    f->exprs = node_attr(node, "exprs");
    f->n_syms = node_attr_ints(node, "sym_input", &f->sym_input);
    f->rank = node_attr_ints(node, "shape", &shape);
    int64_t to = node_attr_int(node, "to", SEAM_DTYPE_INT64);
    if (!f->exprs || f->exprs->kind != IR_ATTR_STRINGS || f->n_syms < 0 || f->n_syms > 16 ||
        node_attr_ints(node, "sym_axis", &f->sym_axis) != f->n_syms || f->rank < 0 || f->rank > 1 ||
        (f->rank == 0 ? f->exprs->n != 1 : shape[0] != f->exprs->n) || (to != SEAM_DTYPE_INT64 && to != SEAM_DTYPE_INT32))
        return false;
    f->n = f->exprs->n, f->to = (int32_t)to;
    return true;
}

/* Expression e as a C string in buf; false (why set) when too long. */
static bool form_text(const dimexpr_form *f, int32_t e, char *buf, size_t size, char *why, size_t why_size) {
    const ir_bytes *b = &f->exprs->strings[e];
    if (b->len >= size) {
        if (why) snprintf(why, why_size, "expression %d is longer than %zu bytes", e, size - 1);
        return false;
    }
    memcpy(buf, b->data, b->len);
    buf[b->len] = 0;
    return true;
}

bool dimexpr_form_eval(const dimexpr_form *f, int32_t e, const int64_t *vals, int64_t *out, char *why, size_t why_size) {
    char buf[512];
    if (!form_text(f, e, buf, sizeof(buf), why, why_size) || !sx_eval(buf, vals, f->n_syms, out, why, why_size))
        return false;
    if (f->to == SEAM_DTYPE_INT32 && (*out < INT32_MIN || *out > INT32_MAX)) {
        if (why) snprintf(why, why_size, "expression %d = %lld overflows int32", e, (long long)*out);
        return false;
    }
    return true;
}

bool dimexpr_form_parse(const dimexpr_form *f, int32_t e, sx_atoms *at, const sx *syms, sx *out) {
    char buf[512];
    return form_text(f, e, buf, sizeof(buf), NULL, 0) && sx_parse(at, buf, syms, f->n_syms, out);
}
