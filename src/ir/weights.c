/* Replacing a model's weights by name, from another model's initializers
 * (seam replace-weights): a partitioned model gets new weights without
 * being partitioned again. Everything is checked before anything changes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/context.h"
#include "ir/ir.h"

static void shape_text(const ir_tensor *t, char *buf, size_t n) {
    size_t off = (size_t)snprintf(buf, n, "%s [", seam_dtype_name((seam_dtype)t->dtype));
    for (int32_t d = 0; d < t->rank && off < n; d++) off += (size_t)snprintf(buf + off, n - off, "%s%lld", d ? "," : "", (long long)t->dims[d]);
    if (off < n) snprintf(buf + off, n - off, "]");
}

static ir_value *find_init(ir_graph *g, const char *name) {
    int32_t v = ir_graph_find(g, name);
    return v >= 0 && (g->values[v].flags & IR_VALUE_INIT) && g->values[v].init ? &g->values[v] : NULL;
}

seam_status seam_model_replace_weights(seam_model *m, const seam_model *donor, int32_t *replaced_out) {
    if (replaced_out) *replaced_out = 0;
    if (!m || !donor) return SEAM_STATUS_INVALID_ARGUMENT;
    ir_graph *g = m->graph;
    const ir_graph *d = donor->graph;
    char a[256], b[256];
    /* one lookup per weight: without the map (the loader drops the top
     * graph's) each would scan every value */
    if (d->n_inits && !ir_graph_index_names(g)) return seam_error(m->ctx, SEAM_STATUS_OUT_OF_MEMORY, "out of memory");
    for (int32_t k = 0; k < d->n_inits; k++) {
        const ir_tensor *src = d->values[d->inits[k]].init;
        const char *name = d->values[d->inits[k]].name;
        ir_value *dst = find_init(g, name);
        if (!dst) return seam_error(m->ctx, SEAM_STATUS_INVALID_ARGUMENT, "the weights file has '%s', which is not a weight of the model", name);
        if (!src || src->dtype == SEAM_DTYPE_STRING) return seam_error(m->ctx, SEAM_STATUS_UNSUPPORTED, "weight '%s': string tensors cannot be replaced", name);
        bool same = src->dtype == dst->init->dtype && src->rank == dst->init->rank;
        for (int32_t i = 0; same && i < src->rank; i++) same = src->dims[i] == dst->init->dims[i];
        if (!same) {
            shape_text(dst->init, a, sizeof(a));
            shape_text(src, b, sizeof(b));
            return seam_error(m->ctx, SEAM_STATUS_INVALID_ARGUMENT, "weight '%s': the model has %s, the weights file %s", name, a, b);
        }
    }
    for (int32_t k = 0; k < d->n_inits; k++) {
        const ir_tensor *src = d->values[d->inits[k]].init;
        ir_value *dst = find_init(g, d->values[d->inits[k]].name);
        void *data = malloc(src->nbytes ? src->nbytes : 1);
        if (!data || !ir_model_own(m, data)) {
            free(data);
            return seam_error(m->ctx, SEAM_STATUS_OUT_OF_MEMORY, "out of memory");
        }
        if (src->nbytes) memcpy(data, src->data, src->nbytes);
        dst->init->data = data;
        dst->init->external_location = NULL;
        if (replaced_out) (*replaced_out)++;
    }
    return SEAM_STATUS_OK;
}
