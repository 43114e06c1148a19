/* Backends from shared libraries (MXNet's "subgraph properties loaded from
 * libraries"): a vendor ships a .so exporting seam_backend_register, and
 * seam uses it without being rebuilt. */
#define _GNU_SOURCE /* dladdr */
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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

/* The folder of path (a file), into out; false if it has none. */
static bool folder_of(const char *path, char *out, size_t n) {
    const char *slash = strrchr(path, '/');
    if (!slash || (size_t)(slash - path) >= n) return false;
    snprintf(out, n, "%.*s", (int)(slash - path), path);
    return true;
}

seam_status seam_backend_find(seam_context *ctx, const char *name, const seam_backend **out) {
    if (!ctx || !name || !out) return SEAM_STATUS_INVALID_ARGUMENT;
    *out = NULL;
    bool ok = name[0] != 0 && strlen(name) < 64;
    for (const char *c = name; ok && *c; c++)
        ok = (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') || *c == '_' || *c == '-';
    if (!ok)
        return seam_error(ctx, SEAM_STATUS_INVALID_ARGUMENT,
                          "backend name '%.64s': letters, digits, '_' and '-' only, at most 63 of them", name);
    /* the folders, in order: $SEAM_BACKEND_PATH's, libseam's (or the
     * program's, where seam is linked in), the running program's, and
     * ../lib of the last two (an installed tree: bin/seam, lib/libseam.so) */
    char dirs[8][PATH_MAX];
    int n_dirs = 0;
    const char *path = getenv("SEAM_BACKEND_PATH");
    char here[2][PATH_MAX];
    int n_here = 0;
    Dl_info info;
    if (dladdr((void *)seam_backend_find, &info) && info.dli_fname && folder_of(info.dli_fname, here[n_here], PATH_MAX))
        n_here++;
    char exe[PATH_MAX];
    ssize_t len = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    if (len > 0) {
        exe[len] = 0;
        if (folder_of(exe, here[n_here], PATH_MAX) && (n_here == 0 || strcmp(here[0], here[n_here]) != 0)) n_here++;
    }
    char tried[2048] = "";
    size_t used = 0;
    char file[PATH_MAX + 80];
    for (int pass = 0; pass < 2; pass++) {
        n_dirs = 0;
        if (pass == 0) { /* SEAM_BACKEND_PATH: NAME.so and libseam_NAME.so */
            for (const char *p = path; p && *p && n_dirs < 8;) {
                const char *end = strchr(p, ':');
                size_t l = end ? (size_t)(end - p) : strlen(p);
                if (l && l < PATH_MAX) snprintf(dirs[n_dirs++], PATH_MAX, "%.*s", (int)l, p);
                p += l + (end ? 1 : 0);
            }
        } else {
            for (int k = 0; k < n_here; k++) {
                snprintf(dirs[n_dirs++], PATH_MAX, "%.4000s", here[k]);
                if (snprintf(dirs[n_dirs], PATH_MAX, "%.4000s/../lib", here[k]) < PATH_MAX) n_dirs++;
            }
        }
        for (int d = 0; d < n_dirs; d++)
            for (int form = pass == 0 ? 0 : 1; form < 2; form++) {
                snprintf(file, sizeof(file), form == 0 ? "%s/%s.so" : "%s/libseam_%s.so", dirs[d], name);
                if (access(file, R_OK) == 0) {
                    seam_status st = seam_backend_load_library(ctx, file, out);
                    if (st) return st;
                    if (strcmp((*out)->name, name) != 0) {
                        const char *got = (*out)->name;
                        *out = NULL;
                        return seam_error(ctx, SEAM_STATUS_INVALID_ARGUMENT, "%s is backend '%s', not '%s'", file, got, name);
                    }
                    return SEAM_STATUS_OK;
                }
                if (used < sizeof(tried) - 1)
                    used += (size_t)snprintf(tried + used, sizeof(tried) - used, "%s%s", used ? ", " : "", file);
            }
    }
    return seam_error(ctx, SEAM_STATUS_IO_ERROR,
                      "no backend library for '%s' (looked for %s%s); build it, set SEAM_BACKEND_PATH or give "
                      "--backend-lib", name, tried[0] ? tried : "nothing: no folder to look in",
                      used >= sizeof(tried) - 1 ? ", ..." : "");
}
