/*
 * dnnl, an op family (see program.h for the order): Concat (concat.c):
 * its sources written in place into the output, or reordered into place;
 * else oneDNN's concat, in the sources' blocked layout or plain. The
 * compile driver tries them in that order (after host.c's concat_norm).
 */
#ifndef SEAM_DNNL_CONCAT_H
#define SEAM_DNNL_CONCAT_H

#include "builder.h"

/* The family's rows (see dx_op), ended by a row whose op is NULL: the
 * plain concat. */
extern const dx_op dx_concat_rows[];
/* Concat (b->n, input 0 in slot sin) with its sources written in place into
 * the output where the layouts allow, the others reordered into their
 * sub-memories by jit reorders. 1 when made, 0 when it is not done so (the
 * concat primitive then: nothing was changed), -1 on an error (b->err set). */
int32_t dx_compile_concat_places(builder *b, int32_t sin);
/* A Concat of inputs in oneDNN's layouts (the branches of an inception
 * block, a densenet's features) stays in them: dst takes the layout
 * oneDNN picks from its inputs. Returns 1 when made, 0 when oneDNN has no
 * such concat (the caller then goes plain), -1 on an error. */
int32_t dx_blocked_concat(builder *b, int32_t sin);

#endif
