/*
 * dnnl: what every program shares (dx_ctx, program.h): oneDNN's CPU
 * engine, the primitive attribute of primitives without post-ops, and
 * the OpenMP thread settings. Made once for the process, read-only
 * afterwards.
 */
#define _GNU_SOURCE /* RTLD_DEFAULT */
#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>

#include "program.h"

dx_context dx_ctx;
static pthread_once_t dx_once = PTHREAD_ONCE_INIT;

/* oneDNN (Debian's build) runs on OpenMP: the thread count is the calling
 * thread's OpenMP setting, read when primitives are made and run. libgomp is
 * loaded with libdnnl; its setter is looked up rather than linked. */
static void dx_init(void) {
    int (*getter)(void);
    *(void **)&dx_ctx.set_num_threads = dlsym(RTLD_DEFAULT, "omp_set_num_threads");
    *(void **)&getter = dlsym(RTLD_DEFAULT, "omp_get_max_threads");
    dx_ctx.default_threads = getter ? getter() : 1;
    const char *v = getenv("ONEDNN_VERBOSE");
    if (!v) v = getenv("DNNL_VERBOSE");
    dx_ctx.verbose = v && atoi(v) >= 1;
    dx_ctx.ok = dnnl_engine_create(&dx_ctx.engine, dnnl_cpu, 0) == dnnl_success &&
                dnnl_primitive_attr_create(&dx_ctx.user_scratch) == dnnl_success &&
                dnnl_primitive_attr_set_scratchpad_mode(dx_ctx.user_scratch, dnnl_scratchpad_mode_user) == dnnl_success;
}

void dx_context_init(void) { pthread_once(&dx_once, dx_init); }

bool dx_isa_avx512(void) { return (dnnl_get_effective_cpu_isa() & dnnl_cpu_isa_avx512_core) == dnnl_cpu_isa_avx512_core; }

bool dx_isa_bf16(void) {
    dnnl_cpu_isa_t isa = dnnl_get_effective_cpu_isa();
    return (isa & dnnl_cpu_isa_avx512_core_bf16) == dnnl_cpu_isa_avx512_core_bf16;
}

bool dx_isa_vnni(void) {
    dnnl_cpu_isa_t isa = dnnl_get_effective_cpu_isa();
    return (isa & dnnl_cpu_isa_avx512_core_vnni) == dnnl_cpu_isa_avx512_core_vnni ||
           (isa & dnnl_cpu_isa_avx2_vnni) == dnnl_cpu_isa_avx2_vnni;
}
