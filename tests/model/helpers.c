/* helpers.c — see helpers.h. */
#include "helpers.h"

#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int th_tmpdir(char *dir) {
    const char *base = getenv("TMPDIR");
    snprintf(dir, 256, "%s/tb-model-XXXXXX", base && *base ? base : "/tmp");
    return mkdtemp(dir) ? 0 : -1;
}

void th_rmdir(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    char p[512];
    while ((e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        unlink(p);
    }
    closedir(d);
    rmdir(dir);
}

char th_dir[256];

int th_setup(void **st) {
    (void)st;
    return th_tmpdir(th_dir);
}

int th_teardown(void **st) {
    (void)st;
    th_rmdir(th_dir);
    return 0;
}

int th_synth(const char *dir, const char *preset, int type, char *path, size_t cap) {
    if (type < 0) snprintf(path, cap, "%s/%s.gguf", dir, preset);
    else snprintf(path, cap, "%s/%s-%s.gguf", dir, preset, tb_type_name((tb_type_t)type));
    if (access(path, F_OK) == 0) return TB_OK;
    tb_synth_params_t p = {.preset = preset, .type = type, .seed = 1234};
    return tb_synth_model(&p, path);
}

int th_rewrite(const char *src, const char *dst, const th_edit *e) {
    tb_gguf_t *g;
    int rc = tb_gguf_open(src, &g);
    if (rc) return rc;
    tb_gguf_writer_t *w;
    if ((rc = tb_gguf_writer_new(&w))) { tb_gguf_close(g); return rc; }
    for (int64_t i = 0; i < tb_gguf_n_kv(g) && !rc; i++) {
        const char *key = tb_gguf_kv_key(g, i);
        if (e->drop_key && !strcmp(key, e->drop_key)) continue;
        if (e->arch && !strcmp(key, "general.architecture")) rc = tb_gguf_set_str(w, key, e->arch);
        else rc = tb_gguf_copy_kv(w, g, i);
    }
    int64_t nt = tb_gguf_n_tensors(g);
    for (int64_t i = 0; i < nt && !rc; i++) {
        tb_gguf_tensor_t t;
        if ((rc = tb_gguf_tensor(g, i, &t))) break;
        if (e->drop_tensor && !strcmp(t.name, e->drop_tensor)) continue;
        int64_t ne[4] = {t.ne[0], t.ne[1], t.ne[2], t.ne[3]};
        if (e->transpose_tensor && !strcmp(t.name, e->transpose_tensor)) { ne[0] = t.ne[1]; ne[1] = t.ne[0]; }
        rc = tb_gguf_add_tensor(w, t.name, t.type, t.n_dims, ne);
    }
    if (!rc) rc = tb_gguf_writer_begin(w, dst);
    for (int64_t i = 0; i < nt && !rc; i++) {
        tb_gguf_tensor_t t;
        if ((rc = tb_gguf_tensor(g, i, &t))) break;
        if (e->drop_tensor && !strcmp(t.name, e->drop_tensor)) continue;
        rc = tb_gguf_write_tensor_data(w, t.data, t.nbytes);
    }
    if (!rc) rc = tb_gguf_writer_finish(w);
    tb_gguf_writer_free(w);
    tb_gguf_close(g);
    return rc;
}

double th_rel_l2(const float *a, const float *b, size_t n) {
    double num = 0, den = 0;
    for (size_t i = 0; i < n; i++) {
        double d = (double)a[i] - b[i];
        num += d * d;
        den += (double)b[i] * b[i];
    }
    return sqrt(num / (den > 0 ? den : 1e-300));
}

double th_rel_l2_d(const float *a, const double *b, size_t n) {
    double num = 0, den = 0;
    for (size_t i = 0; i < n; i++) {
        double d = (double)a[i] - b[i];
        num += d * d;
        den += b[i] * b[i];
    }
    return sqrt(num / (den > 0 ? den : 1e-300));
}

int th_argmax(const float *x, int n) {
    int b = 0;
    for (int i = 1; i < n; i++) if (x[i] > x[b]) b = i;
    return b;
}

int th_argmax_d(const double *x, int n) {
    int b = 0;
    for (int i = 1; i < n; i++) if (x[i] > x[b]) b = i;
    return b;
}

int th_greedy(const tb_model_t *m, int n_threads, int n_batch, tb_type_t kv,
              const int32_t *prompt, int n_prompt, bool one_by_one,
              int32_t *gen, int n_gen, float *last_logits) {
    tb_session_params_t sp = tb_session_default_params();
    sp.n_ctx = n_prompt + n_gen + 1;
    sp.n_threads = n_threads;
    sp.n_batch = n_batch;
    sp.kv_type = kv;
    tb_session_t *s;
    int rc = tb_session_new(m, &sp, &s);
    if (rc) return rc;
    const int V = tb_model_n_vocab(m);
    for (int i = 0; i < n_prompt && !rc; i += one_by_one ? 1 : n_prompt)
        rc = tb_session_eval(s, prompt + i, one_by_one ? 1 : n_prompt, false);
    for (int i = 0; i < n_gen && !rc; i++) {
        gen[i] = th_argmax(tb_session_logits(s, -1), V);
        rc = tb_session_eval(s, &gen[i], 1, false);
    }
    if (!rc && last_logits) memcpy(last_logits, tb_session_logits(s, -1), (size_t)V * sizeof(float));
    tb_session_free(s);
    return rc;
}

void th_prompt(int32_t *ids, int n, int n_vocab, uint32_t seed) {
    uint32_t x = seed * 2654435761u + 1;
    for (int i = 0; i < n; i++) {
        x ^= x << 13; x ^= x >> 17; x ^= x << 5;
        ids[i] = (int32_t)(x % (uint32_t)n_vocab);
    }
}

int th_sessions_1_2(const tb_model_t *m, tb_session_params_t sp, tb_session_t **s1, tb_session_t **s2) {
    *s2 = NULL;
    sp.n_threads = 1;
    int rc = tb_session_new(m, &sp, s1);
    if (rc) return rc;
    sp.n_threads = 2;
    return tb_session_new(m, &sp, s2);
}

int th_load_split(const char *preset, int type, tb_model_t **m) {
    char path[512];
    tb_model_info_t in;
    *m = NULL;
    if (th_synth(th_dir, preset, type, path, sizeof path) || tb_model_load(path, m) ||
        tb_model_get_info(*m, &in)) {
        fprintf(stderr, "%s type %d: %s\n", preset, type, tb_last_error());
        tb_model_free(*m);
        *m = NULL;
        return -1;
    }
    if (in.split_layers != in.n_layer) {
        fprintf(stderr, "%s type %d: %d of %d layers split\n", preset, type, in.split_layers, in.n_layer);
        tb_model_free(*m);
        *m = NULL;
        return -1;
    }
    return 0;
}
