/*
 * dnnl: fusion. The post-op chains a Conv, MatMul or Gemm absorbs, where
 * the fused result is written (in place when it may be), and the patterns
 * exporters write that become one primitive: the decomposed layer norm,
 * GELU with Erf, a scalar factor deferred to the MatMul it feeds.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fuse.h"
#include "ops/attr.h"

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
static const reader *readers_range(const readers_index *ix, const char *name, int32_t *count) {
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
    const reader *r = readers_range(b->readers, name, &n);
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
static bool gelu_nodes(builder *b, int32_t first, int32_t nodes[5]);

/* GELU of x (gelu_nodes) when x's two readers are its first node and one
 * of its Muls: returns the last Mul, the other four nodes in more. */
static int32_t gelu_of(builder *b, const char *x, int32_t more[4]) {
    int32_t rr[2], nodes[5];
    if (dx_readers(b, x, rr, 2) != 2) return -1;
    for (int32_t w = 0; w < 2; w++) {
        seam_node_view st;
        const seam_node_view *s = seam_subgraph_node(b->sg, rr[w], &st);
        if (s->n_inputs < 1 || !s->inputs[0].name || strcmp(s->inputs[0].name, x) || !gelu_nodes(b, rr[w], nodes) ||
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
    const reader *r = readers_range(b->readers, name, &n);
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


/* Node i of the subgraph if it is op `op` reading `name` (as input `pos`,
 * or either when pos < 0), with the output name copied to out_name. */
static bool node_is(const seam_subgraph_view *sg, int32_t i, const char *op, const char *name, int32_t pos,
                    const char **out_name, const char **other) {
    seam_node_view st;
    const seam_node_view *m = seam_subgraph_node(sg, i, &st);
    if (!is_op(m, op) || m->n_outputs < 1 || !m->outputs[0].name) return false;
    int32_t at = -1;
    for (int32_t k = 0; k < m->n_inputs && k < 2; k++)
        if (m->inputs[k].name && !strcmp(m->inputs[k].name, name) && (pos < 0 || pos == k)) at = k;
    if (at < 0) return false;
    if (other) *other = m->n_inputs > 1 && m->inputs[1 - at].name ? m->inputs[1 - at].name : NULL;
    *out_name = m->outputs[0].name;
    return true;
}

static bool scalar_const(builder *b, const char *name, float *v) {
    seam_tensor_view c;
    if (!name || !seam_subgraph_constant(b->sg, name, &c) || c.dtype != SEAM_DTYPE_FLOAT32 || c.nbytes != 4)
        return false;
    memcpy(v, c.data, 4);
    return true;
}

/* Whether value `name` is a float32 vector of c values available now: a
 * constant, or a value made earlier or given to the subgraph (the scale of
 * a layer norm, which the primitive reads at run time). */
static bool vector_of(builder *b, const char *name, int64_t c) {
    if (!name) return false;
    int32_t s = dx_slot_of(b->p, name);
    if (s >= 0) return dx_slot_numel(&b->p->slots[s]) == c && !b->p->slots[s].has_md;
    seam_tensor_view t;
    return seam_subgraph_constant(b->sg, name, &t) && t.dtype == SEAM_DTYPE_FLOAT32 && t.nbytes == 4 * (size_t)c;
}

/* The decomposed layer norm exporters write (torch's LayerNorm before
 * opset 17):
 *     mean = ReduceMean(x, last axis); d = Sub(x, mean)
 *     var = ReduceMean(Pow(d, 2)); y = Div(d, Sqrt(Add(var, eps)))
 *     [y = Add(Mul(y, gamma), beta)]
 * becomes one layer normalization. Called on the first ReduceMean; false
 * (and no error) when the nodes do not form the pattern. */
bool dx_compile_layernorm_pattern(builder *b, bool *fused, int32_t sin) {
    const seam_subgraph_view *sg = b->sg;
    const seam_node_view *n = b->n;
    int32_t r = b->p->slots[sin].rank;
    bool mask[MAXR];
    int64_t keep = 1;
    seam_node_attr_int(n, "keepdims", &keep);
    if (r < 1 || !keep || !dx_reduce_axes(b, r, mask) || !mask[r - 1]) return false;
    for (int32_t d = 0; d < r - 1; d++)
        if (mask[d]) return false;
    const char *x = n->inputs[0].name, *mean = n->outputs[0].name, *d, *sq, *var, *ve, *sd, *y, *other;
    int32_t nodes[9], cnt = 0, rd[2];
    float pw, eps;
    nodes[cnt++] = b->index;
    /* mean -> Sub(x, mean) */
    if (dx_readers(b, mean, rd, 1) != 1 || !node_is(sg, rd[0], "Sub", mean, 1, &d, &other) || strcmp(other, x))
        return false;
    nodes[cnt++] = rd[0];
    /* d -> Pow(d, 2) and Div(d, ...) */
    int32_t dr[2];
    if (dx_readers(b, d, dr, 2) != 2) return false;
    int32_t ipow = node_is(sg, dr[0], "Pow", d, 0, &sq, &other) ? 0 : node_is(sg, dr[1], "Pow", d, 0, &sq, &other) ? 1 : -1;
    if (ipow < 0 || !scalar_const(b, other, &pw) || pw != 2.0f) return false;
    int32_t idiv = dr[1 - ipow];
    nodes[cnt++] = dr[ipow];
    /* Pow -> ReduceMean (same axes) -> Add(eps) -> Sqrt -> the Div */
    int32_t k1;
    if (dx_readers(b, sq, &k1, 1) != 1 || !node_is(sg, k1, "ReduceMean", sq, 0, &var, &other)) return false;
    {
        seam_node_view st;
        const seam_node_view *m = seam_subgraph_node(sg, k1, &st);
        int64_t kd = 1;
        seam_node_attr_int(m, "keepdims", &kd);
        const int64_t *ax;
        int32_t na;
        if (!kd || !seam_node_attr_ints(m, "axes", &ax, &na) || na != 1 || (ax[0] != -1 && ax[0] != r - 1))
            return false;
    }
    nodes[cnt++] = k1;
    if (dx_readers(b, var, &k1, 1) != 1 || !node_is(sg, k1, "Add", var, -1, &ve, &other) || !scalar_const(b, other, &eps))
        return false;
    nodes[cnt++] = k1;
    if (dx_readers(b, ve, &k1, 1) != 1 || !node_is(sg, k1, "Sqrt", ve, 0, &sd, &other)) return false;
    nodes[cnt++] = k1;
    if (dx_readers(b, sd, &k1, 1) != 1 || k1 != idiv || !node_is(sg, k1, "Div", sd, 1, &y, &other) || strcmp(other, d))
        return false;
    nodes[cnt++] = k1;
    /* optional scale and shift */
    const char *scale = NULL, *shift = NULL, *end = y, *o;
    int64_t ch = b->p->slots[sin].dims[r - 1];
    if (dx_readers(b, y, &k1, 1) == 1 && node_is(sg, k1, "Mul", y, -1, &o, &other) && vector_of(b, other, ch)) {
        scale = other, end = o, nodes[cnt++] = k1;
        if (dx_readers(b, end, &k1, 1) == 1 && node_is(sg, k1, "Add", end, -1, &o, &other) && vector_of(b, other, ch))
            shift = other, end = o, nodes[cnt++] = k1;
    }
    /* the output's value info, from the last node */
    seam_value_info out = {0};
    int64_t dims[MAXR];
    {
        seam_node_view st;
        const seam_node_view *m = seam_subgraph_node(sg, nodes[cnt - 1], &st);
        out = m->outputs[0];
        if (out.rank != r) return false;
        for (int32_t k = 0; k < out.rank; k++) dims[k] = out.dims[k];
        out.dims = dims;
    }
    b->n = seam_subgraph_node(sg, b->index, b->storage);
    for (int32_t k = 0; k < r; k++)
        if (out.dims[k] != b->p->slots[sin].dims[k]) return false;
    if (!dx_layernorm_step(b, sin, scale, shift, eps, &out)) return false;
    for (int32_t k = 0; k < cnt; k++) fused[nodes[k]] = true;
    return true;
}

static bool se_defer(builder *b);

/* A Div or Mul by a constant scalar whose only reader is a MatMul (the
 * 1/sqrt(d) of attention): no step; its output is a view of its input
 * carrying the factor, which the MatMul applies to its result as a post-op
 * ((A/c) B = (A B)/c). A squeeze-excite Mul makes no step either (se_defer,
 * below). */
bool dx_defer_scale(builder *b, int32_t sin) {
    if (is_op(b->n, "Mul") && se_defer(b)) return true;
    if (b->err[0]) return false;
    const seam_node_view *n = b->n;
    program *p = b->p;
    if (!b->fuse || n->n_inputs != 2 || !n->inputs[1].name || p->slots[sin].scale != 1.0f) return false;
    if (!full_shape(&n->inputs[0], &n->outputs[0])) return false;
    float c;
    if (!scalar_const(b, n->inputs[1].name, &c) || c == 0.0f || !isfinite(c)) return false;
    float f = is_op(n, "Div") ? 1.0f / c : c;
    const char *out = n->outputs[0].name;
    int32_t rank = n->outputs[0].rank, r = dx_sole_reader(b, out); /* (n is stale after this) */
    seam_node_view st;
    const seam_node_view *m = r >= 0 ? seam_subgraph_node(b->sg, r, &st) : NULL;
    bool ok = m && is_op(m, "MatMul") && m->n_inputs == 2 && m->outputs[0].rank == rank &&
              m->inputs[0].rank == rank && m->inputs[1].rank == rank && rank >= 2 &&
              strcmp(m->inputs[0].name, m->inputs[1].name);
    b->n = seam_subgraph_node(b->sg, b->index, b->storage);
    if (!ok) return false;
    slot shape = p->slots[sin];
    int32_t v = dx_view_slot(p, sin, &shape, shape.has_md ? &shape.md : NULL);
    if (v < 0) return dx_fail(b, "out of memory"), false;
    p->slots[v].name = out;
    p->slots[v].lazy = p->slots[sin].lazy;
    p->slots[v].scale = f;
    return true;
}

/* GELU's five nodes, x * 0.5 * (1 + Erf(x / sqrt(2))) (the 0.5 on either
 * side, Div by sqrt(2) or Mul by 1/sqrt(2)), from the Div/Mul `first`:
 * first, Erf, Add, Mul, Mul (the last one's output is GELU(x)). */
static bool gelu_nodes(builder *b, int32_t first, int32_t nodes[5]) {
    const seam_subgraph_view *sg = b->sg;
    seam_node_view nst;
    const seam_node_view *n = seam_subgraph_node(sg, first, &nst);
    float c;
    if (!(is_op(n, "Div") || is_op(n, "Mul")) || n->n_inputs != 2 || !n->inputs[0].name || !n->inputs[1].name ||
        n->n_outputs < 1 || !n->outputs[0].name || !scalar_const(b, n->inputs[1].name, &c))
        return false;
    float inv = is_op(n, "Div") ? 1.0f / c : c;
    if (fabsf(inv - 0.70710678f) > 1e-4f) return false;
    const char *x = n->inputs[0].name, *dv = n->outputs[0].name, *e, *o, *h, *y, *other;
    int32_t cnt = 0, k;
    nodes[cnt++] = first;
    if (dx_readers(b, dv, &k, 1) != 1 || !node_is(sg, k, "Erf", dv, 0, &e, &other)) return false;
    nodes[cnt++] = k;
    float one, half;
    if (dx_readers(b, e, &k, 1) != 1 || !node_is(sg, k, "Add", e, -1, &o, &other) || !scalar_const(b, other, &one) || one != 1.0f)
        return false;
    nodes[cnt++] = k;
    /* (1 + erf) * x * 0.5 in either order */
    if (dx_readers(b, o, &k, 1) != 1 || !node_is(sg, k, "Mul", o, -1, &h, &other)) return false;
    nodes[cnt++] = k;
    bool have_x = other && !strcmp(other, x), have_half = scalar_const(b, other, &half) && half == 0.5f;
    if (!have_x && !have_half) return false;
    if (dx_readers(b, h, &k, 1) != 1 || !node_is(sg, k, "Mul", h, -1, &y, &other)) return false;
    if (have_x ? !(scalar_const(b, other, &half) && half == 0.5f) : !(other && !strcmp(other, x))) return false;
    nodes[cnt++] = k;
    return true;
}

/* GELU as exporters write it, x * 0.5 * (1 + Erf(x / sqrt(2))) (the 0.5
 * on either side, Div by sqrt(2) or Mul by 1/sqrt(2)), as one gelu_erf
 * eltwise. Called on the Div/Mul feeding the Erf; false when the nodes do
 * not form the pattern. (After a MatMul or Conv it is a post-op instead:
 * dx_collect_chain.) */
bool dx_compile_gelu_pattern(builder *b, bool *fused, int32_t sin) {
    const seam_subgraph_view *sg = b->sg;
    int32_t nodes[5], cnt = 5, k;
    if (!gelu_nodes(b, b->index, nodes)) return false;
    k = nodes[4];
    seam_node_view st;
    const seam_node_view *m = seam_subgraph_node(sg, k, &st);
    seam_value_info out = m->outputs[0];
    int64_t dims[MAXR];
    for (int32_t d = 0; d < out.rank && d < MAXR; d++) dims[d] = out.dims[d];
    out.dims = dims;
    b->n = seam_subgraph_node(sg, b->index, b->storage);
    if (!full_shape(&out, &b->n->inputs[0])) return false;
    program *p = b->p;
    if (p->slots[sin].lazy && (sin = dx_as_plain(b, sin)) < 0)
        return dx_fail(b, "could not copy input 0 to a dense layout"), false;
    dnnl_memory_desc_t src;
    dx_md_of(&p->slots[sin], &src);
    dnnl_eltwise_desc_t ed;
    dnnl_primitive_desc_t pd;
    if (dnnl_eltwise_forward_desc_init(&ed, dnnl_forward_inference, dnnl_eltwise_gelu_erf, &src, 0.0f, 0.0f) != dnnl_success ||
        dnnl_primitive_desc_create(&pd, &ed, dx_ctx.user_scratch, dx_ctx.engine, NULL) != dnnl_success)
        return false;
    for (int32_t j = 0; j < cnt; j++) fused[nodes[j]] = true;
    return dx_layout_step(b, pd, sin, &out);
}

/* ---- the squeeze-excite scale, folded into the next convolution's weights ----
 * A squeeze-excite block ends in Mul(s, x) (torch writes the scale
 * first): x [1, C, H, W] scaled per channel by s [1, C, 1, 1], which the
 * block's projection convolution alone reads. Conv(W, s x) = Conv(W
 * diag(s), x): the weights scaled per input channel at each run replace
 * the Mul's pass over x, which oneDNN runs on its generic `binary jit:uni`
 * in channels-last (efficientnet_b0's first block: 70 us for the Mul over
 * 32 x 112 x 112, 3 us to scale the 16 x 32 weights). Only at batch 1 (s
 * differs per image), for a convolution of one group, and where x has at
 * least SE_FOLD_RATIO times the weights' elements: scaling the weights (a
 * binary over [O/16, I, 16] rows, see scaled_weights in conv_matmul.c)
 * runs at about half the speed per element of the Mul over x (a
 * channels-last row per pixel), and the convolution then reads x from
 * where the depthwise convolution left it rather than the Mul's fresh
 * output. With fusion off the Mul is a step of its own. Measured per block of
 * efficientnet_b0 (bench/results/dnnl_eff.md): x/w of 20 and more (the
 * 112 x 112 to 28 x 28 blocks) win 10-50 us each, 2.4 (14 x 14, 240 into
 * 80) breaks even, 1.75 (672 into 112) loses 15 us. */
#define SE_FOLD_RATIO 8

/* Whether node `mul` is such a Mul, with fusion on: then its reader in
 * *conv, x and s by name. The Mul and the convolution ask the same
 * question (the Mul makes no step, the convolution scales its weights). */
static bool se_fold_of(builder *b, int32_t mul, int32_t *conv, const char **x, const char **s) {
    if (!b->fuse || mul < 0) return false;
    seam_node_view st;
    const seam_node_view *m = seam_subgraph_node(b->sg, mul, &st);
    if (!is_op(m, "Mul") || m->n_inputs != 2 || !m->inputs[0].name || !m->inputs[1].name || m->n_outputs < 1 ||
        !m->outputs[0].name)
        return false;
    const seam_value_info *o = &m->outputs[0];
    if (o->rank < 3 || o->rank > 5 || o->dims[0] != 1 || dx_value_numel(o) <= 0) return false;
    int32_t ks = -1;
    for (int32_t k = 0; k < 2 && ks < 0; k++) {
        const seam_value_info *v = &m->inputs[k], *w = &m->inputs[1 - k];
        bool chan = v->rank == o->rank && v->dims[1] == o->dims[1] && w->rank == o->rank;
        for (int32_t d = 0; chan && d < o->rank; d++) chan = (d == 1 || v->dims[d] == 1) && w->dims[d] == o->dims[d];
        if (chan) ks = k;
    }
    if (ks < 0 || !strcmp(m->inputs[0].name, m->inputs[1].name)) return false;
    const char *sn = m->inputs[ks].name, *xn = m->inputs[1 - ks].name, *out = m->outputs[0].name;
    /* the scale read by this Mul alone: it is read again at the
     * convolution (its weights scaled then), and no node in between may
     * take its bytes (a sum post-op in place) */
    if (dx_sole_reader(b, sn) != mul) return false;
    int64_t xcount = dx_value_numel(o), channels = o->dims[1];
    int32_t rank = o->rank;
    program *p = b->p;
    int32_t sx = dx_slot_of(p, xn), ss = dx_slot_of(p, sn);
    if (sx < 0 || ss < 0) return false; /* made earlier (not constants: those would fold at compile time) */
    const slot *a = &p->slots[sx], *c = &p->slots[ss];
    if (a->lazy || a->pad_pending || a->scale != 1.0f || c->lazy || c->pad_pending || c->scale != 1.0f) return false;
    /* x channels-last or plain: the convolution then runs on brgconv with
     * weights blocked on the outputs only, which scaled_weights scales
     * fast. x in a blocked layout (aBcd8b, as regnet_y_400mf's grouped
     * convolutions write it) would keep the convolution on jit_1x1 with
     * weights blocked on both dims, scaled by the slow reorder (50 us for
     * 48 x 48 there, against 23 us for the Mul). */
    if (a->has_md && (a->md.format_kind != dnnl_blocked || a->md.format_desc.blocking.inner_nblks > 0)) return false;
    int32_t r = dx_sole_reader(b, out);
    if (r < 0) return false;
    const seam_node_view *n = seam_subgraph_node(b->sg, r, &st);
    if (!is_op(n, "Conv") || n->n_inputs < 2 || !n->inputs[0].name || strcmp(n->inputs[0].name, out) ||
        !n->inputs[1].name || !strcmp(n->inputs[1].name, out) || !dx_const_input(n, 1) || n->inputs[1].rank != rank ||
        n->inputs[1].dims[1] != channels || node_attr_int(dx_ir(n), "group", 1) != 1)
        return false;
    if (n->n_inputs > 2 && n->inputs[2].name && !strcmp(n->inputs[2].name, out)) return false;
    int64_t wcount = dx_value_numel(&n->inputs[1]);
    if (wcount <= 0 || wcount * SE_FOLD_RATIO > xcount) return false;
    *conv = r, *x = xn, *s = sn;
    return true;
}

/* The Mul side: its output becomes a view of x (the scale is the
 * convolution's to apply). False when the Mul is not such a block's. */
static bool se_defer(builder *b) {
    int32_t conv;
    const char *x, *s;
    bool ok = se_fold_of(b, b->index, &conv, &x, &s);
    b->n = seam_subgraph_node(b->sg, b->index, b->storage);
    if (!ok) return false;
    program *p = b->p;
    int32_t sx = dx_slot_of(p, x);
    slot shape = p->slots[sx];
    int32_t v = dx_view_slot(p, sx, &shape, shape.has_md ? &shape.md : NULL);
    if (v < 0) return dx_fail(b, "out of memory"), false;
    p->slots[v].name = b->n->outputs[0].name;
    seam_node_view st;
    const seam_node_view *c = seam_subgraph_node(b->sg, conv, &st);
    dx_log(p, "node %d '%s' (%s): no step of its own: the squeeze-excite scale '%s' goes into the weights of node %d "
              "'%s' (Conv), scaled per input channel at each run",
           b->n->index, b->n->name ? b->n->name : "", b->n->op_type, s, c->index, c->name ? c->name : "");
    b->n = seam_subgraph_node(b->sg, b->index, b->storage);
    return true;
}

/* The convolution side (node b->index, reading value `input` as slot
 * sin): the slot of the squeeze-excite scale to apply to its weights, as a
 * plain vector of the input's channels, or -1 when its input is no such
 * Mul's. Sets the builder's error (and returns -1) only when out of
 * memory. */
int32_t dx_se_scale_for_conv(builder *b, int32_t sin, const char *input) {
    if (!b->fuse || !input || sin < 0 || b->p->slots[sin].alias < 0) return -1; /* (se_defer made a view) */
    int32_t mul = -1;
    for (int32_t i = b->index - 1; i >= 0 && mul < 0; i--) {
        seam_node_view st;
        const seam_node_view *m = seam_subgraph_node(b->sg, i, &st);
        for (int32_t k = 0; k < m->n_outputs; k++)
            if (m->outputs[k].name && !strcmp(m->outputs[k].name, input)) mul = i;
    }
    int32_t conv = -1;
    const char *x, *s;
    bool ok = mul >= 0 && se_fold_of(b, mul, &conv, &x, &s) && conv == b->index;
    b->n = seam_subgraph_node(b->sg, b->index, b->storage);
    if (!ok) return -1;
    program *p = b->p;
    int32_t ss = dx_as_plain(b, dx_slot_of(p, s));
    if (ss < 0) return dx_fail(b, "could not reorder the squeeze-excite scale to the plain layout"), -1;
    slot vec;
    memset(&vec, 0, sizeof(vec));
    vec.rank = 1;
    vec.dims[0] = p->slots[ss].dims[1];
    int32_t v = dx_view_slot(p, ss, &vec, NULL);
    if (v < 0) return dx_fail(b, "out of memory"), -1;
    return v;
}

/* Layer normalization over the last axis, with optional scale and shift
 * (constant vectors): the LayerNormalization op, or the decomposed form
 * exporters write (see compile_layernorm_pattern). */
bool dx_layernorm_step(builder *b, int32_t sin, const char *scale, const char *shift, float eps,
                       const seam_value_info *out) {
    program *p = b->p;
    int32_t sc = scale ? dx_named_slot(b, scale) : -1, sh = shift ? dx_named_slot(b, shift) : -1;
    if ((scale && sc < 0) || (shift && sh < 0)) return dx_fail(b, "scale and bias must be float32 constants"), false;
    int64_t c = p->slots[sin].dims[p->slots[sin].rank - 1];
    for (int32_t k = 0; k < 2; k++) {
        int32_t t = k ? sh : sc;
        if (t >= 0 && dx_slot_numel(&p->slots[t]) != c)
            return dx_fail(b, "scale and bias must have one value per normalized element"), false;
        if (t >= 0) { /* as a [C] vector, whatever rank the file gives */
            slot v = p->slots[t];
            v.rank = 1, v.dims[0] = c, v.has_md = false;
            if (k) sh = dx_view_slot(p, sh, &v, NULL);
            else sc = dx_view_slot(p, sc, &v, NULL);
            if ((k ? sh : sc) < 0) return dx_fail(b, "out of memory"), false;
        }
    }
    dnnl_memory_desc_t src;
    dx_md_of(&p->slots[sin], &src);
    unsigned flags = (sc >= 0 ? dnnl_use_scale : 0) | (sh >= 0 ? dnnl_use_shift : 0);
    dnnl_layer_normalization_desc_t ld;
    if (dnnl_layer_normalization_forward_desc_init(&ld, dnnl_forward_inference, &src, NULL, eps, flags) != dnnl_success)
        return dx_fail(b, "oneDNN refuses this layer normalization"), false;
    int32_t sd = dx_output_slot(b, out);
    if (sd < 0) return dx_fail(b, "out of memory"), false;
    int32_t kinds[4] = {DNNL_ARG_SRC, DNNL_ARG_DST}, slots[4] = {sin, sd};
    int32_t na = 2;
    if (sc >= 0) kinds[na] = DNNL_ARG_SCALE, slots[na++] = sc;
    if (sh >= 0) kinds[na] = DNNL_ARG_SHIFT, slots[na++] = sh;
    return dx_add_step(b, &ld, NULL, na, kinds, slots);
}
