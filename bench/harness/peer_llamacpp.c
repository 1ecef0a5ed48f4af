/*
 * peer_llamacpp.c — one repetition of llama.cpp through its llama-bench
 * (see peer_llamacpp.h).
 *
 * The child is started with posix_spawn (the runner has worker threads),
 * its stdout and stderr read through pipes with poll() so that neither can
 * fill and block it, and the stop flag is checked between reads: a raised
 * flag kills the child and abandons the repetition.
 */
#include "peer_llamacpp.h"
#include "peers.h"
#include "tbutil.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

#define OUT_MAX ((size_t)1 << 20)   /* llama-bench's jsonl for one test is < 2 KiB */
#define ERR_KEEP 1024               /* the tail of its stderr kept for messages   */

/* ===================================================================== */
/* The executable                                                         */
/* ===================================================================== */

static int is_exec(const char *p) {
    struct stat st;
    return stat(p, &st) == 0 && S_ISREG(st.st_mode) && access(p, X_OK) == 0;
}

/* name on $PATH into out; 0 when found. */
static int path_search(const char *name, char *out, size_t cap) {
    const char *path = getenv("PATH");
    if (!path || !*path) path = "/usr/local/bin:/usr/bin:/bin";
    for (const char *s = path; *s;) {
        size_t n = strcspn(s, ":");
        if (n > 0 && (size_t)snprintf(out, cap, "%.*s/%s", (int)n, s, name) < cap && is_exec(out)) return 0;
        s += n;
        if (*s == ':') s++;
    }
    return -1;
}

int tb_peer_lc_resolve(const tb_plan_t *plan, tb_peer_lc_t *lc) {
    memset(lc, 0, sizeof *lc);
    const tb_value_t *b = &plan->engine.v[K_ENGINE_BINARY], *k = &plan->engine.v[K_ENGINE_KIND];
    int line = b->line ? b->line : k->line ? k->line : 1;
    snprintf(lc->where, sizeof lc->where, "%s:%d", plan->path, line);
    const char *env = getenv("TB_LLAMA_BENCH");
    const char *from = b->s && *b->s ? "[engine] binary" : env && *env ? "$TB_LLAMA_BENCH" : "PATH";
    if (b->s && *b->s) {
        if (b->s[0] == '/' || !plan->dir || !*plan->dir)
            snprintf(lc->binary, sizeof lc->binary, "%s", b->s);
        else
            snprintf(lc->binary, sizeof lc->binary, "%s/%s", plan->dir, b->s);
    } else if (env && *env) {
        if (strchr(env, '/')) snprintf(lc->binary, sizeof lc->binary, "%s", env);
        else if (path_search(env, lc->binary, sizeof lc->binary))
            snprintf(lc->binary, sizeof lc->binary, "%s", env);
    } else if (path_search("llama-bench", lc->binary, sizeof lc->binary)) {
        return tb_err(TB_ERR_NOT_FOUND, "%s: llama.cpp binary llama-bench: not found on PATH; set "
                      "[engine] binary = PATH or $TB_LLAMA_BENCH", lc->where);
    }
    if (!is_exec(lc->binary))
        return tb_err(TB_ERR_NOT_FOUND, "%s: llama.cpp binary %s (from %s): %s", lc->where, lc->binary,
                      from, access(lc->binary, F_OK) ? strerror(errno) : "not an executable file");
    return TB_OK;
}

void tb_peer_lc_case_of(const tb_section_t *sec, int ci, tb_peer_lc_case_t *c) {
    int64_t p = tb_section_case_param(sec, ci);
    c->n_prompt = c->n_gen = c->depth = 0;
    if (sec->kind == TB_SEC_PREFILL) c->n_prompt = p;
    else if (sec->kind == TB_SEC_DECODE) { c->n_gen = sec->v[K_DECODE_TOKENS].i; c->depth = p; }
}

/* ===================================================================== */
/* The output                                                             */
/* ===================================================================== */

static int64_t field_i64(const tb_peer_row_t *r, const char *k, int64_t dflt) {
    const char *v = tb_peer_get(r, k);
    return v && *v ? strtoll(v, NULL, 10) : dflt;
}

int tb_peer_lc_parse(tb_peer_lc_t *lc, const tb_peer_lc_case_t *c, const char *text, size_t len,
                     tb_rep_t *rep) {
    tb_rep_reset(rep);
    tb_peer_rows_t rows = {0};
    char err[512];
    int rc = TB_OK;
    if (tb_peer_parse(TB_PEER_FMT_LB_JSONL, text, len, &rows, err, sizeof err)) {
        rc = tb_err(TB_ERR_FORMAT, "%s: llama.cpp binary %s: output line %s", lc->where, lc->binary, err);
        goto out;
    }
    if (rows.n != 1) {
        rc = tb_err(TB_ERR_FORMAT, "%s: llama.cpp binary %s: %d output rows, expected one "
                    "llama-bench jsonl row", lc->where, lc->binary, rows.n);
        goto out;
    }
    const tb_peer_row_t *r = &rows.v[0];
    int64_t np = field_i64(r, "n_prompt", -1), ng = field_i64(r, "n_gen", -1), nd = field_i64(r, "n_depth", 0);
    if (np != c->n_prompt || ng != c->n_gen || nd != c->depth) {
        rc = tb_err(TB_ERR_FORMAT, "%s: llama.cpp binary %s: its row is n_prompt=%lld n_gen=%lld "
                    "n_depth=%lld, asked -p %lld -n %lld -d %lld", lc->where, lc->binary, (long long)np,
                    (long long)ng, (long long)nd, (long long)c->n_prompt, (long long)c->n_gen,
                    (long long)c->depth);
        goto out;
    }
    if (r->n_ns != 1 || r->samples_ns[0] <= 0) {
        rc = tb_err(TB_ERR_FORMAT, "%s: llama.cpp binary %s: expected one positive samples_ns "
                    "entry (-r 1), got %d", lc->where, lc->binary, r->n_ns < 0 ? 0 : r->n_ns);
        goto out;
    }
    snprintf(lc->version, sizeof lc->version, "b%s (%s)",
             tb_peer_get(r, "build_number") ? tb_peer_get(r, "build_number") : "?",
             tb_peer_get(r, "build_commit") ? tb_peer_get(r, "build_commit") : "?");
    snprintf(lc->backend, sizeof lc->backend, "%s", tb_peer_get(r, "backends") ? tb_peer_get(r, "backends") : "");
    snprintf(lc->cpu_info, sizeof lc->cpu_info, "%s", tb_peer_get(r, "cpu_info") ? tb_peer_get(r, "cpu_info") : "");
    /* llama-bench's t/s is tokens / sample time; the same from the nanoseconds */
    double s = (double)r->samples_ns[0] / 1e9, n = (double)(c->n_prompt + c->n_gen);
    double tps = n / s;
    tb_model_info_t mi;
    tb_bytes_per_token_t bt;
    if (c->n_gen == 0) {
        tb_rep_metric(rep, TB_M_PREFILL_TOK_PER_S, tps);
        tb_rep_metric(rep, TB_M_PREFILL_MS, s * 1e3);
        /* as workload.c: a batched prefill reads every weight once per batch */
        if (c->tb && c->n_prompt > 0 && tb_model_get_info(c->tb, &mi) == TB_OK) {
            int64_t nb = c->n_batch > 0 && c->n_batch < c->n_prompt ? c->n_batch : c->n_prompt;
            double per_tok = (double)mi.weight_bytes / (double)nb;
            tb_rep_metric(rep, TB_M_BYTES_PER_TOKEN, per_tok);
            tb_rep_metric(rep, TB_M_ACHIEVED_GBPS, tps * per_tok / 1e9);
        }
    } else {
        tb_rep_metric(rep, TB_M_DECODE_TOK_PER_S, tps);
        tb_rep_metric(rep, TB_M_DECODE_MS, s * 1e3);
        /* as workload.c: bytes per token at the middle of the timed tokens */
        if (c->tb && tb_model_bytes_per_token(c->tb, (int32_t)(c->depth + c->n_gen / 2), c->kv_type, &bt) == TB_OK) {
            tb_rep_metric(rep, TB_M_BYTES_PER_TOKEN, (double)bt.total);
            tb_rep_metric(rep, TB_M_ACHIEVED_GBPS, tps * (double)bt.total / 1e9);
        }
    }
out:
    tb_peer_rows_free(&rows);
    return rc;
}

/* ===================================================================== */
/* The child                                                              */
/* ===================================================================== */

/* Append to a bounded buffer; *over set when output was dropped. */
static void grab(char *buf, size_t cap, size_t *len, const char *p, size_t n, int *over) {
    if (*len + n + 1 > cap) { n = cap - 1 - *len; *over = 1; }
    memcpy(buf + *len, p, n);
    *len += n;
    buf[*len] = '\0';
}

/* Keep the last ERR_KEEP bytes of stderr. */
static void tail(char *buf, size_t *len, const char *p, size_t n) {
    if (n >= ERR_KEEP) { p += n - (ERR_KEEP - 1); n = ERR_KEEP - 1; }
    if (*len + n >= ERR_KEEP) {
        size_t drop = *len + n - (ERR_KEEP - 1);
        memmove(buf, buf + drop, *len - drop);
        *len -= drop;
    }
    memcpy(buf + *len, p, n);
    *len += n;
    buf[*len] = '\0';
}

/* The last non-empty line of s (in place). */
static const char *last_line(char *s) {
    size_t n = strlen(s);
    while (n > 0 && (s[n - 1] == '\n' || s[n - 1] == '\r' || s[n - 1] == ' ')) s[--n] = '\0';
    char *nl = strrchr(s, '\n');
    return nl ? nl + 1 : s;
}

int tb_peer_lc_run(tb_peer_lc_t *lc, const tb_peer_lc_case_t *c, tb_rep_t *rep,
                   const volatile sig_atomic_t *stop) {
    char a_t[16], a_p[24], a_n[24], a_d[24], a_b[16];
    const char *kv = c->kv_type == TB_TYPE_F32 ? "f32" : "f16";
    snprintf(a_t, sizeof a_t, "%d", c->threads);
    snprintf(a_p, sizeof a_p, "%lld", (long long)c->n_prompt);
    snprintf(a_n, sizeof a_n, "%lld", (long long)c->n_gen);
    snprintf(a_d, sizeof a_d, "%lld", (long long)c->depth);
    snprintf(a_b, sizeof a_b, "%d", c->n_batch);
    char *argv[] = {lc->binary, "-m", (char *)c->model, "-t", a_t, "-p", a_p, "-n", a_n, "-d", a_d,
                    "-r", "1", "-b", a_b, "-ub", a_b, "-ctk", (char *)kv, "-ctv", (char *)kv,
                    "-o", "jsonl", NULL};
    int po[2] = {-1, -1}, pe[2] = {-1, -1};
    if (pipe2(po, O_CLOEXEC) || pipe2(pe, O_CLOEXEC)) {
        int e = errno;
        for (int i = 0; i < 2; i++) { if (po[i] >= 0) close(po[i]); if (pe[i] >= 0) close(pe[i]); }
        return tb_err(TB_ERR_IO, "%s: llama.cpp binary %s: pipe: %s", lc->where, lc->binary, strerror(e));
    }
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, po[1], 1);
    posix_spawn_file_actions_adddup2(&fa, pe[1], 2);
    pid_t pid;
    int e = posix_spawn(&pid, lc->binary, &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    close(po[1]);
    close(pe[1]);
    if (e) {
        close(po[0]);
        close(pe[0]);
        return tb_err(TB_ERR_IO, "%s: llama.cpp binary %s: cannot start: %s", lc->where, lc->binary, strerror(e));
    }
    char *out = malloc(OUT_MAX);
    char err[ERR_KEEP] = "", chunk[4096];
    size_t n_out = 0, n_err = 0;
    int over = 0, interrupted = 0;
    struct pollfd fds[2] = {{po[0], POLLIN, 0}, {pe[0], POLLIN, 0}};
    if (out) out[0] = '\0';
    while (fds[0].fd >= 0 || fds[1].fd >= 0) {
        if (*stop && !interrupted) { kill(pid, SIGTERM); interrupted = 1; }
        int pr = poll(fds, 2, 100);
        if (pr < 0 && errno == EINTR) continue;
        if (pr < 0) break;
        for (int i = 0; i < 2; i++) {
            if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
            ssize_t k = read(fds[i].fd, chunk, sizeof chunk);
            if (k < 0 && errno == EINTR) continue;
            if (k <= 0) { close(fds[i].fd); fds[i].fd = -1; continue; }
            if (i == 0 && out) grab(out, OUT_MAX, &n_out, chunk, (size_t)k, &over);
            else if (i == 1) tail(err, &n_err, chunk, (size_t)k);
        }
    }
    for (int i = 0; i < 2; i++) if (fds[i].fd >= 0) close(fds[i].fd);
    int st = 0;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {}
    int rc;
    if (interrupted) rc = TB_INTERRUPTED;
    else if (!out) rc = tb_err(TB_ERR_NOMEM, "out of memory");
    else if (WIFSIGNALED(st))
        rc = tb_err(TB_ERR_IO, "%s: llama.cpp binary %s: killed by signal %d: %s", lc->where, lc->binary,
                    WTERMSIG(st), last_line(err));
    else if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
        rc = tb_err(TB_ERR_IO, "%s: llama.cpp binary %s: exit status %d: %s", lc->where, lc->binary,
                    WIFEXITED(st) ? WEXITSTATUS(st) : -1, last_line(err));
    else if (over)
        rc = tb_err(TB_ERR_FORMAT, "%s: llama.cpp binary %s: more than %zu bytes of output", lc->where,
                    lc->binary, OUT_MAX);
    else rc = tb_peer_lc_parse(lc, c, out, n_out, rep);
    free(out);
    return rc;
}
