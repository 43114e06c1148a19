/*
 * The CUDA backend's compiler and runner: a subgraph becomes a list of
 * steps (cuDNN convolutions, cuBLASLt matrix products, kernels of seam's
 * own), its values get offsets in one device arena planned by lifetime,
 * weights are uploaded once, and the launches, with the boundary copies
 * through pinned host buffers, are captured once into a CUDA graph that
 * each run replays. Nothing is allocated at run time.
 *
 * Order of compile: read the nodes (cu_parse, values), lower them to steps
 * (with fusions: Conv [+ BatchNormalization] [+ Add] [+ Relu], Gemm/MatMul
 * [+ bias Add] [+ Relu | tanh Gelu], BatchNormalization [+ Relu]), plan
 * the arena, allocate, choose the algorithms (cudnnFindConvolutionForward-
 * AlgorithmEx on the real buffers, cuBLASLt's heuristic), run every step
 * once (a warm-up that also checks each), then capture the graph.
 */
#define _GNU_SOURCE
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "prog.h"

/* ---- compile, run, release --------------------------------------------------- */

void cu_release_compiled(void *ctx, void *compiled) {
    (void)ctx;
    prog *P = compiled;
    if (!P) return;
    if (P->stream) cudaStreamSynchronize(P->stream);
    if (P->gexec) cudaGraphExecDestroy(P->gexec);
    if (P->graph) cudaGraphDestroy(P->graph);
    for (int i = 0; i < P->n_steps; i++) {
        step *s = &P->steps[i];
        if (s->xd) cudnnDestroyTensorDescriptor(s->xd);
        if (s->yd) cudnnDestroyTensorDescriptor(s->yd);
        if (s->bd) cudnnDestroyTensorDescriptor(s->bd);
        if (s->wd) cudnnDestroyFilterDescriptor(s->wd);
        if (s->cd) cudnnDestroyConvolutionDescriptor(s->cd);
        if (s->ad) cudnnDestroyActivationDescriptor(s->ad);
        if (s->md) cublasLtMatmulDescDestroy(s->md);
        if (s->la) cublasLtMatrixLayoutDestroy(s->la);
        if (s->lb) cublasLtMatrixLayoutDestroy(s->lb);
        if (s->ld) cublasLtMatrixLayoutDestroy(s->ld);
        free(s->in);
    }
    if (P->dnn) cudnnDestroy(P->dnn);
    if (P->lt) cublasLtDestroy(P->lt);
    if (P->stream) cudaStreamDestroy(P->stream);
    if (P->weights) cudaFree(P->weights);
    if (P->arena) cudaFree(P->arena);
    if (P->ws) cudaFree(P->ws);
    if (P->pin_in) cudaFreeHost(P->pin_in);
    if (P->pin_out) cudaFreeHost(P->pin_out);
    (void)cudaGetLastError();
    for (int i = 0; i < P->nv; i++) free(P->v[i].name);
    for (int i = 0; i < P->n_nodes; i++) free(P->nodes[i].name), free(P->nodes[i].in);
    free(P->v), free(P->ht), free(P->nodes), free(P->steps), free(P->in_vals), free(P->out_vals), free(P->in_off),
        free(P->out_off), free(P->wh), free(P->log), free(P);
}

const char *cu_compile_log(void *ctx, void *compiled) {
    (void)ctx;
    const prog *P = compiled;
    return P && P->log ? P->log : "";
}

/* SEAM_CUDA_SYNC=1: a synchronize and a check after every launch, at
 * compile (the algorithm measurements, the warm-up) and at each run (no
 * CUDA graph then), so an asynchronous error names its node; 2: also each
 * compile phase and step on stderr as it starts (a crash on the host shows
 * where). */
static int sync_level(void) {
    const char *e = getenv("SEAM_CUDA_SYNC");
    return e && e[0] >= '1' && e[0] <= '9' ? e[0] - '0' : 0;
}

void trace(const prog *P, const char *what) {
    if (P->trace) fprintf(stderr, "seam cuda: subgraph '%s': %s\n", P->name, what);
}

static bool read_options(prog *P, const char *const *options, int32_t n_options, char *err, size_t es) {
    P->use_graph = true;
    int level = sync_level();
    P->sync_steps = level >= 1;
    P->trace = level >= 2;
    for (int32_t k = 0; k < n_options; k++) {
        const char *o = options[k];
        if (!strcmp(o, "tf32=on")) P->tf32 = true;
        else if (!strcmp(o, "tf32=off")) P->tf32 = false;
        else if (!strcmp(o, "graph=off")) P->use_graph = false;
        else if (!strcmp(o, "graph=on")) P->use_graph = true;
        else if (!strcmp(o, "conv_algos=all")) P->all_algos = true;
        else if (!strcmp(o, "conv_algos=exact")) P->all_algos = false;
        else if (!strncmp(o, "tf32=", 5) || !strncmp(o, "graph=", 6) || !strncmp(o, "conv_algos=", 11))
            return FAIL("subgraph '%s': target option '%s': cuda takes tf32=on|off, graph=on|off and conv_algos=exact|all",
                        P->name, o);
    }
    if (P->tf32) P->all_algos = true;
    if (P->sync_steps) P->use_graph = false;
    return true;
}

/* What needs no device: the nodes read, lowered to steps, the arena
 * planned, the weights staged on the host, the pinned staging sized. */
static bool compile_host(prog *P, const seam_subgraph_view *sg, char *err, size_t es) {
    if (!(P->in_vals = calloc((size_t)sg->n_inputs + 1, sizeof(int))) ||
        !(P->out_vals = calloc((size_t)sg->n_outputs + 1, sizeof(int))) ||
        !(P->in_off = calloc((size_t)sg->n_inputs + 1, sizeof(size_t))) ||
        !(P->out_off = calloc((size_t)sg->n_outputs + 1, sizeof(size_t))))
        return FAIL("subgraph '%s': out of memory", P->name);
    P->n_in = sg->n_inputs, P->n_out = sg->n_outputs;
    trace(P, "reading the nodes");
    if (!read_nodes(P, sg, err, es)) return false;
    for (int i = 0; i < P->n_nodes; i++)
        if (!P->nodes[i].done) {
            P->nodes[i].done = true;
            if (P->trace) fprintf(stderr, "seam cuda: subgraph '%s': lowering node %d '%s' (%s)\n", P->name, P->nodes[i].index,
                                  P->nodes[i].name, P->nodes[i].op);
            if (!lower_node(P, &P->nodes[i], err, es)) return false;
        }
    trace(P, "planning the arena");
    if (!plan_arena(P, err, es)) return false;
    for (int k = 0; k < P->n_in; k++) {
        P->in_off[k] = P->pin_in_bytes;
        P->pin_in_bytes += (P->v[P->in_vals[k]].nbytes + ALIGN - 1) / ALIGN * ALIGN;
    }
    for (int k = 0; k < P->n_out; k++) {
        P->out_off[k] = P->pin_out_bytes;
        P->pin_out_bytes += (P->v[P->out_vals[k]].nbytes + ALIGN - 1) / ALIGN * ALIGN;
    }
    return true;
}

/* The stream, the handles, the memory, the weights uploaded. */
static bool compile_memory(prog *P, char *err, size_t es) {
    trace(P, "creating the stream and handles, allocating, uploading the weights");
    bool ok = CUDA(cudaSetDevice(0), NULL) && CUDA(cudaStreamCreateWithFlags(&P->stream, cudaStreamNonBlocking), NULL) &&
              DNN(cudnnCreate(&P->dnn), NULL) && DNN(cudnnSetStream(P->dnn, P->stream), NULL) && LT(cublasLtCreate(&P->lt), NULL) &&
              CUDA(cudaMalloc(&P->weights, P->wbytes ? P->wbytes : ALIGN), "the weights") &&
              CUDA(cudaMalloc(&P->arena, P->arena_bytes ? P->arena_bytes : ALIGN), "the arena") &&
              CUDA(cudaHostAlloc(&P->pin_in, P->pin_in_bytes ? P->pin_in_bytes : ALIGN, cudaHostAllocDefault), "pinned input staging") &&
              CUDA(cudaHostAlloc(&P->pin_out, P->pin_out_bytes ? P->pin_out_bytes : ALIGN, cudaHostAllocDefault), "pinned output staging") &&
              (!P->wbytes || CUDA(cudaMemcpy(P->weights, P->wh, P->wbytes, cudaMemcpyHostToDevice), "uploading the weights")) &&
              CUDA(cudaMemset(P->arena, 0, P->arena_bytes ? P->arena_bytes : ALIGN), "the arena") &&
              CUDA(cudaDeviceSynchronize(), "the allocations and the upload");
    if (ok) memset(P->pin_in, 0, P->pin_in_bytes ? P->pin_in_bytes : ALIGN);
    return ok;
}

/* The algorithms (cuDNN measures on the real buffers), the workspace, then
 * every step once (a warm-up that checks each); a fused convolution cuDNN
 * refuses runs as a forward and an epilogue. */
static bool compile_steps(prog *P, char *err, size_t es) {
    size_t ws = 0;
    for (int i = 0; i < P->n_steps; i++) {
        step *s = &P->steps[i];
        if (s->kind != S_CONV && s->kind != S_DECONV && s->kind != S_GEMM) continue;
        if (P->trace) fprintf(stderr, "seam cuda: subgraph '%s': choosing the algorithm of %s\n", P->name, s->what);
        if (s->kind == S_CONV && !choose_conv(P, s, err, es)) return false;
        if (s->kind == S_DECONV && !choose_deconv(P, s, err, es)) return false;
        if (s->kind == S_GEMM && !choose_gemm(P, s, err, es)) return false;
        if (P->sync_steps && !CUDA(cudaStreamSynchronize(P->stream), s->what)) return false;
        size_t need = s->kind == S_GEMM ? LT_WORKSPACE : s->ws;
        if (need > ws) ws = need;
    }
    P->ws_bytes = ws;
    if (ws && !CUDA(cudaMalloc(&P->ws, ws), "the workspace")) return false;
    for (int i = 0; i < P->n_steps; i++) {
        step *s = &P->steps[i];
        if (P->trace) fprintf(stderr, "seam cuda: subgraph '%s': warm-up of %s\n", P->name, s->what);
        bool ok = launch(P, s, err, es);
        if (!ok && s->kind == S_CONV && s->fused) {
            char why[300];
            snprintf(why, sizeof(why), "%s", err);
            s->fused = false;
            err[0] = 0;
            ok = launch(P, s, err, es);
            if (ok) {
                size_t len = strlen(s->info);
                snprintf(s->info + len, sizeof(s->info) - len, "; fused forward refused (%.60s), forward + epilogue", why);
            }
        }
        if (!ok || !CUDA(cudaStreamSynchronize(P->stream), s->what)) return false;
    }
    return true;
}

/* The launches captured once into a CUDA graph; on failure the runs issue
 * them one by one and note says why. */
static void capture_graph(prog *P, char *note, size_t note_size) {
    char gerr[400] = "";
    trace(P, "capturing the CUDA graph");
    cudaError_t ce = cudaStreamBeginCapture(P->stream, cudaStreamCaptureModeThreadLocal);
    bool cap = ce == cudaSuccess;
    bool enq = cap && enqueue(P, gerr, sizeof(gerr));
    if (cap) {
        cudaError_t ee = cudaStreamEndCapture(P->stream, &P->graph);
        if (enq && ee != cudaSuccess) snprintf(gerr, sizeof(gerr), "cudaStreamEndCapture: %s", cudaGetErrorString(ee));
        enq = enq && ee == cudaSuccess;
    } else {
        snprintf(gerr, sizeof(gerr), "cudaStreamBeginCapture: %s", cudaGetErrorString(ce));
    }
    if (enq) {
        cudaError_t ie = cudaGraphInstantiate(&P->gexec, P->graph, 0);
        if (ie != cudaSuccess) snprintf(gerr, sizeof(gerr), "cudaGraphInstantiate: %s", cudaGetErrorString(ie)), enq = false;
    }
    if (!enq) {
        (void)cudaGetLastError();
        if (P->graph) cudaGraphDestroy(P->graph);
        P->graph = NULL;
        P->gexec = NULL;
        P->use_graph = false;
        snprintf(note, note_size, "%.280s", gerr);
    }
}

static void write_log(prog *P, const cu_device *dev, const char *graph_note) {
    logf_(P, "device 0: %s (sm_%d%d), cuDNN %zu, cuBLASLt %d; %s; %d nodes in %d steps; arena %.2f MB, weights %.2f MB, "
             "workspace %.2f MB; launches %s",
          dev->name, dev->cc_major, dev->cc_minor, dev->cudnn_version, dev->cublas_version,
          P->tf32 ? "TF32 on (tf32=on)" : "TF32 off", P->n_nodes, P->n_steps, P->arena_bytes / 1048576.0, P->wbytes / 1048576.0,
          P->ws_bytes / 1048576.0,
          P->use_graph ? "captured in one CUDA graph, replayed each run"
          : P->sync_steps ? "issued one by one each run, each synchronized and checked (SEAM_CUDA_SYNC)" : "issued one by one each run");
    if (graph_note[0]) logf_(P, "slow: no CUDA graph: %s (fix: report it; launches are issued one by one)", graph_note);
    for (int k = 0; k < P->n_in; k++)
        logf_(P, "input '%s': %zu bytes host to device (pinned staging)", P->v[P->in_vals[k]].name, P->v[P->in_vals[k]].nbytes);
    for (int i = 0; i < P->n_steps; i++) logf_(P, "%s: %s", P->steps[i].what, P->steps[i].info);
    for (int k = 0; k < P->n_out; k++)
        logf_(P, "output '%s': %zu bytes device to host (pinned staging)", P->v[P->out_vals[k]].name, P->v[P->out_vals[k]].nbytes);
}

/* SEAM_CUDA_PRETEND=1 without a device: compile runs what needs none (the
 * lowering, the arena plan) and fails saying how far it got, so machines
 * without a GPU check the lowering of every model (check_cuda.py). */
static bool pretending(void) {
    const char *e = getenv("SEAM_CUDA_PRETEND");
    return e && !strcmp(e, "1");
}

/* A failure for want of device memory (cudaMalloc, cuDNN's or cuBLASLt's
 * allocations): err gets SEAM_COMPILE_OUT_OF_MEMORY in front, and seam runs
 * the subgraph on the CPU. SEAM_CUDA_FAKE_OOM=1 (tests) fails so after the
 * host half, on machines with or without a GPU. */
static void mark_oom(char *err, size_t es) {
    size_t p = strlen(SEAM_COMPILE_OUT_OF_MEMORY), n = strlen(err);
    if (!strstr(err, "cudaErrorMemoryAllocation") && !strstr(err, "ALLOC_FAILED")) return;
    if (n + p + 1 > es) n = es - p - 1;
    memmove(err + p, err, n);
    err[p + n] = 0;
    memcpy(err, SEAM_COMPILE_OUT_OF_MEMORY, p);
}

void *cu_compile(void *ctx, const seam_subgraph_view *sg, const char *const *options, int32_t n_options, char *err, size_t es) {
    (void)ctx;
    const cu_device *dev = cu_device_get();
    if (!dev->ok && !pretending()) {
        snprintf(err, es, "subgraph '%s': no CUDA device (%s)", sg->name ? sg->name : "", dev->reason);
        return NULL;
    }
    prog *P = calloc(1, sizeof(*P));
    if (!P) {
        snprintf(err, es, "out of memory");
        return NULL;
    }
    snprintf(P->name, sizeof(P->name), "%s", sg->name ? sg->name : "");
    err[0] = 0;
    bool ok = read_options(P, options, n_options, err, es) && compile_host(P, sg, err, es);
    const char *fake = getenv("SEAM_CUDA_FAKE_OOM");
    if (ok && fake && !strcmp(fake, "1")) {
        snprintf(err, es, "subgraph '%s': cudaMalloc(the arena, %zu B): out of memory (cudaErrorMemoryAllocation; "
                 "SEAM_CUDA_FAKE_OOM=1)", P->name, P->arena_bytes);
        ok = false;
    } else if (ok && !dev->ok) {
        snprintf(err, es, "subgraph '%s': no CUDA device (%s); dry compile (SEAM_CUDA_PRETEND=1): %d nodes lowered to %d steps, "
                 "arena %zu B, weights %zu B, staging %zu B in and %zu B out", P->name, dev->reason, P->n_nodes, P->n_steps,
                 P->arena_bytes, P->wbytes, P->pin_in_bytes, P->pin_out_bytes);
        ok = false;
    }
    ok = ok && compile_memory(P, err, es) && compile_steps(P, err, es);
    char graph_note[300] = "";
    if (ok && P->use_graph) capture_graph(P, graph_note, sizeof(graph_note));
    if (!ok) {
        if (!err[0]) snprintf(err, es, "subgraph '%s': out of memory", P->name);
        mark_oom(err, es);
        cu_release_compiled(NULL, P);
        return NULL;
    }
    trace(P, "compiled");
    write_log(P, dev, graph_note);
    return P;
}

seam_status cu_run(void *ctx, void *compiled, const seam_tensor_view *inputs, int32_t n_inputs, seam_buffer *outputs,
                   int32_t n_outputs, char *err, size_t es) {
    (void)ctx;
    prog *P = compiled;
    if (n_inputs != P->n_in || n_outputs != P->n_out) {
        snprintf(err, es, "subgraph '%s': %d inputs and %d outputs given, %d and %d compiled", P->name, n_inputs, n_outputs, P->n_in,
                 P->n_out);
        return SEAM_STATUS_INVALID_ARGUMENT;
    }
    for (int k = 0; k < n_inputs; k++) {
        const cval *v = &P->v[P->in_vals[k]];
        if (inputs[k].nbytes != v->nbytes) {
            snprintf(err, es, "subgraph '%s': input '%s' has %zu bytes, %zu compiled", P->name, v->name, inputs[k].nbytes, v->nbytes);
            return SEAM_STATUS_INVALID_ARGUMENT;
        }
        if (v->nbytes) memcpy((char *)P->pin_in + P->in_off[k], inputs[k].data, v->nbytes);
    }
    for (int k = 0; k < n_outputs; k++)
        if (outputs[k].nbytes != P->v[P->out_vals[k]].nbytes) {
            snprintf(err, es, "subgraph '%s': output '%s' has %zu bytes, %zu compiled", P->name, P->v[P->out_vals[k]].name,
                     outputs[k].nbytes, P->v[P->out_vals[k]].nbytes);
            return SEAM_STATUS_INVALID_ARGUMENT;
        }
    cudaError_t e = cudaSetDevice(0);
    bool ok = e == cudaSuccess;
    if (!ok) cuda_ok(e, "cudaSetDevice", P, NULL, err, es);
    if (ok && P->use_graph) ok = cuda_ok(cudaGraphLaunch(P->gexec, P->stream), "cudaGraphLaunch", P, NULL, err, es);
    else if (ok) ok = enqueue(P, err, es);
    if (ok && (e = cudaStreamSynchronize(P->stream)) != cudaSuccess) {
        snprintf(err, es, "subgraph '%s': the run failed on the device: %s (%s)%s", P->name, cudaGetErrorString(e), cudaGetErrorName(e),
                 P->use_graph || !P->sync_steps ? "; SEAM_CUDA_SYNC=1 runs the steps one by one and names the node" : "");
        (void)cudaGetLastError();
        ok = false;
    }
    if (!ok) {
        cudaStreamSynchronize(P->stream);
        (void)cudaGetLastError();
        return strstr(err, "out of memory") || strstr(err, "MemoryAllocation") || strstr(err, "ALLOC_FAILED")
                   ? SEAM_STATUS_OUT_OF_MEMORY : SEAM_STATUS_RUN_FAILED;
    }
    for (int k = 0; k < n_outputs; k++)
        if (outputs[k].nbytes) memcpy(outputs[k].data, (char *)P->pin_out + P->out_off[k], outputs[k].nbytes);
    return SEAM_STATUS_OK;
}
