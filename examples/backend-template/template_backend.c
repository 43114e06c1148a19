/*
 * template_backend.c - a small, complete seam backend plug-in to copy.
 *
 * Built out of tree against an installed seam (CMakeLists.txt here), from
 * the public headers alone (seam_backend.h, which includes seam.h). seam
 * loads the library with `--backend-lib libseam_template.so --target
 * template`, or finds it by its name, `--target template`, as
 * libseam_template.so on $SEAM_BACKEND_PATH.
 *
 * The "device" is the host itself: compile() lays a subgraph out as a list
 * of steps over buffers in memory this backend owns (as a device's memory
 * would be), and run() copies the inputs in, runs the steps as plain C
 * loops and copies the outputs out. It claims three ops:
 *
 *     Relu     float32, any rank
 *     Add      two float32 inputs of one shape (no broadcasting)
 *     MatMul   float32 [M,K] x [K,N]
 *
 * Every place a real backend differs says "VENDOR:". docs/backend-guide.md
 * in seam's tree is the guide to the rules this file follows.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "seam_backend.h"

/* The device's memory unless the target option memory_mb=N says otherwise. */
#define TPL_DEFAULT_MEMORY_MB 1024
/* No value may be larger than this (bytes): a hostile file cannot overflow a size. */
#define TPL_MAX_BYTES ((int64_t)1 << 40)

typedef enum tpl_op { TPL_RELU, TPL_ADD, TPL_MATMUL } tpl_op;

/* One node, lowered: the buffers it reads and writes, and its sizes. */
typedef struct tpl_step {
    tpl_op op;
    int32_t a, b, y;  /* input buffers (Relu reads a only) and the output buffer */
    int64_t m, k, n;  /* MatMul: y[m,n] = a[m,k] x b[k,n]; Relu and Add: m elements */
} tpl_step;

/* A value in the device's memory: a boundary input, a constant or a node's output. */
typedef struct tpl_buffer {
    char name[128];   /* copied: seam's views are valid only during the call */
    int64_t numel;
    float *data;      /* inside the program's arena */
    bool constant;    /* a weight, uploaded once at compile */
} tpl_buffer;

/* A compiled subgraph: all run needs, owned here. run may be called on two
 * programs at once from two threads (never on one program twice at once),
 * so everything run writes lives in the program, nothing in globals. */
typedef struct tpl_program {
    float *arena;              /* VENDOR: device memory (cudaMalloc, your driver's allocator) */
    tpl_buffer *bufs;
    int32_t n_bufs, cap_bufs;
    tpl_step *steps;
    int32_t n_steps;
    int32_t *in_buf, *out_buf; /* buffer of each boundary input and output, in run's order */
    int32_t n_in, n_out;
    char log[1024];            /* the compile log: one decision per line */
} tpl_program;

/* ---- target options ---------------------------------------------------------- */

/* `--target-option KEY=VALUE` strings reach compile untouched, all of them:
 * an option this backend does not know is an error, never ignored. */
typedef struct tpl_options {
    int64_t memory_mb; /* the device's memory; 0 makes every compile run out of it */
} tpl_options;

static bool parse_options(const char *const *options, int32_t n_options, tpl_options *o, char *err, size_t err_size) {
    o->memory_mb = TPL_DEFAULT_MEMORY_MB;
    for (int32_t k = 0; k < n_options; k++) {
        char *end;
        if (!strncmp(options[k], "memory_mb=", 10) && options[k][10]) {
            long long v = strtoll(options[k] + 10, &end, 10);
            if (!*end && v >= 0 && v <= (1 << 20)) {
                o->memory_mb = v;
                continue;
            }
        }
        snprintf(err, err_size, "template: unknown or bad target option '%s' (known: memory_mb=N, N from 0 to 1048576)",
                 options[k]);
        return false;
    }
    return true;
}

/* ---- what it supports -------------------------------------------------------- */

static bool is_float32(const seam_value_info *v) { return v->name && v->dtype == SEAM_DTYPE_FLOAT32 && v->rank >= 0; }

/* Whether two values have one shape: equal dims, or a dim known only at run
 * time that is the same symbolic dim in both. */
static bool same_shape(const seam_value_info *a, const seam_value_info *b) {
    if (a->rank != b->rank) return false;
    for (int32_t d = 0; d < a->rank; d++) {
        if (a->dims[d] >= 0 || b->dims[d] >= 0) {
            if (a->dims[d] != b->dims[d]) return false;
        } else if (!a->dim_params || !b->dim_params || !a->dim_params[d] || !b->dim_params[d] ||
                   strcmp(a->dim_params[d], b->dim_params[d])) {
            return false;
        }
    }
    return true;
}

/* The one check, shared by supports() and compile(): what supports() says
 * yes to, compile() must build. On no, why says precisely what is missing;
 * seam shows it in plans, `seam analyze` and `--what-if`. */
static bool check_node(const seam_node_view *n, char *why, size_t why_size) {
    const char *op = n->op_type;
    if (n->domain[0] || (strcmp(op, "Relu") && strcmp(op, "Add") && strcmp(op, "MatMul"))) {
        snprintf(why, why_size, "template has no %s%s%s", n->domain[0] ? n->domain : "", n->domain[0] ? "." : "", op);
        return false;
    }
    int32_t want_in = !strcmp(op, "Relu") ? 1 : 2;
    if (n->n_inputs != want_in || n->n_outputs != 1) {
        snprintf(why, why_size, "%s with %d inputs and %d outputs", op, n->n_inputs, n->n_outputs);
        return false;
    }
    for (int32_t k = 0; k <= want_in; k++) {
        const seam_value_info *v = k < want_in ? &n->inputs[k] : &n->outputs[0];
        if (!is_float32(v)) {
            snprintf(why, why_size, "%s: value '%s' is %s%s; template computes float32 only", op, v->name ? v->name : "",
                     seam_dtype_name(v->dtype), v->rank < 0 ? " of unknown rank" : "");
            return false;
        }
    }
    if (!strcmp(op, "Add") && !same_shape(&n->inputs[0], &n->inputs[1])) {
        snprintf(why, why_size, "Add of two shapes (ranks %d and %d): template does not broadcast", n->inputs[0].rank,
                 n->inputs[1].rank);
        return false;
    }
    if (!strcmp(op, "MatMul")) {
        const seam_value_info *a = &n->inputs[0], *b = &n->inputs[1];
        if (a->rank != 2 || b->rank != 2) {
            snprintf(why, why_size, "MatMul of ranks %d and %d: template multiplies 2-D matrices only", a->rank, b->rank);
            return false;
        }
        if (a->dims[1] >= 0 && b->dims[0] >= 0 && a->dims[1] != b->dims[0]) {
            snprintf(why, why_size, "MatMul: inner dims %lld and %lld differ", (long long)a->dims[1], (long long)b->dims[0]);
            return false;
        }
    }
    return true;
}

/* SLOT supports: asked for every node of a model, before any plan. Reads the
 * whole node (op, domain, dtypes, shapes, attributes with
 * seam_node_attr_*, constant inputs with seam_node_input_data) and says no
 * to anything compile could not build. Must not abort, whatever the model.
 * VENDOR: your op coverage; the dtypes and layouts your device takes. */
static bool tpl_supports(void *ctx, const seam_node_view *node, char *why, size_t why_size) {
    (void)ctx;
    return check_node(node, why, why_size);
}

/* SLOT node_cost (optional): this target's time for a node as a fraction of
 * seam's estimate of its CPU time. Placement by cost (the default) offloads
 * a node only where this, the launch and the transfers together win.
 * These are the template's own numbers: its elementwise loops are as fast
 * as seam's CPU kernels, its triple loop is far slower than seam's packed
 * GEMM (a 256x256x256 MatMul: 3.0 ms against 0.5 ms on one thread of a
 * 2-core AVX-512 machine), so cost placement keeps these ops on the CPU.
 * VENDOR: your device's, measured (seam backend-check prints the ratio per op). */
static double tpl_node_cost(void *ctx, const seam_node_view *node) {
    (void)ctx;
    return !strcmp(node->op_type, "MatMul") ? 6.0 : 1.0;
}

/* SLOT cost_traits (optional): what one subgraph costs beyond its nodes,
 * a launch per run and its boundary values moved in and out. The
 * template's launch is a function call and its transfers are memcpy.
 * VENDOR: your launch latency and bus bandwidth (PCIe 4.0 x16: about 25 GB/s). */
static void tpl_cost_traits(void *ctx, double *launch_us, double *transfer_gbps) {
    (void)ctx;
    *launch_us = 1;
    *transfer_gbps = 10;
}

/* ---- compile ----------------------------------------------------------------- */

static void log_line(tpl_program *p, const char *fmt, ...) {
    size_t used = strlen(p->log);
    if (used + 1 >= sizeof(p->log)) return; /* a long log is cut, never overrun */
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(p->log + used, sizeof(p->log) - used, fmt, ap);
    va_end(ap);
}

static int32_t find_buffer(const tpl_program *p, const char *name) {
    for (int32_t k = 0; k < p->n_bufs; k++)
        if (!strcmp(p->bufs[k].name, name)) return k;
    return -1;
}

/* A new buffer for value v, whose every dim is known here: seam compiles a
 * subgraph for concrete shapes (a subgraph with dims known only at run
 * time is compiled again for each shape it meets). */
static int32_t add_buffer(tpl_program *p, const seam_value_info *v, bool constant, char *err, size_t err_size) {
    int64_t numel = 1;
    for (int32_t d = 0; d < v->rank; d++) {
        if (v->dims[d] < 0 || (v->dims[d] > 0 && numel > TPL_MAX_BYTES / 4 / v->dims[d])) {
            snprintf(err, err_size, "value '%s': dim %d is %lld; template compiles known shapes under 1 TB", v->name, d,
                     (long long)v->dims[d]);
            return -1;
        }
        numel *= v->dims[d];
    }
    if (p->n_bufs == p->cap_bufs || strlen(v->name) >= sizeof(p->bufs[0].name)) {
        snprintf(err, err_size, "value '%s': template keeps at most %d values of names under 128 bytes", v->name, p->cap_bufs);
        return -1;
    }
    tpl_buffer *b = &p->bufs[p->n_bufs];
    snprintf(b->name, sizeof(b->name), "%s", v->name);
    b->numel = numel, b->constant = constant;
    return p->n_bufs++;
}

/* Whether buffer b holds exactly value v's elements: every dim known, the
 * product compared without overflowing. */
static bool holds(const tpl_buffer *b, const seam_value_info *v) {
    bool empty = false;
    for (int32_t d = 0; d < v->rank; d++) {
        if (v->dims[d] < 0) return false;
        empty |= v->dims[d] == 0;
    }
    if (empty) return b->numel == 0;
    int64_t numel = 1;
    for (int32_t d = 0; d < v->rank; d++) {
        if (numel > b->numel / v->dims[d]) return false;
        numel *= v->dims[d];
    }
    return numel == b->numel;
}

/* The buffer a node reads for input v: a boundary input or an earlier
 * node's output, else a constant of the model (a weight) given its own. */
static int32_t input_buffer(tpl_program *p, const seam_subgraph_view *sg, const seam_value_info *v, char *err,
                            size_t err_size) {
    int32_t b = find_buffer(p, v->name);
    if (b >= 0) return b;
    seam_tensor_view c;
    if (seam_subgraph_constant(sg, v->name, &c)) return add_buffer(p, v, true, err, err_size);
    snprintf(err, err_size, "value '%s' is neither an input of subgraph '%s', a constant, nor computed before", v->name,
             sg->name);
    return -1;
}

static void tpl_release_compiled(void *ctx, void *compiled);

/* After the buffers are counted: the device memory, one arena, and the
 * weights uploaded into it, once. Out of the device's memory, the message
 * begins with SEAM_COMPILE_OUT_OF_MEMORY and seam runs the subgraph on its
 * CPU kernels instead (any other compile failure fails the session). */
static bool place_buffers(tpl_program *p, const seam_subgraph_view *sg, const tpl_options *o, char *err, size_t err_size) {
    int64_t bytes = 0;
    for (int32_t k = 0; k < p->n_bufs && bytes <= TPL_MAX_BYTES; k++) bytes += p->bufs[k].numel * 4 + 64; /* 64: alignment */
    if (bytes > o->memory_mb * 1024 * 1024 || bytes > TPL_MAX_BYTES || !(p->arena = malloc((size_t)bytes))) {
        snprintf(err, err_size, SEAM_COMPILE_OUT_OF_MEMORY "subgraph '%s' needs %lld bytes, template has %lld MB",
                 sg->name, (long long)bytes, (long long)o->memory_mb);
        return false;
    }
    char *at = (char *)p->arena;
    for (int32_t k = 0; k < p->n_bufs; k++) {
        tpl_buffer *b = &p->bufs[k];
        b->data = (float *)at;
        at += (b->numel * 4 + 63) / 64 * 64;
        seam_tensor_view c;
        if (!b->constant) continue;
        /* VENDOR: the upload (cudaMemcpy, a DMA); or a layout your kernels like, made once here */
        if (!seam_subgraph_constant(sg, b->name, &c) || c.dtype != SEAM_DTYPE_FLOAT32 ||
            c.nbytes != (size_t)b->numel * 4) {
            snprintf(err, err_size, "constant '%s' is not float32 of its value's shape", b->name);
            return false;
        }
        if (c.nbytes) memcpy(b->data, c.data, c.nbytes);
    }
    return true;
}

/* SLOT compile (optional; with run and release_compiled): once per device
 * subgraph at session creation. Everything seam hands over is valid only
 * during the call: copy what run needs. Returns the handle run receives,
 * or NULL with a message naming the node. A saved, partitioned file may
 * name this target for any node, so compile checks each node again and
 * trusts nothing. VENDOR: your compiler (a graph, kernels, a schedule). */
static void *tpl_compile(void *ctx, const seam_subgraph_view *sg, const char *const *options, int32_t n_options,
                         char *err, size_t err_size) {
    (void)ctx;
    tpl_options o;
    if (!parse_options(options, n_options, &o, err, err_size)) return NULL;
    tpl_program *p = calloc(1, sizeof(*p));
    int32_t cap = sg->n_inputs + 3 * sg->n_nodes;
    if (!p || !(p->bufs = calloc((size_t)cap + 1, sizeof(*p->bufs))) ||
        !(p->steps = calloc((size_t)sg->n_nodes + 1, sizeof(*p->steps))) ||
        !(p->in_buf = calloc((size_t)sg->n_inputs + 1, sizeof(int32_t))) ||
        !(p->out_buf = calloc((size_t)sg->n_outputs + 1, sizeof(int32_t)))) {
        snprintf(err, err_size, "template: out of host memory compiling subgraph '%s'", sg->name);
        goto fail;
    }
    p->cap_bufs = cap;
    for (int32_t k = 0; k < sg->n_inputs; k++)
        if ((p->in_buf[p->n_in++] = add_buffer(p, &sg->inputs[k], false, err, err_size)) < 0) goto fail;
    for (int32_t i = 0; i < sg->n_nodes; i++) {
        seam_node_view storage;
        const seam_node_view *n = seam_subgraph_node(sg, i, &storage);
        char why[256];
        if (!check_node(n, why, sizeof(why))) {
            snprintf(err, err_size, "node %d '%s' (%s): %s", n->index, n->name, n->op_type, why);
            goto fail;
        }
        tpl_step *s = &p->steps[p->n_steps++];
        s->op = n->op_type[0] == 'R' ? TPL_RELU : n->op_type[0] == 'A' ? TPL_ADD : TPL_MATMUL;
        if ((s->a = input_buffer(p, sg, &n->inputs[0], err, err_size)) < 0 ||
            (s->op != TPL_RELU && (s->b = input_buffer(p, sg, &n->inputs[1], err, err_size)) < 0) ||
            (s->y = add_buffer(p, &n->outputs[0], false, err, err_size)) < 0)
            goto fail;
        if (s->op == TPL_MATMUL) s->m = n->inputs[0].dims[0], s->k = n->inputs[0].dims[1], s->n = n->inputs[1].dims[1];
        else s->m = p->bufs[s->y].numel;
        /* the sizes the loops will use, against the buffers' (a file's shapes may disagree) */
        const tpl_buffer *bufs = p->bufs;
        const seam_value_info *out = &n->outputs[0];
        bool fits = holds(&bufs[s->a], &n->inputs[0]) && (s->op == TPL_RELU || holds(&bufs[s->b], &n->inputs[1])) &&
                    holds(&bufs[s->y], out) &&
                    (s->op == TPL_MATMUL ? out->rank == 2 && out->dims[0] == s->m && out->dims[1] == s->n &&
                                               n->inputs[1].dims[0] == s->k
                                         : bufs[s->a].numel == s->m && (s->op == TPL_RELU || bufs[s->b].numel == s->m));
        if (!fits) {
            snprintf(err, err_size, "node %d '%s' (%s): its inputs' and output's shapes disagree", n->index, n->name,
                     n->op_type);
            goto fail;
        }
        if (s->op == TPL_MATMUL) {
            log_line(p, "slow: MatMul '%s' [%lld,%lld]x[%lld,%lld] is a plain triple loop (fix: a vendor's GEMM)\n", n->name,
                  (long long)s->m, (long long)s->k, (long long)s->k, (long long)s->n);
        } else {
            log_line(p, "%s '%s': %lld elements\n", n->op_type, n->name, (long long)s->m);
        }
    }
    for (int32_t k = 0; k < sg->n_outputs; k++) {
        if ((p->out_buf[p->n_out++] = find_buffer(p, sg->outputs[k].name)) < 0) {
            snprintf(err, err_size, "output '%s' of subgraph '%s' is computed by none of its nodes", sg->outputs[k].name,
                     sg->name);
            goto fail;
        }
    }
    if (!place_buffers(p, sg, &o, err, err_size)) goto fail;
    return p;
fail:
    tpl_release_compiled(NULL, p);
    return NULL;
}

/* ---- run --------------------------------------------------------------------- */

/* y[i] = max(x[i], 0), NaN kept */
static void relu(const float *x, float *y, int64_t n) {
    for (int64_t i = 0; i < n; i++) y[i] = x[i] < 0 ? 0.0f : x[i];
}

/* y[i] = a[i] + b[i] */
static void add(const float *a, const float *b, float *y, int64_t n) {
    for (int64_t i = 0; i < n; i++) y[i] = a[i] + b[i];
}

/* y[m,n] = sum over k of a[m,k] * b[k,n]: rows of y built from rows of b */
static void matmul(const float *a, const float *b, float *y, int64_t m, int64_t k, int64_t n) {
    for (int64_t i = 0; i < m; i++) {
        float *yi = y + i * n;
        for (int64_t j = 0; j < n; j++) yi[j] = 0;
        for (int64_t p = 0; p < k; p++) {
            float aip = a[i * k + p];
            const float *bp = b + p * n;
            for (int64_t j = 0; j < n; j++) yi[j] += aip * bp[j];
        }
    }
}

/* SLOT run: the inputs and outputs are host buffers in the subgraph's
 * boundary order, the outputs allocated by seam in the shapes compile saw.
 * Returns a status and a message; never aborts. memory is DEVICE below, so
 * seam hands run copies and copies the outputs back.
 * VENDOR: host -> device copies, your launch, a wait, device -> host. */
static seam_status tpl_run(void *ctx, void *compiled, const seam_tensor_view *inputs, int32_t n_inputs,
                           seam_buffer *outputs, int32_t n_outputs, char *err, size_t err_size) {
    (void)ctx;
    tpl_program *p = compiled;
    if (n_inputs != p->n_in || n_outputs != p->n_out) {
        snprintf(err, err_size, "template: %d inputs and %d outputs given, %d and %d compiled", n_inputs, n_outputs,
                 p->n_in, p->n_out);
        return SEAM_STATUS_INVALID_ARGUMENT;
    }
    for (int32_t k = 0; k < n_inputs + n_outputs; k++) {
        const tpl_buffer *b = &p->bufs[k < n_inputs ? p->in_buf[k] : p->out_buf[k - n_inputs]];
        size_t nbytes = k < n_inputs ? inputs[k].nbytes : outputs[k - n_inputs].nbytes;
        if (nbytes != (size_t)b->numel * 4) {
            snprintf(err, err_size, "template: '%s' has %zu bytes, %lld compiled", b->name, nbytes, (long long)b->numel * 4);
            return SEAM_STATUS_INVALID_ARGUMENT;
        }
    }
    for (int32_t k = 0; k < n_inputs; k++) /* (an empty tensor's data may be NULL) */
        if (inputs[k].nbytes) memcpy(p->bufs[p->in_buf[k]].data, inputs[k].data, inputs[k].nbytes);
    for (int32_t i = 0; i < p->n_steps; i++) {
        const tpl_step *s = &p->steps[i];
        const float *a = p->bufs[s->a].data, *b = s->op == TPL_RELU ? NULL : p->bufs[s->b].data;
        float *y = p->bufs[s->y].data;
        switch (s->op) {
        case TPL_RELU: relu(a, y, s->m); break;
        case TPL_ADD: add(a, b, y, s->m); break;
        case TPL_MATMUL: matmul(a, b, y, s->m, s->k, s->n); break;
        }
    }
    for (int32_t k = 0; k < n_outputs; k++)
        if (outputs[k].nbytes) memcpy(outputs[k].data, p->bufs[p->out_buf[k]].data, outputs[k].nbytes);
    return SEAM_STATUS_OK;
}

/* SLOT release_compiled: frees a handle compile returned (seam calls it
 * once per handle, when the session is freed). VENDOR: device memory too. */
static void tpl_release_compiled(void *ctx, void *compiled) {
    (void)ctx;
    tpl_program *p = compiled;
    if (!p) return;
    free(p->arena), free(p->bufs), free(p->steps), free(p->in_buf), free(p->out_buf), free(p);
}

/* SLOT compile_log (optional): text, one decision per line, valid until
 * release_compiled (`seam run --compile-log` prints it). A line starting
 * "slow: " says a slower path was taken, why, and the fix; seam run prints
 * those once per session. */
static const char *tpl_compile_log(void *ctx, void *compiled) {
    (void)ctx;
    return ((const tpl_program *)compiled)->log;
}

/* ---- the table --------------------------------------------------------------- */

static const seam_backend template_table = {
    .abi_version = SEAM_BACKEND_ABI_VERSION, /* the version of seam_backend.h built against */
    .name = "template",                      /* VENDOR: your target's name (--target NAME; not "cpu") */
    /* .ctx: passed back to every call; NULL here. VENDOR: a device handle
     * set up once, with pthread_once, on the first call that needs it. */
    .ctx = NULL,
    .supports = tpl_supports,
    .node_cost = tpl_node_cost,
    /* .release (optional): frees ctx when seam lets the backend go; none here. */
    .release = NULL,
    .compile = tpl_compile,
    .run = tpl_run,
    .release_compiled = tpl_release_compiled,
    /* DEVICE: tensors live in memory of the backend's own; seam copies the
     * boundary values in and out. HOST: run reads and writes seam's
     * buffers directly (a backend computing in host memory, as dnnl). */
    .memory = SEAM_MEMORY_DEVICE,
    .compile_log = tpl_compile_log,
    .cost_traits = tpl_cost_traits,
    /* .run_team (optional): for a backend whose kernels run on a thread
     * runtime of its own (OpenMP, TBB) that keeps its threads spinning:
     * seam then runs its CPU loops on those threads. The template has no
     * threads. VENDOR: set it if your host-side runtime has a pool. */
    .run_team = NULL,
    .node_cost_with = NULL, /* (node_cost under a target's own options: see docs/backend-guide.md) */
};

/* The one symbol seam looks up. seam passes its own ABI version; a table of
 * an older version is still taken by a seam that knows it (it checks the
 * table's abi_version and slots, and says what it refuses). NULL: this
 * library needs a later seam. Only this function is exported (see
 * CMakeLists.txt: every other symbol is hidden). */
SEAM_API const seam_backend *seam_backend_register(uint32_t abi_version) {
    return abi_version >= SEAM_BACKEND_ABI_VERSION ? &template_table : NULL;
}
