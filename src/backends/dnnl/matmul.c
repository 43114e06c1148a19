/*
 * dnnl: matrix products (one op family, see program.h): MatMul and Gemm
 * on oneDNN's matmul, B read in place or packed once when constant, with
 * their post-op chains.
 */
#include <string.h>

#include "matmul.h"
#include "ops/attr.h"

static bool supports_matmul(const seam_node_view *n, char *why, size_t wn) {
    if (n->inputs[0].rank < 2 || n->inputs[1].rank < 2)
        return dx_refuse(why, wn, "MatMul with a 1-D operand is not supported");
    return true;
}

static bool supports_gemm(const seam_node_view *n, char *why, size_t wn) {
    const ir_node *ir = dx_ir(n);
    if (node_attr_int(ir, "transA", 0)) return dx_refuse(why, wn, "Gemm transA=1 is not supported");
    if (node_attr_float(ir, "alpha", 1) != 1 || node_attr_float(ir, "beta", 1) != 1)
        return dx_refuse(why, wn, "Gemm with alpha or beta other than 1 is not supported");
    if (n->n_inputs > 2 && n->inputs[2].name && n->inputs[2].rank != 1)
        return dx_refuse(why, wn, "Gemm with a C of rank other than 1 is not supported");
    return true;
}

/* Whether the chain has a Reshape-like node. */
static bool views_in(const chain *c) {
    for (int32_t k = 0; k < c->n; k++)
        if (c->is_view[k]) return true;
    return false;
}

/* Arrangement `alt` of a matrix product's post-op chain: bit 1, the first
 * Add of a row vector (the bias of a Linear layer) given to the product as
 * its bias (*sb, *bias), not as a post-op (tried first: faster); bit 0,
 * the sum first, which oneDNN's fast kernels may take when they do not
 * take the chain as written (its gemm-based kernel, without AVX-512, does
 * not take a sum after a binary Add). Both only where the post-ops before
 * them are Adds or Subs, which commute with them. False when the
 * arrangement does not apply (or is the one as written). */
static bool matmul_candidate(builder *b, chain *c, int32_t alt, int64_t n_cols, int32_t r, int32_t *sb,
                             dnnl_memory_desc_t *bias) {
    if (alt & 1) {
        int32_t ks = dx_chain_sum_entry(c);
        if (ks <= 0 || !dx_chain_may_lead(c, ks)) return false;
        c->sum_first = true;
    }
    if (alt & 2) {
        if (*sb >= 0) return false;
        int32_t kb = -1;
        for (int32_t k = 0; k < c->n && kb < 0; k++) {
            if (c->is_view[k] || !c->is_binary[k] || c->full[k] || c->alg[k] != dnnl_binary_add) continue;
            const slot *o = &b->p->slots[c->operand[k]];
            if (dx_slot_numel(o) == n_cols && o->rank >= 1 && o->dims[o->rank - 1] == n_cols) kb = k;
        }
        if (kb < 0 || !dx_chain_may_lead(c, kb)) return false;
        int32_t s = dx_as_plain(b, c->operand[kb]);
        if (s < 0) return false;
        slot bv;
        memset(&bv, 0, sizeof(bv));
        bv.rank = r;
        for (int32_t d = 0; d < r; d++) bv.dims[d] = d == r - 1 ? n_cols : 1;
        s = dx_view_slot(b->p, s, &bv, NULL);
        if (s < 0) return false;
        dx_md_of(&b->p->slots[s], bias);
        *sb = s;
        c->skip = kb;
    }
    return true;
}

/* A matrix product as compile_matmul makes it, step by step. */
typedef struct matmul {
    chain c;                 /* the post-op chain (as collected, then the one made) */
    int32_t r;               /* the product's rank (2 when flat) */
    int64_t n_cols;          /* the output's last dim */
    bool flat;               /* rows times 2-D constant weights as one 2-D product */
    int32_t sin;             /* A's slot */
    float prescale;          /* A's and B's pending factors (see defer_scale) */
    int32_t a;               /* B's view (its packed copy once made) */
    bool packed;             /* B constant: packed once into the layout the primitive prefers */
    dnnl_memory_desc_t w;    /* B as stored */
    dnnl_memory_desc_t any_w;
    int32_t sa;              /* A's view */
    dnnl_memory_desc_t src;
    bool bf16;               /* precision=bf16 with constant B: A and B in bfloat16, A converted as it is read */
    int32_t sb;              /* Gemm's C as a row, or -1 */
    dnnl_memory_desc_t bias;
    int32_t tnode;           /* the Transpose the product writes through, or -1 */
    seam_value_info tout;    /* its output */
    int64_t tdims[MAXR];
    dnnl_memory_desc_t tmd;  /* the product's dst as a view of tout */
    slot rs;                 /* the product's own shape (the chain may end in another) */
    dnnl_memory_desc_t dst;
} matmul;

/* A and B readied (B plain unless a strided view of the product's rank;
 * A copied dense when it runs flat), and whether the product runs flat:
 * rows times 2-D constant weights (a Linear layer on [B, S, K]) as one 2-D
 * product [B*S, K] x [K, N], as oneDNN 2.6 keeps weights packed only for
 * 2-D products. The chain's broadcast operands must then be one row (a
 * bias). *sw is B's slot. */
static bool matmul_operands(builder *b, matmul *m, int32_t *sw) {
    program *p = b->p;
    const seam_node_view *n = b->n;
    int32_t r = m->r = n->outputs[0].rank;
    *sw = dx_input_slot(b, &n->inputs[1]);
    if (*sw >= 0 && !(p->slots[*sw].lazy && p->slots[*sw].rank == r)) *sw = dx_as_plain(b, *sw);
    if (*sw < 0) return dx_fail(b, "input 1 is not available"), false;
    if (p->slots[m->sin].lazy && p->slots[m->sin].rank != r) m->sin = dx_as_plain(b, m->sin);
    if (m->sin < 0) return dx_fail(b, "input 0 is not available"), false;
    m->prescale = p->slots[m->sin].scale * p->slots[*sw].scale;
    int64_t n_cols = m->n_cols = n->outputs[0].rank >= 1 ? n->outputs[0].dims[r - 1] : 0;
    bool rows_ok = b->fuse && p->slots[*sw].constant && p->slots[*sw].rank == 2 && r > 2 &&
                   p->slots[m->sin].rank == r && n_cols > 0;
    for (int32_t k = 0; rows_ok && k < m->c.n; k++)
        if (m->c.is_binary[k] && !m->c.full[k]) {
            const slot *o = &p->slots[m->c.operand[k]];
            int64_t cnt = dx_slot_numel(o);
            rows_ok = o->rank <= 2 && (cnt == 1 || (cnt == n_cols && o->dims[o->rank - 1] == n_cols));
        }
    /* A Linear layer reading a Transpose ([B, S, E] -> [S, B, E], as
     * nn.MultiheadAttention's in-projection does without batch_first)
     * would read its rows through a strided view, on oneDNN's gemm-based
     * kernel with the weights unpacked (encoder_2x32: 270 us where
     * ONNX Runtime takes 170). Copying the rows dense first (rows x K
     * floats, against rows x K x N multiply-adds) lets it run flat, on
     * the brgemm kernel with packed weights (120 us with the copy). */
    if (rows_ok && p->slots[m->sin].lazy) {
        m->sin = dx_as_plain(b, m->sin);
        if (m->sin < 0) return dx_fail(b, "could not copy input 0 dense"), false;
    }
    m->flat = rows_ok && !p->slots[m->sin].has_md;
    if (m->flat) {
        int64_t rows = 1;
        for (int32_t d = 0; d < r - 1; d++) rows *= n->outputs[0].dims[d];
        m->c.prim_rank = 2, m->c.prim_dims[0] = rows, m->c.prim_dims[1] = n_cols;
        m->c.reshaped = true;
        m->r = 2;
    }
    return true;
}

/* B (slot sw) as stored (plain, or a strided view of a Transpose), its
 * batch dims right-aligned to the product's rank, transposed when transB:
 * the view m->a in layout m->w. */
static bool matmul_b(builder *b, matmul *m, int32_t sw) {
    program *p = b->p;
    const seam_node_view *n = b->n;
    int32_t r = m->r;
    slot wv = p->slots[sw];
    int64_t tb = is_op(n, "Gemm") ? node_attr_int(dx_ir(n), "transB", 0) : 0;
    dnnl_dims_t wd, wst;
    int64_t vst[MAXR];
    dx_dense_strides(&wv, vst);
    int32_t shift = r - wv.rank;
    for (int32_t d = 0; d < r; d++) {
        wd[d] = d >= shift ? wv.dims[d - shift] : 1;
        wst[d] = d >= shift ? vst[d - shift] : wd[d] == 1 ? 1 : 0;
    }
    for (int32_t d = shift - 1; d >= 0; d--) wst[d] = wst[d + 1] * wd[d + 1]; /* 1-sized: any stride */
    if (tb) {
        int64_t t = wd[r - 1]; wd[r - 1] = wd[r - 2]; wd[r - 2] = t;
        t = wst[r - 1]; wst[r - 1] = wst[r - 2]; wst[r - 2] = t;
    }
    if (dnnl_memory_desc_init_by_strides(&m->w, r, wd, dnnl_f32, wst) != dnnl_success)
        return dx_fail(b, "bad B layout"), false;
    m->a = dx_view_slot(p, sw, &wv, &m->w);
    if (m->a < 0) return dx_fail(b, "out of memory"), false;
    /* constant weights go in the layout the primitive prefers, reordered
     * once now (as for convolutions): no packing of B at every run */
    m->packed = p->slots[sw].constant;
    m->bf16 = m->packed && p->bf16;
    if (dnnl_memory_desc_init_by_tag(&m->any_w, m->w.ndims, m->w.dims, m->bf16 ? dnnl_bf16 : dnnl_f32,
                                     dnnl_format_tag_any) != dnnl_success)
        m->packed = m->bf16 = false;
    /* Without AVX-512 oneDNN 2.6's matmul is gemm:jit on B as it lies, and
     * rows of B a multiple of 512 floats (2 KB) apart alias in the cache:
     * copied once with 16 floats of padding per row, B reads at full speed
     * (a 2-core AVX2 EPYC, 2 threads: 32 x 256 x 1024 144 -> 107 us, 128 x
     * 512 x 2048 2011 -> 1730, 128 x 512 x 512 423 -> 398; N = 768 the same
     * either way) */
    if (m->packed && !m->bf16 && !dx_isa_avx512() && r >= 2) {
        int64_t N = m->w.dims[r - 1], K = m->w.dims[r - 2];
        bool batched = false;
        for (int32_t d = 0; d < r - 2; d++) batched = batched || m->w.dims[d] != 1;
        dnnl_dims_t st;
        st[r - 1] = 1, st[r - 2] = N + 16;
        for (int32_t d = r - 3; d >= 0; d--) st[d] = st[d + 1] * m->w.dims[d + 1];
        dnnl_memory_desc_t padded;
        if (!batched && N >= 512 && N % 512 == 0 && K > 1 &&
            dnnl_memory_desc_init_by_strides(&padded, r, m->w.dims, dnnl_f32, st) == dnnl_success)
            m->any_w = padded;
    }
    return true;
}

/* A with batch dims right-aligned too (rows x K when flat): the view
 * m->sa; and Gemm's C, a row, as m->sb. */
static bool matmul_a_bias(builder *b, matmul *m) {
    program *p = b->p;
    const seam_node_view *n = b->n;
    int32_t r = m->r;
    slot av = p->slots[m->sin];
    if (m->flat) {
        av.rank = 2, av.dims[0] = m->c.prim_dims[0], av.dims[1] = p->slots[m->sin].dims[p->slots[m->sin].rank - 1];
    } else if (av.rank < r) {
        int32_t sh = r - av.rank;
        for (int32_t d = r - 1; d >= 0; d--) av.dims[d] = d >= sh ? p->slots[m->sin].dims[d - sh] : 1;
        av.rank = r;
    }
    dx_md_of(&av, &m->src);
    m->sa = dx_view_slot(p, m->sin, &av, av.has_md ? &av.md : NULL);
    if (m->sa < 0) return dx_fail(b, "out of memory"), false;
    if (m->bf16 && dnnl_memory_desc_init_by_tag(&m->src, m->src.ndims, m->src.dims, dnnl_bf16, dx_plain_tag(m->src.ndims)) !=
                       dnnl_success)
        return dx_fail(b, "no bfloat16 layout for A"), false;
    m->sb = is_op(n, "Gemm") && n->n_inputs > 2 && n->inputs[2].name ? dx_input_slot(b, &n->inputs[2]) : -1;
    if (m->sb >= 0) {
        slot bv = p->slots[m->sb];
        bv.rank = 2, bv.dims[0] = 1, bv.dims[1] = p->slots[m->sb].dims[0];
        dx_md_of(&bv, &m->bias);
        int32_t ab = dx_view_slot(p, m->sb, &bv, NULL);
        if (ab < 0) return dx_fail(b, "out of memory"), false;
        m->sb = ab;
    }
    return true;
}

/* A Transpose alone reading the product that keeps the last axis (the
 * attention heads put back side by side): the product is written
 * through a strided view of the Transpose's output, which costs
 * nothing then. m->tnode is that Transpose, or -1. */
static void matmul_transpose_reader(builder *b, matmul *m) {
    int32_t r = m->r;
    m->tnode = -1;
    if (m->c.n || !b->fuse || m->flat) return;
    const char *out_name = b->n->outputs[0].name;
    int32_t t = dx_sole_reader(b, out_name);
    seam_node_view st;
    const seam_node_view *tr = t >= 0 ? seam_subgraph_node(b->sg, t, &st) : NULL;
    const int64_t *perm;
    int32_t np = 0;
    if (tr && is_op(tr, "Transpose") && seam_node_attr_ints(tr, "perm", &perm, &np) && np == r && perm[r - 1] == r - 1 &&
        tr->outputs[0].rank == r) {
        m->tout = tr->outputs[0];
        for (int32_t d = 0; d < r; d++) m->tdims[d] = m->tout.dims[d];
        m->tout.dims = m->tdims;
        int64_t tst[MAXR];
        dnnl_dims_t pd_dims, pd_strides;
        int64_t acc = 1;
        for (int32_t d = r - 1; d >= 0; d--) tst[d] = acc, acc *= m->tdims[d];
        bool ok = true, seen[MAXR] = {false};
        for (int32_t j = 0; j < r; j++) {
            int64_t ax = perm[j] < 0 ? perm[j] + r : perm[j];
            if (ax < 0 || ax >= r || seen[ax]) ok = false;
            else pd_strides[ax] = tst[j], pd_dims[ax] = m->tdims[j], seen[ax] = true;
        }
        if (ok && dnnl_memory_desc_init_by_strides(&m->tmd, r, pd_dims, dnnl_f32, pd_strides) == dnnl_success) m->tnode = t;
    }
    b->n = seam_subgraph_node(b->sg, b->index, b->storage);
}

/* The product's own dst (m->rs, m->dst): through the Transpose's view when
 * oneDNN takes the product so (else m->tnode becomes -1). */
static void matmul_dst(builder *b, matmul *m) {
    dx_shape_of(&m->rs, &b->n->outputs[0]);
    if (m->flat) m->rs.rank = 2, m->rs.dims[0] = m->c.prim_dims[0], m->rs.dims[1] = m->c.prim_dims[1];
    dx_md_of(&m->rs, &m->dst);
    dnnl_matmul_desc_t md;
    const dnnl_memory_desc_t *wd_for = m->packed ? &m->any_w : &m->w;
    if (m->tnode >= 0 && dnnl_matmul_desc_init(&md, &m->src, wd_for, m->sb >= 0 ? &m->bias : NULL, &m->tmd) == dnnl_success) {
        dnnl_primitive_desc_t probe;
        if (dnnl_primitive_desc_create(&probe, &md, dx_ctx.user_scratch, dx_ctx.engine, NULL) == dnnl_success) {
            dnnl_primitive_desc_destroy(probe);
            m->dst = m->tmd;
        } else {
            m->tnode = -1;
        }
    } else {
        m->tnode = -1;
    }
}

/* The primitive: the chain with its bias Add as the product's bias, as
 * collected, then other arrangements of it when oneDNN has only its
 * reference kernel for those (see matmul_candidate), then shorter chains,
 * down to none at all. m->c becomes the chain made, m->sb the bias
 * given; kinds, slots, *n_args and *sum_from its arguments (dx_chain_attr).
 * *pd_out is NULL when oneDNN refuses every arrangement; false when
 * dx_chain_attr fails. */
static bool matmul_prim(builder *b, matmul *m, int32_t *kinds, int32_t *slots, int32_t *n_args, int32_t *sum_from,
                        dnnl_primitive_desc_t *pd_out) {
    const seam_node_view *n = b->n;
    int32_t gemm_bias = m->sb;
    const dnnl_memory_desc_t *wd_for = m->packed ? &m->any_w : &m->w;
    m->c.prescale = m->prescale;
    chain whole = m->c;
    dnnl_primitive_desc_t pd = NULL;
    dnnl_matmul_desc_t md;
    const char *changed = NULL;
    static const char *const how[4] = {"", "the sum first", "the bias Add as the product's bias",
                                       "the bias Add as the product's bias, the sum first"};
    /* A Linear layer's bias Add goes to the product's bias argument first
     * (alt 2): oneDNN adds it in the kernel's epilogue, where a binary
     * post-op reads a broadcast row per tile (vit_b_16's MLP products, 197
     * x 768 x 3072: ~10% slower as a post-op). */
    static const int32_t alts[4] = {2, 0, 3, 1};
    for (int32_t pass = 0; pass < 2 && !pd; pass++) /* pass 0 takes no reference kernel; pass 1 the first that works */
        for (int32_t keep = whole.n; keep >= 0 && !pd; keep--)
            for (int32_t ai = 0; ai < 4 && !pd; ai++) {
                int32_t alt = alts[ai];
                if ((pass == 1 && alt) || (keep && keep < whole.n && whole.is_view[keep - 1])) continue;
                m->c = whole;
                dx_chain_cut(&m->c, keep, &n->outputs[0]);
                m->c.reshaped = m->flat || views_in(&m->c);
                m->sb = gemm_bias;
                if (!matmul_candidate(b, &m->c, alt, m->n_cols, m->r, &m->sb, &m->bias)) continue;
                *n_args = m->sb >= 0 ? 4 : 3;
                kinds[3] = DNNL_ARG_BIAS; /* (an earlier candidate's post-op operand may have taken entry 3) */
                dnnl_primitive_attr_t attr = NULL;
                if (dnnl_matmul_desc_init(&md, &m->src, wd_for, m->sb >= 0 ? &m->bias : NULL, &m->dst) != dnnl_success)
                    continue;
                if (!dx_chain_attr(b, &m->c, &m->dst, &attr, kinds, slots, n_args, sum_from)) return false;
                if (dnnl_primitive_desc_create(&pd, &md, attr ? attr : dx_ctx.user_scratch, dx_ctx.engine, NULL) !=
                    dnnl_success)
                    pd = NULL;
                else if (pass == 0 && dx_is_slow_ref(pd))
                    dnnl_primitive_desc_destroy(pd), pd = NULL;
                if (attr) dnnl_primitive_attr_destroy(attr);
                if (pd && (keep < whole.n || (alt & 1))) changed = how[alt];
            }
    if (pd && changed) dx_log_rearranged(b, &whole, &m->c, changed);
    *pd_out = pd;
    return true;
}

/* MatMul and Gemm (transB, bias) on oneDNN's matmul, with B read in place
 * (a strided view when transposed) and the post-op chain: bias Adds,
 * residual Adds (a sum, in place when it may be), activations. */
static bool compile_matmul(builder *b, bool *fused, const dx_io *io) {
    program *p = b->p;
    matmul m;
    dx_collect_chain(b, &b->n->outputs[0], true, &m.c);
    b->n = seam_subgraph_node(b->sg, b->index, b->storage);
    m.sin = io->sin;
    int32_t sw;
    if (!matmul_operands(b, &m, &sw) || !matmul_b(b, &m, sw) || !matmul_a_bias(b, &m)) return false;
    matmul_transpose_reader(b, &m);
    matmul_dst(b, &m);
    int32_t kinds[4 + MAX_CHAIN] = {DNNL_ARG_SRC, DNNL_ARG_WEIGHTS, DNNL_ARG_DST, DNNL_ARG_BIAS}, slots[4 + MAX_CHAIN];
    int32_t n_args = 3, sum_from = -1;
    dnnl_primitive_desc_t pd;
    if (!matmul_prim(b, &m, kinds, slots, &n_args, &sum_from, &pd)) return false;
    if (!pd) return dx_fail(b, "oneDNN refuses this matrix product"), false;
    const seam_node_view *n = b->n;
    const seam_value_info *result = m.c.n ? &m.c.out : &n->outputs[0];
    dx_take_chain(&m.c, fused);
    int32_t final_slot = -1;
    int32_t sd;
    if (m.tnode >= 0) { /* the Transpose's output, written through a strided view */
        int32_t os = dx_output_slot(b, &m.tout);
        sd = os >= 0 ? dx_view_slot(p, os, &m.rs, &m.dst) : -1;
        fused[m.tnode] = true;
    } else if (m.c.reshaped) {
        sd = dx_reshaped_dst(b, &m.c, sum_from, result, &m.rs);
    } else {
        sd = sum_from >= 0 ? dx_sum_dst(b, &m.c, sum_from, result, &m.dst, &final_slot)
                           : dx_result_slot(b, result, &m.dst, &final_slot);
    }
    if (sd < 0) {
        dnnl_primitive_desc_destroy(pd);
        return dx_fail(b, "out of memory"), false;
    }
    if (m.bf16) /* A converted to bfloat16 as it is read, each run */
        m.sa = dx_in_layout(b, m.sa, dnnl_primitive_desc_query_md(pd, dnnl_query_src_md, 0));
    if (m.sa < 0) {
        dnnl_primitive_desc_destroy(pd);
        return dx_fail(b, "could not convert A to bfloat16"), false;
    }
    if (m.packed) {
        m.a = dx_resident_copy(b, m.a, dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0));
        if (m.a < 0) {
            dnnl_primitive_desc_destroy(pd);
            return dx_fail(b, "could not reorder the weights"), false;
        }
    }
    b->chain = m.c.n ? &m.c : NULL;
    return dx_weighted_step(b, pd, n_args, kinds, slots, m.sa, m.a, sd, m.sb, final_slot);
}

const dx_op dx_matmul_rows[] = {
    {"MatMul", STAGE_PLAIN, supports_matmul, compile_matmul},
    {"Gemm", STAGE_PLAIN, supports_gemm, compile_matmul},
    {NULL, STAGE_VIEW, NULL, NULL},
};
