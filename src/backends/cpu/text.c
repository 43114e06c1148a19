/* CPU kernels: TfIdfVectorizer over integer tokens (string tokens are
 * refused at session creation) and StringNormalizer. */
#include <string.h>

#include "backends/cpu/cpu.h"


typedef struct pool {
    const int64_t *v;      /* the n-grams of each length, back to back */
    int32_t n;
    const int64_t *counts; /* where the n-grams of length k+1 start */
    int32_t n_counts;
} pool;

/* The ordinal (the index into ngram_indexes) of the n-gram g, or -1. */
static int64_t pool_find(const pool *p, int64_t n, const int64_t *g) {
    if (n < 1 || n > p->n_counts) return -1;
    int64_t base = 0;
    for (int64_t m = 1; m < n; m++) {
        int64_t end = m < p->n_counts ? p->counts[m] : p->n;
        base += (end - p->counts[m - 1]) / m;
    }
    int64_t start = p->counts[n - 1], end = n < p->n_counts ? p->counts[n] : p->n;
    if (start < 0 || end > p->n) return -1;
    for (int64_t at = start; at + n <= end; at += n) {
        bool eq = true;
        for (int64_t q = 0; q < n && eq; q++) eq = p->v[at + q] == g[q];
        if (eq) return base + (at - start) / n;
    }
    return -1;
}

static seam_status run_tfidf(seam_kernel *k) {
    const seam_tensor *x = kernel_in(k, 0);
    if (!x || (x->rank != 1 && x->rank != 2) || !cpu_is_int(x->dtype))
        return kernel_fail(k, "the input must be 1-D or 2-D integer tokens");
    pool p;
    const int64_t *idx;
    const float *w = NULL;
    int32_t n_w = node_attr_floats(k->n, "weights", &w);
    int32_t n_idx = node_attr_ints(k->n, "ngram_indexes", &idx);
    p.n = node_attr_ints(k->n, "pool_int64s", &p.v);
    p.n_counts = node_attr_ints(k->n, "ngram_counts", &p.counts);
    int64_t min_n = node_attr_int(k->n, "min_gram_length", 1), max_n = node_attr_int(k->n, "max_gram_length", 1);
    int64_t max_skip = node_attr_int(k->n, "max_skip_count", 0);
    if (p.n < 0 || p.n_counts < 1 || n_idx < 1 || min_n < 1 || max_n < min_n || max_n > 64 || max_skip < 0)
        return kernel_fail(k, "bad pool, ngram_counts, ngram_indexes or gram lengths");
    int64_t width = 0;
    for (int32_t i = 0; i < n_idx; i++) {
        if (idx[i] < 0 || idx[i] > (1 << 24)) return kernel_fail(k, "ngram_indexes out of range");
        if (idx[i] + 1 > width) width = idx[i] + 1;
    }
    if (node_attr(k->n, "weights") && n_w != n_idx) return kernel_fail(k, "weights must have one entry per n-gram");
    int64_t rows = x->rank == 2 ? x->dims[0] : 1, cols = x->dims[x->rank - 1];
    int64_t dims[2] = {rows, width};
    seam_tensor *y = x->rank == 2 ? kernel_out(k, 0, SEAM_DTYPE_FLOAT32, 2, dims) : kernel_out(k, 0, SEAM_DTYPE_FLOAT32, 1, &width);
    if (!y) return kernel_oom(k);
    float *out = y->data;
    memset(out, 0, y->nbytes);
    int64_t g[64];
    for (int64_t r = 0; r < rows; r++)
        for (int64_t start = 0; start < cols; start++)
            for (int64_t n = min_n; n <= max_n; n++)
                /* unigrams have no gaps: count them once */
                for (int64_t skip = 0; skip <= (n == 1 ? 0 : max_skip); skip++) {
                    int64_t last = start + (n - 1) * (skip + 1);
                    if (last >= cols) break;
                    for (int64_t q = 0; q < n; q++) g[q] = cpu_get_i64(x->data, x->dtype, r * cols + start + q * (skip + 1));
                    int64_t o = pool_find(&p, n, g);
                    if (o >= 0 && o < n_idx) out[r * width + idx[o]] += 1;
                }
    bool idf = node_attr_is(k->n, "mode", "IDF"), tfidf = node_attr_is(k->n, "mode", "TFIDF");
    if (idf || tfidf)
        for (int64_t r = 0; r < rows; r++)
            for (int32_t i = 0; i < n_idx; i++) {
                float *v = &out[r * width + idx[i]];
                float wt = w ? w[i] : 1.0f;
                *v = idf ? (*v > 0 ? wt : 0) : *v * wt;
            }
    return SEAM_STATUS_OK;
}

static seam_status check_tfidf(seam_check *c) {
    int32_t dt = check_in_dtype(c, 0);
    if (dt == SEAM_DTYPE_STRING) return check_refuse(c, "TfIdfVectorizer on strings is not supported (integer tokens only)");
    return SEAM_STATUS_OK;
}

static uint8_t ascii_lower(uint8_t c) { return c >= 'A' && c <= 'Z' ? (uint8_t)(c - 'A' + 'a') : c; }
static uint8_t ascii_upper(uint8_t c) { return c >= 'a' && c <= 'z' ? (uint8_t)(c - 'a' + 'A') : c; }

static bool same_word(const ir_bytes *a, const ir_bytes *b, bool case_sensitive) {
    if (a->len != b->len) return false;
    for (size_t i = 0; i < a->len; i++)
        if (case_sensitive ? a->data[i] != b->data[i] : ascii_lower(a->data[i]) != ascii_lower(b->data[i])) return false;
    return true;
}

/* StringNormalizer: [C] or [1, C] strings without the stop words, then
 * lower- or upper-cased (ASCII letters; other bytes, UTF-8 included, are
 * kept as they are). When every string is a stop word the output is one
 * empty string, [1] or [1, 1]. */
static seam_status run_string_normalizer(seam_kernel *k) {
    const seam_tensor *x = kernel_in(k, 0);
    if (!x || x->dtype != SEAM_DTYPE_STRING || (x->rank != 1 && !(x->rank == 2 && x->dims[0] == 1)))
        return kernel_fail(k, "the input must be strings of shape [C] or [1, C]");
    const ir_attr *sw = node_attr(k->n, "stopwords");
    int32_t n_stop = sw && sw->kind == IR_ATTR_STRINGS ? sw->n : 0;
    bool cs = node_attr_int(k->n, "is_case_sensitive", 0) != 0;
    bool lower = node_attr_is(k->n, "case_change_action", "LOWER"), upper = node_attr_is(k->n, "case_change_action", "UPPER");
    const ir_bytes *in = x->data;
    int64_t kept = 0;
    size_t total = 0;
    for (int64_t i = 0; i < x->numel; i++) {
        bool stop = false;
        for (int32_t w = 0; w < n_stop && !stop; w++) stop = same_word(&in[i], &sw->strings[w], cs);
        if (!stop) kept++, total += in[i].len;
    }
    int64_t dims[2] = {1, kept ? kept : 1};
    seam_tensor *y = kernel_out(k, 0, SEAM_DTYPE_STRING, x->rank, x->rank == 2 ? dims : dims + 1);
    if (!y) return kernel_oom(k);
    ir_bytes *out = y->data;
    if (!kept) {
        out[0] = (ir_bytes){(const uint8_t *)"", 0};
        return SEAM_STATUS_OK;
    }
    uint8_t *bytes = lower || upper ? kernel_bytes(k, total + 1) : NULL;
    if ((lower || upper) && !bytes) return kernel_oom(k);
    for (int64_t i = 0, j = 0; i < x->numel; i++) {
        bool stop = false;
        for (int32_t w = 0; w < n_stop && !stop; w++) stop = same_word(&in[i], &sw->strings[w], cs);
        if (stop) continue;
        if (!bytes) {
            out[j++] = in[i];
            continue;
        }
        for (size_t c = 0; c < in[i].len; c++) bytes[c] = lower ? ascii_lower(in[i].data[c]) : ascii_upper(in[i].data[c]);
        out[j++] = (ir_bytes){bytes, in[i].len};
        bytes += in[i].len;
    }
    return SEAM_STATUS_OK;
}

static seam_status check_string_normalizer(seam_check *c) {
    const ir_attr *a = node_attr(c->n, "case_change_action");
    if (a && !node_attr_is(c->n, "case_change_action", "LOWER") && !node_attr_is(c->n, "case_change_action", "UPPER") &&
        !node_attr_is(c->n, "case_change_action", "NONE"))
        return check_refuse(c, "case_change_action must be LOWER, UPPER or NONE");
    int32_t dt = check_in_dtype(c, 0);
    if (dt != SEAM_DTYPE_UNDEFINED && dt != SEAM_DTYPE_STRING) return check_refuse(c, "the input must be strings");
    return SEAM_STATUS_OK;
}

const seam_cpu_binding seam_cpu_text[] = {
    {"", "TfIdfVectorizer", 9, {run_tfidf, check_tfidf}},
    {"", "StringNormalizer", 10, {run_string_normalizer, check_string_normalizer}},
};
const size_t seam_cpu_text_count = sizeof(seam_cpu_text) / sizeof(seam_cpu_text[0]);
