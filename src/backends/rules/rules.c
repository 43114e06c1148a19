/*
 * Rules targets: a device's op coverage described in JSON, for what-if
 * analysis and tests (schema in docs/rules.md).
 *
 *   {"name": "npu", "default": false,
 *    "ops": {"Conv": {"dtypes": ["float32"], "max_rank": 4,
 *                     "attrs": {"group": {"max": 1}, "auto_pad": {"in": ["NOTSET", "VALID"]}},
 *                     "cost": 4},
 *            "Relu": {"after": ["Conv", "Add"]},
 *            "MaxPool": true, "TopK": false}}
 */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/backend.h"
#include "core/context.h"

typedef enum cond_kind { COND_IN, COND_NOT_IN, COND_MIN, COND_MAX } cond_kind;

typedef struct attr_cond {
    const char *attr;
    cond_kind kind;
    bool required;          /* an absent attribute fails the rule */
    int32_t n;
    double *nums;           /* numeric values (ints and floats) */
    const char **strs;      /* string values, for string attributes */
} attr_cond;

typedef struct op_rule {
    const char *op;
    bool supported;
    uint32_t dtypes;        /* bit per seam_dtype; 0 = any */
    int32_t max_rank;       /* -1 = any */
    int32_t n_conds;
    attr_cond *conds;
    int32_t n_after;
    const char **after;     /* input 0 must come from one of these ops */
    double cost;            /* 0 = none given */
} op_rule;

typedef struct rules {
    seam_backend backend;
    char *name;
    bool default_ok;
    int32_t n_rules;
    op_rule *rules;         /* sorted by op */
    json_t *root;           /* keeps the strings alive */
    char *source;           /* the JSON text, for saving with a plan */
    /* "cost": what placement by cost reads (defaults: 0, 0, 1) */
    double launch_us, transfer_gbps, speedup;
    int64_t memory_bytes;   /* "memory_bytes": what the device's memory holds; 0 = no limit */
    int32_t n_speedups;
    const char **speedup_ops; /* per-op speedups, in the JSON's order */
    double *speedups;
} rules;

static const char *const dtype_names[] = {
    [SEAM_DTYPE_FLOAT32] = "float32", [SEAM_DTYPE_UINT8] = "uint8",     [SEAM_DTYPE_INT8] = "int8",
    [SEAM_DTYPE_UINT16] = "uint16",   [SEAM_DTYPE_INT16] = "int16",     [SEAM_DTYPE_INT32] = "int32",
    [SEAM_DTYPE_INT64] = "int64",     [SEAM_DTYPE_STRING] = "string",   [SEAM_DTYPE_BOOL] = "bool",
    [SEAM_DTYPE_FLOAT16] = "float16", [SEAM_DTYPE_FLOAT64] = "float64", [SEAM_DTYPE_UINT32] = "uint32",
    [SEAM_DTYPE_UINT64] = "uint64",   [SEAM_DTYPE_BFLOAT16] = "bfloat16",
};

static int cmp_rule(const void *a, const void *b) { return strcmp(((const op_rule *)a)->op, ((const op_rule *)b)->op); }

static const op_rule *find_rule(const rules *r, const char *op) {
    op_rule key = {.op = op};
    if (!r->n_rules) return NULL; /* (a file without "ops": no array to search, which bsearch may not be given) */
    return bsearch(&key, r->rules, (size_t)r->n_rules, sizeof(op_rule), cmp_rule);
}

/* ---- evaluation ---- */

static bool cond_holds_num(const attr_cond *c, double x) {
    switch (c->kind) {
    case COND_MIN: return x >= c->nums[0];
    case COND_MAX: return x <= c->nums[0];
    case COND_IN:
    case COND_NOT_IN: {
        bool found = false;
        for (int32_t k = 0; k < c->n && !found; k++) found = c->nums && c->nums[k] == x;
        return c->kind == COND_IN ? found : !found;
    }
    }
    return false;
}

static const char *cond_name(cond_kind k) {
    return k == COND_IN ? "in" : k == COND_NOT_IN ? "not_in" : k == COND_MIN ? "min" : "max";
}

/* Checks one attribute condition; on failure writes why. */
static bool check_cond(const attr_cond *c, const seam_node_view *v, char *why, size_t n) {
    int64_t i;
    float f;
    const char *s;
    const int64_t *ints;
    int32_t cnt;
    if (seam_node_attr_int(v, c->attr, &i)) {
        if (cond_holds_num(c, (double)i)) return true;
        snprintf(why, n, "%s %s=%lld fails the rule '%s'", v->op_type, c->attr, (long long)i, cond_name(c->kind));
        return false;
    }
    if (seam_node_attr_float(v, c->attr, &f)) {
        if (cond_holds_num(c, f)) return true;
        snprintf(why, n, "%s %s=%g fails the rule '%s'", v->op_type, c->attr, f, cond_name(c->kind));
        return false;
    }
    if (seam_node_attr_ints(v, c->attr, &ints, &cnt)) {
        for (int32_t k = 0; k < cnt; k++)
            if (!cond_holds_num(c, (double)ints[k])) {
                snprintf(why, n, "%s %s[%d]=%lld fails the rule '%s'", v->op_type, c->attr, k, (long long)ints[k],
                         cond_name(c->kind));
                return false;
            }
        return true;
    }
    if (seam_node_attr_string(v, c->attr, &s)) {
        bool found = false;
        for (int32_t k = 0; k < c->n && c->strs && !found; k++) found = strcmp(c->strs[k], s) == 0;
        bool ok = c->kind == COND_IN ? found : c->kind == COND_NOT_IN ? !found : false;
        if (!ok) snprintf(why, n, "%s %s=%s not supported", v->op_type, c->attr, s);
        return ok;
    }
    if (c->required) {
        snprintf(why, n, "%s has no attribute %s, which the rules require", v->op_type, c->attr);
        return false;
    }
    return true;
}

/* A bound of a Clip: its attribute (to opset 10) or its input k (from
 * 11: a known scalar); absent: def. False when it is not known. */
static bool clip_bound(const seam_node_view *v, const char *attr, int32_t k, double def, double *out) {
    float f;
    *out = def;
    if (v->opset >= 0 && v->opset < 11) {
        if (seam_node_attr_float(v, attr, &f)) *out = f;
        return true;
    }
    if (k >= v->n_inputs || !v->inputs[k].name) return true;
    seam_tensor_view t;
    if (!seam_node_input_data(v, k, &t) || t.nbytes == 0) return false;
    int64_t numel = 1;
    for (int32_t d = 0; d < t.rank; d++) numel *= t.dims[d];
    if (numel != 1) return false;
    switch (t.dtype) {
    case SEAM_DTYPE_FLOAT32: *out = *(const float *)t.data; return true;
    case SEAM_DTYPE_FLOAT64: *out = *(const double *)t.data; return true;
    default: return false;
    }
}

/* Whether v is a float Clip to [0, 6] (ReLU6, which some devices name
 * and the ONNX exporters write as a Clip). */
static bool is_relu6(const seam_node_view *v) {
    if (strcmp(v->op_type, "Clip") || (v->domain && v->domain[0]) || v->n_inputs < 1 || !v->inputs[0].name) return false;
    int32_t dt = v->inputs[0].dtype;
    if (dt != SEAM_DTYPE_FLOAT32 && dt != SEAM_DTYPE_FLOAT16 && dt != SEAM_DTYPE_BFLOAT16 && dt != SEAM_DTYPE_FLOAT64)
        return false;
    double lo, hi;
    return clip_bound(v, "min", 1, -INFINITY, &lo) && clip_bound(v, "max", 2, INFINITY, &hi) && lo == 0 && hi == 6;
}

static bool rule_holds(const op_rule *rule, const seam_node_view *v, char *why, size_t n);

static bool rules_supports(void *ctx, const seam_node_view *v, char *why, size_t n) {
    const rules *r = ctx;
    /* a Clip to [0, 6] is also the target's Relu6 where it lists one: the
     * Clip's own rule first, then Relu6's */
    const op_rule *relu6 = is_relu6(v) ? find_rule(r, "Relu6") : NULL;
    if (relu6) {
        const op_rule *clip = find_rule(r, v->op_type);
        if (clip ? rule_holds(clip, v, why, n) : r->default_ok) return true;
        char why6[300] = "";
        if (rule_holds(relu6, v, why6, sizeof(why6))) return true;
        if (!clip) snprintf(why, n, "Clip to [0, 6] as the target's Relu6: %s", why6);
        return false;
    }
    const op_rule *rule = find_rule(r, v->op_type);
    if (!rule) {
        if (!r->default_ok) snprintf(why, n, "%s is not listed and the default is false", v->op_type);
        return r->default_ok;
    }
    return rule_holds(rule, v, why, n);
}

/* Whether every condition of rule holds for v; why says which fails. */
static bool rule_holds(const op_rule *rule, const seam_node_view *v, char *why, size_t n) {
    if (!rule->supported) {
        snprintf(why, n, "%s is not supported", v->op_type);
        return false;
    }
    if (rule->dtypes && v->n_inputs > 0 && v->inputs[0].name) {
        int32_t dt = v->inputs[0].dtype;
        if (dt <= 0 || dt >= 32 || !(rule->dtypes >> dt & 1)) {
            snprintf(why, n, "%s input 0 has dtype %s, not in the allowed dtypes", v->op_type,
                     dt > 0 ? seam_dtype_name((seam_dtype)dt) : "unknown");
            return false;
        }
    }
    if (rule->max_rank >= 0) {
        for (int32_t k = 0; k < v->n_inputs; k++) {
            if (!v->inputs[k].name) continue;
            if (v->inputs[k].rank < 0 || v->inputs[k].rank > rule->max_rank) {
                if (v->inputs[k].rank < 0) snprintf(why, n, "%s input %d has unknown rank (max_rank %d)", v->op_type, k, rule->max_rank);
                else snprintf(why, n, "%s input %d has rank %d, above max_rank %d", v->op_type, k, v->inputs[k].rank, rule->max_rank);
                return false;
            }
        }
    }
    for (int32_t k = 0; k < rule->n_conds; k++)
        if (!check_cond(&rule->conds[k], v, why, n)) return false;
    if (rule->n_after) {
        const char *prod = v->n_inputs > 0 ? v->input_producers[0] : NULL;
        bool ok = false;
        for (int32_t k = 0; k < rule->n_after && prod && !ok; k++) ok = strcmp(rule->after[k], prod) == 0;
        if (!ok) {
            snprintf(why, n, "%s is supported only right after %s%s, but its input comes from %s", v->op_type,
                     rule->after[0], rule->n_after > 1 ? " (or another listed op)" : "", prod ? prod : "outside the graph");
            return false;
        }
    }
    return true;
}

/* The node's time here as a fraction of the CPU's: 1 / its speedup. */
static double rules_cost(void *ctx, const seam_node_view *v) {
    const rules *r = ctx;
    for (int32_t k = 0; k < r->n_speedups; k++)
        if (strcmp(r->speedup_ops[k], v->op_type) == 0) return 1.0 / r->speedups[k];
    if (is_relu6(v)) /* (a Clip to [0, 6] at Relu6's speedup, where only that is given) */
        for (int32_t k = 0; k < r->n_speedups; k++)
            if (strcmp(r->speedup_ops[k], "Relu6") == 0) return 1.0 / r->speedups[k];
    return 1.0 / r->speedup;
}

static void rules_cost_traits(void *ctx, double *launch_us, double *transfer_gbps) {
    const rules *r = ctx;
    *launch_us = r->launch_us;
    *transfer_gbps = r->transfer_gbps;
}



static void rules_release(void *ctx) {
    rules *r = ctx;
    if (!r) return;
    for (int32_t k = 0; k < r->n_rules; k++) {
        for (int32_t c = 0; c < r->rules[k].n_conds; c++) {
            free(r->rules[k].conds[c].nums);
            free(r->rules[k].conds[c].strs);
        }
        free(r->rules[k].conds);
        free(r->rules[k].after);
    }
    free(r->rules);
    free(r->speedup_ops);
    free(r->speedups);
    free(r->name);
    free(r->source);
    json_decref(r->root);
    free(r);
}

/* ---- parsing ---- */

#define BAD(...) (seam_error(ctx, SEAM_STATUS_INVALID_ARGUMENT, __VA_ARGS__))

static seam_status parse_cond(seam_context *ctx, const char *what, const char *op, const char *attr, json_t *spec,
                              attr_cond *out) {
    memset(out, 0, sizeof(*out));
    out->attr = attr;
    if (!json_is_object(spec))
        return BAD("%s: ops.%s.attrs.%s: expected an object such as {\"in\": [1]} or {\"max\": 1}", what, op, attr);
    const char *key;
    json_t *val;
    bool have = false;
    json_object_foreach(spec, key, val) {
        if (strcmp(key, "required") == 0) {
            if (!json_is_boolean(val)) return BAD("%s: ops.%s.attrs.%s.required: expected true or false", what, op, attr);
            out->required = json_is_true(val);
            continue;
        }
        cond_kind k;
        if (strcmp(key, "in") == 0) k = COND_IN;
        else if (strcmp(key, "not_in") == 0) k = COND_NOT_IN;
        else if (strcmp(key, "min") == 0) k = COND_MIN;
        else if (strcmp(key, "max") == 0) k = COND_MAX;
        else return BAD("%s: ops.%s.attrs.%s: unknown key '%s' (known: in, not_in, min, max, required)", what, op, attr, key);
        if (have) return BAD("%s: ops.%s.attrs.%s: give one of in, not_in, min, max", what, op, attr);
        have = true;
        out->kind = k;
        if (k == COND_MIN || k == COND_MAX) {
            if (!json_is_number(val)) return BAD("%s: ops.%s.attrs.%s.%s: expected a number", what, op, attr, key);
            out->n = 1;
            out->nums = malloc(sizeof(double));
            if (!out->nums) return BAD("out of memory");
            out->nums[0] = json_number_value(val);
            continue;
        }
        if (!json_is_array(val) || json_array_size(val) == 0)
            return BAD("%s: ops.%s.attrs.%s.%s: expected a non-empty list", what, op, attr, key);
        out->n = (int32_t)json_array_size(val);
        out->nums = calloc((size_t)out->n, sizeof(double));
        out->strs = calloc((size_t)out->n, sizeof(char *));
        if (!out->nums || !out->strs) return BAD("out of memory");
        for (int32_t i = 0; i < out->n; i++) {
            json_t *e = json_array_get(val, (size_t)i);
            if (json_is_number(e)) out->nums[i] = json_number_value(e);
            else if (json_is_string(e)) out->strs[i] = json_string_value(e);
            else return BAD("%s: ops.%s.attrs.%s.%s[%d]: expected a number or a string", what, op, attr, key, i);
        }
    }
    if (!have) return BAD("%s: ops.%s.attrs.%s: give one of in, not_in, min, max", what, op, attr);
    return SEAM_STATUS_OK;
}

static seam_status parse_rule(seam_context *ctx, const char *what, const char *op, json_t *spec, op_rule *r) {
    memset(r, 0, sizeof(*r));
    r->op = op;
    r->max_rank = -1;
    if (json_is_boolean(spec)) {
        r->supported = json_is_true(spec);
        return SEAM_STATUS_OK;
    }
    if (!json_is_object(spec)) return BAD("%s: ops.%s: expected true, false or an object", what, op);
    r->supported = true;
    const char *key;
    json_t *val;
    json_object_foreach(spec, key, val) {
        if (strcmp(key, "dtypes") == 0) {
            if (!json_is_array(val)) return BAD("%s: ops.%s.dtypes: expected a list of dtype names", what, op);
            size_t i;
            json_t *e;
            json_array_foreach(val, i, e) {
                const char *s = json_string_value(e);
                int32_t dt = 0;
                for (int32_t k = 1; s && k < (int32_t)(sizeof(dtype_names) / sizeof(dtype_names[0])); k++)
                    if (dtype_names[k] && strcmp(dtype_names[k], s) == 0) dt = k;
                if (!dt)
                    return BAD("%s: ops.%s.dtypes[%zu]: unknown dtype %s%s%s (known: float32, float16, bfloat16, "
                               "float64, int8, uint8, int16, int32, int64, bool, ...)",
                               what, op, i, s ? "'" : "", s ? s : "(not a string)", s ? "'" : "");
                r->dtypes |= 1u << dt;
            }
        } else if (strcmp(key, "max_rank") == 0) {
            if (!json_is_integer(val) || json_integer_value(val) < 0 || json_integer_value(val) > 64)
                return BAD("%s: ops.%s.max_rank: expected an integer from 0 to 64", what, op);
            r->max_rank = (int32_t)json_integer_value(val);
        } else if (strcmp(key, "attrs") == 0) {
            if (!json_is_object(val)) return BAD("%s: ops.%s.attrs: expected an object of attribute rules", what, op);
            r->conds = calloc(json_object_size(val) + 1, sizeof(attr_cond));
            if (!r->conds) return BAD("out of memory");
            const char *an;
            json_t *av;
            json_object_foreach(val, an, av) {
                seam_status st = parse_cond(ctx, what, op, an, av, &r->conds[r->n_conds]);
                r->n_conds++;
                if (st) return st;
            }
        } else if (strcmp(key, "after") == 0) {
            if (!json_is_array(val) || json_array_size(val) == 0)
                return BAD("%s: ops.%s.after: expected a non-empty list of op types", what, op);
            r->after = calloc(json_array_size(val), sizeof(char *));
            if (!r->after) return BAD("out of memory");
            size_t i;
            json_t *e;
            json_array_foreach(val, i, e) {
                if (!json_is_string(e)) return BAD("%s: ops.%s.after[%zu]: expected an op type", what, op, i);
                r->after[r->n_after++] = json_string_value(e);
            }
        } else if (strcmp(key, "cost") == 0) {
            if (!json_is_number(val) || json_number_value(val) <= 0)
                return BAD("%s: ops.%s.cost: expected a positive number", what, op);
            r->cost = json_number_value(val);
        } else if (strcmp(key, "supported") == 0) {
            if (!json_is_boolean(val)) return BAD("%s: ops.%s.supported: expected true or false", what, op);
            r->supported = json_is_true(val);
        } else {
            return BAD("%s: ops.%s: unknown key '%s' (known: supported, dtypes, max_rank, attrs, after, cost)", what, op, key);
        }
    }
    return SEAM_STATUS_OK;
}

static bool positive(const json_t *v) { return json_is_number(v) && json_number_value(v) > 0 && isfinite(json_number_value(v)); }

/* "cost": {"launch_us": 20, "transfer_gbps": 8, "speedup": 4, "ops": {"Conv": {"speedup": 12}}} */
static seam_status parse_cost(seam_context *ctx, const char *what, json_t *c, rules *r) {
    if (!json_is_object(c)) return BAD("%s: cost: expected an object", what);
    const char *key;
    json_t *val;
    json_object_foreach(c, key, val) {
        if (strcmp(key, "launch_us") == 0 || strcmp(key, "transfer_gbps") == 0) {
            if (!json_is_number(val) || json_number_value(val) < 0 || !isfinite(json_number_value(val)))
                return BAD("%s: cost.%s: expected a number >= 0", what, key);
            *(key[0] == 'l' ? &r->launch_us : &r->transfer_gbps) = json_number_value(val);
        } else if (strcmp(key, "speedup") == 0) {
            if (!positive(val)) return BAD("%s: cost.speedup: expected a positive number", what);
            r->speedup = json_number_value(val);
        } else if (strcmp(key, "ops") == 0) {
            if (!json_is_object(val)) return BAD("%s: cost.ops: expected an object mapping op types to {\"speedup\": N}", what);
            size_t n = json_object_size(val);
            r->speedup_ops = calloc(n + 1, sizeof(char *));
            r->speedups = calloc(n + 1, sizeof(double));
            if (!r->speedup_ops || !r->speedups) return BAD("out of memory");
            const char *op;
            json_t *o;
            json_object_foreach(val, op, o) {
                const char *k2;
                json_t *v2;
                if (!json_is_object(o)) return BAD("%s: cost.ops.%s: expected an object like {\"speedup\": 12}", what, op);
                json_object_foreach(o, k2, v2) {
                    if (strcmp(k2, "speedup") != 0) return BAD("%s: cost.ops.%s: unknown key '%s' (known: speedup)", what, op, k2);
                    if (!positive(v2)) return BAD("%s: cost.ops.%s.speedup: expected a positive number", what, op);
                }
                json_t *sp = json_object_get(o, "speedup");
                if (!sp) return BAD("%s: cost.ops.%s: speedup is missing", what, op);
                r->speedup_ops[r->n_speedups] = op;
                r->speedups[r->n_speedups++] = json_number_value(sp);
            }
        } else if (strcmp(key, "doc") != 0) {
            return BAD("%s: cost: unknown key '%s' (known: launch_us, transfer_gbps, speedup, ops, doc)", what, key);
        }
    }
    return SEAM_STATUS_OK;
}

seam_status seam_rules_parse(seam_context *ctx, const char *text, const char *what, seam_backend **out) {
    if (!out) return SEAM_STATUS_INVALID_ARGUMENT;
    *out = NULL;
    if (!text) return BAD("no rules text");
    if (!what) what = "rules";
    json_error_t jerr;
    json_t *root = json_loads(text, JSON_REJECT_DUPLICATES, &jerr);
    if (!root) return BAD("%s: line %d: %s", what, jerr.line, jerr.text);
    rules *r = calloc(1, sizeof(*r));
    if (!r) {
        json_decref(root);
        return BAD("out of memory");
    }
    r->root = root;
    r->source = strdup(text);
    r->speedup = 1;
    seam_status st = SEAM_STATUS_OK;
    if (!json_is_object(root)) st = BAD("%s: expected a JSON object", what);
    const char *key;
    json_t *val;
    json_t *ops = NULL;
    if (!st) {
        json_object_foreach(root, key, val) {
            if (strcmp(key, "name") == 0) {
                if (!json_is_string(val) || !json_string_length(val)) {
                    st = BAD("%s: name: expected a non-empty string", what);
                    break;
                }
                r->name = strdup(json_string_value(val));
            } else if (strcmp(key, "default") == 0) {
                if (!json_is_boolean(val)) {
                    st = BAD("%s: default: expected true or false", what);
                    break;
                }
                r->default_ok = json_is_true(val);
            } else if (strcmp(key, "ops") == 0) {
                if (!json_is_object(val)) {
                    st = BAD("%s: ops: expected an object mapping op types to rules", what);
                    break;
                }
                ops = val;
            } else if (strcmp(key, "cost") == 0) {
                if ((st = parse_cost(ctx, what, val, r))) break;
            } else if (strcmp(key, "memory_bytes") == 0) {
                if (!json_is_integer(val) || json_integer_value(val) < 0) {
                    st = BAD("%s: memory_bytes: expected a whole number of bytes >= 0 (0: no limit)", what);
                    break;
                }
                r->memory_bytes = (int64_t)json_integer_value(val);
            } else if (strcmp(key, "doc") != 0) {
                st = BAD("%s: unknown key '%s' (known: name, default, ops, cost, memory_bytes, doc)", what, key);
                break;
            }
        }
    }
    if (!st && !r->name) st = BAD("%s: name is missing", what);
    if (!st && (strcmp(r->name, "cpu") == 0 || strcmp(r->name, "constant") == 0))
        st = BAD("%s: name '%s' is reserved", what, r->name);
    if (!st && ops) {
        r->rules = calloc(json_object_size(ops) + 1, sizeof(op_rule));
        if (!r->rules) st = BAD("out of memory");
        json_object_foreach(ops, key, val) {
            if (st) break;
            st = parse_rule(ctx, what, key, val, &r->rules[r->n_rules]);
            r->n_rules++;
        }
        if (!st) qsort(r->rules, (size_t)r->n_rules, sizeof(op_rule), cmp_rule);
    }
    if (st) {
        rules_release(r);
        return st;
    }
    r->backend = (seam_backend){.abi_version = SEAM_BACKEND_ABI_VERSION, .name = r->name, .ctx = r, .supports = rules_supports,
                                .node_cost = rules_cost, .release = rules_release, .memory = SEAM_MEMORY_DEVICE,
                                .cost_traits = rules_cost_traits};
    *out = &r->backend;
    return SEAM_STATUS_OK;
}

seam_status seam_rules_load(seam_context *ctx, const char *path, seam_backend **out) {
    if (!out) return SEAM_STATUS_INVALID_ARGUMENT;
    *out = NULL;
    FILE *f = path ? fopen(path, "rb") : NULL;
    if (!f) return seam_error(ctx, SEAM_STATUS_IO_ERROR, "%s: cannot open the rules file", path ? path : "(null)");
    char *buf = NULL;
    size_t len = 0, cap = 0;
    for (;;) {
        if (len + 4096 + 1 > cap) {
            cap = (cap + 4096) * 2;
            if (cap > ((size_t)64 << 20)) {
                free(buf);
                fclose(f);
                return BAD("%s: the rules file is over 64 MB", path);
            }
            char *grown = realloc(buf, cap);
            if (!grown) {
                free(buf);
                fclose(f);
                return BAD("out of memory");
            }
            buf = grown;
        }
        size_t got = fread(buf + len, 1, 4096, f);
        len += got;
        if (got < 4096) break;
    }
    fclose(f);
    buf[len] = 0;
    seam_status st = seam_rules_parse(ctx, buf, path, out);
    free(buf);
    return st;
}

void seam_backend_free(seam_backend *b) { backend_release(b); }

int64_t seam_rules_memory_bytes(const seam_backend *b) {
    b = backend_instance_base(b); /* an instance's default: its device's */
    return b && b->release == rules_release ? ((const rules *)b)->memory_bytes : 0;
}

/* The JSON a rules target was made from (for saving with a plan), or NULL
 * if b is not a rules target. */
const char *seam_rules_source(const seam_backend *b) {
    b = backend_instance_base(b);
    return b && b->supports == rules_supports ? ((const rules *)b->ctx)->source : NULL;
}
