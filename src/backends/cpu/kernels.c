/* Joins the CPU kernel tables into one index sorted by (domain, op,
 * since), built once per process (see kernels.h). The index is immutable
 * after it is built, so sharing it between sessions is safe. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cpu/cpu.h"
#include "backends/cpu/kernels.h"

typedef struct family {
    const seam_cpu_binding *b;
    const size_t *count;
} family;

static const family families[] = {
#define FAMILY(fam) {seam_cpu_##fam, &seam_cpu_##fam##_count},
    SEAM_OP_FAMILIES(FAMILY)
#undef FAMILY
};

/* A binding and its place in the tables: of two bindings with the same
 * (domain, op, since), the first in table order wins. */
typedef struct entry {
    const seam_cpu_binding *b;
    size_t order;
} entry;

#define MAX_KERNELS 1024
static entry index_[MAX_KERNELS];
static size_t n_index;
static pthread_once_t index_once = PTHREAD_ONCE_INIT;

static int cmp_entry(const void *a, const void *b) {
    const entry *x = a, *y = b;
    int c = seam_op_key_cmp(x->b->domain, x->b->op_type, y->b->domain, y->b->op_type);
    if (c) return c;
    if (x->b->since != y->b->since) return (x->b->since > y->b->since) - (x->b->since < y->b->since);
    return (x->order > y->order) - (x->order < y->order);
}

static void build_index(void) {
    /* OpenBLAS's workers, started when it loads, spin for about 0.1 s:
     * stopped before the first kernel runs, whether or not a product ever
     * reaches OpenBLAS (see cpu_blas_single_thread) */
    cpu_blas_single_thread();
    for (size_t f = 0; f < sizeof(families) / sizeof(families[0]); f++)
        for (size_t k = 0; k < *families[f].count && n_index < MAX_KERNELS; k++) {
            index_[n_index] = (entry){&families[f].b[k], n_index};
            n_index++;
        }
    qsort(index_, n_index, sizeof(index_[0]), cmp_entry);
}

const seam_kernel_def *cpu_kernel_find(const char *domain, const char *op_type, int64_t opset) {
    pthread_once(&index_once, build_index);
    /* the op's bindings: [lo, hi), oldest first */
    size_t lo = 0, hi = n_index;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (seam_op_key_cmp(index_[mid].b->domain, index_[mid].b->op_type, domain, op_type) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    for (hi = lo; hi < n_index && seam_op_key_cmp(index_[hi].b->domain, index_[hi].b->op_type, domain, op_type) == 0;) hi++;
    if (lo == hi) return NULL;
    /* the version of the op the node is: its registry entry's since, or
     * the opset itself for an op the registry does not know */
    int64_t version = opset;
    const seam_op_def *def = seam_op_find(domain, op_type, opset);
    if (def)
        version = def->since;
    else if (seam_op_find(domain, op_type, -1))
        return NULL; /* an opset older than every version seam knows */
    /* the newest binding with since <= version, else the oldest */
    const seam_cpu_binding *best = index_[lo].b;
    for (size_t k = lo; k < hi; k++) {
        const seam_cpu_binding *b = index_[k].b;
        if ((version < 0 || b->since <= version) && b->since > best->since) best = b;
    }
    return &best->kernel;
}

bool cpu_kernel_takes_values(const seam_kernel_def *kd) {
    for (size_t k = 0; k < seam_cpu_sequence_count; k++)
        if (&seam_cpu_sequence[k].kernel == kd) return true;
    for (size_t k = 0; k < seam_cpu_control_count; k++)
        if (&seam_cpu_control[k].kernel == kd)
            return strcmp(seam_cpu_control[k].op_type, "Scan") != 0;
    return false;
}

const seam_kernel_lookup *cpu_host_kernels(void) {
    static const seam_kernel_lookup lookup = {cpu_kernel_find, cpu_kernel_takes_values};
    return &lookup;
}
