/* CPU kernels: Einsum and Det. Einsum sums over every combination of the
 * contracted labels for each output element: plain and general, fine for
 * the small contractions models use it for. */
#include <math.h>
#include <string.h>

#include "backends/cpu/cpu.h"
#include "ops/einsum.h"

#define MAX_WORK ((int64_t)1 << 34) /* output elements x contracted combinations */

static seam_status run_einsum(seam_kernel *k) {
    int32_t n = kernel_n_in(k), ranks[EINSUM_MAX_IN];
    if (n < 1 || n > EINSUM_MAX_IN) return kernel_fail(k, "Einsum takes 1 to %d inputs", EINSUM_MAX_IN);
    const seam_tensor *in[EINSUM_MAX_IN];
    for (int32_t i = 0; i < n; i++) {
        in[i] = kernel_in(k, i);
        if (!in[i]) return kernel_fail(k, "input %d is missing", i);
        if (in[i]->dtype != in[0]->dtype) return kernel_fail(k, "inputs have different dtypes");
        ranks[i] = in[i]->rank;
    }
    const ir_attr *ea = node_attr(k->n, "equation");
    if (!ea || ea->kind != IR_ATTR_STRING) return kernel_fail(k, "needs an equation");
    einsum_spec s;
    char err[128];
    if (einsum_parse((const char *)ea->s.data, ea->s.len, n, ranks, &s, err, sizeof(err))) return kernel_fail(k, "%s", err);
    int64_t size[EINSUM_N_LABELS];
    for (int32_t l = 0; l < EINSUM_N_LABELS; l++) size[l] = -1;
    for (int32_t i = 0; i < n; i++)
        for (int32_t a = 0; a < s.rank[i]; a++) {
            int32_t l = s.label[i][a];
            int64_t d = in[i]->dims[a];
            if (size[l] < 0 || size[l] == 1) size[l] = d;
            else if (d != size[l] && !(d == 1 && l >= 52))
                return kernel_fail(k, "label sizes disagree (%lld and %lld)", (long long)size[l], (long long)d);
        }
    bool is_out[EINSUM_N_LABELS] = {false};
    int64_t dims[SEAM_MAX_RANK];
    for (int32_t d = 0; d < s.out_rank; d++) {
        is_out[s.out_label[d]] = true;
        dims[d] = size[s.out_label[d]];
    }
    int32_t sum_labels[EINSUM_N_LABELS], n_sum = 0;
    int64_t combos = 1;
    for (int32_t l = 0; l < EINSUM_N_LABELS; l++)
        if (size[l] >= 0 && !is_out[l]) {
            sum_labels[n_sum++] = l;
            combos *= size[l];
        }
    seam_tensor *y = kernel_out(k, 0, in[0]->dtype, s.out_rank, dims);
    if (!y) return kernel_oom(k);
    if (y->numel && combos > MAX_WORK / y->numel) return kernel_fail(k, "the contraction is too large for the plain kernel");
    /* per input, the stride of each label (0 where broadcast) */
    int64_t stride[EINSUM_MAX_IN][EINSUM_N_LABELS];
    memset(stride, 0, sizeof(stride));
    for (int32_t i = 0; i < n; i++) {
        int64_t st[SEAM_MAX_RANK];
        cpu_strides(in[i]->rank, in[i]->dims, st);
        for (int32_t a = 0; a < s.rank[i]; a++)
            if (in[i]->dims[a] != 1) stride[i][s.label[i][a]] += st[a];
    }
    bool fl = cpu_is_float(in[0]->dtype);
    int64_t oidx[SEAM_MAX_RANK] = {0};
    for (int64_t o = 0; o < y->numel; o++) {
        int64_t base[EINSUM_MAX_IN] = {0};
        for (int32_t i = 0; i < n; i++)
            for (int32_t d = 0; d < s.out_rank; d++) base[i] += oidx[d] * stride[i][s.out_label[d]];
        double acc = 0;
        int64_t iacc = 0, sidx[EINSUM_N_LABELS] = {0};
        for (int64_t c = 0; c < combos; c++) {
            double p = 1;
            int64_t ip = 1;
            for (int32_t i = 0; i < n; i++) {
                int64_t off = base[i];
                for (int32_t q = 0; q < n_sum; q++) off += sidx[q] * stride[i][sum_labels[q]];
                if (fl) p *= cpu_get(in[i]->data, in[i]->dtype, off);
                else ip = (int64_t)((uint64_t)ip * (uint64_t)cpu_get_i64(in[i]->data, in[i]->dtype, off));
            }
            acc += p;
            iacc = (int64_t)((uint64_t)iacc + (uint64_t)ip);
            for (int32_t q = n_sum - 1; q >= 0; q--) {
                if (++sidx[q] < size[sum_labels[q]]) break;
                sidx[q] = 0;
            }
        }
        if (fl) cpu_set(y->data, y->dtype, o, acc);
        else cpu_set_i64(y->data, y->dtype, o, iacc);
        cpu_index_next(oidx, dims, s.out_rank);
    }
    return SEAM_STATUS_OK;
}

/* Det by LU decomposition with partial pivoting, in double. */
static seam_status run_det(seam_kernel *k) {
    const seam_tensor *x = kernel_in(k, 0);
    if (!x || x->rank < 2 || x->dims[x->rank - 1] != x->dims[x->rank - 2])
        return kernel_fail(k, "the input must be [..., M, M]");
    int64_t m = x->dims[x->rank - 1];
    if (m > 4096) return kernel_fail(k, "matrix too large");
    seam_tensor *y = kernel_out(k, 0, x->dtype, x->rank - 2, x->dims);
    if (!y) return kernel_oom(k);
    double *a = kernel_scratch(k, sizeof(double) * (size_t)(m * m + 1));
    if (!a) return kernel_oom(k);
    for (int64_t b = 0; b < y->numel; b++) {
        for (int64_t i = 0; i < m * m; i++) a[i] = cpu_get(x->data, x->dtype, b * m * m + i);
        double det = 1;
        for (int64_t c = 0; c < m && det != 0; c++) {
            int64_t p = c;
            for (int64_t r = c + 1; r < m; r++)
                if (fabs(a[r * m + c]) > fabs(a[p * m + c])) p = r;
            if (a[p * m + c] == 0) {
                det = 0;
                break;
            }
            if (p != c) {
                for (int64_t j = 0; j < m; j++) {
                    double t = a[c * m + j];
                    a[c * m + j] = a[p * m + j];
                    a[p * m + j] = t;
                }
                det = -det;
            }
            det *= a[c * m + c];
            for (int64_t r = c + 1; r < m; r++) {
                double f = a[r * m + c] / a[c * m + c];
                for (int64_t j = c; j < m; j++) a[r * m + j] -= f * a[c * m + j];
            }
        }
        cpu_set(y->data, y->dtype, b, det);
    }
    return SEAM_STATUS_OK;
}


const seam_cpu_binding seam_cpu_algebra[] = {
    {"", "Einsum", 12, {run_einsum, check_numeric_input}},
    {"", "Det", 11, {run_det, check_numeric_input}},
};
const size_t seam_cpu_algebra_count = sizeof(seam_cpu_algebra) / sizeof(seam_cpu_algebra[0]);
