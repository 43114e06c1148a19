/*
 * dnnl: the ops that move bytes rather than compute (one op family, see
 * program.h): the Reshape-like views, Transpose, Slice, Gather and Split
 * as strided views of their input (copied only when a reader needs a
 * dense layout), and Pad.
 */
#include <stdlib.h>
#include <string.h>

#include "tensor.h"
#include "ops/attr.h"

/* A strided view v as value `name`: copied into place when the value
 * leaves the subgraph, else published as is (copied only when a reader
 * needs it dense). */
static bool publish_view(builder *b, int32_t v, const char *name) {
    program *p = b->p;
    int32_t sd = dx_slot_of(p, name);
    if (sd >= 0) return dx_add_reorder(b, v, sd); /* a boundary output */
    p->slots[v].name = name;
    /* a dense channels-last view of rank 4 or more (NHWC transposed to
     * NCHW, as convnext writes around its layer norms) is what a
     * convolution writes: no copy for its readers. Not of rank 3: there
     * it is also attention's K^T of [B*H, S, D], which a MatMul reads as
     * a lazy view, as it is, without a copy to plain. */
    p->slots[v].lazy = p->slots[v].has_md && p->slots[v].md.data_type == dnnl_f32 &&
                       !(p->slots[v].rank >= 4 && dx_is_channels_last(&p->slots[v])); /* (an 8-bit view is plain) */
    return true;
}

/* Reshape-like ops: same bytes, new shape: an alias slot. */
static bool compile_view(builder *b, bool *fused, const dx_io *io) {
    const seam_node_view *n = b->n;
    program *p = b->p;
    int32_t in = dx_input_slot(b, &n->inputs[0]);
    slot shape;
    memset(&shape, 0, sizeof(shape));
    shape.rank = n->outputs[0].rank;
    for (int32_t d = 0; d < shape.rank; d++) shape.dims[d] = n->outputs[0].dims[d];
    /* a strided view (a Slice, a Transpose) stays one when the new shape
     * only splits or merges dims its strides allow */
    dnnl_memory_desc_t smd;
    bool strided = in >= 0 && (p->slots[in].lazy || dx_is_strided(&p->slots[in])) && p->slots[in].scale == 1.0f &&
                   dx_reshape_view(&p->slots[in], &shape, &smd);
    /* an 8-bit value (an int8 primitive's output) stays 8-bit: viewed in
     * its type, plain, for the int8 primitive that reads it next (a float
     * reader converts it, as it converts any 8-bit slot) */
    dnnl_memory_desc_t q8;
    bool eight = in >= 0 && !strided && p->slots[in].has_md &&
                 (p->slots[in].md.data_type == dnnl_u8 || p->slots[in].md.data_type == dnnl_s8);
    if (eight) {
        dnnl_memory_desc_t from;
        dx_md_of(&p->slots[in], &from);
        dnnl_dims_t d;
        for (int32_t k = 0; k < from.ndims; k++) d[k] = from.dims[k];
        dnnl_memory_desc_init_by_tag(&q8, from.ndims, d, from.data_type, dx_plain_tag(from.ndims));
        in = dx_in_layout(b, in, &q8);
        int32_t r = shape.rank ? shape.rank : 1;
        for (int32_t k = 0; k < r; k++) d[k] = shape.rank ? shape.dims[k] : 1;
        dnnl_memory_desc_init_by_tag(&q8, r, d, from.data_type, dx_plain_tag(r));
    }
    if (in >= 0 && !strided && !eight) in = dx_as_plain(b, in);
    if (in < 0) return dx_fail(b, "its input is not available"), false;
    int32_t v = dx_view_slot(p, in, &shape, strided ? &smd : eight ? &q8 : NULL);
    if (v < 0) return dx_fail(b, "out of memory"), false;
    return publish_view(b, v, n->outputs[0].name);
}

/* Transpose: a reorder from a view of the input with permuted strides. */
static bool compile_transpose(builder *b, bool *fused, const dx_io *io) {
    const seam_node_view *n = b->n;
    program *p = b->p;
    int32_t r = p->slots[io->sin].rank;
    int64_t perm[MAXR], st[MAXR];
    const int64_t *pv;
    int32_t np = 0;
    if (seam_node_attr_ints(n, "perm", &pv, &np)) {
        if (np != r) return dx_fail(b, "perm does not match the input's rank"), false;
        bool seen[MAXR] = {false};
        for (int32_t d = 0; d < r; d++) {
            perm[d] = pv[d] < 0 ? pv[d] + r : pv[d];
            if (perm[d] < 0 || perm[d] >= r || seen[perm[d]])
                return dx_fail(b, "perm is not a permutation of the axes"), false;
            seen[perm[d]] = true;
        }
    } else {
        for (int32_t d = 0; d < r; d++) perm[d] = r - 1 - d;
    }
    dx_dense_strides(&p->slots[io->sin], st);
    slot shape;
    dx_shape_of(&shape, &n->outputs[0]);
    dnnl_dims_t dims, strides;
    for (int32_t d = 0; d < r; d++) dims[d] = p->slots[io->sin].dims[perm[d]], strides[d] = st[perm[d]];
    dnnl_memory_desc_t vmd;
    int32_t rr = r ? r : 1;
    if (!r) dims[0] = 1, strides[0] = 1;
    if (dnnl_memory_desc_init_by_strides(&vmd, rr, dims, dnnl_f32, strides) != dnnl_success)
        return dx_fail(b, "bad transpose"), false;
    int32_t v = dx_view_slot(p, io->sin, &shape, &vmd);
    if (v < 0) return dx_fail(b, "out of memory"), false;
    /* no copy until a reader needs one: a MatMul reads the strided view
     * as it is, and a permutation that moves only 1-sized dims is plain */
    return publish_view(b, v, n->outputs[0].name);
}

/* Slice with constant bounds and positive steps: a reorder from a strided
 * view of the input, which starts at the first element taken. */
static bool compile_slice(builder *b, bool *fused, const dx_io *io) {
    const seam_node_view *n = b->n;
    program *p = b->p;
    int32_t r = p->slots[io->sin].rank;
    int64_t starts[MAXR], ends[MAXR], axes[MAXR], steps[MAXR];
    int32_t ns, ne, na = -1, nst = -1;
    if (n->opset >= 10) {
        ns = n->n_inputs > 1 ? dx_const_ints(b, &n->inputs[1], starts, MAXR) : -1;
        ne = n->n_inputs > 2 ? dx_const_ints(b, &n->inputs[2], ends, MAXR) : -1;
        if (n->n_inputs > 3 && n->inputs[3].name) na = dx_const_ints(b, &n->inputs[3], axes, MAXR);
        if (n->n_inputs > 4 && n->inputs[4].name) nst = dx_const_ints(b, &n->inputs[4], steps, MAXR);
        if ((n->n_inputs > 3 && n->inputs[3].name && na < 0) || (n->n_inputs > 4 && n->inputs[4].name && nst < 0))
            return dx_fail(b, "axes and steps must be constants"), false;
    } else {
        const int64_t *v;
        int32_t c;
        ns = seam_node_attr_ints(n, "starts", &v, &c) && c <= MAXR ? (memcpy(starts, v, 8 * (size_t)c), c) : -1;
        ne = seam_node_attr_ints(n, "ends", &v, &c) && c <= MAXR ? (memcpy(ends, v, 8 * (size_t)c), c) : -1;
        if (seam_node_attr_ints(n, "axes", &v, &c) && c <= MAXR) memcpy(axes, v, 8 * (size_t)c), na = c;
    }
    if (ns < 0 || ne != ns) return dx_fail(b, "starts and ends must be constants of one length"), false;
    if (na < 0) {
        na = ns;
        for (int32_t k = 0; k < ns; k++) axes[k] = k;
    }
    if (nst < 0) {
        nst = ns;
        for (int32_t k = 0; k < ns; k++) steps[k] = 1;
    }
    if (na != ns || nst != ns) return dx_fail(b, "starts, ends, axes and steps differ in length"), false;
    int64_t first[MAXR] = {0}, stride_of[MAXR], st[MAXR];
    for (int32_t d = 0; d < r; d++) stride_of[d] = 1;
    for (int32_t k = 0; k < ns; k++) {
        int64_t a = axes[k] < 0 ? axes[k] + r : axes[k];
        if (a < 0 || a >= r) return dx_fail(b, "an axis is out of range"), false;
        if (steps[k] <= 0) return dx_fail(b, "Slice with a step below 1 is not supported by dnnl"), false;
        int64_t dim = p->slots[io->sin].dims[a], f = starts[k] < 0 ? starts[k] + dim : starts[k];
        first[a] = f < 0 ? 0 : f > dim ? dim : f;
        stride_of[a] = steps[k];
    }
    dx_dense_strides(&p->slots[io->sin], st);
    slot shape;
    dx_shape_of(&shape, &n->outputs[0]);
    if (shape.rank != r) return dx_fail(b, "the inferred output rank differs from the input's"), false;
    dnnl_dims_t dims, strides;
    int64_t offset = 0;
    for (int32_t d = 0; d < r; d++) {
        dims[d] = shape.dims[d], strides[d] = st[d] * stride_of[d];
        int64_t room = p->slots[io->sin].dims[d] - first[d]; /* elements from the first one taken */
        if (dims[d] > 0 && (room <= 0 || (dims[d] > 1 && stride_of[d] > (room - 1) / (dims[d] - 1))))
            return dx_fail(b, "the inferred output shape does not fit the input"), false;
        offset += first[d] * st[d];
    }
    dnnl_memory_desc_t vmd;
    if (dnnl_memory_desc_init_by_strides(&vmd, r, dims, dnnl_f32, strides) != dnnl_success)
        return dx_fail(b, "bad slice"), false;
    int32_t v = dx_view_slot(p, io->sin, &shape, &vmd);
    if (v < 0) return dx_fail(b, "out of memory"), false;
    p->slots[v].offset = offset * (int64_t)sizeof(float);
    /* like a Transpose: no copy until a reader needs a dense layout */
    return publish_view(b, v, n->outputs[0].name);
}

/* Gather with one constant index (torch's h_n[-1], x[:, 0]): a strided
 * view of the input at that index, without the axis (a scalar index) or
 * with it 1 long (a 1-element index). No copy until a reader needs one. */
static bool supports_gather(const seam_node_view *n, char *why, size_t wn) {
    if (n->n_inputs < 2 || !n->inputs[1].name || !dx_const_input(n, 1) || dx_value_numel(&n->inputs[1]) != 1 ||
        n->inputs[1].rank > 1)
        return dx_refuse(why, wn, "Gather is supported only with one constant index (dnnl has no gather)");
    return true;
}

static bool compile_gather(builder *b, bool *fused, const dx_io *io) {
    const seam_node_view *n = b->n;
    program *p = b->p;
    int32_t r = p->slots[io->sin].rank;
    int64_t axis = node_attr_int(dx_ir(n), "axis", 0), idx;
    if (axis < 0) axis += r;
    if (axis < 0 || axis >= r) return dx_fail(b, "axis out of range"), false;
    if (dx_const_ints(b, &n->inputs[1], &idx, 1) != 1)
        return dx_fail(b, "the index must be one int32 or int64 constant"), false;
    int64_t dim = p->slots[io->sin].dims[axis];
    if (idx < 0) idx += dim;
    if (idx < 0 || idx >= dim) return dx_fail(b, "the index is out of range"), false;
    int64_t st[MAXR];
    dx_dense_strides(&p->slots[io->sin], st);
    slot shape;
    dx_shape_of(&shape, &n->outputs[0]);
    bool keep = n->inputs[1].rank == 1;
    if (shape.rank != (keep ? r : r - 1)) return dx_fail(b, "the inferred output rank does not fit"), false;
    dnnl_dims_t dims, strides;
    for (int32_t d = 0, o = 0; d < r; d++) {
        if (d == axis && !keep) continue;
        dims[o] = d == axis ? 1 : p->slots[io->sin].dims[d], strides[o] = st[d];
        if (dims[o] != shape.dims[o]) return dx_fail(b, "the inferred output shape does not fit"), false;
        o++;
    }
    int32_t rr = shape.rank ? shape.rank : 1;
    if (!shape.rank) dims[0] = 1, strides[0] = 1;
    dnnl_memory_desc_t vmd;
    if (dnnl_memory_desc_init_by_strides(&vmd, rr, dims, dnnl_f32, strides) != dnnl_success)
        return dx_fail(b, "bad gather"), false;
    int32_t v = dx_view_slot(p, io->sin, &shape, &vmd);
    if (v < 0) return dx_fail(b, "out of memory"), false;
    p->slots[v].offset = idx * st[axis] * (int64_t)sizeof(float);
    return publish_view(b, v, n->outputs[0].name);
}

/* Split: each output a strided view of the input (its part along the
 * axis, the sizes the outputs' inferred shapes give), copied only when a
 * reader needs it dense. */
static bool compile_split(builder *b, bool *fused, const dx_io *io) {
    const seam_node_view *n = b->n;
    program *p = b->p;
    int32_t r = p->slots[io->sin].rank;
    int64_t axis = node_attr_int(dx_ir(n), "axis", 0), st[MAXR], at = 0;
    if (axis < 0) axis += r;
    if (axis < 0 || axis >= r) return dx_fail(b, "axis out of range"), false;
    dx_dense_strides(&p->slots[io->sin], st);
    for (int32_t k = 0; k < n->n_outputs; k++) {
        n = b->n = seam_subgraph_node(b->sg, b->index, b->storage);
        const seam_value_info *o = &n->outputs[k];
        if (o->rank != r) return dx_fail(b, "an output's rank differs from the input's"), false;
        dnnl_dims_t dims, strides;
        for (int32_t d = 0; d < r; d++) {
            dims[d] = o->dims[d], strides[d] = st[d];
            if (d != axis && dims[d] != p->slots[io->sin].dims[d])
                return dx_fail(b, "an output's shape does not fit"), false;
        }
        if (at + dims[axis] > p->slots[io->sin].dims[axis])
            return dx_fail(b, "the outputs are longer than the input"), false;
        if (!o->name) {
            at += dims[axis];
            continue;
        }
        slot shape;
        dx_shape_of(&shape, o);
        dnnl_memory_desc_t vmd;
        if (dnnl_memory_desc_init_by_strides(&vmd, r, dims, dnnl_f32, strides) != dnnl_success)
            return dx_fail(b, "bad split"), false;
        int32_t v = dx_view_slot(p, io->sin, &shape, &vmd);
        if (v < 0) return dx_fail(b, "out of memory"), false;
        p->slots[v].offset = at * st[axis] * (int64_t)sizeof(float);
        at += dims[axis];
        if (!publish_view(b, v, o->name)) return false;
    }
    if (at != p->slots[io->sin].dims[axis]) return dx_fail(b, "the outputs do not cover the input"), false;
    return true;
}

/* ---- Pad ----
 * Constant mode, with any pads (negative ones crop) and value: a copy of a
 * resident buffer filled with the value, then the input (cropped) copied
 * into its place. A zero Pad of the spatial dims read only by a Conv, or
 * by an AveragePool without pads of its own, is left to that reader: its
 * window takes the pads (oneDNN pads with zeros; the pool then counts the
 * padded cells, as it counts the Pad's zeros), and no step is made. */

typedef struct pad_spec {
    int32_t rank;
    int64_t lo[MAXR], hi[MAXR];
    float value;
} pad_spec;

/* The pads and value of Pad node n (attributes before opset 11, constant
 * inputs from it); false with the reason. */
static bool pad_of(builder *b, const seam_node_view *n, pad_spec *ps, const char **why) {
    int32_t r = n->inputs[0].rank;
    int64_t pads[2 * MAXR], axes[MAXR];
    int32_t np = -1, na = -1;
    ps->rank = r, ps->value = 0;
    if (n->opset < 11) {
        const int64_t *v;
        int32_t c;
        if (seam_node_attr_ints(n, "pads", &v, &c) && c <= 2 * MAXR) memcpy(pads, v, 8 * (size_t)c), np = c;
        seam_node_attr_float(n, "value", &ps->value);
    } else {
        np = n->n_inputs > 1 ? dx_const_ints(b, &n->inputs[1], pads, 2 * MAXR) : -1;
        if (n->n_inputs > 2 && n->inputs[2].name && !dx_const_scalar(b->sg, &n->inputs[2], &ps->value)) {
            *why = "Pad with a constant_value that is not one float32 constant is not supported by dnnl";
            return false;
        }
        if (n->n_inputs > 3 && n->inputs[3].name && (na = dx_const_ints(b, &n->inputs[3], axes, MAXR)) < 0) {
            *why = "Pad's axes must be a constant";
            return false;
        }
    }
    int32_t nax = na >= 0 ? na : r;
    if (np != 2 * nax) {
        *why = "Pad's pads must be a constant with two values per axis";
        return false;
    }
    for (int32_t d = 0; d < r; d++) ps->lo[d] = ps->hi[d] = 0;
    for (int32_t k = 0; k < nax; k++) {
        int64_t a = na >= 0 ? (axes[k] < 0 ? axes[k] + r : axes[k]) : k;
        if (a < 0 || a >= r) {
            *why = "Pad has an axis out of range";
            return false;
        }
        ps->lo[a] = pads[k], ps->hi[a] = pads[nax + k];
    }
    for (int32_t d = 0; d < r; d++)
        if (n->inputs[0].dims[d] + ps->lo[d] + ps->hi[d] != n->outputs[0].dims[d]) {
            *why = "Pad's pads do not give its output's shape";
            return false;
        }
    return true;
}

static bool supports_pad(const seam_node_view *n, char *why, size_t wn) {
    const char *mode = node_attr_string(dx_ir(n), "mode", "constant");
    if (strcmp(mode, "constant")) return dx_refuse(why, wn, "Pad mode=%s is not supported (only constant)", mode);
    if (n->opset >= 11)
        for (int32_t k = 1; k < n->n_inputs; k++)
            if (!dx_const_input(n, k) && !(k == 1 && dx_run_time_param(n, k)))
                return dx_refuse(why, wn, "Pad with a computed input %d is not supported", k);
    if (n->n_inputs > 2 && n->inputs[2].name && n->inputs[2].dtype != SEAM_DTYPE_FLOAT32)
        return dx_refuse(why, wn, "Pad with a constant_value that is not float32 is not supported");
    return true;
}

/* Whether the Pad's sole reader m takes its pads into its window. */
static bool pad_foldable(const pad_spec *ps, const seam_node_view *m, const char *out) {
    int32_t r = ps->rank;
    if (ps->value != 0 || r < 3 || r > 5 || ps->lo[0] || ps->hi[0] || ps->lo[1] || ps->hi[1]) return false;
    for (int32_t d = 2; d < r; d++)
        if (ps->lo[d] < 0 || ps->hi[d] < 0) return false;
    if (!m->n_inputs || !m->inputs[0].name || strcmp(m->inputs[0].name, out)) return false;
    for (int32_t k = 1; k < m->n_inputs; k++)
        if (m->inputs[k].name && !strcmp(m->inputs[k].name, out)) return false;
    if (is_op(m, "Conv")) return true;
    if (!is_op(m, "AveragePool") || node_attr_int(dx_ir(m), "ceil_mode", 0)) return false;
    if (strcmp(node_attr_string(dx_ir(m), "auto_pad", "NOTSET"), "NOTSET")) return false;
    const int64_t *pads;
    int32_t c = node_attr_ints(dx_ir(m), "pads", &pads);
    for (int32_t k = 0; k < c; k++)
        if (pads[k]) return false;
    return true;
}

static bool compile_pad(builder *b, bool *fused, const dx_io *io) {
    int32_t sin = io->sin;
    program *p = b->p;
    pad_spec ps;
    const char *why = NULL;
    if (!pad_of(b, b->n, &ps, &why)) return dx_fail(b, why), false;
    const char *out = b->n->outputs[0].name;
    int32_t rd = b->fuse ? dx_sole_reader(b, out) : -1;
    seam_node_view st;
    const seam_node_view *m = rd >= 0 ? seam_subgraph_node(b->sg, rd, &st) : NULL;
    bool fold = m && pad_foldable(&ps, m, out);
    const seam_node_view *n = b->n = seam_subgraph_node(b->sg, b->index, b->storage);
    if (fold && !p->slots[sin].pad_pending) {
        slot shape = p->slots[sin];
        int32_t v = dx_view_slot(p, sin, &shape, shape.has_md ? &shape.md : NULL);
        if (v < 0) return dx_fail(b, "out of memory"), false;
        p->slots[v].name = out;
        p->slots[v].pad_pending = true;
        for (int32_t d = 2; d < ps.rank; d++) p->slots[v].pad_lo[d - 2] = ps.lo[d], p->slots[v].pad_hi[d - 2] = ps.hi[d];
        dx_log(p, "node %d '%s' (Pad): no step: its pads go to the window of node %d '%s' (%s)", n->index, n->name,
               m->index, m->name, m->op_type);
        return true;
    }
    if (p->slots[sin].pad_pending) return dx_fail(b, "a Pad of a Pad left to its reader"), false; /* (not made) */
    sin = dx_as_plain(b, sin);
    int32_t sd = sin >= 0 ? dx_output_slot(b, &n->outputs[0]) : -1;
    if (sd < 0) return dx_fail(b, "out of memory"), false;
    slot os = p->slots[sd];
    if (!dx_slot_numel(&os)) return true;
    /* the fill: a resident buffer of the output's shape */
    dnnl_memory_desc_t omd;
    dx_md_of(&os, &omd);
    os.name = "(pad value)";
    int32_t f = dx_temp_slot(b, &os, &omd);
    if (f < 0) return dx_fail(b, "out of memory"), false;
    slot *fs = &p->slots[f];
    size_t cnt = (size_t)dx_slot_numel(fs);
    float *fill = malloc(cnt * sizeof(float) + 1);
    if (!fill || dnnl_memory_set_data_handle(fs->mem, fill) != dnnl_success)
        return free(fill), dx_fail(b, "out of memory"), false;
    for (size_t k = 0; k < cnt; k++) fill[k] = ps.value;
    fs->owned = fill, fs->bytes = 0;
    if (!dx_add_reorder(b, f, sd)) return false;
    /* the input's kept part, into its place */
    int64_t ist[MAXR], ost[MAXR], ioff = 0, ooff = 0;
    dx_plain_strides(&p->slots[sin], ist);
    dx_plain_strides(&p->slots[sd], ost);
    slot part;
    memset(&part, 0, sizeof(part));
    part.rank = ps.rank;
    dnnl_dims_t dims, istr, ostr;
    for (int32_t d = 0; d < ps.rank; d++) {
        int64_t crop_lo = ps.lo[d] < 0 ? -ps.lo[d] : 0, crop_hi = ps.hi[d] < 0 ? -ps.hi[d] : 0;
        dims[d] = part.dims[d] = p->slots[sin].dims[d] - crop_lo - crop_hi;
        if (dims[d] <= 0) return true; /* nothing of the input is kept */
        istr[d] = ist[d], ostr[d] = ost[d];
        ioff += crop_lo * ist[d], ooff += (ps.lo[d] > 0 ? ps.lo[d] : 0) * ost[d];
    }
    int32_t r = ps.rank ? ps.rank : 1;
    if (!ps.rank) dims[0] = 1, istr[0] = ostr[0] = 1, part.rank = 0;
    dnnl_memory_desc_t imd, pmd;
    if (dnnl_memory_desc_init_by_strides(&imd, r, dims, dnnl_f32, istr) != dnnl_success ||
        dnnl_memory_desc_init_by_strides(&pmd, r, dims, dnnl_f32, ostr) != dnnl_success)
        return dx_fail(b, "bad pads"), false;
    int32_t iv = dx_view_slot(p, sin, &part, &imd), ov = iv >= 0 ? dx_view_slot(p, sd, &part, &pmd) : -1;
    if (iv < 0 || ov < 0) return dx_fail(b, "its shapes do not fit its input's bytes"), false;
    p->slots[iv].offset = ioff * (int64_t)sizeof(float);
    p->slots[ov].offset = ooff * (int64_t)sizeof(float);
    return dx_add_reorder(b, iv, ov);
}

/* Dropout at inference is its input: dnnl passes it through, and makes
 * neither the mask nor a training run's random zeros (seam backend-check
 * found both returned wrong). A mask nothing reads is absent in the view;
 * a training_mode that is a known false is inference (the exporters write
 * one: swin_t's 24 Dropouts cut its dnnl plan into 49 subgraphs). */
static bool supports_dropout(const seam_node_view *n, char *why, size_t wn) {
    if (n->n_outputs > 1 && n->outputs[1].name && n->outputs[1].name[0])
        return dx_refuse(why, wn, "Dropout's mask output: dnnl passes the data through and makes no mask");
    if (n->n_inputs > 2 && n->inputs[2].name && n->inputs[2].name[0]) {
        /* training with a ratio of 0 drops nothing (torch 1.13 writes
         * training_mode true and ratio 0 for swin_t's attention dropout) */
        seam_tensor_view t, r;
        bool known_false = n->input_constant && n->input_constant[2] && seam_node_input_data(n, 2, &t) &&
                           t.dtype == SEAM_DTYPE_BOOL && t.nbytes == 1 && !*(const uint8_t *)t.data;
        bool ratio0 = n->n_inputs > 1 && n->inputs[1].name && n->input_constant && n->input_constant[1] &&
                      seam_node_input_data(n, 1, &r) &&
                      ((r.dtype == SEAM_DTYPE_FLOAT32 && r.nbytes == 4 && *(const float *)r.data == 0) ||
                       (r.dtype == SEAM_DTYPE_FLOAT64 && r.nbytes == 8 && *(const double *)r.data == 0));
        if (!known_false && !ratio0)
            return dx_refuse(why, wn, "Dropout with a training_mode input that may be true and a ratio that may not be 0: "
                                      "dnnl runs inference only");
    }
    return true;
}

const dx_op dx_tensor_rows[] = {
    /* (the names of view_ops) */
    {"Flatten", STAGE_VIEW, NULL, compile_view},
    {"Reshape", STAGE_VIEW, NULL, compile_view},
    {"Squeeze", STAGE_VIEW, NULL, compile_view},
    {"Unsqueeze", STAGE_VIEW, NULL, compile_view},
    {"Identity", STAGE_VIEW, NULL, compile_view},
    {"Dropout", STAGE_VIEW, supports_dropout, compile_view},
    {"Pad", STAGE_ANY_LAYOUT, supports_pad, compile_pad},
    {"Transpose", STAGE_PLAIN, NULL, compile_transpose},
    {"Slice", STAGE_PLAIN, dx_supports_param_inputs, compile_slice},
    {"Gather", STAGE_PLAIN, supports_gather, compile_gather},
    {"Split", STAGE_PLAIN, NULL, compile_split},
    {NULL, STAGE_VIEW, NULL, NULL},
};
