/*
 * dnnl, an op family (see program.h for the order): quantized ops
 * (quant.c): QLinearConv and QLinearMatMul on oneDNN's int8 primitives
 * (u8/s8 activations, s8 weights reordered once at compile time, scales
 * per output channel, zero points), QuantizeLinear and DequantizeLinear
 * between them and float ops.
 *
 * An int8 primitive's output is an int8 slot in the layout it picks; an
 * int8 value read by a float op is converted by that reader (dx_as_plain
 * makes the float32 copy every held value has, see mask.h), and an int8
 * primitive reading a value held in float32 (an integer from a view op)
 * reorders it to its type exactly.
 */
#ifndef SEAM_DNNL_QUANT_H
#define SEAM_DNNL_QUANT_H

#include "fuse.h"

/* True when oneDNN's int8 products of node n are exact on this CPU (it
 * has VNNI, or n's constant int8 weights, input `weights`, are within
 * [-64, 64], or SEAM_DNNL_INT8_WITHOUT_VNNI=1); otherwise writes why n
 * stays off dnnl and returns false (quant.c). */
bool dx_int8_products_exact(const seam_node_view *n, int32_t weights, char *why, size_t wn);

/* Whether node n's op is one of quant.c's (its row checks every dtype). */
bool dx_is_quant_op(const seam_node_view *n);

/* The host steps' loops (quant.c, quant_dyn.c, quant_concat.c): copies
 * built for AVX-512 and AVX2 besides the baseline x86-64 one, picked at
 * load time, as the CPU backend's CPU_HOT does. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define DX_HOT __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define DX_HOT
#endif

/* The host steps' work in chunks of this many elements, on oneDNN's
 * OpenMP threads when there is more than one: DX_Q_CHUNKS(count, at, n,
 * body) runs body for each chunk [at, at + n) of [0, count). */
#define DX_Q_CHUNK 16384
#ifdef _OPENMP
#define DX_Q_OMP_FOR _Pragma("omp parallel for schedule(static) if (dx_chunks_ > 1)")
#else
#define DX_Q_OMP_FOR
#endif
#define DX_Q_CHUNKS(count, at, n, body)                                                                \
    do {                                                                                                \
        int64_t dx_count_ = (count), dx_chunks_ = (dx_count_ + DX_Q_CHUNK - 1) / DX_Q_CHUNK;            \
        DX_Q_OMP_FOR                                                                                    \
        for (int64_t dx_c_ = 0; dx_c_ < dx_chunks_; dx_c_++) {                                          \
            int64_t at = dx_c_ * DX_Q_CHUNK, n = dx_count_ - at < DX_Q_CHUNK ? dx_count_ - at : DX_Q_CHUNK; \
            body;                                                                                       \
        }                                                                                               \
    } while (0)

/* 1.5 * 2^23, read through a volatile (quant.c) so that (v + big) - big is
 * not folded to v: that rounds v, |v| <= 2^22, to nearest even in the
 * FPU's mode, in a loop the compiler vectorizes; NaN stays NaN. */
extern volatile float dx_round_big;

/* A host step's view of slot s's bytes (the caller's at a boundary). */
static inline void *dx_q_data(const program *p, int32_t s) {
    void *h = NULL;
    dnnl_memory_get_data_handle(p->slots[s].mem, &h);
    return h;
}

/* What an int8 convolution is made of (compile_qconv, quant.c), for
 * quant_conv.c. */
typedef struct qconv_plan {
    int64_t m, group;          /* output channels, groups */
    int32_t nsp, wr;           /* spatial dims; the weights' rank (grouped: one more) */
    int32_t xz, yz;            /* zero points of x and y */
    dnnl_data_type_t xdt, ydt; /* u8 or s8 */
    dnnl_dims_t id, od, wd;    /* x's, y's and the weights' dims */
    dnnl_dims_t strides, dilates, pl, pr;
    const float *oscale;       /* x_scale * w_scale[c] / y_scale */
    int64_t n_scales;
    int32_t sw;                /* the weights' slot */
} qconv_plan;

/* The convolution of plan c made without x's zero point when oneDNN gave
 * the one with it (with_zp) a slower kernel than brgconv: x padded with its
 * zero point by a host step, the bias shifted (quant_conv.c). 1 when made,
 * 0 when not (nothing added), -1 on an error. */
int32_t dx_qconv_without_src_zp(builder *b, const dx_io *io, const qconv_plan *c, const_dnnl_primitive_desc_t with_zp);
/* The attribute of an int8 primitive (quant.c): output scales (count of
 * them along dim axis, or one), zero points as runtime arguments when not
 * 0 (their slots appended to kinds/slots), a round post-op before y's. */
dnnl_primitive_attr_t dx_q_attr(builder *b, const float *oscales, int64_t count, int32_t axis, int32_t xz, int32_t wz,
                                int32_t yz, int32_t *kinds, int32_t *slots, int32_t *n_args);

/* Helpers quant_dyn.c shares: */
bool dx_q_is_8bit(seam_dtype dt);
/* The oneDNN type of an 8-bit or int32 dtype. */
dnnl_data_type_t dx_q_dt(seam_dtype dt);
/* Constant v's values as doubles (float32, uint8, int8, int32), at most
 * max; *count gets how many. False with b->err set. */
bool dx_q_const_values(builder *b, const seam_value_info *v, double *out, int64_t max, int64_t *count);
/* A slot over a constant's bytes, in place, plain, seen with the given dims. */
int32_t dx_q_const_slot(builder *b, const seam_value_info *v, seam_dtype want, int32_t rank, const int64_t *dims);
/* A zero point as a runtime argument: one s32, owned by the program. */
int32_t dx_q_zp_slot(builder *b, int32_t value);
/* An int8 matmul's A (slot sin, laid out in in_md, seen as a_md [rows,
 * K]) and B (slot sw, reordered into pd's layout); false with b->err set. */
bool dx_q_matmul_in(builder *b, int32_t sin, const dnnl_memory_desc_t *in_md, const dnnl_memory_desc_t *a_md, int32_t sw,
                    const_dnnl_primitive_desc_t pd, int32_t *va, int32_t *wt);
/* Its Y: b->n's output 0 in out_md (*sy; a boundary's stand-in is copied
 * to *final_slot after), and with vy, *vy seen as y_md [rows, N]. */
bool dx_q_matmul_out(builder *b, const dnnl_memory_desc_t *out_md, const dnnl_memory_desc_t *y_md, int32_t *sy, int32_t *vy,
                     int32_t *final_slot);

/* The family's rows (see dx_op), ended by a row whose op is NULL. */
extern const dx_op dx_quant_rows[];

#endif
