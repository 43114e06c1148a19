/* The CUDA backend's device arena: lifetimes of the values by step, then
 * first-fit offsets in definition order. */
#define _GNU_SOURCE
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "prog.h"

/* ---- memory ---------------------------------------------------------------- */

typedef struct span {
    size_t off, size;
} span;
static int cmp_span(const void *a, const void *b) {
    const span *x = a, *y = b;
    return x->off < y->off ? -1 : x->off > y->off;
}

/* Lifetimes of the roots, then first-fit offsets in definition order. */
bool plan_arena(prog *P, char *err, size_t es) {
    for (int i = 0; i < P->nv; i++) P->v[i].def = P->v[i].last = -2;
    for (int k = 0; k < P->n_in; k++) {
        cval *r = &P->v[P->v[P->in_vals[k]].root];
        r->def = -1;
        if (r->last < -1) r->last = -1;
    }
    for (int i = 0; i < P->n_steps; i++) {
        const step *s = &P->steps[i];
        for (int k = 0; k < s->n_in; k++) {
            cval *r = &P->v[P->v[s->in[k]].root];
            if (r->last < i) r->last = i;
        }
        for (int k = -1; k < s->n_xout; k++) {
            cval *o = &P->v[P->v[k < 0 ? s->out : s->xout[k]].root];
            if (o->def == -2) o->def = i;
            if (o->last < i) o->last = i;
        }
    }
    for (int k = 0; k < P->n_out; k++) {
        cval *r = &P->v[P->v[P->out_vals[k]].root];
        if (!r->is_const && r->def == -2) /* neither computed nor a boundary input */
            return FAIL("subgraph '%s': output '%s' is computed by no node", P->name, P->v[P->out_vals[k]].name);
        r->last = P->n_steps;
    }
    span *busy = malloc((size_t)(P->nv + 1) * sizeof(span));
    int *order = malloc((size_t)(P->nv + 1) * sizeof(int));
    if (!busy || !order) {
        free(busy), free(order);
        return FAIL("subgraph '%s': out of memory", P->name);
    }
    int n_order = 0;
    for (int d = -1; d < P->n_steps; d++) /* definition order */
        for (int i = 0; i < P->nv; i++)
            if (P->v[i].root == i && !P->v[i].is_const && P->v[i].def == d) order[n_order++] = i;
    P->arena_bytes = 0;
    for (int oi = 0; oi < n_order; oi++) {
        cval *r = &P->v[order[oi]];
        size_t size = (r->nbytes + ALIGN - 1) / ALIGN * ALIGN;
        if (!size) size = ALIGN;
        int nb = 0;
        for (int j = 0; j < oi; j++) {
            const cval *q = &P->v[order[j]];
            if (q->def <= r->last && r->def <= q->last)
                busy[nb++] = (span){q->off, q->nbytes ? (q->nbytes + ALIGN - 1) / ALIGN * ALIGN : ALIGN};
        }
        qsort(busy, (size_t)nb, sizeof(span), cmp_span);
        size_t off = 0;
        for (int j = 0; j < nb; j++) {
            if (busy[j].off >= off + size) break;
            if (busy[j].off + busy[j].size > off) off = busy[j].off + busy[j].size;
        }
        r->off = off;
        r->placed = true;
        if (off + size > P->arena_bytes) P->arena_bytes = off + size;
    }
    free(busy);
    free(order);
    return true;
}
