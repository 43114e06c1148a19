/*
 * Node views: how seam shows a node, and a device subgraph, to a backend
 * (seam_node_view, seam_subgraph_view in include/seam_backend.h). The
 * partitioner builds them for supports() and node_cost(); the Subgraph
 * runner for compile(). Part of the backend interface, below both.
 */
#ifndef SEAM_BACKENDS_VIEW_H
#define SEAM_BACKENDS_VIEW_H

#include "ir/ir.h"
#include "seam_backend.h"

/* Builds views of one node at a time into reusable buffers. */
typedef struct view_builder {
    const ir_graph *g;
    const struct seam_model *m;
    seam_value_info *infos;  /* inputs then outputs */
    const char **producers;
    uint8_t *constant;       /* after a view_header (seam_node_input_data finds the graph so) */
    int64_t *dims;
    const char **syms;
    int32_t cap_infos, cap_dims;
} view_builder;

void view_init(view_builder *vb, const struct seam_model *m);
/* The view of node i; valid until the next call. NULL when out of memory. */
const seam_node_view *view_node(view_builder *vb, int32_t i, seam_node_view *out);
void view_free(view_builder *vb);
/* The impl behind a seam_subgraph_view of body (node views on demand). */
void *subgraph_impl_new(const struct seam_model *m, const ir_graph *body);
void subgraph_impl_free(void *impl);

#endif
