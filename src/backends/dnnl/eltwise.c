/*
 * dnnl: the elementwise ops (one op family, see program.h): activations
 * and unary math as oneDNN's eltwise, Clip, Pow, the broadcast binaries,
 * Sum, PRelu, and Erf; and an eltwise or binary kept in a convolution's
 * blocked layout (dx_blocked_step).
 */
#include <string.h>

#include "eltwise.h"
#include "host.h"

/* That clip, in place on slot s: an eltwise of its own (oneDNN has only
 * its reference kernel for an eltwise with an eltwise post-op). */
static bool clip01_step(builder *b, int32_t s) {
    dnnl_memory_desc_t md;
    dx_md_of(&b->p->slots[s], &md);
    dnnl_eltwise_desc_t ed;
    if (dnnl_eltwise_forward_desc_init(&ed, dnnl_forward_inference, dnnl_eltwise_clip_v2, &md, 0.0f, 1.0f) != dnnl_success)
        return dx_fail(b, "oneDNN refuses a clip"), false;
    int32_t kinds[2] = {DNNL_ARG_SRC, DNNL_ARG_DST}, slots[2] = {s, s};
    return dx_add_step(b, &ed, NULL, 2, kinds, slots);
}

int32_t dx_blocked_step(builder *b, const seam_node_view *n, int32_t sin) {
    program *p = b->p;
    dnnl_memory_desc_t src = p->slots[sin].md;
    dnnl_primitive_desc_t pd = NULL;
    int32_t kinds[3], slots[3], n_args;
    if (IN_LIST(n, eltwise_ops)) {
        dnnl_alg_kind_t alg;
        float alpha, beta;
        dnnl_eltwise_desc_t ed;
        bool ok = dx_eltwise_of(n, b->sg, &alg, &alpha, &beta) &&
                  dnnl_eltwise_forward_desc_init(&ed, dnnl_forward_inference, alg, &src, alpha, beta) == dnnl_success &&
                  dnnl_primitive_desc_create(&pd, &ed, dx_ctx.user_scratch, dx_ctx.engine, NULL) == dnnl_success;
        if (ok && dx_is_slow_ref(pd)) dnnl_primitive_desc_destroy(pd), ok = false; /* plain has a fast kernel */
        if (!ok) return 0;
        kinds[0] = DNNL_ARG_SRC, slots[0] = sin, n_args = 2;
    } else {
        dnnl_alg_kind_t alg = dx_binary_alg(n);
        int32_t s1 = dx_input_slot(b, &n->inputs[1]);
        if (s1 >= 0 && p->slots[s1].rank != p->slots[sin].rank) {
            /* an operand of lower rank (convnext's layer scale [C, 1, 1]
             * against [N, C, H, W]) is a view with leading 1-sized dims */
            int32_t *lo = p->slots[s1].rank < p->slots[sin].rank ? &s1 : &sin, hi = lo == &s1 ? sin : s1;
            if (p->slots[*lo].has_md || p->slots[hi].rank > MAXR) return 0;
            slot shape = p->slots[*lo];
            int32_t pad = p->slots[hi].rank - shape.rank;
            for (int32_t d = shape.rank - 1; d >= 0; d--) shape.dims[d + pad] = shape.dims[d];
            for (int32_t d = 0; d < pad; d++) shape.dims[d] = 1;
            shape.rank += pad;
            *lo = dx_view_slot(p, *lo, &shape, NULL);
            if (*lo < 0) return dx_fail(b, "out of memory"), -1;
        }
        if (s1 < 0 || p->slots[s1].rank != p->slots[sin].rank) return 0;
        /* a commutative op with the broadcast operand first (torch's
         * scale * x): oneDNN broadcasts src1 only, so the operands swap */
        bool swap = false;
        for (int32_t d = 0; d < p->slots[sin].rank && commutative(n); d++)
            swap |= p->slots[sin].dims[d] == 1 && p->slots[s1].dims[d] > 1;
        if (swap) {
            if (!p->slots[s1].has_md || p->slots[s1].lazy) return 0;
            int32_t tmp = sin;
            sin = s1, s1 = tmp;
            src = p->slots[sin].md;
        }
        bool bcast = false;
        for (int32_t d = 0; d < p->slots[sin].rank; d++) {
            if (p->slots[s1].dims[d] == p->slots[sin].dims[d]) continue;
            if (p->slots[s1].dims[d] != 1) return 0;
            bcast = true;
        }
        /* a broadcast operand (squeeze-excite's [N,C,1,1] scale) stays in
         * its plain layout next to the blocked input, when oneDNN has a
         * fast kernel for that; else the step goes plain */
        dnnl_memory_desc_t src1 = src;
        if (bcast) {
            dnnl_dims_t dims, strides;
            int64_t acc = 1;
            for (int32_t d = p->slots[s1].rank - 1; d >= 0; d--)
                dims[d] = p->slots[s1].dims[d], strides[d] = acc, acc *= p->slots[s1].dims[d];
            if (dnnl_memory_desc_init_by_strides(&src1, p->slots[s1].rank, dims, dnnl_f32, strides) != dnnl_success)
                return 0;
        }
        dnnl_binary_desc_t bd;
        if (dnnl_binary_desc_init(&bd, alg, &src, &src1, &src) != dnnl_success ||
            dnnl_primitive_desc_create(&pd, &bd, dx_ctx.user_scratch, dx_ctx.engine, NULL) != dnnl_success)
            return 0;
        if (dx_is_slow_ref(pd)) {
            /* a broadcast on a channel-blocked input (aBcd8b) has only the
             * reference kernel: channels-last is one reorder away and where
             * the next 1x1 convolution reads, not two through plain */
            dnnl_primitive_desc_destroy(pd);
            pd = NULL;
            bool inner[MAXR] = {false};
            dnnl_memory_desc_t cl;
            if (!bcast || p->slots[sin].rank < 3) return 0;
            inner[1] = true;
            if (!dx_inner_md(&p->slots[sin], inner, &cl) || dnnl_binary_desc_init(&bd, alg, &cl, &src1, &cl) != dnnl_success ||
                dnnl_primitive_desc_create(&pd, &bd, dx_ctx.user_scratch, dx_ctx.engine, NULL) != dnnl_success)
                return 0;
            if (dx_is_slow_ref(pd)) return dnnl_primitive_desc_destroy(pd), 0; /* plain has a fast kernel */
            sin = dx_in_layout(b, sin, &cl);
            if (sin < 0) return dnnl_primitive_desc_destroy(pd), -1;
            src = cl;
        }
        s1 = dx_in_layout(b, s1, &src1);
        if (s1 < 0) return dnnl_primitive_desc_destroy(pd), -1;
        kinds[0] = DNNL_ARG_SRC_0, slots[0] = sin, kinds[1] = DNNL_ARG_SRC_1, slots[1] = s1, n_args = 3;
    }
    int32_t final_slot = -1;
    int32_t sd = dx_result_slot(b, &n->outputs[0], &src, &final_slot);
    if (sd < 0) {
        dnnl_primitive_desc_destroy(pd);
        return dx_fail(b, "out of memory"), -1;
    }
    kinds[n_args - 1] = DNNL_ARG_DST, slots[n_args - 1] = sd;
    bool ok = dx_add_prim(b, pd, n_args, kinds, slots);
    dnnl_primitive_desc_destroy(pd);
    if (ok && dx_clips_after(n)) ok = clip01_step(b, sd);
    if (ok && final_slot >= 0) ok = dx_add_reorder(b, sd, final_slot);
    return ok ? 1 : -1;
}

/* Clip's bounds and Pow's exponent become the eltwise's parameters: they
 * must be constants (compile reads them). */
/* Clip's bounds: constants (an eltwise, fused into a producer's post-ops)
 * or values computed or given at run time (binary max and min, see
 * clip_at_run_time); one float each. */
static bool supports_clip(const seam_node_view *n, char *why, size_t wn) {
    for (int32_t k = 1; k < n->n_inputs && k < 3; k++)
        if (n->inputs[k].name && (n->inputs[k].dtype != SEAM_DTYPE_FLOAT32 || dx_value_numel(&n->inputs[k]) != 1))
            return dx_refuse(why, wn, "Clip with a bound that is not one float32 is not supported");
    return true;
}

/* Clip whose bounds are known only at run time: max with the lower bound,
 * then min with the upper one (in place), each bound a one-element operand
 * broadcast over x. */
static bool clip_at_run_time(builder *b, int32_t sin, int32_t sd) {
    const seam_node_view *n = b->n;
    program *p = b->p;
    dnnl_memory_desc_t dst;
    dx_md_of(&p->slots[sd], &dst);
    int32_t from = sin, r = p->slots[sd].rank;
    for (int32_t k = 1; k < n->n_inputs && k < 3; k++) {
        if (!n->inputs[k].name) continue;
        int32_t s = dx_input_slot(b, &n->inputs[k]);
        if (s >= 0) s = dx_as_plain(b, s);
        if (s < 0) return dx_fail(b, "a bound is not available"), false;
        slot one;
        memset(&one, 0, sizeof(one));
        one.rank = r ? r : 1;
        for (int32_t d = 0; d < one.rank; d++) one.dims[d] = 1;
        s = dx_view_slot(p, s, &one, NULL);
        if (s < 0) return dx_fail(b, "a bound is not one value"), false;
        dnnl_memory_desc_t src, m1;
        dx_md_of(&p->slots[from], &src);
        dx_md_of(&p->slots[s], &m1);
        dnnl_binary_desc_t bd;
        if (dnnl_binary_desc_init(&bd, k == 1 ? dnnl_binary_max : dnnl_binary_min, &src, &m1, &dst) != dnnl_success)
            return dx_fail(b, "oneDNN refuses this Clip"), false;
        int32_t kinds[3] = {DNNL_ARG_SRC_0, DNNL_ARG_SRC_1, DNNL_ARG_DST}, slots[3] = {from, s, sd};
        if (!dx_add_step(b, &bd, NULL, 3, kinds, slots)) return false;
        from = sd;
    }
    return from == sd || dx_add_reorder(b, sin, sd); /* no bounds: a copy */
}

static bool supports_pow(const seam_node_view *n, char *why, size_t wn) {
    if (n->inputs[1].dtype != SEAM_DTYPE_FLOAT32 || !dx_const_input(n, 1) || dx_value_numel(&n->inputs[1]) != 1)
        return dx_refuse(why, wn, "Pow with an exponent that is not one constant float32 is not supported");
    return true;
}

static bool compile_eltwise(builder *b, bool *fused, const dx_io *io) {
    const seam_node_view *n = b->n;
    dnnl_alg_kind_t alg;
    float alpha, beta;
    if (!dx_eltwise_of(n, b->sg, &alg, &alpha, &beta)) {
        if (is_op(n, "Clip")) return clip_at_run_time(b, io->sin, io->sd);
        return dx_fail(b, "not expressible as one oneDNN eltwise"), false;
    }
    dnnl_eltwise_desc_t ed;
    if (dnnl_eltwise_forward_desc_init(&ed, dnnl_forward_inference, alg, &io->src, alpha, beta) != dnnl_success)
        return dx_fail(b, "oneDNN refuses this eltwise"), false;
    int32_t kinds[2] = {DNNL_ARG_SRC, DNNL_ARG_DST}, slots[2] = {io->sin, io->sd};
    return dx_add_step(b, &ed, NULL, 2, kinds, slots) && (!dx_clips_after(n) || clip01_step(b, io->sd));
}

/* oneDNN's log is a polynomial: log(1) comes out -1.4e-6, outside the ONNX
 * tests' tolerance of 1e-7 there (seam backend-check's find); the CPU
 * kernels' logf is exact to the last bit. */
static bool supports_log(const seam_node_view *n, char *why, size_t wn) {
    return dx_refuse(why, wn, "Log: oneDNN's log is 1.4e-6 off at 1 (the CPU kernels' is exact)");
}

static bool supports_binary(const seam_node_view *n, char *why, size_t wn) {
    /* Max, Min (and Sum, Mean) take any number of inputs: the primitive two
     * (seam backend-check found a third input ignored, a single one zeroed) */
    if (n->n_inputs != 2) return dx_refuse(why, wn, "%s of %d inputs: dnnl takes two", n->op_type, n->n_inputs);
    if (!full_shape(&n->inputs[0], &n->outputs[0]) && !(commutative(n) && full_shape(&n->inputs[1], &n->outputs[0])))
        return dx_refuse(why, wn, "%s broadcasting input 0 is not supported (dnnl broadcasts the second operand)",
                         n->op_type);
    return true;
}

static bool compile_binary(builder *b, bool *fused, const dx_io *io) {
    const seam_node_view *n = b->n;
    program *p = b->p;
    int32_t sin = io->sin;
    dnnl_memory_desc_t src = io->src;
    dnnl_alg_kind_t alg;
    alg = dx_binary_alg(n);
    /* oneDNN broadcasts the second operand only: a commutative op whose
     * first operand broadcasts takes its operands the other way round */
    int32_t i1 = 1;
    if (!full_shape(&n->inputs[0], &n->outputs[0])) {
        if (!commutative(n)) return dx_fail(b, "broadcasting input 0 is not supported"), false;
        sin = dx_input_slot(b, &n->inputs[1]);
        if (sin >= 0) sin = dx_as_plain(b, sin);
        if (sin < 0) return dx_fail(b, "input 1 is not available"), false;
        dx_md_of(&p->slots[sin], &src);
        i1 = 0;
    }
    int32_t s1 = dx_input_slot(b, &n->inputs[i1]);
    if (s1 >= 0) s1 = dx_as_plain(b, s1);
    if (s1 < 0) return dx_fail(b, "an input is not available"), false;
    /* right-align the second operand's dims with leading 1s */
    slot v1 = p->slots[s1];
    int32_t r0 = n->outputs[0].rank;
    if (v1.rank < r0) {
        int32_t shift = r0 - v1.rank;
        for (int32_t d = r0 - 1; d >= 0; d--) v1.dims[d] = d >= shift ? p->slots[s1].dims[d - shift] : 1;
        v1.rank = r0;
        int32_t a = dx_view_slot(p, s1, &v1, NULL);
        if (a < 0) return dx_fail(b, "out of memory"), false;
        s1 = a;
    }
    dnnl_memory_desc_t m1;
    dx_md_of(&p->slots[s1], &m1);
    dnnl_binary_desc_t bd;
    if (dnnl_binary_desc_init(&bd, alg, &src, &m1, &io->dst) != dnnl_success)
        return dx_fail(b, "oneDNN refuses this broadcast"), false;
    /* a broadcast oneDNN has only its reference kernel for (ref:any, 30x
     * slower than a loop: bench/results/history-ops.md) is seam's loop,
     * when the operands and the output are plain */
    dnnl_primitive_desc_t pd = NULL;
    bool slow = dnnl_primitive_desc_create(&pd, &bd, dx_ctx.user_scratch, dx_ctx.engine, NULL) == dnnl_success &&
                dx_is_slow_ref(pd);
    if (pd) dnnl_primitive_desc_destroy(pd);
    if (slow && !p->slots[sin].has_md && !p->slots[sin].lazy && !p->slots[s1].has_md && !p->slots[s1].lazy &&
        !p->slots[io->sd].has_md && p->slots[sin].rank == p->slots[io->sd].rank &&
        !memcmp(p->slots[sin].dims, p->slots[io->sd].dims, sizeof(int64_t) * (size_t)p->slots[sin].rank) &&
        dx_host_bcast_binary(b, alg, sin, s1, io->sd)) {
        n = b->n = seam_subgraph_node(b->sg, b->index, b->storage);
        dx_log(p, "node %d '%s' (%s): host bcast_binary; seam's loop, as oneDNN has only its reference kernel for "
                  "this broadcast", n->index, n->name ? n->name : "", n->op_type);
        return true;
    }
    int32_t kinds[3] = {DNNL_ARG_SRC_0, DNNL_ARG_SRC_1, DNNL_ARG_DST}, slots[3] = {sin, s1, io->sd};
    return dx_add_step(b, &bd, NULL, 3, kinds, slots);
}

static bool supports_sum(const seam_node_view *n, char *why, size_t wn) {
    for (int32_t k = 0; k < n->n_inputs; k++)
        if (!n->inputs[k].name || !full_shape(&n->inputs[k], &n->outputs[0]))
            return dx_refuse(why, wn, "Sum with broadcasting is not supported");
    if (n->n_inputs > MAX_ARGS - 2) return dx_refuse(why, wn, "Sum of more than 64 inputs is not supported");
    return true;
}

static bool compile_sum(builder *b, bool *fused, const dx_io *io) {
    const seam_node_view *n = b->n;
    program *p = b->p;
    int32_t cnt = n->n_inputs, kinds[MAX_ARGS], slots[MAX_ARGS];
    dnnl_memory_desc_t mds[MAX_ARGS];
    float scales[MAX_ARGS];
    for (int32_t k = 0; k < cnt; k++) {
        int32_t s2 = dx_input_slot(b, &n->inputs[k]);
        if (s2 >= 0) s2 = dx_as_plain(b, s2);
        if (s2 < 0) return dx_fail(b, "an input is not available"), false;
        dx_md_of(&p->slots[s2], &mds[k]);
        kinds[k] = DNNL_ARG_MULTIPLE_SRC + k, slots[k] = s2, scales[k] = 1.0f;
    }
    kinds[cnt] = DNNL_ARG_DST, slots[cnt] = io->sd;
    dnnl_primitive_desc_t pd;
    if (dnnl_sum_primitive_desc_create(&pd, &io->dst, cnt, scales, mds, dx_ctx.user_scratch, dx_ctx.engine) != dnnl_success)
        return dx_fail(b, "oneDNN refuses this sum"), false;
    bool ok = dx_add_prim(b, pd, cnt + 1, kinds, slots);
    dnnl_primitive_desc_destroy(pd);
    return ok;
}

static bool supports_prelu(const seam_node_view *n, char *why, size_t wn) {
    if (n->inputs[1].rank > n->inputs[0].rank)
        return dx_refuse(why, wn, "PRelu with a slope of higher rank than X is not supported");
    return true;
}

/* PRelu: the slope broadcast like ONNX's: right-aligned. */
static bool compile_prelu(builder *b, bool *fused, const dx_io *io) {
    const seam_node_view *n = b->n;
    program *p = b->p;
    dnnl_alg_kind_t alg;
    float alpha, beta;
    if (dx_eltwise_of(n, b->sg, &alg, &alpha, &beta)) return compile_eltwise(b, fused, io); /* one slope */
    int32_t s1 = dx_input_slot(b, &n->inputs[1]);
    if (s1 >= 0) s1 = dx_as_plain(b, s1);
    if (s1 < 0) return dx_fail(b, "the slope is not available"), false;
    slot v1 = p->slots[s1];
    int32_t r0 = n->inputs[0].rank, shift = r0 - v1.rank;
    for (int32_t d = r0 - 1; d >= 0; d--) v1.dims[d] = d >= shift ? p->slots[s1].dims[d - shift] : 1;
    v1.rank = r0;
    int32_t a = dx_view_slot(p, s1, &v1, NULL);
    if (a < 0) return dx_fail(b, "out of memory"), false;
    dnnl_memory_desc_t wmd;
    dx_md_of(&p->slots[a], &wmd);
    dnnl_prelu_desc_t pdsc;
    if (dnnl_prelu_forward_desc_init(&pdsc, dnnl_forward_inference, &io->src, &wmd) != dnnl_success)
        return dx_fail(b, "oneDNN refuses this PRelu"), false;
    int32_t kinds[3] = {DNNL_ARG_SRC, DNNL_ARG_WEIGHTS, DNNL_ARG_DST}, slots[3] = {io->sin, a, io->sd};
    return dx_add_step(b, &pdsc, NULL, 3, kinds, slots);
}

/* One eltwise step from slot `from` to slot `to` (the same slot: in place). */
static bool eltwise_step(builder *b, dnnl_alg_kind_t alg, float alpha, float beta, int32_t from, int32_t to) {
    dnnl_memory_desc_t md;
    dx_md_of(&b->p->slots[from], &md);
    dnnl_eltwise_desc_t ed;
    if (dnnl_eltwise_forward_desc_init(&ed, dnnl_forward_inference, alg, &md, alpha, beta) != dnnl_success)
        return dx_fail(b, "oneDNN refuses an eltwise"), false;
    int32_t kinds[2] = {DNNL_ARG_SRC, DNNL_ARG_DST}, slots[2] = {from, to};
    return dx_add_step(b, &ed, NULL, 2, kinds, slots);
}

/* One same-shape binary step: to = s0 op s1 (to may be s0: in place). */
static bool binary_step(builder *b, dnnl_alg_kind_t alg, int32_t s0, int32_t s1, int32_t to) {
    dnnl_memory_desc_t md;
    dx_md_of(&b->p->slots[s0], &md);
    dnnl_binary_desc_t bd;
    if (dnnl_binary_desc_init(&bd, alg, &md, &md, &md) != dnnl_success)
        return dx_fail(b, "oneDNN refuses a binary"), false;
    int32_t kinds[3] = {DNNL_ARG_SRC_0, DNNL_ARG_SRC_1, DNNL_ARG_DST}, slots[3] = {s0, s1, to};
    return dx_add_step(b, &bd, NULL, 3, kinds, slots);
}

/* Erf inside the GELU pattern is one gelu_erf eltwise (the Div or Mul
 * before it claims the pattern: dx_compile_gelu_pattern). Elsewhere, as
 * oneDNN 2.6 has no erf: Abramowitz and Stegun's 7.1.26 (absolute error
 * below 1.5e-7), in elementwise steps:
 *     a = |x|, t = 1 / (1 + p a), r = 1 - t (a1 + t (a2 + ... + t a5)) exp(-a^2)
 *     erf(x) = r x / max(a, tiny)        (the sign of x; 0 at 0, where r is 0)
 * Seventeen passes over the tensor where one would do: a slow: line says so. */
static bool compile_erf(builder *b, bool *fused, const dx_io *io) {
    static const float p = 0.3275911f, c[5] = {0.254829592f, -0.284496736f, 1.421413741f, -1.453152027f, 1.061405429f};
    program *p_ = b->p;
    const dnnl_memory_desc_t *md = &io->dst;
    int32_t sin = io->sin, sd = io->sd;
    slot like = p_->slots[sd]; /* (a copy: new slots move the array) */
    like.name = "(erf)";
    int32_t a = dx_temp_slot(b, &like, md), t = dx_temp_slot(b, &like, md), q = dx_temp_slot(b, &like, md);
    if (a < 0 || t < 0 || q < 0) return dx_fail(b, "out of memory"), false;
    bool ok = eltwise_step(b, dnnl_eltwise_abs, 0, 0, sin, a) && eltwise_step(b, dnnl_eltwise_linear, p, 1, a, t) &&
              eltwise_step(b, dnnl_eltwise_pow, 1, -1, t, t) && eltwise_step(b, dnnl_eltwise_linear, c[4], c[3], t, q);
    for (int32_t k = 2; ok && k >= 0; k--) /* Horner: q = q t + c[k] */
        ok = binary_step(b, dnnl_binary_mul, q, t, q) && eltwise_step(b, dnnl_eltwise_linear, 1, c[k], q, q);
    ok = ok && binary_step(b, dnnl_binary_mul, q, t, q) &&                      /* the polynomial */
         eltwise_step(b, dnnl_eltwise_square, 0, 0, a, t) && eltwise_step(b, dnnl_eltwise_exp, 0, 0, t, t) &&
         binary_step(b, dnnl_binary_div, q, t, q) &&                              /* times exp(-a^2) */
         eltwise_step(b, dnnl_eltwise_linear, -1, 1, q, q) &&                     /* r */
         eltwise_step(b, dnnl_eltwise_clip_v2, 1e-30f, 3.4e38f, a, a) && binary_step(b, dnnl_binary_div, sin, a, t) &&
         binary_step(b, dnnl_binary_mul, q, t, sd);
    if (ok)
        dx_log(p_, "slow: node %d '%s' (Erf): oneDNN 2.6 has no erf: outside the GELU pattern x * 0.5 * (1 + Erf(x / sqrt(2))) "
                   "it runs as %d elementwise steps; fix: none needed (|error| < 1.5e-7); for speed, keep it on the CPU "
                   "(--cpu-ops Erf) when its neighbours are there too",
               b->n->index, b->n->name ? b->n->name : "", 17);
    return ok;
}

/* Pow by a constant exponent: oneDNN's eltwise_pow goes through exp and
 * log, 0.55 ms on 64x1024 floats on an AVX2 CPU (GPT-2's GELU cubes its
 * input: a quarter of the model's time there), where a square and a
 * multiply take two light passes. So x^3 is square then multiply (x^2 is
 * square: map.c); any other exponent is eltwise_pow. */
static bool compile_pow(builder *b, bool *fused, const dx_io *io) {
    float e;
    if (b->n->n_inputs > 1 && dx_const_scalar(b->sg, &b->n->inputs[1], &e) && e == 3.0f) {
        slot like = b->p->slots[io->sd]; /* (a copy: new slots move the array) */
        like.name = "(x^2)";
        int32_t t = dx_temp_slot(b, &like, &io->dst);
        if (t < 0) return dx_fail(b, "out of memory"), false;
        return eltwise_step(b, dnnl_eltwise_square, 0, 0, io->sin, t) && binary_step(b, dnnl_binary_mul, t, io->sin, io->sd);
    }
    return compile_eltwise(b, fused, io);
}

const dx_op dx_eltwise_rows[] = {
    /* (the names of eltwise_ops and binary_ops) */
    {"Relu", STAGE_PLAIN_OUT, NULL, compile_eltwise},
    {"LeakyRelu", STAGE_PLAIN_OUT, NULL, compile_eltwise},
    {"Sigmoid", STAGE_PLAIN_OUT, NULL, compile_eltwise},
    {"Tanh", STAGE_PLAIN_OUT, NULL, compile_eltwise},
    {"Elu", STAGE_PLAIN_OUT, NULL, compile_eltwise},
    {"Clip", STAGE_PLAIN_OUT, supports_clip, compile_eltwise},
    {"Exp", STAGE_PLAIN_OUT, NULL, compile_eltwise},
    {"Log", STAGE_PLAIN_OUT, supports_log, compile_eltwise},
    {"Sqrt", STAGE_PLAIN_OUT, NULL, compile_eltwise},
    {"Abs", STAGE_PLAIN_OUT, NULL, compile_eltwise},
    {"HardSigmoid", STAGE_PLAIN_OUT, NULL, compile_eltwise},
    {"Softplus", STAGE_PLAIN_OUT, NULL, compile_eltwise},
    {"HardSwish", STAGE_PLAIN_OUT, NULL, compile_eltwise},
    {"Pow", STAGE_PLAIN_OUT, supports_pow, compile_pow},
    {"Add", STAGE_PLAIN_OUT, supports_binary, compile_binary},
    {"Sub", STAGE_PLAIN_OUT, supports_binary, compile_binary},
    {"Mul", STAGE_PLAIN_OUT, supports_binary, compile_binary},
    {"Div", STAGE_PLAIN_OUT, supports_binary, compile_binary},
    {"Max", STAGE_PLAIN_OUT, supports_binary, compile_binary},
    {"Min", STAGE_PLAIN_OUT, supports_binary, compile_binary},
    {"Sum", STAGE_PLAIN_OUT, supports_sum, compile_sum},
    {"PRelu", STAGE_PLAIN_OUT, supports_prelu, compile_prelu},
    {"Erf", STAGE_PLAIN_OUT, NULL, compile_erf}, /* (inside GELU: the pattern claims it first) */
    {NULL, STAGE_VIEW, NULL, NULL},
};
