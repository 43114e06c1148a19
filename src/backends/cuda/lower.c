/* The CUDA backend's lowering of nodes to steps (seam's kernels, views);
 * convolutions and matrix products are in lower_conv.c. */
#define _GNU_SOURCE
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "prog.h"

/* ---- steps ------------------------------------------------------------------ */

step *new_step(prog *P, step_kind kind, const cnode *n, const char *ops, int out, char *err, size_t es) {
    if (P->n_steps == P->cap_steps) {
        int cap = P->cap_steps ? 2 * P->cap_steps : 32;
        step *s = realloc(P->steps, (size_t)cap * sizeof(step));
        if (!s) {
            snprintf(err, es, "subgraph '%s': out of memory", P->name);
            return NULL;
        }
        P->steps = s, P->cap_steps = cap;
    }
    step *s = &P->steps[P->n_steps++];
    memset(s, 0, sizeof(*s));
    s->kind = kind;
    s->out = out;
    s->scale = s->shift = s->z = s->w = s->bias = s->gamma = s->beta = s->op_a = s->op_b = -1;
    snprintf(s->what, sizeof(s->what), "node %d '%s' (%s)", n->index, n->name, ops ? ops : n->op);
    s->x0 = n->n_in > 0 ? n->in[0] : -1;
    s->x1 = n->n_in > 1 ? n->in[1] : -1;
    P->v[P->v[out].root].ready = true;
    return s;
}

/* Records that s reads value id (constants are uploaded instead). */
bool reads(prog *P, step *s, int id, char *err, size_t es) {
    if (id < 0) return true;
    if (P->v[P->v[id].root].is_const) return upload(P, id, err, es);
    int *in = realloc(s->in, (size_t)(s->n_in + 1) * sizeof(int));
    if (!in) return FAIL("subgraph '%s': out of memory", P->name);
    s->in = in;
    s->in[s->n_in++] = id;
    return true;
}

/* The node that alone reads value id, if it is not a boundary output and
 * that node is of op type op: its index, else -1. */
int sole_reader(const prog *P, int id, const char *op) {
    const cval *v = &P->v[id];
    if (v->readers != 1 || v->out_k >= 0 || v->reader < 0) return -1;
    const cnode *n = &P->nodes[v->reader];
    return !n->done && !strcmp(n->op, op) ? v->reader : -1;
}

void strides_of(const cval *v, int64_t *st) {
    int64_t s = 1;
    for (int32_t d = v->rank - 1; d >= 0; d--) st[d] = s, s *= v->dims[d];
}

static bool lower_unary(prog *P, cnode *n, const cval *x, const cval *y, char *err, size_t es) {
    const cu_params *p = &n->p;
    int out = n->out;
    step *s;
    if (!(s = new_step(P, S_UNARY, n, NULL, out, err, es))) return false;
    s->uop = p->uop, s->a = p->a, s->b = p->b, s->n = vnumel(y);
    snprintf(s->info, sizeof(s->info), "seam unary kernel");
    return reads(P, s, n->in[0], err, es);
}

static bool lower_binary(prog *P, cnode *n, const cval *x, const cval *y, char *err, size_t es) {
    const cu_params *p = &n->p;
    int out = n->out;
    step *s;
    if (!(s = new_step(P, S_BINARY, n, NULL, out, err, es))) return false;
    s->bop = p->bop, s->n = vnumel(y);
    s->bc.rank = y->rank;
    for (int k = 0; k < 2; k++) {
        const cval *o = &P->v[n->in[k]];
        int64_t st[SC_MAX_RANK];
        strides_of(o, st);
        for (int32_t d = 0; d < y->rank; d++) {
            int32_t od = d - (y->rank - o->rank);
            int64_t sd = od < 0 || o->dims[od] == 1 ? 0 : st[od];
            if (od >= 0 && o->dims[od] != 1 && o->dims[od] != y->dims[d])
                return FAIL("subgraph '%s': %s: input %d does not broadcast to the output", P->name, s->what, k);
            if (k == 0) s->bc.sa[d] = sd;
            else s->bc.sb[d] = sd;
            s->bc.dims[d] = y->dims[d];
        }
    }
    if (y->rank == 0) s->bc.rank = 1, s->bc.dims[0] = 1, s->bc.sa[0] = s->bc.sb[0] = 0;
    snprintf(s->info, sizeof(s->info), "seam broadcast kernel");
    return reads(P, s, n->in[0], err, es) && reads(P, s, n->in[1], err, es);
}

static bool lower_bn(prog *P, cnode *n, const cval *x, const cval *y, char *err, size_t es) {
    int out = n->out;
    step *s;
    int cur = out, relu;
    char ops[80] = "BatchNormalization";
    if ((relu = sole_reader(P, cur, "Relu")) >= 0) {
        P->nodes[relu].done = true;
        cur = P->nodes[relu].out;
        strcat(ops, "+Relu");
    }
    float *scale = NULL, *shift = NULL;
    int64_t c = 0;
    char nm[512];
    bool ok = bn_factors(P, n, &scale, &shift, &c, err, es);
    int sid = -1, tid = -1;
    if (ok) {
        snprintf(nm, sizeof(nm), "%s:cuda_scale", n->name);
        ok = (sid = new_const(P, nm, 1, &c, scale, err, es)) >= 0;
    }
    if (ok) {
        snprintf(nm, sizeof(nm), "%s:cuda_shift", n->name);
        ok = (tid = new_const(P, nm, 1, &c, shift, err, es)) >= 0;
    }
    free(scale);
    free(shift);
    if (!ok || !(s = new_step(P, S_AFFINE, n, ops, cur, err, es))) return false;
    s->scale = sid, s->shift = tid, s->relu = relu >= 0;
    s->ch = c;
    s->outer = x->dims[0];
    s->inner = c && s->outer ? vnumel(x) / (c * s->outer) : 0;
    snprintf(s->info, sizeof(s->info), "seam channel affine kernel");
    return reads(P, s, n->in[0], err, es);
}

static bool lower_pool(prog *P, cnode *n, const cval *x, const cval *y, char *err, size_t es) {
    const cu_params *p = &n->p;
    int out = n->out;
    step *s;
    if (!(s = new_step(P, S_POOL, n, NULL, out, err, es))) return false;
    sc_pool_desc *d = &s->pd;
    d->nc = x->dims[0] * x->dims[1];
    d->h = x->rank == 4 ? x->dims[2] : 1, d->w = x->dims[x->rank - 1];
    d->oh = y->rank == 4 ? y->dims[2] : 1, d->ow = y->dims[y->rank - 1];
    d->kh = (int32_t)p->k[0], d->kw = (int32_t)p->k[1], d->sh = (int32_t)p->s[0], d->sw = (int32_t)p->s[1];
    d->ph = (int32_t)p->p0[0], d->pw = (int32_t)p->p0[1], d->ph1 = (int32_t)p->p1[0], d->pw1 = (int32_t)p->p1[1];
    d->dh = (int32_t)p->d[0], d->dw = (int32_t)p->d[1], d->max = p->pool_max, d->count_include_pad = p->include_pad;
    snprintf(s->info, sizeof(s->info), "seam pool kernel");
    return reads(P, s, n->in[0], err, es);
}

static bool lower_gpool(prog *P, cnode *n, const cval *x, const cval *y, char *err, size_t es) {
    const cu_params *p = &n->p;
    int out = n->out;
    step *s;
    if (!(s = new_step(P, S_REDUCE, n, NULL, out, err, es))) return false;
    int64_t rows = x->dims[0] * x->dims[1], cols = rows ? vnumel(x) / rows : 0;
    s->rop = p->rop;
    s->rd = (sc_reduce_desc){.orank = 1, .rrank = 1, .n_out = rows, .n_red = cols};
    s->rd.odims[0] = rows, s->rd.ostride[0] = cols, s->rd.rdims[0] = cols > 0 ? cols : 1, s->rd.rstride[0] = 1;
    snprintf(s->info, sizeof(s->info), "seam row reduction kernel");
    return reads(P, s, n->in[0], err, es);
}

static bool lower_reduce(prog *P, cnode *n, const cval *x, const cval *y, char *err, size_t es) {
    const cu_params *p = &n->p;
    int out = n->out;
    step *s;
    if (!(s = new_step(P, S_REDUCE, n, NULL, out, err, es))) return false;
    int64_t st[SC_MAX_RANK];
    strides_of(x, st);
    sc_reduce_desc *d = &s->rd;
    d->n_out = d->n_red = 1;
    for (int32_t k = 0; k < x->rank; k++) {
        if (p->axes_mask >> k & 1) d->rdims[d->rrank] = x->dims[k], d->rstride[d->rrank++] = st[k], d->n_red *= x->dims[k];
        else d->odims[d->orank] = x->dims[k], d->ostride[d->orank++] = st[k], d->n_out *= x->dims[k];
    }
    if (!d->orank) d->orank = 1, d->odims[0] = 1, d->ostride[0] = 0;
    if (!d->rrank) d->rrank = 1, d->rdims[0] = 1, d->rstride[0] = 0;
    s->rop = p->rop;
    snprintf(s->info, sizeof(s->info), "seam reduction kernel (%lld outputs of %lld)", (long long)d->n_out, (long long)d->n_red);
    return reads(P, s, n->in[0], err, es);
}

static bool lower_rows(prog *P, cnode *n, const cval *x, const cval *y, char *err, size_t es) {
    const cu_params *p = &n->p;
    int out = n->out;
    step *s;
    if (!(s = new_step(P, p->kind == K_LN ? S_LN : S_SOFTMAX, n, NULL, out, err, es))) return false;
    s->rows = 1;
    for (int32_t d = 0; d < p->axis && d < x->rank; d++) s->rows *= x->dims[d];
    s->cols = s->rows ? vnumel(x) / s->rows : 0;
    s->log = p->log, s->eps = p->eps;
    if (p->kind == K_LN) {
        s->gamma = n->in[1];
        s->beta = n->n_in > 2 ? n->in[2] : -1;
        if (!reads(P, s, s->gamma, err, es) || !reads(P, s, s->beta, err, es)) return false;
    }
    snprintf(s->info, sizeof(s->info), "seam warp-per-row kernel (%lld rows of %lld)", (long long)s->rows, (long long)s->cols);
    return reads(P, s, n->in[0], err, es);
}

static bool lower_transpose(prog *P, cnode *n, const cval *x, const cval *y, char *err, size_t es) {
    const cu_params *p = &n->p;
    int out = n->out;
    step *s;
    if (!(s = new_step(P, S_STRIDED, n, NULL, out, err, es))) return false;
    int64_t st[SC_MAX_RANK];
    strides_of(x, st);
    s->sd.rank = y->rank;
    for (int32_t d = 0; d < y->rank; d++) s->sd.dims[d] = y->dims[d], s->sd.istride[d] = st[p->perm[d]];
    if (!y->rank) s->sd.rank = 1, s->sd.dims[0] = 1, s->sd.istride[0] = 0;
    s->n = vnumel(y);
    snprintf(s->info, sizeof(s->info), "seam strided copy kernel");
    return reads(P, s, n->in[0], err, es);
}

/* Slice and Expand: a strided copy (the slice's start as the base, its
 * steps times the strides; 0 strides where Expand broadcasts). */
static bool lower_slice_expand(prog *P, cnode *n, const cval *x, const cval *y, char *err, size_t es) {
    const cu_params *p = &n->p;
    step *s;
    if (!(s = new_step(P, S_STRIDED, n, NULL, n->out, err, es))) return false;
    int64_t st[SC_MAX_RANK];
    strides_of(x, st);
    s->sd.rank = y->rank;
    for (int32_t d = 0; d < y->rank; d++) {
        s->sd.dims[d] = y->dims[d];
        if (p->kind == K_SLICE) {
            s->sd.base += p->sl_start[d] * st[d];
            s->sd.istride[d] = p->sl_step[d] * st[d];
        } else {
            int32_t xd = d - (y->rank - x->rank);
            s->sd.istride[d] = xd < 0 || x->dims[xd] == 1 ? 0 : st[xd];
        }
    }
    if (!y->rank) s->sd.rank = 1, s->sd.dims[0] = 1, s->sd.istride[0] = 0;
    s->n = vnumel(y);
    snprintf(s->info, sizeof(s->info), "seam strided copy kernel (%s)", p->kind == K_SLICE ? "slice" : "broadcast");
    return reads(P, s, n->in[0], err, es);
}

static bool lower_pad(prog *P, cnode *n, const cval *x, const cval *y, char *err, size_t es) {
    const cu_params *p = &n->p;
    step *s;
    if (!(s = new_step(P, S_PAD, n, NULL, n->out, err, es))) return false;
    s->pad.rank = y->rank ? y->rank : 1;
    s->pad.mode = p->pad_mode, s->pad.value = p->pad_value;
    s->pad.odims[0] = s->pad.idims[0] = 1;
    for (int32_t d = 0; d < y->rank; d++) s->pad.odims[d] = y->dims[d], s->pad.idims[d] = x->dims[d], s->pad.p0[d] = p->pad0[d];
    s->n = vnumel(y);
    static const char *const modes[] = {"constant", "edge", "reflect", "wrap"};
    snprintf(s->info, sizeof(s->info), "seam pad kernel (%s)", modes[p->pad_mode]);
    return reads(P, s, n->in[0], err, es);
}

/* Numpy broadcasting of operand o to y: its element strides per output dim. */
static bool bcast_strides(prog *P, const cval *y, int id, int64_t *out, const char *what, char *err, size_t es) {
    const cval *o = &P->v[id];
    int64_t st[SC_MAX_RANK];
    strides_of(o, st);
    for (int32_t d = 0; d < y->rank; d++) {
        int32_t od = d - (y->rank - o->rank);
        if (od >= 0 && o->dims[od] != 1 && o->dims[od] != y->dims[d])
            return FAIL("subgraph '%s': %s: '%s' does not broadcast to the output", P->name, what, o->name);
        out[d] = od < 0 || o->dims[od] == 1 ? 0 : st[od];
    }
    return true;
}

/* Comparisons, Not/And/Or/Xor and Where: broadcast kernels. */
static bool lower_mask(prog *P, cnode *n, const cval *x, const cval *y, char *err, size_t es) {
    step *s;
    bool where = n->p.kind == K_WHERE;
    if (!(s = new_step(P, where ? S_WHERE : S_MASK, n, NULL, n->out, err, es))) return false;
    s->mop = n->p.mop, s->n = vnumel(y);
    s->x2 = n->n_in > 2 ? n->in[2] : -1;
    s->elem = where ? (int)cu_dtype_size(y->dtype) : x->dtype == SEAM_DTYPE_INT32 ? 5 : (int)cu_dtype_size(x->dtype);
    s->bc.rank = y->rank;
    for (int32_t d = 0; d < y->rank; d++) s->bc.dims[d] = y->dims[d];
    int64_t *st[3] = {s->bc.sa, s->bc.sb, s->bc.sc};
    for (int k = 0; k < n->n_in && k < 3; k++)
        if (!bcast_strides(P, y, n->in[k], st[k], s->what, err, es) || !reads(P, s, n->in[k], err, es)) return false;
    if (y->rank == 0) s->bc.rank = 1, s->bc.dims[0] = 1, s->bc.sa[0] = s->bc.sb[0] = s->bc.sc[0] = 0;
    snprintf(s->info, sizeof(s->info), "seam %s kernel", where ? "where" : "mask");
    return true;
}

static sc_num_type num_type(seam_dtype t) {
    return t == SEAM_DTYPE_INT32 ? SC_I32 : t == SEAM_DTYPE_INT64 ? SC_I64 : t == SEAM_DTYPE_BOOL ? SC_BOOL : SC_F32;
}

static bool lower_cast(prog *P, cnode *n, const cval *x, const cval *y, char *err, size_t es) {
    step *s;
    if (!(s = new_step(P, S_CAST, n, NULL, n->out, err, es))) return false;
    s->from = num_type(x->dtype), s->to = num_type(y->dtype), s->n = vnumel(y);
    static const char *const names[] = {"float32", "int32", "int64", "bool"};
    snprintf(s->info, sizeof(s->info), "seam cast kernel (%s to %s)", names[s->from], names[s->to]);
    return reads(P, s, n->in[0], err, es);
}

static bool lower_concat(prog *P, cnode *n, const cval *x, const cval *y, char *err, size_t es) {
    const cu_params *p = &n->p;
    int out = n->out;
    step *s;
    if (!(s = new_step(P, S_CONCAT, n, NULL, out, err, es))) return false;
    s->outer = 1;
    for (int64_t d = 0; d < p->axis; d++) s->outer *= y->dims[d];
    s->inner = s->outer ? vnumel(y) / s->outer : 0;
    s->g_axis = p->axis;
    snprintf(s->info, sizeof(s->info), "cudaMemcpy2DAsync per input (%d)", n->n_in);
    /* every input, in order, constants too: the launch walks s->in */
    for (int k = 0; k < n->n_in; k++) {
        if (!upload(P, n->in[k], err, es)) return false;
        int *in = realloc(s->in, (size_t)(s->n_in + 1) * sizeof(int));
        if (!in) return FAIL("subgraph '%s': out of memory", P->name);
        s->in = in;
        s->in[s->n_in++] = n->in[k];
    }
    return true;
}

static bool lower_gather(prog *P, cnode *n, const cval *x, const cval *y, char *err, size_t es) {
    const cu_params *p = &n->p;
    int out = n->out;
    step *s;
    if (!(s = new_step(P, S_GATHER, n, NULL, out, err, es))) return false;
    const cval *ix = &P->v[n->in[1]];
    s->idx64 = ix->dtype == SEAM_DTYPE_INT64;
    s->g_outer = 1;
    for (int64_t d = 0; d < p->axis; d++) s->g_outer *= x->dims[d];
    s->g_axis = x->dims[p->axis];
    s->g_inner = 1;
    for (int32_t d = (int32_t)p->axis + 1; d < x->rank; d++) s->g_inner *= x->dims[d];
    s->g_nidx = vnumel(ix);
    s->op_a = n->in[0], s->op_b = n->in[1];
    snprintf(s->info, sizeof(s->info), "seam gather kernel (an index out of range gives 0; the CPU fails the run)");
    return reads(P, s, n->in[0], err, es) && reads(P, s, n->in[1], err, es);
}

/* Resize: the spatial dims (the last nsp), N and C kept (parse checked). */
static bool lower_resize(prog *P, cnode *n, const cval *x, const cval *y, char *err, size_t es) {
    const cu_params *p = &n->p;
    step *s;
    if (!(s = new_step(P, S_RESIZE, n, NULL, n->out, err, es))) return false;
    sc_resize_desc *d = &s->rz;
    d->nsp = p->nsp, d->linear = p->rz_linear, d->coord = p->rz_coord, d->nearest = p->rz_nearest;
    for (int k = 0; k < p->nsp; k++) d->in[k] = x->dims[2 + k], d->out[k] = y->dims[2 + k], d->scale[k] = p->rz_scale[k];
    s->n = vnumel(y);
    static const char *const coords[] = {"half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric",
                                         "tf_half_pixel_for_nn", "half_pixel_symmetric"};
    static const char *const nearests[] = {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"};
    snprintf(s->info, sizeof(s->info), "seam resize kernel (%s, %s%s%s)", d->linear ? "linear" : "nearest", coords[d->coord],
             d->linear ? "" : ", ", d->linear ? "" : nearests[d->nearest]);
    return reads(P, s, n->in[0], err, es);
}

/* LSTM/GRU: one step launching a kernel per time step (rnn.cu); Y holds
 * every step's hidden state (the next step reads it back), an LSTM's cell
 * state lives in a value of its own. */
static bool lower_rnn(prog *P, cnode *n, const cval *x, const cval *y, char *err, size_t es) {
    const cu_params *p = &n->p;
    const cval *w = &P->v[n->in[1]];
    int64_t seq = x->dims[0], batch = x->dims[1], input = x->dims[2], dirs = p->rnn_dirs, G = p->rnn_gru ? 3 : 4;
    int64_t hidden = w->dims[1] / G;
    int64_t yd[4] = {seq, dirs, batch, hidden}, hd[3] = {dirs, batch, hidden};
    if (y->rank != 4 || memcmp(y->dims, yd, sizeof(yd)))
        return FAIL("subgraph '%s': node %d '%s': Y is not [%lld, %lld, %lld, %lld]", P->name, n->index, n->name,
                    (long long)seq, (long long)dirs, (long long)batch, (long long)hidden);
    if (w->dims[2] != input) return FAIL("subgraph '%s': node %d '%s': W's %lld features, X's %lld", P->name, n->index, n->name, (long long)w->dims[2], (long long)input);
    /* initial_h, initial_c (inputs 5, 6) and Y_h, Y_c are [dirs, batch, hidden] */
    int state[4] = {n->n_in > 5 ? n->in[5] : -1, !p->rnn_gru && n->n_in > 6 ? n->in[6] : -1, n->xout[0], n->xout[1]};
    for (int k = 0; k < 4; k++) {
        const cval *v = state[k] >= 0 ? &P->v[state[k]] : NULL;
        if (v && (v->rank != 3 || memcmp(v->dims, hd, sizeof(hd))))
            return FAIL("subgraph '%s': node %d '%s': '%s' is not [%lld, %lld, %lld]", P->name, n->index, n->name, v->name,
                        (long long)dirs, (long long)batch, (long long)hidden);
    }
    int cell = -1;
    if (!p->rnn_gru) {
        char nm[512];
        snprintf(nm, sizeof(nm), "%s:cuda_cell_state", n->name);
        if ((cell = value_of(P, nm, SEAM_DTYPE_FLOAT32, 3, hd)) < 0) return FAIL("subgraph '%s': out of memory", P->name);
    }
    step *s;
    if (!(s = new_step(P, S_RNN, n, NULL, n->out, err, es))) return false;
    s->rnn = (sc_rnn_desc){.gru = p->rnn_gru, .dirs = (int32_t)dirs, .reverse = p->rnn_reverse, .seq = seq, .batch = batch,
                           .input = input, .hidden = hidden};
    int rv[9] = {n->in[0], n->in[1], n->in[2], n->n_in > 3 ? n->in[3] : -1, state[0], state[1], cell, state[2], state[3]};
    memcpy(s->rv, rv, sizeof(rv));
    for (int k = 6; k < 9; k++)
        if (rv[k] >= 0) {
            s->xout[s->n_xout++] = rv[k];
            P->v[P->v[rv[k]].root].ready = true;
        }
    for (int k = 0; k < 6; k++)
        if (!reads(P, s, rv[k], err, es)) return false;
    snprintf(s->info, sizeof(s->info), "seam %s step kernel, %lld launches (a warp per unit: %lld directions x %lld x %lld)",
             p->rnn_gru ? "GRU" : "LSTM", (long long)seq, (long long)dirs, (long long)batch, (long long)hidden);
    return true;
}

bool lower_node(prog *P, cnode *n, char *err, size_t es) {
    const cval xv = P->v[n->in[0]], yv = P->v[n->out]; /* copies: new_const may move P->v */
    const cval *x = &xv, *y = &yv;
    switch (n->p.kind) {
    case K_VIEW: /* the output is the input's memory */
        P->v[n->out].root = x->root;
        if (P->v[x->root].is_const) return upload(P, n->in[0], err, es);
        return true;
    case K_CONV:
        return lower_conv(P, n, err, es);
    case K_DECONV:
        return lower_deconv(P, n, err, es);
    case K_RESIZE:
        return lower_resize(P, n, x, y, err, es);
    case K_RNN:
        return lower_rnn(P, n, x, y, err, es);
    case K_GEMM:
    case K_MATMUL:
        return lower_matmul(P, n, err, es);
    case K_UNARY:
        return lower_unary(P, n, x, y, err, es);
    case K_BINARY:
        return lower_binary(P, n, x, y, err, es);
    case K_BN:
        return lower_bn(P, n, x, y, err, es);
    case K_POOL:
        return lower_pool(P, n, x, y, err, es);
    case K_GPOOL:
        return lower_gpool(P, n, x, y, err, es);
    case K_REDUCE:
        return lower_reduce(P, n, x, y, err, es);
    case K_SOFTMAX:
    case K_LN:
        return lower_rows(P, n, x, y, err, es);
    case K_TRANSPOSE:
        return lower_transpose(P, n, x, y, err, es);
    case K_CONCAT:
        return lower_concat(P, n, x, y, err, es);
    case K_GATHER:
        return lower_gather(P, n, x, y, err, es);
    case K_SLICE:
    case K_EXPAND:
        return lower_slice_expand(P, n, x, y, err, es);
    case K_PAD:
        return lower_pad(P, n, x, y, err, es);
    case K_CAST:
        return lower_cast(P, n, x, y, err, es);
    case K_MASK:
    case K_WHERE:
        return lower_mask(P, n, x, y, err, es);
    }
    return FAIL("subgraph '%s': node %d '%s': %s has no lowering", P->name, n->index, n->name, n->op);
}
