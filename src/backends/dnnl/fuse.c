/*
 * dnnl: fusion. The post-op chains a Conv, MatMul or Gemm absorbs, where
 * the fused result is written (in place when it may be), and the step of
 * a primitive with weights and its chain. (The patterns exporters write
 * that become one primitive are pattern.c's.)
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuse.h"
#include "ops/attr.h"

/* ---- post-op chains ----
 * A Conv, MatMul or Gemm absorbs the run of nodes that alone read its
 * result, as long as each is an eltwise op or a binary op whose other
 * operand exists already (a weight, a boundary input, or a value made
 * earlier): the residual Add and the Relu after a ResNet block's last
 * convolution, a MatMul's bias Add. oneDNN applies them to each output
 * tile while it is in registers: no extra pass over memory. */

/* Whether node m only gives its input's bytes a new shape: a view op, or
 * a Transpose that moves nothing but 1-sized dims. */
static bool reshape_like(const seam_node_view *m) {
    if (IN_LIST(m, view_ops)) return true;
    if (!is_op(m, "Transpose") || m->inputs[0].rank < 1) return false;
    const int64_t *perm;
    int32_t np = 0, last = -1;
    bool seen[MAXR] = {false};
    if (!seam_node_attr_ints(m, "perm", &perm, &np) || np != m->inputs[0].rank || np > MAXR) return false;
    for (int32_t d = 0; d < np; d++) {
        if (perm[d] < 0 || perm[d] >= np || seen[perm[d]]) return false;
        seen[perm[d]] = true;
        if (m->inputs[0].dims[perm[d]] == 1) continue;
        if (perm[d] < last) return false;
        last = (int32_t)perm[d];
    }
    return true;
}

/* Entry k's output, kept to cut the chain there later. */
static void keep_out(chain *c, int32_t k) {
    c->outs[k] = c->out;
    for (int32_t d = 0; d < c->out.rank && d < MAXR; d++) c->outs_dims[k][d] = c->out.dims[d];
    c->outs[k].dims = c->outs_dims[k];
}

/* Fills c with the nodes after the producer of `v` that can become its
 * post-ops (none when fusion is off). Node views are invalidated: the
 * caller fetches its node again. */
/* An activation written as x times a gate of x: SiLU, x * Sigmoid(x), and
 * HardSwish as torch exports it before opset 14, x * HardSigmoid(x) with
 * alpha 1/6 and beta 1/2. The two readers of x are the gate and a Mul of x
 * by the gate's output (read by nothing else). Returns the Mul (its gate in
 * *gate, the one oneDNN eltwise of the pair in *alg), or -1. oneDNN's swish
 * with alpha 1 is SiLU exactly; its hardswish (2.6: x * min(max(x + 3, 0),
 * 6) / 6) is that HardSwish exactly. */

/* GELU of x (dx_gelu_nodes) when x's two readers are its first node and one
 * of its Muls: returns the last Mul, the other four nodes in more. */
static int32_t gelu_of(builder *b, const char *x, int32_t more[4]) {
    int32_t rr[2], nodes[5];
    if (dx_readers(b, x, rr, 2) != 2) return -1;
    for (int32_t w = 0; w < 2; w++) {
        seam_node_view st;
        const seam_node_view *s = seam_subgraph_node(b->sg, rr[w], &st);
        if (s->n_inputs < 1 || !s->inputs[0].name || strcmp(s->inputs[0].name, x) || !dx_gelu_nodes(b, rr[w], nodes) ||
            (nodes[3] != rr[1 - w] && nodes[4] != rr[1 - w]))
            continue;
        memcpy(more, nodes, 4 * sizeof(int32_t));
        return nodes[4];
    }
    return -1;
}

static int32_t gated_of(builder *b, const char *x, int32_t *gate, dnnl_alg_kind_t *alg) {
    int32_t rr[2];
    if (dx_readers(b, x, rr, 2) != 2) return -1;
    for (int32_t w = 0; w < 2; w++) {
        seam_node_view st, st2;
        const seam_node_view *s = seam_subgraph_node(b->sg, rr[w], &st);
        if (s->n_outputs < 1 || !s->outputs[0].name || s->n_inputs < 1 || !s->inputs[0].name ||
            strcmp(s->inputs[0].name, x))
            continue;
        if (is_op(s, "Sigmoid")) {
            *alg = dnnl_eltwise_swish;
        } else if (is_op(s, "HardSigmoid") && fabsf(node_attr_float(dx_ir(s), "alpha", 0.2f) - 1.0f / 6.0f) < 1e-6f &&
                   node_attr_float(dx_ir(s), "beta", 0.5f) == 0.5f) {
            *alg = dnnl_eltwise_hardswish;
        } else {
            continue;
        }
        if (dx_sole_reader(b, s->outputs[0].name) != rr[1 - w]) continue;
        const char *so = s->outputs[0].name;
        const seam_node_view *m = seam_subgraph_node(b->sg, rr[1 - w], &st2);
        if (!is_op(m, "Mul") || m->n_inputs != 2 || !m->inputs[0].name || !m->inputs[1].name) continue;
        bool pair = (!strcmp(m->inputs[0].name, x) && !strcmp(m->inputs[1].name, so)) ||
                    (!strcmp(m->inputs[1].name, x) && !strcmp(m->inputs[0].name, so));
        if (!pair) continue;
        *gate = rr[w];
        return rr[1 - w];
    }
    return -1;
}

void dx_collect_chain(builder *b, const seam_value_info *v, bool allow_views, chain *c) {
    memset(c, 0, sizeof(*c));
    c->skip = -1;
    c->out = *v;
    for (int32_t d = 0; d < v->rank && d < MAXR; d++) c->out_dims[d] = v->dims[d], c->prim_dims[d] = v->dims[d];
    c->out.dims = c->out_dims;
    c->prim_rank = v->rank;
    for (int32_t k = 0; k < MAX_CHAIN; k++) c->aux[k] = -1;
    while (b->fuse && c->n < MAX_CHAIN) {
        int32_t sig = -1, r = dx_sole_reader(b, c->out.name), gelu[4] = {-1, -1, -1, -1};
        bool is_gelu = false;
        dnnl_alg_kind_t gated = dnnl_alg_kind_undef;
        if (r < 0) r = gated_of(b, c->out.name, &sig, &gated);
        if (r < 0 && (r = gelu_of(b, c->out.name, gelu)) >= 0) is_gelu = true;
        if (r < 0) break;
        seam_node_view st;
        const seam_node_view *m = seam_subgraph_node(b->sg, r, &st);
        if (m->n_outputs < 1 || !m->outputs[0].name || m->outputs[0].rank < 0 || m->outputs[0].rank > MAXR) break;
        int32_t k = c->n;
        if (allow_views && reshape_like(m) && m->n_outputs == 1) { /* the chain goes on in the new shape */
            c->is_view[k] = true;
            c->reshaped = true;
            c->node[k] = r;
            c->name[k] = m->name, c->op[k] = m->op_type;
            c->n++;
            c->out = m->outputs[0];
            for (int32_t d = 0; d < c->out.rank; d++) c->out_dims[d] = m->outputs[0].dims[d];
            c->out.dims = c->out_dims;
            keep_out(c, k);
            continue;
        }
        if (m->outputs[0].rank != c->out.rank) break;
        bool same = true;
        for (int32_t d = 0; d < c->out.rank; d++) same &= m->outputs[0].dims[d] == c->out.dims[d];
        if (!same) break;
        if (sig >= 0) { /* x * Sigmoid(x), x * HardSigmoid(x) */
            c->alg[k] = gated, c->alpha[k] = gated == dnnl_eltwise_swish ? 1.0f : 0.0f, c->beta[k] = 0.0f;
            c->aux[k] = sig;
        } else if (is_gelu) { /* the last Mul is the entry, the four others go with it */
            c->alg[k] = dnnl_eltwise_gelu_erf, c->alpha[k] = 0.0f, c->beta[k] = 0.0f;
            memcpy(c->more[k], gelu, sizeof(gelu));
            c->n_more[k] = 4;
        } else if (IN_LIST(m, eltwise_ops)) {
            if (!dx_eltwise_of(m, b->sg, &c->alg[k], &c->alpha[k], &c->beta[k])) break;
            c->clip01[k] = dx_clips_after(m);
        } else if (IN_LIST(m, binary_ops) && m->n_inputs == 2 && m->inputs[0].name && m->inputs[1].name) {
            int32_t mine = !strcmp(m->inputs[0].name, c->out.name) ? 0 : 1;
            if (!strcmp(m->inputs[1 - mine].name, c->out.name)) break; /* x op x */
            if (mine == 1 && !commutative(m)) break;
            const seam_value_info *o = &m->inputs[1 - mine];
            if (o->rank > c->out.rank) break;
            bool bcast = true;
            for (int32_t d = 0; d < o->rank; d++) {
                int64_t od = o->dims[d], rd = c->out.dims[c->out.rank - o->rank + d];
                bcast &= od == rd || od == 1;
            }
            if (!bcast) break;
            bool full = o->rank == c->out.rank;
            for (int32_t d = 0; full && d < o->rank; d++) full = o->dims[d] == c->out.dims[d];
            if (c->reshaped && !full) break; /* a broadcast in another shape than the primitive's */
            c->full[k] = full;
            seam_value_info ov = *o;
            int32_t s = dx_slot_of(b->p, ov.name);
            if (s < 0) s = dx_input_slot(b, &ov); /* a constant */
            if (s < 0) break;                  /* made later: not yet available */
            c->is_binary[k] = true;
            c->alg[k] = dx_binary_alg(m);
            c->operand[k] = s;
        } else {
            break;
        }
        m = seam_subgraph_node(b->sg, r, &st);
        c->node[k] = r;
        c->name[k] = m->name, c->op[k] = is_gelu ? "Mul: the end of a GELU with Erf, its 5 nodes" : m->op_type;
        c->n++;
        c->out = m->outputs[0];
        for (int32_t d = 0; d < c->out.rank && d < MAXR; d++) c->out_dims[d] = m->outputs[0].dims[d];
        c->out.dims = c->out_dims;
        keep_out(c, k);
    }
}

void dx_chain_cut(chain *c, int32_t n, const seam_value_info *first) {
    c->n = n;
    c->out = n ? c->outs[n - 1] : *first;
    for (int32_t d = 0; d < c->out.rank && d < MAXR; d++) c->out_dims[d] = c->out.dims[d];
    c->out.dims = c->out_dims;
    if (c->skip >= n) c->skip = -1;
}

/* The entry of the chain that becomes a sum post-op: the first Add of a
 * whole tensor (-1: none). */
int32_t dx_chain_sum_entry(const chain *c) {
    for (int32_t k = 0; k < c->n; k++)
        if (!c->is_view[k] && c->is_binary[k] && c->full[k] && c->alg[k] == dnnl_binary_add) return k;
    return -1;
}

/* Whether entry k of the chain may move to the front of its post-ops (as
 * a sum, or as the primitive's bias): every post-op before it is an Add or
 * a Sub, which commute with adding it, and no factor comes first. */
bool dx_chain_may_lead(const chain *c, int32_t k) {
    if (c->prescale != 0.0f && c->prescale != 1.0f) return false;
    for (int32_t j = 0; j < k; j++)
        if (!c->is_view[j] && !(c->is_binary[j] && (c->alg[j] == dnnl_binary_add || c->alg[j] == dnnl_binary_sub)))
            return false;
    return true;
}

/* The chain's post-ops as a primitive attribute (NULL when empty), and the
 * execution arguments of its binary operands, appended at kinds/slots[*n].
 * A binary operand of the result's shape joins in the layout dst has (it
 * is reordered to it when needed); a broadcast one joins plain, its dims
 * right-aligned with 1s. The first Add of a whole tensor becomes a sum
 * (first of all when c->sum_first); entry c->skip (the primitive's bias)
 * is left out. Returns false on an error (message set). */
bool dx_chain_attr(builder *b, const chain *c, const dnnl_memory_desc_t *dst, dnnl_primitive_attr_t *attr,
                   int32_t *kinds, int32_t *slots, int32_t *n_args, int32_t *sum_from) {
    *attr = NULL;
    *sum_from = -1;
    bool scaled = c->prescale != 0.0f && c->prescale != 1.0f;
    int32_t kept = 0;
    for (int32_t k = 0; k < c->n; k++) kept += !c->is_view[k] && k != c->skip;
    if (!kept && !scaled) return true;
    dnnl_post_ops_t po;
    if (dnnl_post_ops_create(&po) != dnnl_success) return dx_fail(b, "out of memory"), false;
    int32_t at = 0; /* post-ops appended so far */
    if (scaled) dnnl_post_ops_append_eltwise(po, 1.0f, dnnl_eltwise_linear, c->prescale, 0.0f), at++;
    slot prim_shape;
    memset(&prim_shape, 0, sizeof(prim_shape));
    prim_shape.rank = c->prim_rank;
    for (int32_t d = 0; d < c->prim_rank; d++) prim_shape.dims[d] = c->prim_dims[d];
    int32_t ks = dst ? dx_chain_sum_entry(c) : -1;
    for (int32_t pass = 0; pass < 2; pass++) /* pass 0: the sum alone, when it leads */
    for (int32_t k = 0; k < c->n; k++) {
        if (pass == 0 && !(c->sum_first && k == ks)) continue;
        if (pass == 1 && c->sum_first && k == ks) continue;
        if (c->is_view[k] || k == c->skip) continue;
        if (!c->is_binary[k]) {
            dnnl_post_ops_append_eltwise(po, 1.0f, c->alg[k], c->alpha[k], c->beta[k]), at++;
            if (c->clip01[k]) dnnl_post_ops_append_eltwise(po, 1.0f, dnnl_eltwise_clip_v2, 0.0f, 1.0f), at++;
            continue;
        }
        int32_t s = c->operand[k];
        slot like = b->p->slots[s];
        bool full = c->full[k];
        if (full && c->reshaped) { /* the same bytes seen in the primitive's shape */
            s = dx_as_plain(b, s);
            if (s >= 0) s = dx_view_slot(b->p, s, &prim_shape, NULL);
            if (s < 0) {
                dnnl_post_ops_destroy(po);
                return dx_fail(b, "out of memory"), false;
            }
            like = b->p->slots[s];
        }
        dnnl_memory_desc_t md;
        /* Adding a whole tensor: a sum post-op (dst += result), with the
         * operand put in dst beforehand (see sum_dst). oneDNN's fast kernels
         * take that, not a same-shape binary post-op. */
        if (k == ks) {
            dnnl_post_ops_append_sum(po, 1.0f), at++;
            *sum_from = s;
            continue;
        }
        if (full && dst) {
            s = dx_in_layout(b, s, dst);
        } else {
            s = dx_as_plain(b, s);
            /* (a broadcast comes before any Reshape-like node of the chain:
             * it is aligned to the primitive's own shape) */
            if (s >= 0 && like.rank < c->prim_rank) {
                slot v = like;
                int32_t shift = c->prim_rank - like.rank;
                for (int32_t d = c->prim_rank - 1; d >= 0; d--) v.dims[d] = d >= shift ? like.dims[d - shift] : 1;
                v.rank = c->prim_rank;
                v.has_md = false;
                s = dx_view_slot(b->p, s, &v, NULL);
            }
        }
        if (s < 0) {
            dnnl_post_ops_destroy(po);
            return dx_fail(b, "could not lay out a fused operand"), false;
        }
        dx_md_of(&b->p->slots[s], &md);
        dnnl_post_ops_append_binary(po, c->alg[k], &md);
        kinds[*n_args] = DNNL_ARG_ATTR_MULTIPLE_POST_OP(at) | DNNL_ARG_SRC_1;
        slots[(*n_args)++] = s;
        at++;
    }
    bool ok = dnnl_primitive_attr_create(attr) == dnnl_success && dnnl_primitive_attr_set_post_ops(*attr, po) == dnnl_success &&
              dnnl_primitive_attr_set_scratchpad_mode(*attr, dnnl_scratchpad_mode_user) == dnnl_success;
    dnnl_post_ops_destroy(po);
    if (!ok) return dx_fail(b, "out of memory"), false;
    return true;
}

/* Whether value `name` is read by a node after the one being compiled,
 * other than the nodes fused into it. */
static bool read_later(builder *b, const char *name, const chain *c) {
    int32_t n;
    const reader *r = dx_readers_range(b->readers, name, &n);
    for (int32_t k = 0; k < n; k++) {
        if (r[k].node < 0) return true;
        if (r[k].node <= b->index) continue;
        bool in_chain = false;
        for (int32_t q = 0; q < c->n; q++) in_chain |= c->node[q] == r[k].node;
        if (!in_chain) return true;
    }
    return false;
}

/* Whether slot s may be overwritten by the primitive now compiled: its
 * bytes are an intermediate of this program, in layout md, and no value
 * living in those bytes (s, or any view of the same buffer) is read after
 * this node, except by the nodes fused into it. */
static bool may_overwrite(builder *b, int32_t s, const dnnl_memory_desc_t *md, const chain *c) {
    program *p = b->p;
    int32_t root = dx_root_of(p, s);
    if (!p->slots[root].bytes || p->slots[root].boundary) return false;
    dnnl_memory_desc_t cur;
    dx_md_of(&p->slots[s], &cur);
    if (!dnnl_memory_desc_equal(&cur, md)) return false;
    /* nor bytes the primitive reads while it writes them: an input of its
     * own in the same buffer (x in conv(x) + x; a source written in place
     * into a Concat's output that the primitive reads, concat.c) */
    seam_node_view st;
    const seam_node_view *n = seam_subgraph_node(b->sg, b->index, &st);
    for (int32_t i = 0; i < n->n_inputs; i++) {
        int32_t si = n->inputs[i].name ? dx_slot_of(p, n->inputs[i].name) : -1;
        if (si >= 0 && dx_root_of(p, si) == root) return false;
    }
    for (int32_t k = 0; k < p->n_slots; k++)
        if (dx_root_of(p, k) == root && p->slots[k].name[0] != '(' && read_later(b, p->slots[k].name, c)) return false;
    return true;
}

/* dst for a primitive with a sum post-op reading sum_from: sum_from's own
 * buffer when nothing reads it later (in place, no copy), else a new slot
 * the operand is copied into just before the primitive. */
int32_t dx_sum_dst(builder *b, const chain *c, int32_t sum_from, const seam_value_info *result,
                   const dnnl_memory_desc_t *md, int32_t *final_out) {
    program *p = b->p;
    *final_out = -1;
    if (dx_slot_of(p, result->name) < 0 && may_overwrite(b, sum_from, md, c)) {
        slot shape = p->slots[sum_from];
        int32_t v = dx_view_slot(p, sum_from, &shape, md);
        if (v >= 0) p->slots[v].name = result->name;
        return v;
    }
    int32_t sd = dx_result_slot(b, result, md, final_out);
    if (sd < 0 || !dx_add_reorder(b, sum_from, sd)) return -1;
    return sd;
}

/* dst for a chain that ends in another shape (through Reshape-like nodes):
 * the final value's slot, plain, in its own shape, which the primitive
 * writes through a view in its own shape. A sum operand is put there first
 * (same bytes, any shape), or is that slot when it may be overwritten. */
int32_t dx_reshaped_dst(builder *b, const chain *c, int32_t sum_from, const seam_value_info *result, const slot *prim) {
    program *p = b->p;
    slot rshape;
    memset(&rshape, 0, sizeof(rshape));
    rshape.rank = result->rank;
    for (int32_t d = 0; d < result->rank; d++) rshape.dims[d] = result->dims[d];
    int32_t fs = -1;
    if (sum_from >= 0 && dx_slot_of(p, result->name) < 0) {
        dnnl_memory_desc_t pm;
        dx_md_of(&p->slots[sum_from], &pm);
        if (!p->slots[sum_from].has_md && may_overwrite(b, sum_from, &pm, c)) {
            fs = dx_view_slot(p, sum_from, &rshape, NULL);
            if (fs < 0) return -1;
            p->slots[fs].name = result->name;
        }
    }
    if (fs < 0) {
        fs = dx_output_slot(b, result);
        if (fs >= 0 && sum_from >= 0) {
            int32_t v = dx_view_slot(p, sum_from, &rshape, NULL);
            if (v < 0 || !dx_add_reorder(b, v, fs)) return -1;
        }
    }
    return fs >= 0 ? dx_view_slot(p, fs, prim, NULL) : -1;
}

/* Marks a chain's nodes as done by the primitive that absorbed them. */
void dx_take_chain(const chain *c, bool *fused) {
    for (int32_t k = 0; k < c->n; k++) {
        fused[c->node[k]] = true;
        if (c->aux[k] >= 0) fused[c->aux[k]] = true;
        for (int32_t j = 0; j < c->n_more[k]; j++) fused[c->more[k][j]] = true;
    }
}

bool dx_weighted_step(builder *b, dnnl_primitive_desc_t pd, int32_t n_args, const int32_t *kinds, int32_t *slots,
                      int32_t src, int32_t w, int32_t dst, int32_t sb, int32_t final_slot) {
    slots[0] = src, slots[1] = w, slots[2] = dst;
    if (sb >= 0) slots[3] = sb; /* else the post-op operands start at 3 */
    bool ok = dx_add_prim(b, pd, n_args, kinds, slots);
    b->chain = NULL;
    dnnl_primitive_desc_destroy(pd);
    if (ok && final_slot >= 0) ok = dx_add_reorder(b, dst, final_slot);
    return ok;
}

void dx_log_rearranged(builder *b, const chain *whole, const chain *c, const char *how) {
    char cut[200] = "";
    if (c->n < whole->n)
        snprintf(cut, sizeof(cut), "%s'%s' (%s) and the nodes after it run as steps of their own", how[0] ? "; " : "",
                 whole->name[c->n], whole->op[c->n]);
    dx_log(b->p, "node %d '%s' (%s): compiled otherwise than written, where oneDNN has a fast kernel: %s%s", b->n->index,
           b->n->name ? b->n->name : "", b->n->op_type, how, cut);
}

