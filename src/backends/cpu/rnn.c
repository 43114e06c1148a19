/* CPU kernels: LSTM, GRU and RNN, per the ONNX equations.
 *
 * Computed in float32 (other float types are widened): the input
 * projection X W^T + Wb for every step is one sgemm up front; each step
 * then adds H R^T (+ Rb) with another. Gate orders are ONNX's: LSTM i, o,
 * f, c; GRU z, r, h. */
#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cpu/cpu.h"

typedef enum { F_SIGMOID, F_TANH, F_RELU, F_HSIGMOID, F_LEAKY, F_THRESH, F_STANH, F_AFFINE, F_ELU, F_SOFTSIGN, F_SOFTPLUS } actfn;

typedef struct act {
    actfn f;
    float a, b;
} act;

static const struct {
    const char *name;
    actfn f;
    float a, b;
} act_names[] = {
    {"Sigmoid", F_SIGMOID, 0, 0}, {"Tanh", F_TANH, 0, 0}, {"Relu", F_RELU, 0, 0}, {"HardSigmoid", F_HSIGMOID, 0.2f, 0.5f},
    {"LeakyRelu", F_LEAKY, 0.01f, 0}, {"ThresholdedRelu", F_THRESH, 1, 0}, {"ScaledTanh", F_STANH, 1, 1},
    {"Affine", F_AFFINE, 1, 0}, {"Elu", F_ELU, 1, 0}, {"Softsign", F_SOFTSIGN, 0, 0}, {"Softplus", F_SOFTPLUS, 0, 0},
};

static float apply(const act *a, float x) {
    switch (a->f) {
    case F_SIGMOID: return x >= 0 ? 1 / (1 + expf(-x)) : expf(x) / (1 + expf(x));
    case F_TANH: return tanhf(x);
    case F_RELU: return x > 0 ? x : 0;
    case F_HSIGMOID: return fmaxf(0, fminf(1, a->a * x + a->b));
    case F_LEAKY: return x >= 0 ? x : a->a * x;
    case F_THRESH: return x > a->a ? x : 0;
    case F_STANH: return a->a * tanhf(a->b * x);
    case F_AFFINE: return a->a * x + a->b;
    case F_ELU: return x >= 0 ? x : a->a * (expf(x) - 1);
    case F_SOFTSIGN: return x / (1 + fabsf(x));
    case F_SOFTPLUS: return log1pf(expf(x));
    }
    return x;
}

/* Reads the activations attribute: n_per_dir per direction, defaults when
 * absent. Returns false (with the bad name in *bad) on an unknown one. */
static bool read_acts(const ir_node *n, int32_t n_per_dir, int32_t dirs, act *out, const char **bad, size_t *bad_len) {
    static const actfn defaults[3] = {F_SIGMOID, F_TANH, F_TANH};
    bool is_rnn = strcmp(n->op_type, "RNN") == 0;
    const ir_attr *a = ir_node_attr(n, "activations");
    const ir_attr *al = ir_node_attr(n, "activation_alpha"), *be = ir_node_attr(n, "activation_beta");
    for (int32_t i = 0; i < n_per_dir * dirs; i++) {
        actfn f = is_rnn ? F_TANH : defaults[i % n_per_dir];
        out[i] = (act){f, 0, 0};
        if (a && a->kind == IR_ATTR_STRINGS && a->n > 0) {
            const ir_bytes *s = &a->strings[i < a->n ? i : i % a->n];
            bool found = false;
            for (size_t q = 0; q < sizeof(act_names) / sizeof(act_names[0]); q++)
                if (strlen(act_names[q].name) == s->len && strncasecmp(act_names[q].name, (const char *)s->data, s->len) == 0) {
                    out[i] = (act){act_names[q].f, act_names[q].a, act_names[q].b};
                    found = true;
                }
            if (!found) {
                *bad = (const char *)s->data;
                *bad_len = s->len;
                return false;
            }
            if (al && al->kind == IR_ATTR_FLOATS && i < al->n) out[i].a = al->floats[i];
            if (be && be->kind == IR_ATTR_FLOATS && i < be->n) out[i].b = be->floats[i];
        }
    }
    return true;
}

static float *widen(const seam_tensor *t) {
    if (!t) return NULL;
    float *p = malloc(sizeof(float) * (size_t)(t->numel + 1));
    if (!p) return NULL;
    for (int64_t i = 0; i < t->numel; i++) p[i] = (float)cpu_get(t->data, t->dtype, i);
    return p;
}

static seam_status run_recurrent(seam_kernel *k) {
    const char *op = k->n->op_type;
    int32_t G = op[0] == 'L' ? 4 : op[0] == 'G' ? 3 : 1; /* gates */
    int32_t n_act = op[0] == 'L' ? 3 : op[0] == 'G' ? 2 : 1;
    const seam_tensor *x = kernel_in(k, 0), *w = kernel_in(k, 1), *r = kernel_in(k, 2), *b = kernel_in(k, 3);
    const seam_tensor *sl = kernel_in(k, 4), *h0 = kernel_in(k, 5), *c0 = G == 4 ? kernel_in(k, 6) : NULL;
    const seam_tensor *p = G == 4 ? kernel_in(k, 7) : NULL;
    if (!x || !w || !r || x->rank != 3 || w->rank != 3 || r->rank != 3) return kernel_fail(k, "needs X, W and R of rank 3");
    bool bf = node_attr_int(k->n, "layout", 0) == 1;
    int64_t S = x->dims[bf ? 1 : 0], Bn = x->dims[bf ? 0 : 1], In = x->dims[2];
    int64_t D = w->dims[0], H = r->dims[2];
    const ir_attr *da = ir_node_attr(k->n, "direction");
    bool bidi = da && da->kind == IR_ATTR_STRING && da->s.len == 13 && !memcmp(da->s.data, "bidirectional", 13);
    bool rev = da && da->kind == IR_ATTR_STRING && da->s.len == 7 && !memcmp(da->s.data, "reverse", 7);
    if (D != (bidi ? 2 : 1) || w->dims[1] != G * H || w->dims[2] != In || r->dims[0] != D || r->dims[1] != G * H)
        return kernel_fail(k, "W must be [%d, %lld, %lld] and R [%d, %lld, %lld]", bidi ? 2 : 1, (long long)(G * H),
                           (long long)In, bidi ? 2 : 1, (long long)(G * H), (long long)H);
    int64_t hs = node_attr_int(k->n, "hidden_size", H);
    if (hs != H) return kernel_fail(k, "hidden_size %lld disagrees with R", (long long)hs);
    if (b && b->numel != D * 2 * G * H) return kernel_fail(k, "B must be [%lld, %lld]", (long long)D, (long long)(2 * G * H));
    if ((h0 && h0->numel != D * Bn * H) || (c0 && c0->numel != D * Bn * H)) return kernel_fail(k, "initial_h/initial_c have the wrong size");
    if (p && p->numel != D * 3 * H) return kernel_fail(k, "P must be [%lld, %lld]", (long long)D, (long long)(3 * H));
    if (sl && sl->numel != Bn) return kernel_fail(k, "sequence_lens must have one entry per batch");
    act acts[6];
    const char *bad = NULL;
    size_t bad_len = 0;
    if (!read_acts(k->n, n_act, (int32_t)D, acts, &bad, &bad_len)) return kernel_fail(k, "unknown activation '%.*s'", (int)bad_len, bad);
    float clip = node_attr_float(k->n, "clip", 0);
    bool input_forget = node_attr_int(k->n, "input_forget", 0) != 0, lbr = node_attr_int(k->n, "linear_before_reset", 0) != 0;

    int64_t ydims[4], hdims[3];
    if (bf) ydims[0] = Bn, ydims[1] = S, ydims[2] = D, ydims[3] = H, hdims[0] = Bn, hdims[1] = D, hdims[2] = H;
    else ydims[0] = S, ydims[1] = D, ydims[2] = Bn, ydims[3] = H, hdims[0] = D, hdims[1] = Bn, hdims[2] = H;
    seam_tensor *y = kernel_has_out(k, 0) ? kernel_out(k, 0, x->dtype, 4, ydims) : NULL;
    seam_tensor *yh = kernel_has_out(k, 1) ? kernel_out(k, 1, x->dtype, 3, hdims) : NULL;
    seam_tensor *yc = G == 4 && kernel_has_out(k, 2) ? kernel_out(k, 2, x->dtype, 3, hdims) : NULL;
    if ((kernel_has_out(k, 0) && !y) || (kernel_has_out(k, 1) && !yh) || (G == 4 && kernel_has_out(k, 2) && !yc))
        return kernel_oom(k);
    if (y) memset(y->data, 0, y->nbytes);

    float *X = widen(x), *W = widen(w), *R = widen(r), *Bv = widen(b), *P = widen(p), *H0 = widen(h0), *C0 = widen(c0);
    float *xp = malloc(sizeof(float) * (size_t)(S * Bn * G * H + 1)); /* X W^T for every step */
    float *hp = malloc(sizeof(float) * (size_t)(Bn * G * H + 1));     /* H R^T for one step */
    float *hcur = malloc(sizeof(float) * (size_t)(Bn * H + 1)), *ccur = malloc(sizeof(float) * (size_t)(Bn * H + 1));
    float *xt = malloc(sizeof(float) * (size_t)(S * Bn * In + 1));
    seam_status st = SEAM_STATUS_OK;
    if (!X || !W || !R || (b && !Bv) || (p && !P) || (h0 && !H0) || (c0 && !C0) || !xp || !hp || !hcur || !ccur || !xt) {
        st = kernel_oom(k);
        goto done;
    }
    /* X as [S, B, In] whatever the layout */
    for (int64_t s = 0; s < S; s++)
        for (int64_t bb = 0; bb < Bn; bb++)
            memcpy(xt + (s * Bn + bb) * In, X + (bf ? bb * S + s : s * Bn + bb) * In, sizeof(float) * (size_t)In);
    for (int64_t d = 0; d < D; d++) {
        bool backward = rev || (bidi && d == 1);
        const float *Wd = W + d * G * H * In, *Rd = R + d * G * H * H;
        const float *Wb = Bv ? Bv + d * 2 * G * H : NULL, *Rb = Bv ? Bv + d * 2 * G * H + G * H : NULL;
        const act *fa = &acts[d * n_act];
        if (S * Bn > 0 && G * H > 0 && In > 0)
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)(S * Bn), (int)(G * H), (int)In, 1.0f, xt, (int)In,
                        Wd, (int)In, 0.0f, xp, (int)(G * H));
        else
            memset(xp, 0, sizeof(float) * (size_t)(S * Bn * G * H));
        for (int64_t bb = 0; bb < Bn; bb++)
            for (int64_t j = 0; j < H; j++) {
                hcur[bb * H + j] = H0 ? H0[bf ? (bb * D + d) * H + j : (d * Bn + bb) * H + j] : 0;
                ccur[bb * H + j] = C0 ? C0[bf ? (bb * D + d) * H + j : (d * Bn + bb) * H + j] : 0;
            }
        for (int64_t step = 0; step < S; step++) {
            int64_t t = backward ? S - 1 - step : step;
            /* H R^T for this step (rows of batches whose sequence has ended stay unused) */
            if (H > 0)
                cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)Bn, (int)(G * H), (int)H, 1.0f, hcur, (int)H, Rd,
                            (int)H, 0.0f, hp, (int)(G * H));
            for (int64_t bb = 0; bb < Bn; bb++) {
                int64_t len = sl ? cpu_get_i64(sl->data, sl->dtype, bb) : S;
                if (len < 0 || len > S) {
                    st = kernel_fail(k, "sequence length %lld is out of range [0, %lld]", (long long)len, (long long)S);
                    goto done;
                }
                if (t >= len) continue; /* past this sequence's end: Y stays 0, H stays */
                const float *gx = xp + (t * Bn + bb) * G * H, *gh = hp + bb * G * H;
                float *hrow = hcur + bb * H, *crow = ccur + bb * H;
                float newh[4096], *nh = H <= 4096 ? newh : NULL;
                if (!nh) {
                    st = kernel_fail(k, "hidden size %lld is larger than 4096", (long long)H);
                    goto done;
                }
                float rvec[4096]; /* GRU: the reset gate, needed whole for (r . H) R_h^T */
                for (int64_t q = 0; G == 3 && q < H; q++) {
                    float rp = gx[H + q] + (Wb ? Wb[H + q] : 0) + gh[H + q] + (Rb ? Rb[H + q] : 0);
                    if (clip > 0) rp = fmaxf(-clip, fminf(clip, rp));
                    rvec[q] = apply(&fa[0], rp);
                }
                for (int64_t j = 0; j < H; j++) {
                    float pre[4];
                    for (int32_t g = 0; g < G; g++) {
                        int64_t q = g * H + j;
                        float v = gx[q] + (Wb ? Wb[q] : 0);
                        if (!(G == 3 && g == 2)) v += gh[q] + (Rb ? Rb[q] : 0); /* GRU's h gate handles R below */
                        pre[g] = v;
                    }
                    if (G == 4) { /* LSTM: i, o, f, c */
                        float cprev = crow[j];
                        float ip = pre[0] + (P ? P[d * 3 * H + j] * cprev : 0);
                        float fp = pre[2] + (P ? P[d * 3 * H + 2 * H + j] * cprev : 0);
                        float cp = pre[3];
                        if (clip > 0) {
                            ip = fmaxf(-clip, fminf(clip, ip));
                            fp = fmaxf(-clip, fminf(clip, fp));
                            cp = fmaxf(-clip, fminf(clip, cp));
                        }
                        float it = apply(&fa[0], ip);
                        float ft = input_forget ? 1 - it : apply(&fa[0], fp);
                        float ct = apply(&fa[1], cp);
                        float cn = ft * cprev + it * ct;
                        float op_ = pre[1] + (P ? P[d * 3 * H + H + j] * cn : 0);
                        if (clip > 0) op_ = fmaxf(-clip, fminf(clip, op_));
                        float ot = apply(&fa[0], op_);
                        crow[j] = cn;
                        nh[j] = ot * apply(&fa[2], cn);
                    } else if (G == 3) { /* GRU: z, r, h */
                        float zp = pre[0];
                        if (clip > 0) zp = fmaxf(-clip, fminf(clip, zp));
                        float zt = apply(&fa[0], zp), rt = rvec[j], hh;
                        if (lbr) {
                            hh = pre[2] + rt * (gh[2 * H + j] + (Rb ? Rb[2 * H + j] : 0));
                        } else { /* (r . H) R_h^T: a dot product per output unit */
                            float acc = 0;
                            const float *rrow = Rd + (2 * H + j) * H;
                            for (int64_t q = 0; q < H; q++) acc += rvec[q] * hrow[q] * rrow[q];
                            hh = pre[2] + acc + (Rb ? Rb[2 * H + j] : 0);
                        }
                        if (clip > 0) hh = fmaxf(-clip, fminf(clip, hh));
                        float ht = apply(&fa[1], hh);
                        nh[j] = (1 - zt) * ht + zt * hrow[j];
                    } else {
                        float v = pre[0];
                        if (clip > 0) v = fmaxf(-clip, fminf(clip, v));
                        nh[j] = apply(&fa[0], v);
                    }
                }
                memcpy(hrow, nh, sizeof(float) * (size_t)H);
                if (y)
                    for (int64_t j = 0; j < H; j++) {
                        int64_t at = bf ? ((bb * S + t) * D + d) * H + j : ((t * D + d) * Bn + bb) * H + j;
                        cpu_set(y->data, y->dtype, at, hrow[j]);
                    }
            }
        }
        for (int64_t bb = 0; bb < Bn; bb++)
            for (int64_t j = 0; j < H; j++) {
                int64_t at = bf ? (bb * D + d) * H + j : (d * Bn + bb) * H + j;
                if (yh) cpu_set(yh->data, yh->dtype, at, hcur[bb * H + j]);
                if (yc) cpu_set(yc->data, yc->dtype, at, ccur[bb * H + j]);
            }
    }
done:
    free(X), free(W), free(R), free(Bv), free(P), free(H0), free(C0), free(xp), free(hp), free(hcur), free(ccur), free(xt);
    return st;
}

static seam_status check_recurrent(seam_check *c) {
    int32_t dt = check_in_dtype(c, 0);
    if (dt != SEAM_DTYPE_UNDEFINED && !cpu_is_float(dt))
        return check_refuse(c, "%s on %s is not supported", c->n->op_type, seam_dtype_name(dt));
    act acts[6];
    const char *bad = NULL;
    size_t bad_len = 0;
    int32_t n_act = c->n->op_type[0] == 'L' ? 3 : c->n->op_type[0] == 'G' ? 2 : 1;
    if (!read_acts(c->n, n_act, 2, acts, &bad, &bad_len))
        return check_refuse(c, "activation '%.*s' is not supported", (int)bad_len, bad);
    return SEAM_STATUS_OK;
}

const seam_cpu_binding seam_cpu_rnn[] = {
    {"", "LSTM", 1, {run_recurrent, check_recurrent}},
    {"", "GRU", 1, {run_recurrent, check_recurrent}},
    {"", "RNN", 1, {run_recurrent, check_recurrent}},
};
const size_t seam_cpu_rnn_count = sizeof(seam_cpu_rnn) / sizeof(seam_cpu_rnn[0]);
