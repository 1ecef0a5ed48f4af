/*
 * runner_cache.c — the synthesized-model cache of the runner (see
 * runner.h, tb_runner_model_path).
 */
#include "runner.h"
#include "tbutil.h"
#include "ternbench.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ===================================================================== */
/* Model cache                                                            */
/* ===================================================================== */

/* mkdir -p */
static int make_dirs(const char *path) {
    char buf[4096];
    snprintf(buf, sizeof buf, "%s", path);
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/') continue;
        *p = '\0';
        if (mkdir(buf, 0777) != 0 && errno != EEXIST)
            return tb_err(TB_ERR_IO, "%s: cannot create directory: %s", buf, strerror(errno));
        *p = '/';
    }
    if (mkdir(buf, 0777) != 0 && errno != EEXIST)
        return tb_err(TB_ERR_IO, "%s: cannot create directory: %s", buf, strerror(errno));
    return TB_OK;
}

static void cache_dir(const tb_plan_t *p, char *buf, size_t cap) {
    const char *cd = p->model.v[K_MODEL_CACHE_DIR].s, *env;
    if (*cd) {
        if (cd[0] == '/' || !p->dir[0]) snprintf(buf, cap, "%s", cd);
        else snprintf(buf, cap, "%s/%s", p->dir, cd);
    } else if ((env = getenv("TB_CACHE_DIR")) && *env) {
        snprintf(buf, cap, "%s", env);
    } else if ((env = getenv("XDG_CACHE_HOME")) && *env) {
        snprintf(buf, cap, "%s/ternbench", env);
    } else {
        snprintf(buf, cap, "%s%s.cache", p->dir, p->dir[0] ? "/" : "");
    }
}

/* Remove FINAL.PID.part and FINAL.PID.part.tmp left in dir by synthesizing
 * processes that died (SIGKILL, power loss): each can be as large as the
 * model. A live PID's files are another run's work in progress and stay. */
static void drop_stale_parts(const char *dir, const char *final) {
    const char *base = strrchr(final, '/');
    base = base ? base + 1 : final;
    size_t n = strlen(base);
    DIR *d = opendir(dir);
    if (!d) return;
    for (struct dirent *e; (e = readdir(d));) {
        if (strncmp(e->d_name, base, n) != 0 || e->d_name[n] != '.') continue;
        char *end;
        long pid = strtol(e->d_name + n + 1, &end, 10);
        if (end == e->d_name + n + 1 || pid <= 0 || strncmp(end, ".part", 5) != 0) continue;
        if (pid == (long)getpid() || kill((pid_t)pid, 0) == 0 || errno != ESRCH) continue;
        char f[4096];
        if ((size_t)snprintf(f, sizeof f, "%s/%s", dir, e->d_name) < sizeof f) unlink(f);
    }
    closedir(d);
}

static void synth_progress(void *ud, uint64_t done, uint64_t total) {
    int *last = ud;
    int pct = total ? (int)(100.0 * (double)done / (double)total) : 100;
    if (pct == *last) return;
    *last = pct;
    fprintf(stderr, "\r\033[Ksynthesizing model: %d%%", pct);
    fflush(stderr);
}

int tb_runner_model_path(const tb_plan_t *plan, int variant, char **path, int quiet) {
    char type[32];
    tb_plan_variant_type(plan, variant, type, sizeof type);
    return tb_runner_synth_path(plan, type, path, quiet);
}

/* [model] path quantized into `type` in the cache, once: named by the
 * source's absolute path, size and modification time, so that an edited
 * source is quantized again; published with an atomic rename. */
static int quantized_path(const tb_plan_t *plan, const char *type, char **path, int quiet) {
    tb_type_t t;
    int rc = tb_type_from_name(type, &t);
    if (rc) return tb_err_prefix(rc, "%s: [model] type %s", plan->path, type);
    struct stat st;
    char *abs = realpath(plan->model_path, NULL);
    if (!abs || stat(abs, &st) != 0) {
        free(abs);
        return tb_err(TB_ERR_IO, "%s: cannot stat the model: %s", plan->model_path, strerror(errno));
    }
    char key[4200], h[65], dir[2048];
    snprintf(key, sizeof key, "%s\n%lld\n%lld", abs, (long long)st.st_size, (long long)st.st_mtime);
    tb_sha256_hex(key, strlen(key), h);
    const char *base = strrchr(abs, '/') ? strrchr(abs, '/') + 1 : abs;
    size_t stem = strcspn(base, ".");
    cache_dir(plan, dir, sizeof dir);
    char *final = NULL, *tmp = NULL;
    if (asprintf(&final, "%s/%.*s-%s-src%.12s.gguf", dir, (int)stem, base, tb_type_name(t), h) < 0) final = NULL;
    if (!final) { free(abs); return tb_err(TB_ERR_NOMEM, "out of memory"); }
    if ((rc = make_dirs(dir))) goto out;
    drop_stale_parts(dir, final);
    if (access(final, R_OK) == 0) goto out;
    if (asprintf(&tmp, "%s.%d.part", final, (int)getpid()) < 0) { tmp = NULL; rc = tb_err(TB_ERR_NOMEM, "out of memory"); goto out; }
    if (!quiet) fprintf(stderr, "quantizing %s to %s\n", base, tb_type_name(t));
    rc = tb_quantize_model(abs, tmp, t, NULL, NULL);
    if (rc) tb_err_prefix(rc, "%s: quantizing to %s", plan->model_path, tb_type_name(t));
    if (rc == TB_OK && rename(tmp, final) != 0)
        rc = tb_err(TB_ERR_IO, "%s: cannot publish the quantized model: %s", final, strerror(errno));
    if (rc) unlink(tmp);
out:
    free(tmp);
    free(abs);
    if (rc) { free(final); return rc; }
    *path = final;
    return TB_OK;
}

int tb_runner_synth_path(const tb_plan_t *plan, const char *type, char **path, int quiet) {
    *path = NULL;
    if (plan->model_path && !strcmp(type, "default")) {
        *path = strdup(plan->model_path);
        return *path ? TB_OK : tb_err(TB_ERR_NOMEM, "out of memory");
    }
    if (plan->model_path) return quantized_path(plan, type, path, quiet);
    const tb_section_t *m = &plan->model;
    const char *preset = m->v[K_MODEL_SYNTH].s;
    const char *vocab = m->v[K_MODEL_VOCAB_FROM].s;
    char dir[2048], vtag[32] = "", vpath[2048] = "";
    cache_dir(plan, dir, sizeof dir);
    if (*vocab) {
        if (vocab[0] == '/' || !plan->dir[0]) snprintf(vpath, sizeof vpath, "%s", vocab);
        else snprintf(vpath, sizeof vpath, "%s/%s", plan->dir, vocab);
        char h[65];
        tb_sha256_hex(vpath, strlen(vpath), h);
        snprintf(vtag, sizeof vtag, "-vocab%.12s", h);
    }
    char *final;
    if (asprintf(&final, "%s/%s-%s-seed%lld%s.gguf", dir, preset, type,
                 (long long)m->v[K_MODEL_SEED].i, vtag) < 0)
        return tb_err(TB_ERR_NOMEM, "out of memory");

    int rc = make_dirs(dir);
    if (rc) { free(final); return rc; }
    drop_stale_parts(dir, final);
    tb_synth_params_t sp = {.preset = preset, .type = -1, .seed = (uint64_t)m->v[K_MODEL_SEED].i,
                            .vocab_from = *vocab ? vpath : NULL};
    if (strcmp(type, "default") != 0) {
        tb_type_t t;
        if ((rc = tb_type_from_name(type, &t))) { free(final); return rc; }
        sp.type = (int)t;
    }
    if (access(final, R_OK) == 0) {   /* cached: used only once verified to be this model */
        if ((rc = tb_synth_verify(&sp, final))) { free(final); return rc; }
        *path = final;
        return TB_OK;
    }
    int last = -1;
    if (!quiet && isatty(STDERR_FILENO)) { sp.progress = synth_progress; sp.progress_ud = &last; }
    char *tmp;
    if (asprintf(&tmp, "%s.%d.part", final, (int)getpid()) < 0) { free(final); return tb_err(TB_ERR_NOMEM, "out of memory"); }
    /* synthesize under a private name, publish with an atomic rename: two
     * runs racing produce the same bytes and either rename wins */
    rc = tb_synth_model(&sp, tmp);
    if (sp.progress) fprintf(stderr, "\r\033[K");
    if (rc == TB_OK && rename(tmp, final) != 0)
        rc = tb_err(TB_ERR_IO, "%s: cannot publish synthesized model: %s", final, strerror(errno));
    if (rc) { unlink(tmp); free(tmp); free(final); return rc; }
    free(tmp);
    *path = final;
    return TB_OK;
}

