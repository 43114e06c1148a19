/*
 * A toy accelerator backend, loaded from a shared library by the tests: it
 * shows seam's backend ABI end to end without seam being rebuilt.
 *
 * "toy" keeps tensors in memory of its own (SEAM_MEMORY_DEVICE), supports
 * float32 Relu, Add, Mul (same shapes, or a constant operand of one element)
 * and claims Sigmoid too, but its compiler refuses Sigmoid, so a plan that
 * gives it one fails at session creation with the node named. compile()
 * turns the subgraph into a list of steps over numbered buffers; run()
 * interprets it.
 */
#define _POSIX_C_SOURCE 200809L /* nanosleep */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "seam_backend.h"

typedef struct step {
    char op;          /* 'r' relu, 'a' add, 'm' mul */
    int in0, in1, out; /* buffer numbers; in1 < 0: the scalar */
    float scalar;
} step;

typedef struct program {
    int n_bufs, n_steps, n_in, n_out;
    char (*names)[128];
    size_t *sizes;    /* floats per buffer */
    step *steps;
    int *in_buf, *out_buf;
    float **mem;      /* the device's memory, one buffer per value */
    int defect;       /* planted for seam backend-check's tests: 'w' Relu computed wrong, 'c' a crash, 'h' a hang,
                         'r' a run through one buffer shared by every program (racy on two threads) */
    char log[160];    /* the compile log */
} program;

static bool toy_supports(void *ctx, const seam_node_view *n, char *why, size_t why_size) {
    (void)ctx;
    bool op = !strcmp(n->op_type, "Relu") || !strcmp(n->op_type, "Add") || !strcmp(n->op_type, "Mul") ||
              !strcmp(n->op_type, "Sigmoid");
    if (!op || n->domain[0]) {
        snprintf(why, why_size, "toy has no %s", n->op_type);
        return false;
    }
    if (n->inputs[0].dtype != SEAM_DTYPE_FLOAT32) {
        snprintf(why, why_size, "toy computes float32 only");
        return false;
    }
    return true;
}

static int buf_of(program *p, const char *name, size_t size) {
    for (int k = 0; k < p->n_bufs; k++)
        if (!strcmp(p->names[k], name)) return k;
    snprintf(p->names[p->n_bufs], sizeof(p->names[0]), "%s", name);
    p->sizes[p->n_bufs] = size;
    return p->n_bufs++;
}

static size_t numel(const seam_value_info *v) {
    size_t n = 1;
    for (int32_t d = 0; d < v->rank; d++) n *= (size_t)(v->dims[d] < 0 ? 0 : v->dims[d]);
    return n;
}

static void toy_release_compiled(void *ctx, void *compiled);

static void *toy_compile(void *ctx, const seam_subgraph_view *sg, const char *const *options, int32_t n_options,
                         char *err, size_t err_size) {
    (void)ctx;
    int defect = 0;
    for (int32_t k = 0; k < n_options; k++) /* target options arrive untouched */
        if (!strcmp(options[k], "defect=wrong_relu") || !strcmp(options[k], "defect=crash") || !strcmp(options[k], "defect=hang") ||
            !strcmp(options[k], "defect=racy"))
            defect = options[k][7] == 'w' ? 'w' : options[k][7] == 'c' ? 'c' : options[k][7] == 'h' ? 'h' : 'r';
        else if (!strcmp(options[k], "fail=1")) {
            snprintf(err, err_size, "toy was told to fail by the target option fail=1");
            return NULL;
        } else if (!strcmp(options[k], "fail=oom")) { /* as a device whose memory is short */
            snprintf(err, err_size, SEAM_COMPILE_OUT_OF_MEMORY "subgraph '%s': toy was told so by fail=oom", sg->name);
            return NULL;
        }
    program *p = calloc(1, sizeof(*p));
    int cap = 2 * sg->n_nodes + sg->n_inputs + 4;
    if (!p || !(p->names = calloc((size_t)cap, sizeof(*p->names))) || !(p->sizes = calloc((size_t)cap, sizeof(size_t))) ||
        !(p->steps = calloc((size_t)sg->n_nodes + 1, sizeof(step))) || !(p->in_buf = calloc((size_t)sg->n_inputs + 1, sizeof(int))) ||
        !(p->out_buf = calloc((size_t)sg->n_outputs + 1, sizeof(int)))) {
        snprintf(err, err_size, "out of memory");
        toy_release_compiled(NULL, p);
        return NULL;
    }
    p->defect = defect;
    for (int32_t k = 0; k < sg->n_inputs; k++) p->in_buf[p->n_in++] = buf_of(p, sg->inputs[k].name, numel(&sg->inputs[k]));
    for (int32_t i = 0; i < sg->n_nodes; i++) {
        seam_node_view nv;
        const seam_node_view *n = seam_subgraph_node(sg, i, &nv);
        if (!strcmp(n->op_type, "Sigmoid")) {
            snprintf(err, err_size, "node %d '%s' (Sigmoid): toy's compiler cannot lower Sigmoid", n->index, n->name);
            toy_release_compiled(NULL, p);
            return NULL;
        }
        step *s = &p->steps[p->n_steps++];
        s->op = n->op_type[0] == 'R' ? 'r' : n->op_type[0] == 'A' ? 'a' : 'm';
        s->in1 = -1;
        size_t size = numel(&n->outputs[0]);
        for (int32_t k = 0; k < (s->op == 'r' ? 1 : 2); k++) {
            seam_tensor_view c;
            if (seam_subgraph_constant(sg, n->inputs[k].name, &c)) { /* a resident weight */
                if (c.dtype != SEAM_DTYPE_FLOAT32 || c.nbytes != sizeof(float) || k == 0) {
                    snprintf(err, err_size, "node %d '%s': toy takes only a one-element constant as the second operand",
                             n->index, n->name);
                    toy_release_compiled(NULL, p);
                    return NULL;
                }
                memcpy(&s->scalar, c.data, sizeof(float));
                continue;
            }
            if (numel(&n->inputs[k]) != size) {
                snprintf(err, err_size, "node %d '%s': toy does not broadcast", n->index, n->name);
                toy_release_compiled(NULL, p);
                return NULL;
            }
            int b = buf_of(p, n->inputs[k].name, size);
            if (k == 0) s->in0 = b;
            else s->in1 = b;
        }
        s->out = buf_of(p, n->outputs[0].name, size);
    }
    for (int32_t k = 0; k < sg->n_outputs; k++) p->out_buf[p->n_out++] = buf_of(p, sg->outputs[k].name, numel(&sg->outputs[k]));
    p->mem = calloc((size_t)p->n_bufs + 1, sizeof(float *));
    for (int k = 0; p->mem && k < p->n_bufs; k++)
        if (!(p->mem[k] = malloc(p->sizes[k] * sizeof(float) + 1))) break;
    snprintf(p->log, sizeof(p->log), "%d steps, %d buffers\nslow: toy runs each step apart (fix: none, toy fuses nothing)",
             p->n_steps, p->n_bufs);
    return p;
}

static seam_status toy_run(void *ctx, void *compiled, const seam_tensor_view *inputs, int32_t n_inputs, seam_buffer *outputs,
                           int32_t n_outputs, char *err, size_t err_size) {
    (void)ctx;
    program *p = compiled;
    if (n_inputs != p->n_in || n_outputs != p->n_out) {
        snprintf(err, err_size, "toy: %d inputs and %d outputs given, %d and %d compiled", n_inputs, n_outputs, p->n_in, p->n_out);
        return SEAM_STATUS_INVALID_ARGUMENT;
    }
    if (p->defect == 'c') abort();
    while (p->defect == 'h') sleep(1);
    for (int k = 0; k < n_inputs; k++) memcpy(p->mem[p->in_buf[k]], inputs[k].data, inputs[k].nbytes);
    for (int i = 0; i < p->n_steps; i++) {
        const step *s = &p->steps[i];
        const float *a = p->mem[s->in0], *b = s->in1 >= 0 ? p->mem[s->in1] : NULL;
        float *y = p->mem[s->out];
        for (size_t e = 0; e < p->sizes[s->out]; e++) {
            float u = a[e], v = b ? b[e] : s->scalar;
            y[e] = s->op == 'r' ? (u < 0 && p->defect != 'w' ? 0 : u) : s->op == 'a' ? u + v : u * v;
        }
    }
    for (int k = 0; k < n_outputs; k++) {
        if (p->defect == 'r') { /* through a scratch buffer every program shares, slowly: a mark added and taken
                                  * off again, which another thread's copy in between doubles */
            static float shared[1 << 16];
            struct timespec pause = {0, 200000};
            size_t n = outputs[k].nbytes < sizeof(shared) ? outputs[k].nbytes : sizeof(shared);
            memcpy(shared, p->mem[p->out_buf[k]], n);
            shared[0] += 1000.0f;
            nanosleep(&pause, NULL);
            shared[0] -= 1000.0f;
            nanosleep(&pause, NULL);
            memcpy(outputs[k].data, shared, n);
            continue;
        }
        memcpy(outputs[k].data, p->mem[p->out_buf[k]], outputs[k].nbytes);
    }
    return SEAM_STATUS_OK;
}

static void toy_release_compiled(void *ctx, void *compiled) {
    (void)ctx;
    program *p = compiled;
    if (!p) return;
    for (int k = 0; p->mem && k < p->n_bufs; k++) free(p->mem[k]);
    free(p->mem), free(p->names), free(p->sizes), free(p->steps), free(p->in_buf), free(p->out_buf), free(p);
}

static const char *toy_compile_log(void *ctx, void *compiled) {
    (void)ctx;
    return ((const program *)compiled)->log;
}

static const seam_backend toy = {
    .abi_version = SEAM_BACKEND_ABI_VERSION,
    .name = "toy",
    .supports = toy_supports,
    .compile = toy_compile,
    .run = toy_run,
    .release_compiled = toy_release_compiled,
    .memory = SEAM_MEMORY_DEVICE,
    .compile_log = toy_compile_log,
};

const seam_backend *seam_backend_register(uint32_t abi_version) {
    return abi_version == SEAM_BACKEND_ABI_VERSION ? &toy : NULL;
}
