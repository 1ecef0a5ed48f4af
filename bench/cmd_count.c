/*
 * cmd_count.c — `ternbench count`: instructions executed by a fixed
 * workload, counted by valgrind's callgrind. Unlike a timing, the count of
 * one binary on one input does not move with the machine's state, so a
 * change beyond a small threshold (default 1 %) is a verdict by itself.
 *
 *   ternbench count [-m F.gguf ... | --kernels] [-p P] [-n N] [--json]
 *                   [--db FILE] [--baseline FILE [--threshold PCT]]
 *                   [--update-baseline FILE]
 *
 * Entries (count_entry_t): each kernel's matvec at a decode shape and gemm
 * at a prefill shape, per format, weights prepared by tb_weights_new and
 * activations quantized beforehand (the weight pass alone); and per model a
 * prefill of P tokens and a decode of N tokens after it, one thread.
 * Without -m or --kernels: the kernels and two models synthesized into a
 * temporary directory (llama-tiny with TQ2_0 and moe-tiny with Q4_0
 * projections, seed 1): the gate's set.
 *
 * The command re-executes itself under `valgrind --tool=callgrind
 * --collect-atstart=no` with the hidden option --child; the child sets
 * up every entry uncounted, switches collection on only around the measured
 * region (CALLGRIND_TOGGLE_COLLECT) and dumps the counters after it
 * (CALLGRIND_DUMP_STATS_AT with the entry's name), and the parent reads the
 * dump files' totals (event Ir, instructions executed). The child runs at
 * the kernel tier avx2 (or the lower one --isa asks for: valgrind 3.19
 * does not execute AVX-512) with the software prefetch off and 1 thread,
 * so two runs of one binary give the same counts.
 */
#include "commands.h"
#include "count.h"
#include "facts.h"
#include "infer.h"
#include "scenario.h"   /* tb_sha256_hex */
#include "store.h"
#include "ternbench.h"

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <valgrind/callgrind.h>

#define MAX_MODELS 8
#define MAX_ENTRIES 64

static const tb_type_t kernel_types[] = {
    TB_TYPE_F16, TB_TYPE_BF16, TB_TYPE_Q8_0, TB_TYPE_Q4_0,
    TB_TYPE_Q4_K, TB_TYPE_Q6_K, TB_TYPE_TQ1_0, TB_TYPE_TQ2_0,
};
#define MV_ROWS 2048     /* decode: one 2048x2048 projection */
#define MV_COLS 2048
#define GM_ROWS 512      /* prefill: 16 tokens through a 512x2048 matrix */
#define GM_COLS 2048
#define GM_TOK 16


typedef struct count_opts {
    const char *models[MAX_MODELS];
    const char *names[MAX_MODELS];     /* entry names of the models */
    int n_models;
    int kernels;                       /* include the kernel entries */
    int prefill, decode;               /* -p, -n                     */
    int json, child;
    const char *db, *baseline, *update;
    double threshold;                  /* fraction                   */
} count_opts_t;

/* ---------------------------------------------------------------------- */
/* The entries, in the same order in parent and child                       */
/* ---------------------------------------------------------------------- */

static int entries_of(const count_opts_t *o, count_entry_t *e) {
    int n = 0;
    if (o->kernels)
        for (size_t i = 0; i < sizeof kernel_types / sizeof kernel_types[0]; i++) {
            const char *t = tb_type_name(kernel_types[i]);
            snprintf(e[n].name, NAME_LEN, "kernel/matvec/%s/%dx%d", t, MV_ROWS, MV_COLS);
            e[n].unit = "instr/call"; e[n].kind = "decode"; e[n].units = 1; n++;
            snprintf(e[n].name, NAME_LEN, "kernel/gemm/%s/%dx%dx%d", t, GM_ROWS, GM_COLS, GM_TOK);
            e[n].unit = "instr/call"; e[n].kind = "prefill"; e[n].units = 1; n++;
        }
    for (int m = 0; m < o->n_models; m++) {
        snprintf(e[n].name, NAME_LEN, "model/%s/prefill%d", o->names[m], o->prefill);
        e[n].unit = "instr/token"; e[n].kind = "prefill"; e[n].units = o->prefill; n++;
        snprintf(e[n].name, NAME_LEN, "model/%s/decode%d", o->names[m], o->decode);
        e[n].unit = "instr/token"; e[n].kind = "decode"; e[n].units = o->decode; n++;
    }
    for (int i = 0; i < n; i++) { e[i].instr = 0; e[i].have = 0; }
    return n;
}

static double per_unit(const count_entry_t *e) { return count_per_unit(e); }

/* ---------------------------------------------------------------------- */
/* Child: the workload, under callgrind                                     */
/* ---------------------------------------------------------------------- */

#define REGION_BEGIN() do { CALLGRIND_ZERO_STATS; CALLGRIND_TOGGLE_COLLECT; } while (0)
#define REGION_END(name) do { CALLGRIND_TOGGLE_COLLECT; CALLGRIND_DUMP_STATS_AT(name); } while (0)

/* Deterministic values in [-1, 1) (xorshift). */
static void fill_rand(float *x, size_t n, uint64_t seed) {
    uint64_t s = seed * 2654435761u + 88172645463325252ull;
    for (size_t i = 0; i < n; i++) {
        s ^= s << 13; s ^= s >> 7; s ^= s << 17;
        x[i] = (float)((double)(s >> 11) / 9007199254740992.0 * 2.0 - 1.0);
    }
}

/* One format: matvec at the decode shape, gemm at the prefill shape. */
static int child_kernel(tb_type_t t, const char *mv_name, const char *gm_name) {
    int64_t rows = MV_ROWS, cols = MV_COLS;
    size_t rb = tb_type_row_bytes(t, cols);
    float *row = malloc(sizeof(float) * (size_t)cols);                 // (cols)
    uint8_t *W = malloc(rb * (size_t)rows);                            // (rows, row bytes)
    float *X = malloc(sizeof(float) * (size_t)cols * GM_TOK);          // (GM_TOK, cols)
    float *Y = malloc(sizeof(float) * (size_t)rows * GM_TOK);          // (GM_TOK, rows)
    tb_weights_t *w = NULL, *wg = NULL;
    tb_act_t *a = NULL, *ag = NULL;
    int rc = (!row || !W || !X || !Y) ? TB_ERR_NOMEM : TB_OK;
    /* 64 distinct rows, repeated: quantizing every row under valgrind is slow */
    for (int64_t r = 0; !rc && r < rows; r++) {
        if (r >= 64) { memcpy(W + rb * (size_t)r, W + rb * (size_t)(r % 64), rb); continue; }
        fill_rand(row, (size_t)cols, (uint64_t)r);
        rc = tb_quantize_row(t, row, W + rb * (size_t)r, cols);
    }
    fill_rand(X, (size_t)cols * GM_TOK, 99);
    if (!rc) rc = tb_weights_new(t, W, rows, cols, 1, &w);
    if (!rc) rc = tb_weights_new(t, W, GM_ROWS, GM_COLS, 1, &wg);
    if (!rc) rc = tb_act_new(t, cols, 1, &a);
    if (!rc) rc = tb_act_set(a, X);
    if (!rc) rc = tb_act_new(t, GM_COLS, GM_TOK, &ag);
    if (!rc) rc = tb_act_set(ag, X);
    if (!rc) {
        REGION_BEGIN();
        rc = tb_weights_matvec_act(NULL, w, 0, a, Y);
        REGION_END(mv_name);
    }
    if (!rc) {
        REGION_BEGIN();
        rc = tb_weights_matmul_act(NULL, wg, 0, ag, Y);
        REGION_END(gm_name);
    }
    if (rc) fprintf(stderr, "ternbench count: kernel %s: %s\n", tb_type_name(t), tb_last_error());
    tb_act_free(a); tb_act_free(ag);
    tb_weights_free(w); tb_weights_free(wg);
    free(row); free(W); free(X); free(Y);
    return rc;
}

/* One model: a prefill of P tokens, then N decode steps, one thread. */
static int child_model(const char *path, int P, int N, const char *pf_name, const char *dc_name) {
    tb_model_t *m = NULL;
    tb_session_t *s = NULL;
    tb_model_params_t mp = {.weights = TB_WEIGHTS_COPY, .n_threads = 1};
    int rc = tb_model_load_ex(path, &mp, &m);
    tb_session_params_t sp = tb_session_default_params();
    sp.n_ctx = P + N + 1;
    sp.n_threads = 1;
    if (!rc) rc = tb_session_new(m, &sp, &s);
    int32_t *ids = malloc(sizeof(int32_t) * (size_t)(P + N));   // (P + N)
    if (!rc && !ids) rc = TB_ERR_NOMEM;
    int32_t nv = rc ? 1 : tb_model_n_vocab(m);
    for (int i = 0; !rc && i < P + N; i++) ids[i] = (int32_t)((i * 7919 + 13) % nv);
    if (!rc) {
        REGION_BEGIN();
        rc = tb_session_eval(s, ids, P, false);
        REGION_END(pf_name);
    }
    if (!rc) {
        REGION_BEGIN();
        for (int i = 0; !rc && i < N; i++) rc = tb_session_eval(s, &ids[P + i], 1, false);
        REGION_END(dc_name);
    }
    if (rc) fprintf(stderr, "ternbench count: %s: %s\n", path, tb_last_error());
    free(ids);
    tb_session_free(s);
    tb_model_free(m);
    return rc;
}

static int run_child(const count_opts_t *o, const count_entry_t *e) {
    int k = 0;
    if (o->kernels)
        for (size_t i = 0; i < sizeof kernel_types / sizeof kernel_types[0]; i++, k += 2)
            if (child_kernel(kernel_types[i], e[k].name, e[k + 1].name)) return 1;
    for (int m = 0; m < o->n_models; m++, k += 2)
        if (child_model(o->models[m], o->prefill, o->decode, e[k].name, e[k + 1].name)) return 1;
    return 0;
}

/* ---------------------------------------------------------------------- */
/* Parent: run the child under valgrind, read its dumps                     */
/* ---------------------------------------------------------------------- */

/* Read one callgrind dump: its trigger name (after "Client Request: ") and
 * its total Ir. 1 when both were found. */
static int read_dump(const char *path, char *name, size_t cap, uint64_t *ir) {
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    char line[1024];
    int got_name = 0, got_ir = 0;
    const char *tag = "desc: Trigger: Client Request: ";
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = 0;
        if (!strncmp(line, tag, strlen(tag)) && strlen(line + strlen(tag)) < cap) {
            memcpy(name, line + strlen(tag), strlen(line + strlen(tag)) + 1);
            got_name = 1;
        } else if (!strncmp(line, "totals: ", 8) || !strncmp(line, "summary: ", 9)) {
            *ir = strtoull(strchr(line, ' ') + 1, NULL, 10);
            got_ir = 1;
        }
    }
    fclose(f);
    return got_name && got_ir;
}

static const char *valgrind_prog(void) {
    const char *v = getenv("TB_VALGRIND");
    return v && *v ? v : "valgrind";
}

/* Run this binary under callgrind with args, dumps into dir; fill e[]. */
static int run_parent(const count_opts_t *o, tb_isa_t isa, const char *dir, count_entry_t *e, int n) {
    char self[4096], outarg[4200];
    ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
    if (len <= 0) { fprintf(stderr, "ternbench count: cannot find this binary: %s\n", strerror(errno)); return 1; }
    self[len] = 0;
    snprintf(outarg, sizeof outarg, "--callgrind-out-file=%s/cg.out", dir);
    char pbuf[16], nbuf[16];
    snprintf(pbuf, sizeof pbuf, "%d", o->prefill);
    snprintf(nbuf, sizeof nbuf, "%d", o->decode);
    const char *argv[32 + 2 * MAX_MODELS];
    int a = 0;
    argv[a++] = valgrind_prog();
    argv[a++] = "--tool=callgrind";
    argv[a++] = "--collect-atstart=no";
    argv[a++] = "--quiet";
    argv[a++] = outarg;
    argv[a++] = self;
    argv[a++] = "--isa"; argv[a++] = tb_isa_name(isa);
    argv[a++] = "--prefetch"; argv[a++] = "0";
    argv[a++] = "count"; argv[a++] = "--child";
    argv[a++] = "-p"; argv[a++] = pbuf;
    argv[a++] = "-n"; argv[a++] = nbuf;
    if (o->kernels) argv[a++] = "--kernels";
    for (int m = 0; m < o->n_models; m++) {
        argv[a++] = "-m"; argv[a++] = o->models[m];
        argv[a++] = "--name"; argv[a++] = o->names[m];
    }
    argv[a] = NULL;
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0) { fprintf(stderr, "ternbench count: fork: %s\n", strerror(errno)); return 1; }
    if (pid == 0) {
        execvp(argv[0], (char *const *)argv);
        fprintf(stderr, "ternbench count: cannot run %s: %s (install valgrind, or set TB_VALGRIND)\n",
                argv[0], strerror(errno));
        _exit(127);
    }
    int st;
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR) { fprintf(stderr, "ternbench count: waitpid: %s\n", strerror(errno)); return 1; }
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        if (!(WIFEXITED(st) && WEXITSTATUS(st) == 127))
            fprintf(stderr, "ternbench count: the workload under callgrind failed (%s %d)\n",
                    WIFEXITED(st) ? "exit status" : "signal", WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
        return 1;
    }
    DIR *d = opendir(dir);
    if (!d) { fprintf(stderr, "ternbench count: %s: %s\n", dir, strerror(errno)); return 1; }
    struct dirent *de;
    while ((de = readdir(d))) {
        if (strncmp(de->d_name, "cg.out", 6)) continue;
        char path[4400], name[NAME_LEN];
        uint64_t ir = 0;
        snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
        if (!read_dump(path, name, sizeof name, &ir)) continue;
        for (int i = 0; i < n; i++)
            if (!strcmp(e[i].name, name)) { e[i].instr = ir; e[i].have = 1; }
    }
    closedir(d);
    for (int i = 0; i < n; i++)
        if (!e[i].have) {
            fprintf(stderr, "ternbench count: callgrind wrote no dump for %s (in %s)\n", e[i].name, dir);
            return 1;
        }
    return 0;
}

/* ---------------------------------------------------------------------- */
/* Output, baseline, database                                               */
/* ---------------------------------------------------------------------- */

static void print_table(const count_entry_t *e, int n, const char *isa) {
    printf("instructions counted by callgrind (tier %s, prefetch 0, 1 thread)\n", isa);
    printf("%-40s %16s %16s  %s\n", "entry", "instructions", "per unit", "unit");
    for (int i = 0; i < n; i++)
        printf("%-40s %16llu %16.1f  %s\n", e[i].name, (unsigned long long)e[i].instr, per_unit(&e[i]), e[i].unit);
}

static void print_json(const count_entry_t *e, int n, const char *isa) {
    printf("{\"tool\":\"callgrind\",\"isa\":");
    cmd_json_str(isa);
    printf(",\"prefetch_bytes\":0,\"threads\":1,\"entries\":[");
    for (int i = 0; i < n; i++) {
        printf("%s{\"name\":", i ? "," : "");
        cmd_json_str(e[i].name);
        printf(",\"instructions\":%llu,\"units\":%d,\"per_unit\":%.1f,\"unit\":",
               (unsigned long long)e[i].instr, e[i].units, per_unit(&e[i]));
        cmd_json_str(e[i].unit);
        printf("}");
    }
    printf("]}\n");
}

/* One run with one test per entry: measurement "instructions" (per unit)
 * at repetition 0, unit instr/call or instr/token. */
static int record(const char *db, const count_entry_t *e, int n, const char *isa, const char *config) {
    tb_store_t *s = NULL;
    int rc = tb_store_open(db, &s, NULL);
    tb_host_facts_t host;
    tb_build_facts_t build;
    tb_facts_host(&host);
    tb_facts_build(&build);
    int64_t host_id = -1, build_id = -1, scen_id = -1, run_id = -1;
    char hash[65];
    tb_sha256_hex(config, strlen(config), hash);
    if (!rc) rc = tb_store_put_host(s, &host, &host_id);
    if (!rc) rc = tb_store_put_build(s, &build, &build_id);
    if (!rc) rc = tb_store_put_scenario(s, hash, "count", "(ternbench count)", config, &scen_id);
    const char *keys[] = {"count.tool", "count.isa"};
    const char *vals[] = {"callgrind", isa};
    tb_run_facts_t rf = {.host_id = host_id, .build_id = build_id, .model_id = -1, .scenario_id = scen_id,
                         .threads = 1, .bandwidth_gbps_before = -1, .record_tokens = 0,
                         .n_tags = 2, .tag_keys = keys, .tag_values = vals};
    tb_facts_uuid(rf.uuid);
    snprintf(rf.isa, sizeof rf.isa, "%s", isa);
    snprintf(rf.kv_type, sizeof rf.kv_type, "f16");
    if (!rc) rc = tb_store_run_begin(s, &rf, &run_id);
    for (int i = 0; !rc && i < n; i++) {
        int64_t tid;
        rc = tb_store_test_begin(s, run_id, "count", e[i].kind, e[i].name, NULL, 0, &tid);
        if (!rc) rc = tb_store_tx_begin(s);
        if (!rc) {
            rc = tb_store_add_measurement(s, tid, 0, "instructions", per_unit(&e[i]), e[i].unit);
            if (rc) tb_store_tx_rollback(s);
            else rc = tb_store_tx_commit(s);
        }
        if (!rc) rc = tb_store_test_end(s, tid, "complete", "unknown", NULL, NAN);
    }
    if (run_id >= 0) {
        int erc = tb_store_run_end(s, run_id, rc ? "failed" : "complete", rc ? tb_last_error() : NULL, -1);
        if (!rc) rc = erc;
    }
    if (rc) fprintf(stderr, "ternbench count: --db %s: %s\n", db, tb_last_error());
    else fprintf(stderr, "count: recorded run %lld in %s\n", (long long)run_id, db);
    tb_store_close(s);
    return rc ? 1 : 0;
}

/* ---------------------------------------------------------------------- */
/* Command                                                                  */
/* ---------------------------------------------------------------------- */

static void usage(FILE *f) {
    fprintf(f,
        "usage: ternbench count [-m F.gguf ... | --kernels] [-p P] [-n N] [--json] [--db FILE]\n"
        "                       [--baseline FILE [--threshold PCT]] [--update-baseline FILE]\n"
        "\n"
        "Instructions executed by a fixed workload, counted under valgrind's callgrind\n"
        "(collection on only around each measured region; tier avx2, prefetch 0, 1 thread).\n"
        "  -m F.gguf        a model's prefill of P and decode of N tokens (repeatable)\n"
        "  --kernels        each format's matvec (%dx%d) and gemm (%dx%d, %d tokens)\n"
        "                   neither: the kernels, llama-tiny (TQ2_0) and moe-tiny (Q4_0), synthesized\n"
        "  -p P, -n N       prefill and decode tokens (default 16 and 8)\n"
        "  --json           one object with every entry (and a second line, the check, with --baseline)\n"
        "  --db FILE        record a run: one test per entry, metric instructions\n"
        "  --baseline FILE  compare with a baseline file; exit 1 when an entry regressed\n"
        "  --threshold PCT  for entries without their own threshold (default 1)\n"
        "  --update-baseline FILE  write the counts as the new baseline\n"
        "environment: TB_VALGRIND=PROGRAM (default valgrind on PATH)\n",
        MV_ROWS, MV_COLS, GM_ROWS, GM_COLS, GM_TOK);
}

/* Synthesize preset with projections of type `type` as dir/NAME.gguf. */
static int synth_into(const char *dir, const char *preset, tb_type_t type, const char *name,
                      char *path, size_t cap) {
    snprintf(path, cap, "%s/%s.gguf", dir, name);
    tb_synth_params_t p = {.preset = preset, .type = (int)type, .seed = 1};
    if (tb_synth_model(&p, path) != TB_OK) {
        fprintf(stderr, "ternbench count: synthesizing %s: %s\n", name, tb_last_error());
        return 1;
    }
    return 0;
}

/* The stem of a path ("dir/llama-tiny.gguf" -> "llama-tiny"). */
static void stem(const char *path, char *out, size_t cap) {
    const char *b = strrchr(path, '/');
    b = b ? b + 1 : path;
    snprintf(out, cap, "%s", b);
    char *dot = strrchr(out, '.');
    if (dot && !strcmp(dot, ".gguf")) *dot = 0;
}

int cmd_count(int argc, char **argv) {
    count_opts_t o = {.prefill = 16, .decode = 8, .threshold = 0.01};
    static char name_buf[MAX_MODELS][NAME_LEN];
    int given_names = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int takes = !strcmp(a, "-m") || !strcmp(a, "-p") || !strcmp(a, "-n") || !strcmp(a, "--db") ||
                    !strcmp(a, "--baseline") || !strcmp(a, "--update-baseline") ||
                    !strcmp(a, "--threshold") || !strcmp(a, "--name");
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) { usage(stdout); return 0; }
        if (takes && !v) { fprintf(stderr, "ternbench count: %s needs a value\n", a); return 2; }
        if (!strcmp(a, "--kernels")) o.kernels = 1;
        else if (!strcmp(a, "--json")) o.json = 1;
        else if (!strcmp(a, "--child")) o.child = 1;
        else if (!strcmp(a, "-m")) {
            if (o.n_models == MAX_MODELS) { fprintf(stderr, "ternbench count: at most %d models\n", MAX_MODELS); return 2; }
            o.models[o.n_models++] = v; i++;
        } else if (!strcmp(a, "--name")) {   /* the child: the entry name of the -m before it */
            if (given_names >= o.n_models) { fprintf(stderr, "ternbench count: --name without -m\n"); return 2; }
            snprintf(name_buf[given_names], NAME_LEN, "%s", v);
            o.names[given_names] = name_buf[given_names];
            given_names++;
            i++;
        } else if (!strcmp(a, "-p")) { if (cmd_arg_int("count", a, v, 1, 512, &o.prefill)) return 2; i++; }
        else if (!strcmp(a, "-n")) { if (cmd_arg_int("count", a, v, 1, 512, &o.decode)) return 2; i++; }
        else if (!strcmp(a, "--db")) { o.db = v; i++; }
        else if (!strcmp(a, "--baseline")) { o.baseline = v; i++; }
        else if (!strcmp(a, "--update-baseline")) { o.update = v; i++; }
        else if (!strcmp(a, "--threshold")) {
            char *end;
            double t = strtod(v, &end);
            if (*end || !(t >= 0 && t < 100)) {
                fprintf(stderr, "ternbench count: --threshold expects a percentage in [0, 100), got '%s'\n", v);
                return 2;
            }
            o.threshold = t / 100;
            i++;
        } else {
            cmd_arg_reject("count", a, NULL);
            usage(stderr);
            return 2;
        }
    }
    if (o.kernels && o.n_models && !o.child) {
        fprintf(stderr, "ternbench count: use -m or --kernels, not both (neither: the gate's set)\n");
        return 2;
    }
    for (int m = given_names; m < o.n_models; m++) {
        stem(o.models[m], name_buf[m], NAME_LEN);
        o.names[m] = name_buf[m];
    }
    /* the tier: avx2, or lower when --isa asked for less */
    tb_isa_t isa = tb_isa_active();
    if (isa > TB_ISA_AVX2 && isa != TB_ISA_NEON) isa = TB_ISA_AVX2;
    count_entry_t e[MAX_ENTRIES];

    if (o.child) {
        int n = entries_of(&o, e);
        if (!RUNNING_ON_VALGRIND) fprintf(stderr, "ternbench count: --child outside valgrind counts nothing\n");
        (void)n;
        return run_child(&o, e);
    }

    if (o.baseline && count_baseline_validate(o.baseline)) return 2;
    /* scratch folder for the synthesized models: $TMPDIR, else the system's */
    const char *tmp = getenv("TMPDIR");   /* quoted into `rm -rf` below: none with a quote */
    if (tmp && strchr(tmp, '\'')) tmp = NULL;
    char dir[4096];
    if (snprintf(dir, sizeof dir, "%s/tb_count_XXXXXX", tmp && *tmp ? tmp : P_tmpdir) >= (int)sizeof dir) {
        fprintf(stderr, "ternbench count: TMPDIR is too long\n");
        return 2;
    }
    if (!mkdtemp(dir)) { fprintf(stderr, "ternbench count: mkdtemp: %s\n", strerror(errno)); return 1; }
    static char synth_path[2][4200];
    int rc = 0;
    if (!o.kernels && !o.n_models) {   /* the gate's set */
        o.kernels = 1;
        /* the presets' default projections are F32: quantized ones go
         * through the kernels a change is likely to touch */
        static const struct { const char *preset, *name; tb_type_t type; } gm[] = {
            {"llama-tiny", "llama-tiny-tq2_0", TB_TYPE_TQ2_0},
            {"moe-tiny", "moe-tiny-q4_0", TB_TYPE_Q4_0},
        };
        for (int k = 0; k < 2 && !rc; k++) {
            rc = synth_into(dir, gm[k].preset, gm[k].type, gm[k].name, synth_path[k], sizeof synth_path[k]);
            o.models[o.n_models] = synth_path[k];
            o.names[o.n_models++] = gm[k].name;
        }
    }
    for (int m = 0; m < o.n_models && !rc; m++)
        if (access(o.models[m], R_OK)) {
            fprintf(stderr, "ternbench count: -m %s: %s\n", o.models[m], strerror(errno));
            rc = 2;
        }
    int n = entries_of(&o, e);
    if (!rc) rc = run_parent(&o, isa, dir, e, n);
    char cmd[4300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) fprintf(stderr, "ternbench count: could not remove %s\n", dir);
    if (rc) return rc;

    const char *isa_name = tb_isa_name(isa);
    if (o.json) print_json(e, n, isa_name);
    else if (!o.baseline) print_table(e, n, isa_name);
    char config[512];
    snprintf(config, sizeof config, "count\ntool = callgrind\nisa = %s\nprefetch = 0\nthreads = 1\nprefill = %d\ndecode = %d\n",
             isa_name, o.prefill, o.decode);
    int status = 0;
    if (o.db && record(o.db, e, n, isa_name, config)) status = 1;
    if (o.update && count_baseline_write(o.update, e, n, isa_name, o.threshold)) status = 1;
    if (o.baseline) {
        int b = count_baseline_check(o.baseline, e, n, o.threshold, isa_name, o.json);
        if (b > status) status = b;
    }
    return status;
}
