/*
 * The CPU rates behind the cost model's estimates (cost.c), per op class:
 * built-in guesses, or what `seam calibrate` (seam_cost_calibrate,
 * runtime/calibrate_cost.c) measured on this machine and kept in a cache
 * file, as oneDNN keeps its kernels (issue 31: a plan's estimate within 2x
 * of its measured time).
 *
 * The cache is a JSON file, $SEAM_CACHE_DIR/cost-rates.json (else
 * $XDG_CACHE_HOME/seam/, else ~/.cache/seam/), one entry per machine: the
 * CPU's model name and online core count, the date, and the rates. It is
 * read once per process, the first time the cost model is made; an entry
 * for another machine is not used, and a file that cannot be read or
 * parsed leaves the guesses (cost_rates_source says why).
 * SEAM_COST_RATES=off ignores the file.
 */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <cpuid.h>
#endif

#include "partition/partition.h"

static const char *const CLASS_KEY[COST_N_CLASSES] = {
    "gemm_macs_per_us", "conv3x3_macs_per_us", "grouped_macs_per_us", "int8_macs_per_us", "rnn_macs_per_us", "elems_per_us", "reduce_elems_per_us",
};

/* The guesses: a 2-core machine's GEMM (multiply-adds per microsecond),
 * elements written (or read, for reductions) per microsecond, and a
 * per-node cost. A recurrent layer's multiply-adds run as one small
 * matrix-vector product per step, below the GEMM rate: 0.7 of it (an AVX2
 * EPYC, 2 threads: a CRNN's bidirectional LSTM, hidden 128, 64 steps of
 * batch 1, 25.2M multiply-adds in 0.70-0.80 ms, 31-36 per ns, where the
 * calibrated GEMM rate was 49; the guess of 0.25 put the CRNN's estimate
 * at 2.3x its time). */
static const cost_rates BASE_GUESSES = {
    .per_us = {20000.0, 20000.0, 20000.0, 20000.0, 14000.0, 1000.0, 1000.0},
    .node_us = 0.5,
};

/* The guesses for this CPU: the int8 products' rate is the dense
 * products' where the CPU kernels' int8 GEMM adds two 16-bit products a
 * lane (iconv.c), 3.4x it where it adds four 8-bit ones (iconv8.c,
 * AVX512-VNNI) and 4.5x on AMX tiles. Measured by `seam calibrate` on an
 * AMX machine, 2 threads, over quantized resnet18, mobilenet_v2, an MLP
 * and a transformer (grouped convs apart): int8 2.8e5 multiply-adds per
 * us on AMX, 2.0e5 on VNNI alone, against a dense float rate of 5.9e4 to
 * 6.3e4. (An AMX CPU whose kernel refuses the tiles runs VNNI: the guess
 * is a guess.) */
static cost_rates g_guesses;
static pthread_once_t g_guesses_once = PTHREAD_ONCE_INIT;

static void make_guesses(void) {
    g_guesses = BASE_GUESSES;
#if defined(__x86_64__) && defined(__GNUC__)
    __builtin_cpu_init();
    unsigned a, b, c, d;
    bool amx = __get_cpuid_count(7, 0, &a, &b, &c, &d) && (d & (1u << 25)); /* AMX-INT8 */
    if (__builtin_cpu_supports("avx512vnni") && __builtin_cpu_supports("avx512bw"))
        g_guesses.per_us[COST_INT8] = (amx ? 4.5 : 3.4) * BASE_GUESSES.per_us[COST_GEMM];
#endif
}

static const cost_rates *guesses(void) {
    pthread_once(&g_guesses_once, make_guesses);
    return &g_guesses;
}
#define DEFAULTS (*guesses())

static cost_rates g_rates;

static int mkdir_p_one(const char *d) { return mkdir(d, 0755) && errno != EEXIST ? -1 : 0; }
static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;

const char *cost_class_key(cost_class c) { return c >= 0 && c < COST_N_CLASSES ? CLASS_KEY[c] : "?"; }

void cost_machine_id(char *buf, size_t n) {
    char model[200] = "unknown CPU";
    FILE *f = fopen("/proc/cpuinfo", "r");
    char line[512];
    while (f && fgets(line, sizeof(line), f)) {
        if (strncmp(line, "model name", 10)) continue;
        const char *v = strchr(line, ':');
        if (!v) break;
        for (v++; *v == ' ' || *v == '\t'; v++) {}
        snprintf(model, sizeof(model), "%s", v);
        model[strcspn(model, "\n")] = 0;
        break;
    }
    if (f) fclose(f);
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    snprintf(buf, n, "%s, %ld cores", model, cores > 0 ? cores : 1);
}

bool cost_cache_path(char *buf, size_t n) {
    const char *dir = getenv("SEAM_CACHE_DIR");
    int w;
    if (dir && *dir) w = snprintf(buf, n, "%s/cost-rates.json", dir);
    else if ((dir = getenv("XDG_CACHE_HOME")) && *dir) w = snprintf(buf, n, "%s/seam/cost-rates.json", dir);
    else if ((dir = getenv("HOME")) && *dir) w = snprintf(buf, n, "%s/.cache/seam/cost-rates.json", dir);
    else return false;
    return w > 0 && (size_t)w < n;
}

/* A rate read from the file: finite, positive and not absurd. */
static bool rate_ok(double v) { return isfinite(v) && v > 1e-6 && v < 1e12; }

static void load(void) {
    g_rates = DEFAULTS;
    const char *off = getenv("SEAM_COST_RATES");
    char path[1024], me[300];
    if (off && !strcmp(off, "off")) {
        snprintf(g_rates.source, sizeof(g_rates.source), "built-in guesses (SEAM_COST_RATES=off)");
        return;
    }
    if (!cost_cache_path(path, sizeof(path))) {
        snprintf(g_rates.source, sizeof(g_rates.source), "built-in guesses (no cache folder: HOME unset)");
        return;
    }
    json_error_t err;
    json_t *root = json_load_file(path, 0, &err);
    if (!root) {
        if (access(path, F_OK) == 0)
            snprintf(g_rates.source, sizeof(g_rates.source), "built-in guesses (%s is unreadable: %s, line %d)", path,
                     err.text, err.line);
        else
            snprintf(g_rates.source, sizeof(g_rates.source),
                     "built-in guesses, not measured on this machine (`seam calibrate` measures them)");
        return;
    }
    cost_machine_id(me, sizeof(me));
    json_t *machines = json_object_get(root, "machines");
    size_t k;
    json_t *e;
    bool found = false;
    json_array_foreach(machines, k, e) {
        const char *cpu = json_string_value(json_object_get(e, "machine"));
        if (!cpu || strcmp(cpu, me)) continue;
        json_t *r = json_object_get(e, "rates");
        cost_rates got = DEFAULTS;
        bool ok = json_is_object(r);
        for (int c = 0; c < COST_N_CLASSES && ok; c++) {
            json_t *v = json_object_get(r, CLASS_KEY[c]);
            if (!v) continue; /* a class the calibration did not see keeps its guess */
            ok = json_is_number(v) && rate_ok(json_number_value(v));
            if (ok) got.per_us[c] = json_number_value(v);
        }
        json_t *nu = json_object_get(r, "node_us");
        if (ok && nu) ok = json_is_number(nu) && rate_ok(json_number_value(nu)) && json_number_value(nu) < 1e4;
        if (ok && nu) got.node_us = json_number_value(nu);
        if (!ok) {
            snprintf(g_rates.source, sizeof(g_rates.source), "built-in guesses (%s: the entry for this machine has a "
                     "rate that is not a positive number; `seam calibrate` again)", path);
            break;
        }
        json_t *ts = json_object_get(e, "targets");
        const char *tname;
        json_t *tv;
        json_object_foreach(ts, tname, tv) {
            if (!json_is_number(tv) || !rate_ok(json_number_value(tv)) || json_number_value(tv) > 1000) {
                ok = false;
                break;
            }
            if (got.n_scales < 8 && strlen(tname) < sizeof(got.scale_name[0])) {
                snprintf(got.scale_name[got.n_scales], sizeof(got.scale_name[0]), "%s", tname);
                got.scale[got.n_scales++] = json_number_value(tv);
            }
        }
        if (!ok) {
            snprintf(g_rates.source, sizeof(g_rates.source), "built-in guesses (%s: the entry for this machine has a "
                     "target scale that is not a positive number; `seam calibrate` again)", path);
            break;
        }
        const char *date = json_string_value(json_object_get(e, "date"));
        got.calibrated = true;
        snprintf(got.source, sizeof(got.source), "measured on this machine by `seam calibrate` (%s, %s)",
                 date ? date : "undated", path);
        g_rates = got;
        found = true;
        break;
    }
    if (!found && !g_rates.source[0])
        snprintf(g_rates.source, sizeof(g_rates.source), "built-in guesses, not measured on this machine "
                 "(%s has no entry for %s: `seam calibrate` measures them)", path, me);
    json_decref(root);
}

const cost_rates *cost_rates_get(void) {
    pthread_once(&g_once, load);
    return &g_rates;
}

void cost_rates_set(const cost_rates *r) {
    pthread_once(&g_once, load);
    pthread_mutex_lock(&g_lock);
    g_rates = r ? *r : DEFAULTS;
    if (!r) snprintf(g_rates.source, sizeof(g_rates.source), "built-in guesses");
    pthread_mutex_unlock(&g_lock);
}

const cost_rates *cost_rates_defaults(void) { return &DEFAULTS; }

double cost_rates_target_scale(const char *name) {
    const cost_rates *r = cost_rates_get();
    for (int32_t k = 0; name && k < r->n_scales; k++)
        if (!strcmp(r->scale_name[k], name)) return r->scale[k];
    return 1.0;
}

bool cost_rates_save(const cost_rates *r, const char *date, char *why, size_t why_len) {
    char path[1024], tmp[1100], me[300];
    if (!cost_cache_path(path, sizeof(path))) return snprintf(why, why_len, "no cache folder (HOME unset)"), false;
    /* the folder, made as needed (one level below an existing one) */
    char dir[1024];
    snprintf(dir, sizeof(dir), "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash) {
        *slash = 0;
        char *up = strrchr(dir, '/');
        if (up && up != dir) {
            *up = 0;
            if (mkdir_p_one(dir)) return snprintf(why, why_len, "cannot make %s: %s", dir, strerror(errno)), false;
            *up = '/';
        }
        if (mkdir_p_one(dir)) return snprintf(why, why_len, "cannot make %s: %s", dir, strerror(errno)), false;
    }
    cost_machine_id(me, sizeof(me));
    json_error_t err;
    json_t *root = json_load_file(path, 0, &err);
    if (!json_is_object(root) || !json_is_array(json_object_get(root, "machines"))) {
        json_decref(root);
        root = json_pack("{s:i, s:[]}", "version", 1, "machines");
    }
    if (!root) return snprintf(why, why_len, "out of memory"), false;
    json_t *machines = json_object_get(root, "machines");
    size_t k;
    json_t *e;
    json_array_foreach(machines, k, e) {
        const char *cpu = json_string_value(json_object_get(e, "machine"));
        if (cpu && !strcmp(cpu, me)) {
            json_array_remove(machines, k);
            break;
        }
    }
    json_t *rates = json_object();
    for (int c = 0; c < COST_N_CLASSES && rates; c++)
        if (r->measured[c]) json_object_set_new(rates, CLASS_KEY[c], json_real(r->per_us[c]));
    if (rates) json_object_set_new(rates, "node_us", json_real(r->node_us));
    json_t *ts = json_object();
    for (int32_t q = 0; ts && q < r->n_scales; q++) json_object_set_new(ts, r->scale_name[q], json_real(r->scale[q]));
    json_t *entry = rates && ts ? json_pack("{s:s, s:s, s:o, s:o}", "machine", me, "date", date ? date : "", "rates", rates,
                                            "targets", ts)
                                : NULL;
    if (!entry || json_array_append_new(machines, entry)) {
        json_decref(root);
        return snprintf(why, why_len, "out of memory"), false;
    }
    snprintf(tmp, sizeof(tmp), "%s.tmp.%ld", path, (long)getpid());
    int bad = json_dump_file(root, tmp, JSON_INDENT(2) | JSON_SORT_KEYS);
    json_decref(root);
    if (bad || rename(tmp, path)) {
        int e2 = errno;
        unlink(tmp);
        return snprintf(why, why_len, "cannot write %s: %s", path, strerror(e2)), false;
    }
    snprintf(why, why_len, "%s", path);
    return true;
}

/* ---- fitting the rates to measured node times (seam_cost_fit) ---- */

typedef struct obs {
    int8_t cls;
    int32_t model;
    double work, us;
} obs;

typedef struct target_obs {
    char name[64];
    double ms, est_us;
} target_obs;

struct seam_cost_fit {
    obs *o;
    int32_t n, cap;
    target_obs t[256];
    int32_t n_t;
    const void *last_model;
    int32_t n_models;
};

seam_status seam_cost_fit_create(seam_cost_fit **out) {
    if (!out) return SEAM_STATUS_INVALID_ARGUMENT;
    *out = calloc(1, sizeof(seam_cost_fit));
    return *out ? SEAM_STATUS_OK : SEAM_STATUS_OUT_OF_MEMORY;
}

void seam_cost_fit_free(seam_cost_fit *f) {
    if (!f) return;
    free(f->o);
    free(f);
}

seam_status seam_cost_fit_add_node(seam_cost_fit *f, const seam_model *m, int32_t node, double ms) {
    if (!f || !m || node < 0 || node >= m->graph->n_nodes || !isfinite(ms) || ms < 0) return SEAM_STATUS_INVALID_ARGUMENT;
    if (m != f->last_model) {
        f->last_model = m;
        f->n_models++;
    }
    const ir_graph *g = m->graph;
    const ir_node *n = &g->nodes[node];
    if (n->domain[0] && !strcmp(n->domain, "ai.seam")) return SEAM_STATUS_OK; /* a device subgraph: not the CPU's */
    if (f->n == f->cap) {
        int32_t cap = f->cap ? 2 * f->cap : 256;
        obs *p = realloc(f->o, sizeof(obs) * (size_t)cap);
        if (!p) return SEAM_STATUS_OUT_OF_MEMORY;
        f->o = p, f->cap = cap;
    }
    double w;
    cost_class c = cost_node_work(g, n, &w);
    f->o[f->n++] = (obs){(int8_t)c, f->n_models - 1, w, ms * 1e3};
    return SEAM_STATUS_OK;
}

seam_status seam_cost_fit_add_target(seam_cost_fit *f, const char *target, double ms, double estimated_us) {
    if (!f || !target || !*target || strlen(target) >= sizeof(f->t[0].name) || !isfinite(ms) || ms <= 0 ||
        !isfinite(estimated_us) || estimated_us <= 0)
        return SEAM_STATUS_INVALID_ARGUMENT;
    if (f->n_t == (int32_t)(sizeof(f->t) / sizeof(f->t[0]))) return SEAM_STATUS_OUT_OF_MEMORY;
    target_obs *o = &f->t[f->n_t++];
    snprintf(o->name, sizeof(o->name), "%s", target);
    o->ms = ms, o->est_us = estimated_us;
    return SEAM_STATUS_OK;
}

static int cmp_dbl(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double estimate(const cost_rates *r, const obs *o) { return r->node_us + o->work / r->per_us[o->cls]; }

seam_status seam_cost_fit_finish(seam_cost_fit *f, bool save, char *report, size_t report_len) {
    if (!f || !report || !report_len) return SEAM_STATUS_INVALID_ARGUMENT;
    report[0] = 0;
    size_t at = 0;
#define SAY(...)                                                                              \
    do {                                                                                      \
        int w_ = snprintf(report + at, report_len - at, __VA_ARGS__);                         \
        if (w_ > 0) at = (size_t)w_ < report_len - at ? at + (size_t)w_ : report_len - 1;     \
    } while (0)
    if (f->n < 8) {
        SAY("too few CPU nodes timed (%d): give models with more nodes", f->n);
        return SEAM_STATUS_INVALID_ARGUMENT;
    }
    cost_rates r = DEFAULTS;
    /* the per-node cost: the median time of nodes with little work */
    double *small = malloc(sizeof(double) * ((size_t)f->n + 1));
    if (!small) return SEAM_STATUS_OUT_OF_MEMORY;
    int32_t ns = 0;
    for (int32_t k = 0; k < f->n; k++)
        if (f->o[k].cls == COST_ELEM && f->o[k].work < 4096) small[ns++] = f->o[k].us;
    if (ns >= 5) {
        qsort(small, (size_t)ns, sizeof(double), cmp_dbl);
        double med = small[ns / 2];
        r.node_us = med < 0.05 ? 0.05 : med > 100 ? 100 : med;
    }
    free(small);
    SAY("per node: %.2f us (%s)\n", r.node_us, ns >= 5 ? "the median of the nodes with little work" : "the guess: too few small nodes");
    for (int c = 0; c < COST_N_CLASSES; c++) {
        double W = 0, T = 0, raw = 0;
        int32_t nc = 0;
        for (int32_t k = 0; k < f->n; k++) {
            const obs *o = &f->o[k];
            if (o->cls != c || o->work <= 0) continue;
            double t = o->us - r.node_us;
            W += o->work, T += t > 0.2 * o->us ? t : 0.2 * o->us, raw += o->us, nc++;
        }
        bool ok = nc >= 2 && T >= 50 && rate_ok(W / T);
        if (ok) r.per_us[c] = W / T, r.measured[c] = true;
        SAY("%-20s %5d nodes, %9.3f ms: %s %.4g per us (the guess %.4g)\n", CLASS_KEY[c], nc, raw / 1e3,
            ok ? "measured" : "too little to measure", r.per_us[c], DEFAULTS.per_us[c]);
    }
    /* a class the models did not show: its guess, scaled by how much
     * faster than the guesses this machine ran the classes measured */
    double logf = 0;
    int32_t nm = 0;
    for (int c = 0; c < COST_N_CLASSES; c++)
        if (r.measured[c]) logf += log(r.per_us[c] / DEFAULTS.per_us[c]), nm++;
    double speed = nm ? exp(logf / nm) : 1;
    for (int c = 0; c < COST_N_CLASSES; c++)
        if (!r.measured[c]) {
            r.per_us[c] = DEFAULTS.per_us[c] * speed;
            r.measured[c] = true; /* (saved: the scaled guess) */
            SAY("%-20s the guess scaled by this machine's speed on the others (%.2fx): %.4g per us\n", CLASS_KEY[c], speed,
                r.per_us[c]);
        }
    /* per model: the sum of the estimates against the sum of the times */
    for (int32_t mi = 0; mi < f->n_models; mi++) {
        double meas = 0, before = 0, after = 0;
        for (int32_t k = 0; k < f->n; k++) {
            if (f->o[k].model != mi) continue;
            meas += f->o[k].us, before += estimate(&DEFAULTS, &f->o[k]), after += estimate(&r, &f->o[k]);
        }
        if (meas > 0)
            SAY("model %d: measured %.3f ms on the CPU nodes; estimate %.3f ms (%.2fx), was %.3f ms (%.2fx)\n", mi + 1,
                meas / 1e3, after / 1e3, after / meas, before / 1e3, before / meas);
    }
    /* each device target: its measured time over the estimate */
    for (int32_t k = 0; k < f->n_t; k++) {
        bool seen = false;
        for (int32_t q = 0; q < r.n_scales && !seen; q++) seen = !strcmp(r.scale_name[q], f->t[k].name);
        if (seen || r.n_scales == 8) continue;
        double meas = 0, est = 0;
        int32_t cnt = 0;
        for (int32_t q = k; q < f->n_t; q++)
            if (!strcmp(f->t[q].name, f->t[k].name)) meas += f->t[q].ms * 1e3, est += f->t[q].est_us, cnt++;
        double sc = meas / est;
        sc = sc < 0.01 ? 0.01 : sc > 100 ? 100 : sc;
        snprintf(r.scale_name[r.n_scales], sizeof(r.scale_name[0]), "%s", f->t[k].name);
        r.scale[r.n_scales++] = sc;
        SAY("target %s: %d model%s measured %.3f ms against an estimate of %.3f ms: its estimates scaled by %.3g\n",
            f->t[k].name, cnt, cnt == 1 ? "" : "s", meas / 1e3, est / 1e3, sc);
    }
    r.calibrated = true;
    char when[64] = "";
    time_t now = time(NULL);
    struct tm tmv;
    if (gmtime_r(&now, &tmv)) strftime(when, sizeof(when), "%Y-%m-%d %H:%M UTC", &tmv);
    if (save) {
        char why[1200];
        if (!cost_rates_save(&r, when, why, sizeof(why))) {
            SAY("not saved: %s", why);
            return SEAM_STATUS_IO_ERROR;
        }
        SAY("saved for this machine in %s", why);
        snprintf(r.source, sizeof(r.source), "measured on this machine by `seam calibrate` (%s, %s)", when, why);
    } else {
        SAY("not saved (--no-save)");
        snprintf(r.source, sizeof(r.source), "measured by this process (%s), not saved", when);
    }
    cost_rates_set(&r);
    return SEAM_STATUS_OK;
#undef SAY
}

const char *seam_cost_rates_source(void) { return cost_rates_get()->source; }
