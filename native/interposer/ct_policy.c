/* The policy engine's periodic rules, inside the run (MVAPICH2 + TAU's policy engine).
 *
 * COMMTUNE_POLICY="a.json:b.json" names rule files (the language: src/commtune/policy/
 * _language.py; `commtune policy check` validates them against the installed library). Here
 * only rules with "when": "periodic" run; final rules are evaluated on the profile.
 *
 * Rank consistency: rules are evaluated on rank 0 only, and their decisions reach every rank
 * at a *safe point*: every COMMTUNE_POLICY_EVERY-th (default 256) collective call on a
 * communicator that spans MPI_COMM_WORLD (the world itself, or an intra-communicator of its
 * size: the Cartesian or duplicated communicator most codes compute on; SNAP makes no
 * collective call on MPI_COMM_WORLD after its set-up), which every rank makes in the same
 * order. There all ranks take part in one
 * broadcast (on libcommtune's own duplicate of MPI_COMM_WORLD) of rank 0's decisions, then each
 * writes the assigned CVARs through MPI_T; rank 0 evaluates at a safe point only when
 * COMMTUNE_PVAR_INTERVAL seconds have passed since its last evaluation. In periodic rules the
 * interposer's counters (ct:...) cover the interval since the previous evaluation, so a rule
 * sees the phase the program is in; PVAR and user variables keep their running statistics.
 *
 * Every action is logged with its time, rule, the values that triggered it and whether the
 * library took the write; the log goes into the profile ("policy").
 */
#include "ct_core.h"
#include "ct_language.h"

#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- a small JSON reader ---- */
enum { J_NULL, J_BOOL, J_NUM, J_STR, J_ARR, J_OBJ };
typedef struct jv {
    int type;
    double num;
    char *str;
    struct jv **items;
    char **keys; /* objects: the key of each item */
    int n;
} jv;

typedef struct {
    const char *p, *end;
    int failed;
} jparser;

static void jskip(jparser *ps) {
    while (ps->p < ps->end && isspace((unsigned char)*ps->p))
        ps->p++;
}

static jv *jnew(int type) {
    jv *v = calloc(1, sizeof *v);
    if (v) v->type = type;
    return v;
}

static void jpush(jv *v, jv *item, char *key) {
    jv **items = realloc(v->items, sizeof *items * (size_t)(v->n + 1));
    char **keys = realloc(v->keys, sizeof *keys * (size_t)(v->n + 1));
    if (items) v->items = items;
    if (keys) v->keys = keys;
    if (!items || !keys) return;
    v->items[v->n] = item;
    v->keys[v->n] = key;
    v->n++;
}

static jv *jvalue(jparser *ps, int depth);

static char *jstring(jparser *ps) {
    if (ps->p >= ps->end || *ps->p != '"') {
        ps->failed = 1;
        return NULL;
    }
    ps->p++;
    size_t cap = 16, len = 0;
    char *s = malloc(cap);
    while (s && ps->p < ps->end && *ps->p != '"') {
        char c = *ps->p++;
        if (c == '\\' && ps->p < ps->end) {
            char e = *ps->p++;
            c = e == 'n' ? '\n' : e == 't' ? '\t' : e == 'u' ? '?' : e;
            if (e == 'u') ps->p += ps->end - ps->p >= 4 ? 4 : ps->end - ps->p;
        }
        if (len + 2 > cap) {
            char *g = realloc(s, cap *= 2);
            if (!g) break;
            s = g;
        }
        s[len++] = c;
    }
    if (!s || ps->p >= ps->end) {
        free(s);
        ps->failed = 1;
        return NULL;
    }
    ps->p++;
    s[len] = '\0';
    return s;
}

static jv *jvalue(jparser *ps, int depth) {
    jskip(ps);
    if (ps->p >= ps->end || depth > 64) {
        ps->failed = 1;
        return NULL;
    }
    char c = *ps->p;
    if (c == '{' || c == '[') {
        jv *v = jnew(c == '{' ? J_OBJ : J_ARR);
        ps->p++;
        jskip(ps);
        if (ps->p < ps->end && *ps->p == (c == '{' ? '}' : ']')) {
            ps->p++;
            return v;
        }
        while (v && !ps->failed) {
            char *key = NULL;
            if (c == '{') {
                jskip(ps);
                key = jstring(ps);
                jskip(ps);
                if (ps->failed || ps->p >= ps->end || *ps->p++ != ':') {
                    free(key);
                    ps->failed = 1;
                    break;
                }
            }
            jv *item = jvalue(ps, depth + 1);
            if (ps->failed) {
                free(key);
                break;
            }
            jpush(v, item, key);
            jskip(ps);
            if (ps->p < ps->end && *ps->p == ',') {
                ps->p++;
                continue;
            }
            if (ps->p < ps->end && *ps->p == (c == '{' ? '}' : ']')) {
                ps->p++;
                return v;
            }
            ps->failed = 1;
        }
        return v;
    }
    if (c == '"') {
        jv *v = jnew(J_STR);
        if (v) v->str = jstring(ps);
        return v;
    }
    if (strncmp(ps->p, "true", 4) == 0 || strncmp(ps->p, "false", 5) == 0) {
        jv *v = jnew(J_BOOL);
        if (v) v->num = *ps->p == 't';
        ps->p += *ps->p == 't' ? 4 : 5;
        return v;
    }
    if (strncmp(ps->p, "null", 4) == 0) {
        ps->p += 4;
        return jnew(J_NULL);
    }
    char *end = NULL;
    double d = strtod(ps->p, &end);
    if (end == ps->p) {
        ps->failed = 1;
        return NULL;
    }
    ps->p = end;
    jv *v = jnew(J_NUM);
    if (v) v->num = d;
    return v;
}

static const jv *jget(const jv *obj, const char *key) {
    if (obj == NULL || obj->type != J_OBJ) return NULL;
    for (int i = 0; i < obj->n; ++i)
        if (obj->keys[i] && strcmp(obj->keys[i], key) == 0) return obj->items[i];
    return NULL;
}

static const char *jstr(const jv *v) { return v && v->type == J_STR ? v->str : NULL; }

/* ---- the rules ---- */
#define MAX_LOG 256
#define MAX_DECISIONS 16
#define DECISION_TEXT 192

typedef struct {
    const char *name;
    const jv *operation;
} rule_t;

static rule_t rules[CT_POLICY_MAX_RULES];
static int n_rules;
static jv *roots[CT_POLICY_MAX_FILES];
static int n_roots;

typedef struct {
    double t;
    char rule[64];
    char cvar[128];
    char value[64];
    char trigger[256];
    char status[96];
} action_t;

static action_t actions[MAX_LOG];
static int n_actions;

int ct_policy_on;
static int every;                       /* COMMTUNE_POLICY_EVERY */
static uint64_t world_calls, last_eval; /* calls on communicators spanning the world */
static int world_size;
static uint64_t evaluations, evaluation_ticks, sync_ticks; /* what the engine costs */
static uint64_t interval_ticks;

/* The counters of the previous evaluation: periodic rules see the interval since. */
static ct_opstat previous[CT_NUM_OPS];
static uint64_t previous_at;

static void load_file(const char *path) {
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        ct_warn("COMMTUNE_POLICY: cannot read %s", path);
        return;
    }
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *text = size > 0 ? malloc((size_t)size) : NULL;
    size_t got = text ? fread(text, 1, (size_t)size, f) : 0;
    fclose(f);
    jparser ps = {text, text + got, 0};
    jv *root = text ? jvalue(&ps, 0) : NULL;
    free(text);
    if (root == NULL || ps.failed) {
        ct_warn("COMMTUNE_POLICY: %s is not valid JSON (commtune policy check says where)", path);
        return;
    }
    if (n_roots == CT_POLICY_MAX_FILES) { /* `commtune policy check` refuses this */
        ct_warn("COMMTUNE_POLICY: more than %d rule files; %s is ignored", CT_POLICY_MAX_FILES,
                path);
        return;
    }
    roots[n_roots++] = root;
    const jv *list = root->type == J_ARR ? root : jget(root, "rules");
    for (int i = 0; list && list->type == J_ARR && i < list->n; ++i) {
        const jv *r = list->items[i];
        const char *when = jstr(jget(r, "when"));
        if (when == NULL || strcmp(when, "periodic") != 0) continue;
        const jv *op = jget(r, "operation");
        const char *name = jstr(jget(r, "name"));
        if (op == NULL || name == NULL) continue;
        if (n_rules == CT_POLICY_MAX_RULES) {
            ct_warn("COMMTUNE_POLICY: more than %d periodic rules; %s and later are ignored",
                    CT_POLICY_MAX_RULES, name);
            return;
        }
        rules[n_rules++] = (rule_t){name, op};
    }
}

static void after_init(void) {
    const char *files = ct_config.policy;
    every = ct_config.policy_every;
    if (files == NULL) return;
    char *copy = strdup(files);
    for (char *save = NULL, *path = strtok_r(copy, ":", &save); path != NULL;
         path = strtok_r(NULL, ":", &save))
        load_file(path);
    free(copy);
    interval_ticks = (uint64_t)(ct_config.pvar_interval * ct_run.ticks_per_second);
    previous_at = ct_now();
    PMPI_Comm_size(MPI_COMM_WORLD, &world_size);
    ct_policy_on = n_rules > 0;
}

/* ---- values ---- */
typedef struct {
    ct_opstat ops[CT_NUM_OPS];
    double wall;
} window_t;

/* The position of text[0..len) among names[0..n), or -1. */
static int name_index(const char *const *names, int n, const char *text, size_t len) {
    for (int i = 0; i < n; ++i)
        if (strlen(names[i]) == len && strncmp(names[i], text, len) == 0) return i;
    return -1;
}

/* The share of the window's time spent in operations of `which` (a CT_G_*_TIME_SHARE). */
static double time_share(const window_t *w, int which) {
    double sum = 0;
    for (int i = 0; i < CT_NUM_OPS; ++i) {
        int c = ct_op_classes[i];
        int p2p = c == CT_CLASS_SEND || c == CT_CLASS_RECV || c == CT_CLASS_WAIT;
        int coll = c == CT_CLASS_COLL;
        if ((which == CT_G_P2P_TIME_SHARE && p2p) || (which == CT_G_COLL_TIME_SHARE && coll) ||
            (which == CT_G_COMM_TIME_SHARE && (p2p || coll || c == CT_CLASS_RMA)))
            sum += (double)w->ops[i].ticks / ct_run.ticks_per_second;
    }
    return sum / w->wall;
}

/* ct:FIELD over the window (the names: ct_language.h); 0: known, -1: no value */
static int counter(const window_t *w, const char *field, double *out) {
    const char *dot = strchr(field, '.');
    if (dot == NULL) {
        int size = 1, global = name_index(ct_global_names, CT_G_COUNT, field, strlen(field));
        switch (global) {
        case CT_G_WALL_TIME:
            *out = w->wall;
            return 0;
        case CT_G_RANKS:
            PMPI_Comm_size(MPI_COMM_WORLD, &size);
            *out = size;
            return 0;
        case CT_G_CPUS:
            *out = ct_run.cpus;
            return 0;
        case CT_G_NODE_RANKS:
            *out = ct_run.node_ranks;
            return 0;
        case CT_G_P2P_TIME_SHARE:
        case CT_G_COLL_TIME_SHARE:
        case CT_G_COMM_TIME_SHARE:
            if (w->wall <= 0) return -1;
            *out = time_share(w, global);
            return 0;
        default:
            return -1;
        }
    }
    int op = name_index(ct_op_names, CT_NUM_OPS, field, (size_t)(dot - field));
    if (op < 0) return -1;
    const ct_opstat *s = &w->ops[op];
    const char *what = dot + 1;
    const char *colon = strchr(what, ':');
    double seconds = (double)s->ticks / ct_run.ticks_per_second;
    if (colon != NULL) {
        int share = name_index(ct_share_names, CT_S_COUNT, what, (size_t)(colon - what));
        if (share < 0 || s->calls == 0) return -1;
        double limit = atof(colon + 1);
        uint64_t at_most = 0;
        for (int k = 0; k < CT_SIZE_CLASSES; ++k) {
            double hi = k == 0 ? 0 : k == 64 ? 1.8e19 : (double)((1ull << k) - 1);
            if (hi <= limit) at_most += s->sizes[k];
        }
        double fraction = (double)at_most / (double)s->calls;
        *out = share == CT_S_SHARE_ABOVE ? 1 - fraction : fraction;
        return 0;
    }
    switch (name_index(ct_field_names, CT_F_COUNT, what, strlen(what))) {
    case CT_F_CALLS:
        *out = (double)s->calls;
        return 0;
    case CT_F_BYTES:
        *out = (double)s->bytes;
        return 0;
    case CT_F_TIME:
        *out = seconds;
        return 0;
    case CT_F_MEAN_BYTES:
        if (s->calls == 0) return -1;
        *out = (double)s->bytes / (double)s->calls;
        return 0;
    case CT_F_TIME_SHARE:
        if (w->wall <= 0) return -1;
        *out = seconds / w->wall;
        return 0;
    default:
        return -1;
    }
}

static int variable(const window_t *w, const char *text, double *out) {
    if (strncmp(text, "ct:", 3) == 0) return counter(w, text + 3, out);
    int pvar = strncmp(text, "pvar:", 5) == 0, user = strncmp(text, "user:", 5) == 0;
    if (!pvar && !user) return -1;
    char name[128];
    const char *at = strchr(text + 5, '@');
    size_t len = at ? (size_t)(at - text - 5) : strlen(text + 5);
    if (len >= sizeof name) return -1;
    memcpy(name, text + 5, len);
    name[len] = '\0';
    const char *stat = at ? at + 1 : "last";
    return pvar ? ct_pvar_value(name, stat, out) : ct_user_value(name, stat, out);
}

/* ---- evaluation (rank 0) ---- */
typedef struct {
    char text[DECISION_TEXT]; /* "rule\tcvar\tvalue\ttrigger" */
} decision_t;

static decision_t decisions[MAX_DECISIONS];
static int n_decisions;

static void note(char *trigger, size_t size, const char *name, int ok, double v) {
    size_t used = strlen(trigger);
    if (used + 2 >= size) return;
    if (ok == 0)
        snprintf(trigger + used, size - used, "%s%s=%.6g", used ? "," : "", name, v);
    else
        snprintf(trigger + used, size - used, "%s%s=null", used ? "," : "", name);
}

static int operand(const window_t *w, const jv *o, double *out, char *trigger, size_t size) {
    if (o == NULL) return -1;
    if (o->type == J_NUM || o->type == J_BOOL) {
        *out = o->num;
        return 0;
    }
    if (o->type != J_STR) return -1;
    int rc = variable(w, o->str, out);
    if (strchr(o->str, ':')) note(trigger, size, o->str, rc, *out);
    return rc;
}

static int holds(const window_t *w, const jv *c, char *trigger, size_t size) {
    const jv *parts = jget(c, "and");
    int is_and = parts != NULL;
    if (!parts) parts = jget(c, "or");
    if (parts && parts->type == J_ARR) {
        int result = is_and;
        for (int i = 0; i < parts->n; ++i) {
            int h = holds(w, parts->items[i], trigger, size); /* every value noted */
            result = is_and ? result && h : result || h;
        }
        return result;
    }
    double a = 0, b = 0;
    int ra = operand(w, jget(c, "leftoperand"), &a, trigger, size);
    int rb = operand(w, jget(c, "rightoperand"), &b, trigger, size);
    const char *op = jstr(jget(c, "operator"));
    if (ra || rb || op == NULL) return 0; /* a value the run does not have: false */
    if (strcmp(op, "==") == 0) return a == b;
    if (strcmp(op, "!=") == 0) return a != b;
    if (strcmp(op, "<") == 0) return a < b;
    if (strcmp(op, "<=") == 0) return a <= b;
    if (strcmp(op, ">") == 0) return a > b;
    if (strcmp(op, ">=") == 0) return a >= b;
    return 0;
}

static void decide(const rule_t *r, const jv *result, const char *trigger) {
    if (result == NULL) return;
    if (result->type == J_ARR) {
        for (int i = 0; i < result->n; ++i)
            decide(r, result->items[i], trigger);
        return;
    }
    if (jget(result, "condition") != NULL) return; /* nested: run by run_operation */
    const char *cvar = jstr(jget(result, "leftoperand"));
    const jv *value = jget(result, "rightoperand");
    if (cvar == NULL || value == NULL || n_decisions >= MAX_DECISIONS) return;
    if (strncmp(cvar, "cvar:", 5) == 0) cvar += 5;
    char text[64];
    if (value->type == J_STR)
        snprintf(text, sizeof text, "%s", value->str);
    else if (value->type == J_BOOL)
        snprintf(text, sizeof text, "%d", (int)value->num);
    else
        snprintf(text, sizeof text, "%.17g", value->num);
    snprintf(decisions[n_decisions++].text, DECISION_TEXT, "%s\t%s\t%s\t%s", r->name, cvar, text,
             trigger);
}

static void run_operation(const window_t *w, const rule_t *r, const jv *op) {
    char trigger[160] = "";
    int h = holds(w, jget(op, "condition"), trigger, sizeof trigger);
    const jv *taken = jget(op, h ? "result" : "else");
    if (taken == NULL) return;
    if (taken->type == J_OBJ && jget(taken, "condition")) {
        run_operation(w, r, taken);
        return;
    }
    for (int i = 0; taken->type == J_ARR && i < taken->n; ++i)
        if (jget(taken->items[i], "condition")) run_operation(w, r, taken->items[i]);
    decide(r, taken, trigger);
}

static void evaluate(uint64_t now) {
    window_t w;
    ct_sum_tables(w.ops);
    for (int i = 0; i < CT_NUM_OPS; ++i) {
        ct_opstat cur = w.ops[i];
        w.ops[i].calls -= previous[i].calls;
        w.ops[i].bytes -= previous[i].bytes;
        w.ops[i].ticks -= previous[i].ticks;
        for (int k = 0; k < CT_SIZE_CLASSES; ++k)
            w.ops[i].sizes[k] -= previous[i].sizes[k];
        previous[i] = cur;
    }
    w.wall = (double)(now - previous_at) / ct_run.ticks_per_second;
    previous_at = now;
    ct_mpit_sample(); /* the PVARs as of now */
    for (int i = 0; i < n_rules; ++i)
        run_operation(&w, &rules[i], rules[i].operation);
}

/* ---- the safe point: every rank, in the same collective call order ---- */
static void apply(const char *text, double t) {
    char copy[DECISION_TEXT];
    snprintf(copy, sizeof copy, "%s", text);
    char *save = NULL;
    const char *rule = strtok_r(copy, "\t", &save);
    const char *cvar = strtok_r(NULL, "\t", &save);
    const char *value = strtok_r(NULL, "\t", &save);
    const char *trigger = strtok_r(NULL, "\t", &save);
    if (!rule || !cvar || !value) return;
    /* A variable already at this value (set by an earlier action) is left alone. */
    for (int i = n_actions - 1; i >= 0; --i) {
        if (strcmp(actions[i].cvar, cvar) != 0) continue;
        if (strcmp(actions[i].value, value) == 0 && strcmp(actions[i].status, "applied") == 0)
            return;
        break;
    }
    char refused[96] = "";
    int rc = ct_cvar_write(cvar, value, refused, sizeof refused);
    if (n_actions >= MAX_LOG) return;
    action_t *a = &actions[n_actions++];
    a->t = t;
    snprintf(a->rule, sizeof a->rule, "%s", rule);
    snprintf(a->cvar, sizeof a->cvar, "%s", cvar);
    snprintf(a->value, sizeof a->value, "%s", value);
    snprintf(a->trigger, sizeof a->trigger, "%s", trigger ? trigger : "");
    snprintf(a->status, sizeof a->status, "%s", rc == 0 ? "applied" : refused);
}

/* Whether every rank of MPI_COMM_WORLD is in ``comm`` (a program that spawns processes could
 * build an intra-communicator of the same size with others in it: not one of ours). */
static int spans_world(MPI_Comm comm) {
    if (comm == MPI_COMM_WORLD) return 1;
    int inter = 1, size = 0;
    if (comm == MPI_COMM_NULL || PMPI_Comm_test_inter(comm, &inter) != MPI_SUCCESS || inter)
        return 0;
    return PMPI_Comm_size(comm, &size) == MPI_SUCCESS && size == world_size;
}

void ct_policy_safe_point(MPI_Comm comm) {
    if (!spans_world(comm) || ++world_calls % (uint64_t)every != 0) return;
    int rank = 0;
    PMPI_Comm_rank(ct_run.comm, &rank);
    uint64_t now = ct_now();
    n_decisions = 0;
    if (rank == 0 && now - last_eval >= interval_ticks) {
        last_eval = now;
        evaluate(now);
        evaluations++;
        evaluation_ticks += ct_now() - now;
    }
    uint64_t sync_start = ct_now();
    int n = n_decisions;
    PMPI_Bcast(&n, 1, MPI_INT, 0, ct_run.comm);
    if (n > 0) PMPI_Bcast(decisions, n * DECISION_TEXT, MPI_CHAR, 0, ct_run.comm);
    sync_ticks += ct_now() - sync_start;
    if (n <= 0) return;
    double t = (double)(now - ct_run.init_enter) / ct_run.ticks_per_second;
    for (int i = 0; i < n; ++i)
        apply(decisions[i].text, t);
}

/* ---- the log, in the profile ---- */
static void write_json(FILE *out) {
    fputs("{\"rules\": ", out);
    fprintf(out,
            "%d, \"every\": %d, \"safe_points\": %llu, \"evaluations\": %llu, "
            "\"evaluation_seconds\": %.9f, \"sync_seconds\": %.9f, \"actions\": [",
            n_rules, every, (unsigned long long)(world_calls / (uint64_t)every),
            (unsigned long long)evaluations, ct_seconds(evaluation_ticks), ct_seconds(sync_ticks));
    for (int i = 0; i < n_actions; ++i) {
        const action_t *a = &actions[i];
        fprintf(out, "%s\n    {\"time\": %.6f, \"rule\": ", i ? "," : "", a->t);
        ct_json_string(out, a->rule);
        fputs(", \"cvar\": ", out);
        ct_json_string(out, a->cvar);
        fputs(", \"value\": ", out);
        ct_json_string(out, a->value);
        fputs(", \"trigger\": ", out);
        ct_json_string(out, a->trigger);
        fputs(", \"status\": ", out);
        ct_json_string(out, a->status);
        fputc('}', out);
    }
    fputs(n_actions ? "\n  ]}" : "]}", out);
}

void ct_policy_register(void) {
    static const ct_module module = {
        .section = "policy", .after_init = after_init, .write_json = write_json};
    ct_register(&module);
}
