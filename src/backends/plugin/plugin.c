/* Backends from shared libraries (MXNet's "subgraph properties loaded from
 * libraries"): a vendor ships a .so exporting seam_backend_register, and
 * seam uses it without being rebuilt. */
#include <dlfcn.h>

#include "core/context.h"
#include "seam_backend.h"

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
    const char *bad = !b ? "it returned no table for this ABI version"
                      : b->abi_version < 1 || b->abi_version > SEAM_BACKEND_ABI_VERSION ? "its ABI version is not one seam knows"
                      : !b->name || !b->name[0] ? "its table has no name"
                      : !b->supports ? "its table has no supports()"
                      : (b->compile || b->run) && !(b->compile && b->run) ? "it has compile without run, or run without compile"
                      : NULL;
    if (bad) {
        uint32_t v = b ? b->abi_version : 0;
        dlclose(h);
        return seam_error(ctx, SEAM_STATUS_INVALID_ARGUMENT, "%s: %s (table version %u, seam's %d)", path, bad, v,
                          SEAM_BACKEND_ABI_VERSION);
    }
    *out = b; /* the library stays loaded: its table is static data */
    return SEAM_STATUS_OK;
}
