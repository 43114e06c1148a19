/* Backends from shared libraries (MXNet's "subgraph properties loaded from
 * libraries"): a vendor ships a .so exporting seam_backend_register, and
 * seam uses it without being rebuilt. */
#include <dlfcn.h>
#include <stdio.h>

#include "backends/backend.h"
#include "core/context.h"

typedef const seam_backend *(*register_fn)(uint32_t abi_version);

seam_status seam_backend_load_library(seam_context *ctx, const char *path, const seam_backend **out) {
    if (!ctx || !path || !out) return SEAM_STATUS_INVALID_ARGUMENT;
    *out = NULL;
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) return seam_error(ctx, SEAM_STATUS_IO_ERROR, "cannot load backend library %s: %s", path, dlerror());
    register_fn reg;
    *(void **)&reg = dlsym(h, "seam_backend_register");
    if (!reg) {
        dlclose(h);
        return seam_error(ctx, SEAM_STATUS_INVALID_ARGUMENT, "%s: no seam_backend_register function", path);
    }
    const seam_backend *b = reg(SEAM_BACKEND_ABI_VERSION);
    char where[4200];
    snprintf(where, sizeof(where), "backend library %s", path);
    seam_status st = b ? backend_check(ctx, b, where)
                       : seam_error(ctx, SEAM_STATUS_INVALID_ARGUMENT,
                                    "%s: seam_backend_register returned no table for ABI version %d", where,
                                    SEAM_BACKEND_ABI_VERSION);
    if (st) {
        dlclose(h);
        return st;
    }
    *out = b; /* the library stays loaded: its table is static data */
    return SEAM_STATUS_OK;
}
