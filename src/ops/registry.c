/* Joins the op family tables into one index sorted by (domain, op, since),
 * built once per process. The index is immutable after it is built, so
 * sharing it between contexts is safe. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "ops/ops.h"

typedef struct family {
    const seam_op_def *ops;
    const size_t *count;
} family;

static const family families[] = {
#define FAMILY(fam) {seam_ops_##fam, &seam_ops_##fam##_count},
    SEAM_OP_FAMILIES(FAMILY)
#undef FAMILY
};

#define MAX_OPS 1024
static const seam_op_def *index_[MAX_OPS];
static size_t n_index;
static pthread_once_t index_once = PTHREAD_ONCE_INIT;

bool seam_op_default_domain(const char *domain) { return !domain || !domain[0] || strcmp(domain, "ai.onnx") == 0; }

static const char *norm_domain(const char *d) { return seam_op_default_domain(d) ? "" : d; }

int seam_op_key_cmp(const char *da, const char *oa, const char *db, const char *ob) {
    int c = strcmp(norm_domain(da), norm_domain(db));
    return c ? c : strcmp(oa, ob);
}

static int cmp_def(const void *a, const void *b) {
    const seam_op_def *x = *(const seam_op_def *const *)a;
    const seam_op_def *y = *(const seam_op_def *const *)b;
    int c = seam_op_key_cmp(x->domain, x->op_type, y->domain, y->op_type);
    return c ? c : (x->since > y->since) - (x->since < y->since);
}

static void build_index(void) {
    for (size_t f = 0; f < sizeof(families) / sizeof(families[0]); f++)
        for (size_t k = 0; k < *families[f].count && n_index < MAX_OPS; k++) index_[n_index++] = &families[f].ops[k];
    qsort(index_, n_index, sizeof(index_[0]), cmp_def);
}

const seam_op_def *seam_op_find(const char *domain, const char *op_type, int64_t opset) {
    pthread_once(&index_once, build_index);
    /* first entry >= (domain, op) */
    size_t lo = 0, hi = n_index;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (seam_op_key_cmp(index_[mid]->domain, index_[mid]->op_type, domain, op_type) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    const seam_op_def *best = NULL;
    for (size_t k = lo; k < n_index && seam_op_key_cmp(index_[k]->domain, index_[k]->op_type, domain, op_type) == 0; k++) {
        /* An unknown opset (-1) takes the newest entry. */
        if (opset < 0 || index_[k]->since <= opset) best = index_[k];
    }
    return best;
}

size_t seam_op_count(void) {
    pthread_once(&index_once, build_index);
    return n_index;
}
