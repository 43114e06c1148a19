/* CPU kernels: sequences and optionals (core/tensor.h says how their
 * values are held), and Identity, which copies any value. Every kernel
 * here builds whole values it owns and hands them to the executor
 * (kernel_out_value); positions are checked against the sequence's length
 * and a value of the wrong kind is an error naming the node. */
#include <stdlib.h>
#include <string.h>

#include "backends/cpu/cpu.h"

static bool is_seq(const seam_tensor *t) { return t && t->dtype == SEAM_VALUE_SEQUENCE; }
static bool is_tensor(const seam_tensor *t) { return t && !seam_is_value(t->dtype); }

static size_t elem_size(int32_t dtype) {
    return dtype == SEAM_DTYPE_STRING ? sizeof(ir_bytes) : seam_dtype_size((seam_dtype)dtype);
}

static seam_tensor *seq_items(const seam_tensor *s) { return s->data; }

/* s = a sequence of n zeroed slots of elem. */
static bool seq_new(seam_tensor *s, int32_t elem, int64_t n) {
    *s = (seam_tensor){.dtype = SEAM_VALUE_SEQUENCE, .elem = elem, .numel = n};
    if (n < 0 || (uint64_t)n > SEAM_MAX_TENSOR_BYTES / sizeof(seam_tensor)) return false;
    s->nbytes = (size_t)n * sizeof(seam_tensor);
    s->data = calloc((size_t)n + 1, sizeof(seam_tensor));
    return s->data != NULL;
}

/* t = a tensor of dtype and shape with malloc'd (uninitialised) data;
 * false when the shape is absurd or out of memory. */
static bool tensor_new(seam_tensor *t, int32_t dtype, int32_t rank, const int64_t *dims) {
    *t = (seam_tensor){.dtype = dtype, .rank = rank};
    size_t es = elem_size(dtype);
    if (rank < 0 || rank > SEAM_MAX_RANK || !es) return false;
    for (int32_t d = 0; d < rank; d++) t->dims[d] = dims[d];
    t->numel = seam_shape_numel(dims, rank);
    if (t->numel < 0 || (uint64_t)t->numel > SEAM_MAX_TENSOR_BYTES / es) return false;
    t->nbytes = (size_t)t->numel * es;
    t->data = malloc(t->nbytes + 1);
    return t->data != NULL;
}

/* A position input: one int32 or int64. */
static bool read_pos(const seam_tensor *p, int64_t *out) {
    if (!is_tensor(p) || p->numel != 1 || (p->dtype != SEAM_DTYPE_INT32 && p->dtype != SEAM_DTYPE_INT64)) return false;
    *out = cpu_get_i64(p->data, p->dtype, 0);
    return true;
}

/* Position p of a sequence of length n, where p may be in [-n, n - 1]
 * (or [-n, n] when end_ok: an insertion point); -1 outside. */
static int64_t seq_index(int64_t p, int64_t n, bool end_ok) {
    if (p < -n || p > (end_ok ? n : n - 1)) return -1;
    return p < 0 ? p + n : p;
}

static seam_status need_seq(seam_kernel *k, const seam_tensor *s) {
    return is_seq(s) ? SEAM_STATUS_OK : kernel_fail(k, "input 0 must be a sequence");
}

/* The element dtype a tensor must have to join sequence s. */
static bool fits(const seam_tensor *s, const seam_tensor *t) {
    return is_tensor(t) && (s->elem == SEAM_DTYPE_UNDEFINED || t->dtype == s->elem);
}

static seam_status run_sequence_construct(seam_kernel *k) {
    int32_t n = kernel_n_in(k);
    const seam_tensor *first = kernel_in(k, 0);
    if (!is_tensor(first)) return kernel_fail(k, "input 0 must be a tensor");
    seam_tensor s;
    if (!seq_new(&s, first->dtype, n)) return kernel_oom(k);
    for (int32_t i = 0; i < n; i++) {
        const seam_tensor *x = kernel_in(k, i);
        if (!x || !fits(&s, x)) {
            seam_value_free(&s);
            return kernel_fail(k, "input %d must be a tensor of %s, as input 0", i, seam_dtype_name((seam_dtype)first->dtype));
        }
        if (!seam_value_copy(&seq_items(&s)[i], x)) {
            seam_value_free(&s);
            return kernel_oom(k);
        }
    }
    return kernel_out_value(k, 0, &s);
}

static seam_status run_sequence_empty(seam_kernel *k) {
    int64_t dt = node_attr_int(k->n, "dtype", SEAM_DTYPE_FLOAT32);
    if (dt <= SEAM_DTYPE_UNDEFINED || dt >= SEAM_DTYPE_COUNT_ || !elem_size((int32_t)dt))
        return kernel_fail(k, "dtype %lld is not a tensor element type", (long long)dt);
    seam_tensor s;
    if (!seq_new(&s, (int32_t)dt, 0)) return kernel_oom(k);
    return kernel_out_value(k, 0, &s);
}

static seam_status run_sequence_length(seam_kernel *k) {
    const seam_tensor *s = kernel_in(k, 0);
    seam_status st = need_seq(k, s);
    if (st) return st;
    seam_tensor *y = kernel_out(k, 0, SEAM_DTYPE_INT64, 0, NULL);
    if (!y) return kernel_oom(k);
    *(int64_t *)y->data = s->numel;
    return SEAM_STATUS_OK;
}

static seam_status run_sequence_at(seam_kernel *k) {
    const seam_tensor *s = kernel_in(k, 0);
    seam_status st = need_seq(k, s);
    if (st) return st;
    int64_t p;
    if (!read_pos(kernel_in(k, 1), &p)) return kernel_fail(k, "position must be one int32 or int64");
    int64_t i = seq_index(p, s->numel, false);
    if (i < 0) return kernel_fail(k, "position %lld is outside the sequence of %lld", (long long)p, (long long)s->numel);
    return kernel_out_copy(k, 0, &seq_items(s)[i]);
}

/* SequenceInsert(S, T, position = end) and SequenceErase(S, position =
 * -1): a new sequence, the elements copied. */
static seam_status edit_sequence(seam_kernel *k, bool insert) {
    const seam_tensor *s = kernel_in(k, 0);
    seam_status st = need_seq(k, s);
    if (st) return st;
    const seam_tensor *t = insert ? kernel_in(k, 1) : NULL;
    if (insert && !fits(s, t))
        return kernel_fail(k, "the tensor must be of %s, as the sequence's elements",
                           seam_dtype_name((seam_dtype)s->elem));
    const seam_tensor *pt = kernel_in(k, insert ? 2 : 1);
    int64_t n = s->numel, p = insert ? n : -1;
    if (pt && !read_pos(pt, &p)) return kernel_fail(k, "position must be one int32 or int64");
    int64_t at = seq_index(p, n, insert);
    if (at < 0) return kernel_fail(k, "position %lld is outside the sequence of %lld", (long long)p, (long long)n);
    seam_tensor r;
    if (!seq_new(&r, insert ? t->dtype : s->elem, insert ? n + 1 : n - 1)) return kernel_oom(k);
    for (int64_t i = 0, j = 0; i < n; i++) {
        if (!insert && i == at) continue;
        if (insert && j == at) j++;
        if (!seam_value_copy(&seq_items(&r)[j++], &seq_items(s)[i])) {
            seam_value_free(&r);
            return kernel_oom(k);
        }
    }
    if (insert && !seam_value_copy(&seq_items(&r)[at], t)) {
        seam_value_free(&r);
        return kernel_oom(k);
    }
    return kernel_out_value(k, 0, &r);
}

static seam_status run_sequence_insert(seam_kernel *k) { return edit_sequence(k, true); }
static seam_status run_sequence_erase(seam_kernel *k) { return edit_sequence(k, false); }

/* SplitToSequence(X, split?): pieces of X along axis. No split: pieces of
 * 1 (the axis dropped unless keepdims); a scalar: pieces of that size, the
 * last one shorter; a 1-D tensor: the sizes, which must add up. */
static seam_status run_split_to_sequence(seam_kernel *k) {
    const seam_tensor *x = kernel_in(k, 0), *sp = kernel_in(k, 1);
    if (!is_tensor(x) || x->rank < 1) return kernel_fail(k, "input 0 must be a tensor of rank >= 1");
    int32_t a = op_axis(node_attr_int(k->n, "axis", 0), x->rank);
    if (a < 0) return kernel_fail(k, "axis out of range");
    bool keep = node_attr_int(k->n, "keepdims", 1) != 0;
    int64_t len = x->dims[a], n;
    bool sized = false; /* split is 1-D: the sizes */
    int64_t chunk = 1;
    if (sp) {
        if (!is_tensor(sp) || (sp->dtype != SEAM_DTYPE_INT32 && sp->dtype != SEAM_DTYPE_INT64) || sp->rank > 1)
            return kernel_fail(k, "split must be an int32 or int64 scalar or 1-D tensor");
        keep = true;
        if (sp->rank == 0) {
            chunk = cpu_get_i64(sp->data, sp->dtype, 0);
            if (chunk <= 0) return kernel_fail(k, "split must be positive, got %lld", (long long)chunk);
            n = len == 0 ? 0 : (len + chunk - 1) / chunk;
        } else {
            n = sp->numel;
            int64_t sum = 0;
            for (int64_t i = 0; i < n; i++) {
                int64_t v = cpu_get_i64(sp->data, sp->dtype, i);
                if (v < 0 || v > len) return kernel_fail(k, "split sizes must be in [0, %lld]", (long long)len);
                sum += v;
            }
            if (sum != len) return kernel_fail(k, "split sizes add up to %lld, not the axis length %lld", (long long)sum, (long long)len);
            sized = true;
        }
    } else {
        n = len;
    }
    size_t es = elem_size(x->dtype);
    if (!es) return kernel_fail(k, "unsupported dtype");
    int64_t outer = cpu_span(x->dims, 0, a), inner = cpu_span(x->dims, a + 1, x->rank);
    seam_tensor s;
    if (!seq_new(&s, x->dtype, n)) return kernel_oom(k);
    for (int64_t j = 0, off = 0; j < n; j++) {
        int64_t size = sized ? cpu_get_i64(sp->data, sp->dtype, j) : sp ? (len - off < chunk ? len - off : chunk) : 1;
        int64_t dims[SEAM_MAX_RANK];
        int32_t r = 0;
        for (int32_t d = 0; d < x->rank; d++)
            if (d != a) dims[r++] = x->dims[d];
            else if (keep) dims[r++] = size;
        seam_tensor *piece = &seq_items(&s)[j];
        if (!tensor_new(piece, x->dtype, r, dims)) {
            seam_value_free(&s);
            return kernel_oom(k);
        }
        size_t row = (size_t)(size * inner) * es;
        for (int64_t o = 0; o < outer && row; o++)
            memcpy((char *)piece->data + (size_t)o * row, (const char *)x->data + (size_t)((o * len + off) * inner) * es, row);
        off += size;
    }
    return kernel_out_value(k, 0, &s);
}

/* ConcatFromSequence(S): the elements joined along axis, or stacked along
 * a new axis at `axis` when new_axis = 1. */
static seam_status run_concat_from_sequence(seam_kernel *k) {
    const seam_tensor *s = kernel_in(k, 0);
    seam_status st = need_seq(k, s);
    if (st) return st;
    if (s->numel < 1) return kernel_fail(k, "the sequence is empty");
    const seam_tensor *e = seq_items(s);
    bool stack = node_attr_int(k->n, "new_axis", 0) != 0;
    int32_t r = e[0].rank, out_rank = stack ? r + 1 : r;
    if (out_rank < 1 || out_rank > SEAM_MAX_RANK) return kernel_fail(k, "the elements' rank does not allow this axis");
    int32_t a = op_axis(node_attr_int(k->n, "axis", 0), out_rank);
    if (a < 0) return kernel_fail(k, "axis out of range");
    int64_t dims[SEAM_MAX_RANK], total = 0;
    for (int64_t j = 0; j < s->numel; j++) {
        if (e[j].dtype != e[0].dtype || e[j].rank != r) return kernel_fail(k, "the elements differ in dtype or rank");
        for (int32_t d = 0; d < r; d++)
            if (d != a || stack)
                if (e[j].dims[d] != e[0].dims[d]) return kernel_fail(k, "the elements' shapes do not match off the axis");
        total += stack ? 1 : e[j].dims[a];
    }
    for (int32_t d = 0, q = 0; d < out_rank; d++) {
        if (d == a) {
            dims[d] = total;
            q += !stack; /* concat: the axis replaces the element's dim */
        } else {
            dims[d] = e[0].dims[q++];
        }
    }
    seam_tensor *y = kernel_out(k, 0, e[0].dtype, out_rank, dims);
    if (!y) return kernel_oom(k);
    size_t es = elem_size(e[0].dtype);
    /* each element adds one block of its own inner size per outer row */
    int64_t outer = cpu_span(dims, 0, a);
    char *dst = y->data;
    for (int64_t o = 0; o < outer; o++)
        for (int64_t j = 0; j < s->numel; j++) {
            size_t block = (size_t)(e[j].numel / (outer ? outer : 1)) * es;
            if (outer == 0 || !block) continue;
            memcpy(dst, (const char *)e[j].data + (size_t)o * block, block);
            dst += block;
        }
    return SEAM_STATUS_OK;
}

/* Optional(x?): x, or an empty optional when x is absent. */
static seam_status run_optional(seam_kernel *k) {
    const seam_tensor *x = kernel_in(k, 0);
    if (x) return kernel_out_copy(k, 0, x);
    seam_tensor none = {.dtype = SEAM_VALUE_NONE};
    return kernel_out_value(k, 0, &none);
}

static seam_status run_optional_has_element(seam_kernel *k) {
    const seam_tensor *x = kernel_in(k, 0);
    seam_tensor *y = kernel_out(k, 0, SEAM_DTYPE_BOOL, 0, NULL);
    if (!y) return kernel_oom(k);
    *(uint8_t *)y->data = x && x->dtype != SEAM_VALUE_NONE;
    return SEAM_STATUS_OK;
}

static seam_status run_optional_get_element(seam_kernel *k) {
    const seam_tensor *x = kernel_in(k, 0);
    if (!x || x->dtype == SEAM_VALUE_NONE) return kernel_fail(k, "the optional has no value");
    return kernel_out_copy(k, 0, x);
}

/* Identity of any value: tensors (strings too), sequences, optionals. */
static seam_status run_identity(seam_kernel *k) {
    const seam_tensor *x = kernel_in(k, 0);
    if (!x) return kernel_fail(k, "needs an input");
    return kernel_out_copy(k, 0, x);
}

#define VALUES(run) {run, NULL}

const seam_cpu_binding seam_cpu_sequence[] = {
    {"", "Identity", 1, VALUES(run_identity)},
    {"", "SequenceConstruct", 11, VALUES(run_sequence_construct)},
    {"", "SequenceEmpty", 11, VALUES(run_sequence_empty)},
    {"", "SequenceLength", 11, VALUES(run_sequence_length)},
    {"", "SequenceAt", 11, VALUES(run_sequence_at)},
    {"", "SequenceInsert", 11, VALUES(run_sequence_insert)},
    {"", "SequenceErase", 11, VALUES(run_sequence_erase)},
    {"", "SplitToSequence", 11, VALUES(run_split_to_sequence)},
    {"", "ConcatFromSequence", 11, VALUES(run_concat_from_sequence)},
    {"", "Optional", 15, VALUES(run_optional)},
    {"", "OptionalHasElement", 15, VALUES(run_optional_has_element)},
    {"", "OptionalGetElement", 15, VALUES(run_optional_get_element)},
};
const size_t seam_cpu_sequence_count = sizeof(seam_cpu_sequence) / sizeof(seam_cpu_sequence[0]);
