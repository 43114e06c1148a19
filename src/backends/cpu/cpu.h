/*
 * Helpers shared by the CPU kernels: element access for every dtype,
 * float16/bfloat16 conversion, numpy broadcasting, and shape checks.
 *
 * Kernels pick a fast path for the dtypes real models use (float32,
 * int64) and fall back to the generic element access (cpu_get/cpu_set,
 * through double or int64) for the rest, so every dtype the spec allows
 * works without one copy of each loop per type.
 */
#ifndef SEAM_CPU_H
#define SEAM_CPU_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "backends/cpu/kernels.h"
#include "ops/conv_geom.h"

/* For the hottest loops: a second copy built for AVX2, picked at load time
 * on machines that have it (the baseline build targets plain x86-64). */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define CPU_HOT __attribute__((target_clones("avx2", "default")))
#else
#define CPU_HOT
#endif

bool cpu_is_float(int32_t dtype);   /* float16/32/64, bfloat16 */
bool cpu_is_signed_int(int32_t dtype);
bool cpu_is_int(int32_t dtype);     /* any integer, not bool */
/* A float, an integer or bool: the dtypes cpu_get and cpu_set handle. */
bool cpu_is_real(int32_t dtype);

float cpu_half_to_float(uint16_t h);
uint16_t cpu_float_to_half(float f);
float cpu_bf16_to_float(uint16_t h);
/* ONNX's 8-bit floats (SEAM_DTYPE_FLOAT8*): whether dt is one; a code's
 * value (NaN for the NaN codes); a value rounded to nearest even into dt,
 * what rounds past the largest finite value (and Inf) saturating to it
 * (saturate), or else NaN (Inf for E5M2), as Cast-19 says. */
bool cpu_is_float8(int32_t dt);
double cpu_f8_to_double(uint8_t code, int32_t dt);
uint8_t cpu_double_to_f8(double v, int32_t dt, bool saturate);
uint16_t cpu_float_to_bf16(float f);

/* Element i of a buffer of dtype, as double / as int64 (floats truncate). */
double cpu_get(const void *p, int32_t dtype, int64_t i);
int64_t cpu_get_i64(const void *p, int32_t dtype, int64_t i);
/* Stores v into element i, converting as a C cast would (float to int
 * truncates; to bool: v != 0). */
void cpu_set(void *p, int32_t dtype, int64_t i, double v);
void cpu_set_i64(void *p, int32_t dtype, int64_t i, int64_t v);
/* cpu_get and cpu_set with float32 inline, for per-element loops. */
static inline double cpu_ld(const void *p, int32_t dtype, int64_t i) {
    return dtype == SEAM_DTYPE_FLOAT32 ? (double)((const float *)p)[i] : cpu_get(p, dtype, i);
}
static inline void cpu_st(void *p, int32_t dtype, int64_t i, double v) {
    if (dtype == SEAM_DTYPE_FLOAT32) ((float *)p)[i] = (float)v;
    else cpu_set(p, dtype, i, v);
}
/* Copies element i of src into element j of dst (same dtype). */
static inline void cpu_copy_elem(void *dst, int64_t j, const void *src, int64_t i, size_t es) {
    memcpy((char *)dst + (size_t)j * es, (const char *)src + (size_t)i * es, es);
}

/* Broadcasts the shapes of n tensors (numpy rules) into dims/rank.
 * Returns false when they are not compatible. */
bool cpu_broadcast(const seam_tensor *const *ts, int32_t n, int32_t *rank, int64_t *dims);
/* Strides of t (in elements) seen through a broadcast to (rank, dims):
 * 0 on broadcast axes. */
void cpu_bcast_strides(const seam_tensor *t, int32_t rank, const int64_t *dims, int64_t *strides);
/* Row-major strides of a shape. */
void cpu_strides(int32_t rank, const int64_t *dims, int64_t *strides);

/* Walks every element of an output of (rank, dims) with up to 4 inputs'
 * broadcast strides: off[k] is the current element of input k. */
typedef struct cpu_iter {
    int32_t rank, n;
    int64_t dims[SEAM_MAX_RANK];
    int64_t strides[4][SEAM_MAX_RANK];
    int64_t idx[SEAM_MAX_RANK];
    int64_t off[4];
} cpu_iter;
void cpu_iter_init(cpu_iter *it, int32_t rank, const int64_t *dims, const seam_tensor *const *ins, int32_t n);
/* Advances to the next element (row-major). */
static inline void cpu_iter_next(cpu_iter *it) {
    for (int32_t d = it->rank - 1; d >= 0; d--) {
        for (int32_t k = 0; k < it->n; k++) it->off[k] += it->strides[k][d];
        if (++it->idx[d] < it->dims[d]) return;
        for (int32_t k = 0; k < it->n; k++) it->off[k] -= it->strides[k][d] * it->dims[d];
        it->idx[d] = 0;
    }
}

/* Steps a row-major multi-index idx over dims to the next position
 * (wrapping to all zeros after the last). */
static inline void cpu_index_next(int64_t *idx, const int64_t *dims, int32_t rank) {
    for (int32_t d = rank - 1; d >= 0; d--) {
        if (++idx[d] < dims[d]) return;
        idx[d] = 0;
    }
}

/* The name of the node's input i, for messages. */
static inline const char *cpu_in_name(const seam_kernel *k, int32_t i) { return k->g->values[k->n->inputs[i]].name; }

/* Reads an integer tensor (int32/int64) into out (at most max). -1 if it
 * is not an integer tensor or too long. */
int32_t cpu_read_ints(const seam_tensor *t, int64_t *out, int32_t max);
/* Element count of dims[from, to): 0 if any is 0, INT64_MAX if it would
 * overflow. */
int64_t cpu_span(const int64_t *dims, int32_t from, int32_t to);

/* OpenBLAS single-threaded, its idle workers stopped (once per process):
 * kernels that call it from seam's pool call this first (blas.c). */
void cpu_blas_single_thread(void);

/* The window geometry (ops/conv_geom.h) of Conv, the pools and their
 * quantized forms for input x ([N, C, spatial...]) and the given kernel
 * sizes. Fails, naming the node, when x has no spatial axis or an
 * attribute is invalid. */
seam_status cpu_conv_geom(seam_kernel *k, const seam_tensor *x, const int64_t *kernel, bool ceil_mode, conv_geom *g);

/* The cubic convolution kernel (Keys) with coefficient a at distance t,
 * for Resize's and GridSample's cubic modes. */
double cpu_cubic_weight(double t, double a);

/* Resize's coordinate_transformation_mode (resize.c). */
typedef enum {
    CPU_RZ_UNKNOWN = -1, /* a string that names none */
    CPU_RZ_HALF_PIXEL,
    CPU_RZ_PYTORCH_HALF,
    CPU_RZ_ALIGN,
    CPU_RZ_ASYM,
    CPU_RZ_TF_CROP,
    CPU_RZ_HALF_SYM,
    CPU_RZ_TF_NN,
} cpu_resize_coord;
/* n's coordinate_transformation_mode; def when it has none. */
cpu_resize_coord cpu_resize_coord_of(const ir_node *n, cpu_resize_coord def);
/* n's nearest_mode: 'p' round_prefer_floor (the default), 'c'
 * round_prefer_ceil, 'f' floor, 'C' ceil. */
char cpu_resize_nearest_of(const ir_node *n);
/* Output coordinate xo's place in the input per the mode (ONNX's formulas,
 * with the output length in * scale unrounded, as the reference computes
 * it); roi_lo/roi_hi only for tf_crop_and_resize. */
double cpu_resize_to_input(cpu_resize_coord cm, double xo, double scale, int64_t in, int64_t out_int, double roi_lo,
                           double roi_hi);

/* Resize and Upsample in any mode, rank and dtype, element by element in
 * double (resize.c); spatial.c's Resize takes its fast paths first and
 * hands everything else to it. */
seam_status cpu_resize_general_run(seam_kernel *k);
seam_status cpu_nonzero_run(seam_kernel *k); /* nonzero.c */
seam_status cpu_resize_general_check(seam_check *c);

/* erf of n floats, vectorizing, within 2.5 ulp (activation.c). */
void cpu_erf_f32(const float *x, float *y, int64_t n);
/* sigmoid and tanh of n floats, vectorizing, within a few ulp (activation.c);
 * x and y may be the same array. */
void cpu_sigmoid_f32(const float *x, float *y, int64_t n);
void cpu_tanh_f32(const float *x, float *y, int64_t n);

/* The largest tensor a shape read from data may ask for (2^31 elements):
 * hostile shape inputs fail with a message instead of allocating TBs. */
#define MAX_DATA_NUMEL ((int64_t)1 << 31)

/* The epilogue of a kernel with a fused activation (act_params in
 * ops/activation.h): y[i] = post(y[i] + bias) for i in [0, n), with the same
 * formulas as the activation kernels. Kind NONE just adds the bias. */
void cpu_post_apply(const act_params *op, float *y, int64_t n, float bias);

/* Refuses an auto_pad that is none of the spec's four values (Conv and
 * the pools; it would otherwise fail at run time). */
seam_status check_auto_pad(seam_check *c);
/* Checks refusing input 0 dtypes other than floats / numbers. */
seam_status check_float_input(seam_check *c);
/* Refuses strings and other input 0 dtypes of no fixed size, for kernels
 * that move elements as bytes (tensor.c). */
seam_status check_fixed_size(seam_check *c);
/* Input i's data when it is a constant the session will run with (an
 * initializer no graph input replaces, or a Constant node's value), for
 * check() to prepare from; NULL otherwise. A run compares the data pointer
 * it gets with the one prepared from before using what was prepared. */
const ir_tensor *cpu_constant_input(const seam_check *c, int32_t i);
seam_status check_numeric_input(seam_check *c);
seam_status check_real_input(seam_check *c); /* cpu_is_real */

#endif
