/*
 * dnnl, layer 2 (see program.h for the order): slots, views, layouts,
 * reorders and steps (layout.c), who reads each value, the builder's
 * error messages, and the row an op family's table holds for each op
 * (dx_op), with what the compile driver readies for a row's compile
 * function (dx_io).
 */
#ifndef SEAM_DNNL_BUILDER_H
#define SEAM_DNNL_BUILDER_H

#include "program.h"

/* The plain (row-major) format tag of a rank (0 as 1). */
dnnl_format_tag_t dx_plain_tag(int32_t rank);
int32_t dx_slot_of(program *p, const char *name);
int32_t dx_add_slot(program *p, const char *name, const seam_value_info *v);
/* A slot reading base's bytes (found at run time) with the shape of
 * `shape`, in the plain layout or in md: a view, no copy. */
int32_t dx_view_slot(program *p, int32_t base, const slot *shape, const dnnl_memory_desc_t *md);
bool dx_md_of(const slot *s, dnnl_memory_desc_t *md);
int32_t dx_root_of(const program *p, int32_t s);
/* Sets the builder's error message (naming the node); returns NULL. */
void *dx_fail(builder *b, const char *what);
/* The slot of an input value: made earlier, a boundary input, or a weight. */
int32_t dx_input_slot(builder *b, const seam_value_info *v);
int32_t dx_output_slot(builder *b, const seam_value_info *v);
/* The slot of a value known by name only: made earlier, or a constant. */
int32_t dx_named_slot(builder *b, const char *name);
/* A step from a primitive descriptor (which stays the caller's). */
bool dx_add_prim(builder *b, const_dnnl_primitive_desc_t pd, int32_t n_args, const int32_t *kinds, const int32_t *slots);
bool dx_add_step(builder *b, const_dnnl_op_desc_t desc, const_dnnl_primitive_attr_t attr, int32_t n_args,
                 const int32_t *kinds, const int32_t *slots);
bool dx_add_reorder(builder *b, int32_t from, int32_t to);
/* A host step running fn (data, malloc'd, becomes the program's) on the
 * slots, whose kinds say which it reads and writes (as a primitive's). */
bool dx_add_host(builder *b, const char *name, dx_host_fn fn, void *data, int32_t n_args, const int32_t *kinds, const int32_t *slots);
/* A new intermediate slot shaped like `like`, in layout md. */
int32_t dx_temp_slot(builder *b, const slot *like, const dnnl_memory_desc_t *md);
/* Slot s in layout md: s itself, or a reordered copy. */
int32_t dx_in_layout(builder *b, int32_t s, const dnnl_memory_desc_t *md);
/* Slot s in the plain ONNX layout (reordered once, then reused). */
int32_t dx_as_plain(builder *b, int32_t s);
int32_t dx_result_slot(builder *b, const seam_value_info *v, const dnnl_memory_desc_t *md, int32_t *final_out);
bool dx_layout_step_with(builder *b, dnnl_primitive_desc_t pd, int32_t sin, const seam_value_info *out, int32_t n_extra,
                         const int32_t *extra_kinds, const int32_t *extra_slots);
bool dx_layout_step(builder *b, dnnl_primitive_desc_t pd, int32_t sin, const seam_value_info *out);
/* Weights in layout md, reordered once now into a resident buffer. */
int32_t dx_resident_copy(builder *b, int32_t from, const dnnl_memory_desc_t *md);
int32_t dx_const_ints(builder *b, const seam_value_info *v, int64_t *out, int32_t max);
int64_t dx_slot_numel(const slot *s);
void dx_plain_strides(const slot *s, int64_t *st);
void dx_dense_strides(const slot *s, int64_t *st);
bool dx_reshape_view(const slot *in, const slot *out, dnnl_memory_desc_t *md);
void dx_shape_of(slot *shape, const seam_value_info *v);
/* Strided layouts through the view ops: a value in a layout without inner
 * blocks (channels-last `acdb`, a Slice's or a Transpose's strided view)
 * is sliced, split, transposed and reshaped as a view of its bytes, and
 * copied only when a reader needs it dense: into the dense layout of the
 * same dim order (a channels-last value's slice stays channels-last for
 * the convolution that reads it), not plain. */
/* Whether slot s holds float32 in a layout oneDNN describes by strides
 * alone (no inner blocks) other than plain: channels-last, or a strided
 * view (a boundary value of another type is its readers' to convert). */
bool dx_is_strided(const slot *s);
/* Whether slot s is a float32 value of rank 3 to 6 in the dense
 * channels-last layout (acb, acdb, acdeb, ...: dim 1 innermost). */
bool dx_is_channels_last(const slot *s);
/* Slot s dense: s itself when it is not a lazy view, else a copy in the
 * dense layout with the dims in the order of s's strides (reordered once,
 * then reused; plain when that order is plain). */
int32_t dx_as_dense(builder *b, int32_t s);
/* The dense float32 layout of s's dims with order[0] outermost and
 * order[rank - 1] innermost; false when oneDNN refuses it. */
bool dx_dense_md_in_order(const slot *s, const int32_t *order, dnnl_memory_desc_t *md);
/* A layout of s's dims with the dims marked `inner` innermost (in their
 * order), the others outside them in theirs: where oneDNN's softmax and
 * reduction have fast kernels for an axis that is not the last. */
bool dx_inner_md(const slot *s, const bool *inner, dnnl_memory_desc_t *md);
/* Who reads each value (the readers index, see readers_index): */
bool dx_readers_build(const seam_subgraph_view *sg, readers_index *ix);
/* The entries for value name (node -1 first, then ascending, a node once
 * per input that reads it). */
const reader *dx_readers_range(const readers_index *ix, const char *name, int32_t *count);
/* The nodes that read value `name` (each once, at most max, ascending),
 * or -1 when it leaves the subgraph or has more readers. */
int32_t dx_readers(const builder *b, const char *name, int32_t *out, int32_t max);
/* Index of the node (in the subgraph) that alone reads value name, or -1;
 * also -1 when the value leaves the subgraph. */
int32_t dx_sole_reader(const builder *b, const char *name);
/* Writes the reason into why; returns false (for `return dx_refuse(...)`). */
bool dx_refuse(char *why, size_t why_size, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* ---- the rows of the op families' tables ---- */

/* Where compile_node (dnnl.c) hands a node to its op's function; the
 * stages come in this order, and each readies input 0 (io->sin) for the
 * next:
 *   STAGE_VIEW:       nothing readied: a Reshape-like node becomes a view
 *   STAGE_ANY_LAYOUT: sin as it is, plain or in a convolution's blocked
 *                     layout (oneDNN picks dst's layout from it)
 *   STAGE_PLAIN:      sin plain (a lazy strided view stays one for MatMul
 *                     and Transpose, which read it as it is)
 *   STAGE_PLAIN_OUT:  sin plain, and a new plain slot sd made for the
 *                     output first (-1 at the other stages)
 * ConvTranspose reads input 0 again itself (and makes it plain). */
typedef enum { STAGE_VIEW, STAGE_ANY_LAYOUT, STAGE_PLAIN, STAGE_PLAIN_OUT } op_stage;

/* What compile_node readies for a row's compile function, once for every
 * op: input 0's slot as the row's stage asks, output 0's plain slot at
 * STAGE_PLAIN_OUT, and their layouts. */
typedef struct dx_io {
    int32_t sin;            /* input 0's slot; -1 at STAGE_VIEW */
    int32_t sd;             /* output 0's plain slot at STAGE_PLAIN_OUT, else -1 */
    dnnl_memory_desc_t src; /* sin's layout (when sin >= 0) */
    dnnl_memory_desc_t dst; /* sd's layout (when sd >= 0) */
} dx_io;

/* An op the backend knows: one row of an op family's table (each family's
 * header offers its table, ended by a row whose op is NULL; dnnl.c looks
 * them up). supports() runs the checks every node gets (float32, static
 * shapes, ...), then the row's own, which lives next to its compile
 * function and says no with the precise reason (NULL: nothing more to
 * check). compile makes node b->n's steps, unless a primitive made
 * earlier absorbed it; false with b->err set on failure. */
typedef struct dx_op {
    const char *op;
    op_stage stage;
    bool (*supports)(const seam_node_view *n, char *why, size_t why_size);
    bool (*compile)(builder *b, bool *fused, const dx_io *io);
} dx_op;

#endif
