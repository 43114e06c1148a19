/* CPU kernels: the optimizers of ai.onnx.preview.training, in double. */
#include <math.h>
#include <string.h>

#include "backends/cpu/cpu.h"


static seam_status run_optimizer(seam_kernel *k) {
    const char *op = k->n->op_type;
    char kind = op[0] == 'M' ? 'm' : strcmp(op, "Adagrad") == 0 ? 'g' : 'a';
    int32_t lists = kind == 'a' ? 4 : 3;
    int32_t n = (kernel_n_in(k) - 2) / lists;
    const seam_tensor *tr = kernel_in(k, 0), *tt = kernel_in(k, 1);
    if (n < 1 || kernel_n_in(k) != 2 + lists * n || !tr || !tt || tr->numel != 1 || tt->numel != 1)
        return kernel_fail(k, "needs R, T and %d lists of equal length", lists);
    double R = cpu_get(tr->data, tr->dtype, 0);
    int64_t T = cpu_get_i64(tt->data, tt->dtype, 0);
    double norm = node_attr_float(k->n, "norm_coefficient", 0);
    for (int32_t i = 0; i < n; i++) {
        const seam_tensor *x = kernel_in(k, 2 + i), *g = kernel_in(k, 2 + n + i), *v = kernel_in(k, 2 + 2 * n + i);
        const seam_tensor *h = kind == 'a' ? kernel_in(k, 2 + 3 * n + i) : NULL;
        if (!x || !g || !v || (kind == 'a' && !h) || g->numel != x->numel || v->numel != x->numel ||
            (h && h->numel != x->numel))
            return kernel_fail(k, "tensor %d: X, G and the states must have one size", i);
        seam_tensor *xo = kernel_out(k, i, x->dtype, x->rank, x->dims);
        seam_tensor *vo = kernel_has_out(k, n + i) ? kernel_out(k, n + i, v->dtype, v->rank, v->dims) : NULL;
        seam_tensor *ho = kind == 'a' && kernel_has_out(k, 2 * n + i) ? kernel_out(k, 2 * n + i, h->dtype, h->rank, h->dims) : NULL;
        if (!xo) return kernel_oom(k);
        for (int64_t e = 0; e < x->numel; e++) {
            double X = cpu_get(x->data, x->dtype, e), G = cpu_get(g->data, g->dtype, e) + norm * X;
            double S = cpu_get(v->data, v->dtype, e), X_new, S_new, H_new = 0;
            if (kind == 'g') { /* Adagrad: S is the squared-gradient sum */
                double r = R / (1 + (double)T * node_attr_float(k->n, "decay_factor", 0));
                S_new = S + G * G;
                X_new = X - r * G / (sqrt(S_new) + node_attr_float(k->n, "epsilon", 1e-6f));
            } else if (kind == 'm') {
                double alpha = node_attr_float(k->n, "alpha", 0), beta = node_attr_float(k->n, "beta", 0);
                S_new = alpha * S + (T > 0 ? beta : 1) * G;
                X_new = node_attr_is(k->n, "mode", "nesterov") ? X - R * (G + alpha * S_new) : X - R * S_new;
            } else { /* Adam: S is the first moment, H the second */
                double alpha = node_attr_float(k->n, "alpha", 0.9f), beta = node_attr_float(k->n, "beta", 0.999f);
                double H = cpu_get(h->data, h->dtype, e);
                S_new = alpha * S + (1 - alpha) * G;
                H_new = beta * H + (1 - beta) * G * G;
                double r = T > 0 ? R * sqrt(1 - pow(beta, (double)T)) / (1 - pow(alpha, (double)T)) : R;
                X_new = X - r * S_new / (sqrt(H_new) + node_attr_float(k->n, "epsilon", 1e-6f));
                X_new *= 1 - node_attr_float(k->n, "norm_coefficient_post", 0);
            }
            cpu_set(xo->data, xo->dtype, e, X_new);
            if (vo) cpu_set(vo->data, vo->dtype, e, S_new);
            if (ho) cpu_set(ho->data, ho->dtype, e, H_new);
        }
    }
    return SEAM_STATUS_OK;
}

const seam_cpu_binding seam_cpu_training[] = {
    {"ai.onnx.preview.training", "Adagrad", 1, {run_optimizer, NULL}},
    {"ai.onnx.preview.training", "Adam", 1, {run_optimizer, NULL}},
    {"ai.onnx.preview.training", "Momentum", 1, {run_optimizer, NULL}},
};
const size_t seam_cpu_training_count = sizeof(seam_cpu_training) / sizeof(seam_cpu_training[0]);
