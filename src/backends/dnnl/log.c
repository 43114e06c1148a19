/*
 * dnnl: the compile log (seam_backend.compile_log). One line per primitive
 * the program runs, written when its step is made (dx_add_prim):
 *
 *     node 7 'fc1' (MatMul): matmul gemm:jit; src ab, wei AB16b64a, dst ab;
 *         post-ops binary_add, sum, eltwise_relu; fuses 'add1' (Add), 'relu1' (Relu)
 *
 * (on one line): the node being compiled, the primitive kind, oneDNN's
 * implementation name (dnnl_query_impl_info_str), the layouts of its
 * tensors, its post-ops and the nodes it absorbed. A line starting with
 * "slow: " says a primitive runs on oneDNN's reference kernel (an
 * implementation whose name starts with "ref") although seam tried the
 * alternatives (see conv.c and matmul.c), with the reason and the fix.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <oneapi/dnnl/dnnl_debug.h>

#include "program.h"

void dx_log(program *p, const char *fmt, ...) {
    if (p->log_oom) return;
    va_list ap;
    va_start(ap, fmt);
    int need = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (need < 0) return;
    size_t want = p->log_len + (size_t)need + 2;
    if (want > p->log_cap) {
        size_t cap = p->log_cap ? p->log_cap : 1024;
        while (cap < want) cap *= 2;
        char *s = realloc(p->log, cap);
        if (!s) { /* a log is not worth failing a compile for: it stops here */
            p->log_oom = true;
            return;
        }
        p->log = s, p->log_cap = cap;
    }
    va_start(ap, fmt);
    vsnprintf(p->log + p->log_len, p->log_cap - p->log_len, fmt, ap);
    va_end(ap);
    p->log_len += (size_t)need;
    p->log[p->log_len++] = '\n';
    p->log[p->log_len] = 0;
}

const char *dx_impl_name(const_dnnl_primitive_desc_t pd) {
    const char *s = NULL;
    if (dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, (void *)&s) != dnnl_success || !s) return "?";
    return s;
}

static dnnl_primitive_kind_t kind_of(const_dnnl_primitive_desc_t pd) {
    dnnl_primitive_kind_t kind = dnnl_undefined_primitive;
    dnnl_primitive_desc_query(pd, dnnl_query_primitive_kind, 0, &kind);
    return kind;
}

bool dx_is_ref(const_dnnl_primitive_desc_t pd) { return !strncmp(dx_impl_name(pd), "ref", 3); }

/* oneDNN's concat and sum named "ref" are made of other primitives (one
 * reorder per input, into its place in dst, each oneDNN's fastest), and
 * its RNN named "ref" (without AVX-512's brgemm) runs its products on its
 * packed sgemm: not the element-by-element loops of its other reference
 * kernels. */
static bool composite_ref(const_dnnl_primitive_desc_t pd) {
    dnnl_primitive_kind_t k = kind_of(pd);
    return k == dnnl_concat || k == dnnl_sum || k == dnnl_rnn;
}

bool dx_is_slow_ref(const_dnnl_primitive_desc_t pd) { return dx_is_ref(pd) && !composite_ref(pd); }

bool dx_below_best_isa(const_dnnl_primitive_desc_t pd) {
    if (!dx_isa_avx512()) return false;
    const char *s = dx_impl_name(pd);
    return strstr(s, ":avx2") || strstr(s, ":sse41") || (strstr(s, ":avx") && !strstr(s, ":avx512"));
}

/* A memory layout in oneDNN's own notation: the dims from outermost to
 * innermost stride (a, b, c, ...), a blocked dim in capitals followed by
 * its inner blocks (aBcd8b); "strided" when the strides are not dense. */
static void layout_str(const dnnl_memory_desc_t *md, char *out, size_t n) {
    if (!md || md->ndims <= 0) {
        snprintf(out, n, "-");
        return;
    }
    if (md->format_kind != dnnl_blocked) {
        snprintf(out, n, "%s", md->format_kind == dnnl_format_kind_any ? "any" : "opaque");
        return;
    }
    const dnnl_blocking_desc_t *bd = &md->format_desc.blocking;
    int32_t r = md->ndims, order[DNNL_MAX_NDIMS];
    bool blocked[DNNL_MAX_NDIMS] = {false};
    for (int32_t k = 0; k < bd->inner_nblks; k++) blocked[bd->inner_idxs[k]] = true;
    for (int32_t d = 0; d < r; d++) order[d] = d;
    for (int32_t i = 1; i < r; i++) /* outermost (largest stride) first; ties keep the dims' order */
        for (int32_t j = i; j > 0 && bd->strides[order[j]] > bd->strides[order[j - 1]]; j--) {
            int32_t t = order[j];
            order[j] = order[j - 1], order[j - 1] = t;
        }
    /* dense: each stride is the product of the inner ones (padded dims) */
    int64_t inner = 1, acc;
    for (int32_t k = 0; k < bd->inner_nblks; k++) inner *= bd->inner_blks[k];
    acc = inner;
    bool dense = true;
    for (int32_t i = r - 1; i >= 0; i--) {
        int32_t d = order[i];
        int64_t pd = md->padded_dims[d];
        for (int32_t k = 0; k < bd->inner_nblks; k++)
            if (bd->inner_idxs[k] == d) pd /= bd->inner_blks[k];
        if (pd != 1 && bd->strides[d] != acc) dense = false;
        acc *= pd;
    }
    size_t at = 0;
    for (int32_t i = 0; i < r && at + 1 < n; i++) out[at++] = (char)((blocked[order[i]] ? 'A' : 'a') + order[i]);
    for (int32_t k = 0; k < bd->inner_nblks && at + 8 < n; k++)
        at += (size_t)snprintf(out + at, n - at, "%d%c", (int)bd->inner_blks[k], 'a' + (int)bd->inner_idxs[k]);
    if (!dense && at + 10 < n) at += (size_t)snprintf(out + at, n - at, "(strided)");
    out[at < n ? at : n - 1] = 0;
}

static const char *alg_name(dnnl_alg_kind_t a) {
    const char *s = dnnl_alg_kind2str(a);
    return s ? s : "?";
}

/* The post-ops of pd, comma-separated, into out (empty when none). */
static void post_ops_str(const_dnnl_primitive_desc_t pd, char *out, size_t n) {
    out[0] = 0;
    const_dnnl_primitive_attr_t attr = NULL;
    const_dnnl_post_ops_t po = NULL;
    if (dnnl_primitive_desc_get_attr(pd, &attr) != dnnl_success || !attr ||
        dnnl_primitive_attr_get_post_ops(attr, &po) != dnnl_success || !po)
        return;
    size_t at = 0;
    for (int k = 0; k < dnnl_post_ops_len(po) && at + 1 < n; k++) {
        const char *sep = k ? ", " : "";
        dnnl_primitive_kind_t kind = dnnl_post_ops_get_kind(po, k);
        float scale, alpha, beta;
        dnnl_alg_kind_t alg;
        const dnnl_memory_desc_t *md;
        int w;
        if (kind == dnnl_sum) w = snprintf(out + at, n - at, "%ssum", sep);
        else if (kind == dnnl_eltwise &&
                 dnnl_post_ops_get_params_eltwise(po, k, &scale, &alg, &alpha, &beta) == dnnl_success)
            w = snprintf(out + at, n - at, "%s%s", sep, alg_name(alg));
        else if (kind == dnnl_binary && dnnl_post_ops_get_params_binary(po, k, &alg, &md) == dnnl_success)
            w = snprintf(out + at, n - at, "%s%s", sep, alg_name(alg));
        else w = snprintf(out + at, n - at, "%s%s", sep, dnnl_prim_kind2str(kind));
        if (w < 0) break;
        at += (size_t)w;
        if (at >= n) at = n - 1;
    }
}

/* The layouts and post-ops of pd: "src X, wei Y, dst Z; post-ops ...". */
static void tensors_str(const_dnnl_primitive_desc_t pd, char *out, size_t n) {
    char src[48], wei[48], dst[48], po[160];
    layout_str(dnnl_primitive_desc_query_md(pd, dnnl_query_src_md, 0), src, sizeof(src));
    layout_str(dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0), wei, sizeof(wei));
    layout_str(dnnl_primitive_desc_query_md(pd, dnnl_query_dst_md, 0), dst, sizeof(dst));
    post_ops_str(pd, po, sizeof(po));
    snprintf(out, n, "src %s%s%s, dst %s%s%s", src, strcmp(wei, "-") ? ", wei " : "", strcmp(wei, "-") ? wei : "", dst,
             po[0] ? "; post-ops " : "", po);
}

static const char *kind_name(const_dnnl_primitive_desc_t pd) {
    const char *s = dnnl_prim_kind2str(kind_of(pd));
    return s ? s : "?";
}

/* The line of one step: the node being compiled, what the primitive is,
 * the nodes it absorbed (b->chain), and a "slow: " line after it when the
 * primitive is a reference kernel seam could not avoid. */
void dx_log_prim(builder *b, const_dnnl_primitive_desc_t pd) {
    char what[400], fuses[400] = "";
    tensors_str(pd, what, sizeof(what));
    const chain *c = b->chain;
    size_t at = 0;
    for (int32_t k = 0; c && k < c->n && at + 1 < sizeof(fuses); k++) {
        int w = snprintf(fuses + at, sizeof(fuses) - at, "%s'%s' (%s)", k ? ", " : "; fuses ",
                         c->name[k] ? c->name[k] : "", c->op[k] ? c->op[k] : "?");
        if (w < 0) break;
        at += (size_t)w;
        if (at >= sizeof(fuses)) at = sizeof(fuses) - 1;
    }
    const seam_node_view *n = b->n;
    const char *name = n->name ? n->name : "";
    dx_log(b->p, "node %d '%s' (%s): %s %s; %s%s%s", n->index, name, n->op_type, kind_name(pd), dx_impl_name(pd), what,
           fuses, !dx_is_ref(pd) || !composite_ref(pd) ? ""
                  : kind_of(pd) == dnnl_rnn           ? " (on oneDNN's gemm)"
                                                      : " (one fast reorder per input)");
    if (dx_is_slow_ref(pd))
        dx_log(b->p, "slow: node %d '%s' (%s): oneDNN has only its reference kernel (%s) for this %s (%s%s); fix: %s",
               n->index, name, n->op_type, dx_impl_name(pd), kind_name(pd), what, fuses,
               b->ref_fix ? b->ref_fix
                          : "keep the node on the CPU (--cpu-ops or --pin), or run on a CPU where oneDNN has a JIT "
                            "kernel for it (these are chosen per instruction set)");
}
