/*
 * test_place.c — where the loader puts repacked weights (model.c):
 *  - a MoE layer's expert gate and up stacks of one repacked type are one
 *    region, expert by expert: up_e's copy right after gate_e's, for every
 *    layer and expert (maple-tiny and moe-tiny, every type synth makes
 *    that the active tier repacks);
 *  - when its down stack repacks to the same bytes per matrix it joins
 *    them: down_e right after up_e, gate_e+1 right after down_e; else
 *    gate_e+1 follows up_e and the down stack keeps its own packed copies;
 *  - repack_bytes counts every copy once (the sum of tb_repack_size);
 *  - loading with 1 and with 3 placing threads gives the same copies (the
 *    column slices' too), byte for byte, and the same resident/repacked byte counts;
 *  - column slices (the split decode's, model.c split_columns): a dense
 *    layer (quantized or f32 activations) gets Wo and ffn_down cut, an MoE
 *    layer Wo alone, a layer that cannot split (MoE experts on f32
 *    activations, a cut inside a block) neither; each slice's rows are its
 *    columns of the file rows, and its placed bytes add up to the whole
 *    matrix's (the slices take no extra memory);
 *  - a split layer's Q, K, V (and a dense one's gate, up) are halves, and
 *    each thread's part is one stretch: Q_0 K_0 V_0 Wo_0 Q_1 K_1 V_1 Wo_1
 *    and gate_0 up_0 down_0 gate_1 up_1 down_1, each right after the one
 *    before (_0: the first half's rows, or slice 0).
 * The forward pass on this placement is checked against the f64
 * reference by test_ref.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "helpers.h"
#include "model/model.h"
#include "kernels/kernels.h"

static const uint8_t *copy_of(const tb_weight_t *w, int64_t e) {
    return tb_repack_lookup((const uint8_t *)w->data + (size_t)e * w->mat_bytes, w->row_bytes,
                            tb_isa_active(), w->type);
}

/* Checks one file; returns the number of layers whose pair was placed
 * (*triples: of them, those whose down stack joined it). */
static int check_file(const char *preset, int type, int *triples) {
    char path[512];
    assert_int_equal(th_synth(th_dir, preset, type, path, sizeof path), TB_OK);
    tb_model_t *m;
    if (tb_model_load(path, &m) != TB_OK) fail_msg("%s: %s", path, tb_last_error());
    int paired = 0;
    uint64_t want_rp = 0;
    const tb_weight_t *all[] = {&m->output};
    for (size_t i = 0; i < TB_ARRAY_LEN(all); i++)
        want_rp += tb_repack_size(all[i]->type, all[i]->row_bytes, all[i]->n_out, all[i]->n_mat);
    for (int32_t il = 0; il < m->info.n_layer; il++) {
        const tb_layer_t *L = &m->layers[il];
        const tb_weight_t *ws[] = {&L->wq, &L->wk, &L->wv, &L->wo, &L->ffn_gate, &L->ffn_up,
                                   &L->ffn_down, &L->router, &L->gate_exps, &L->up_exps, &L->down_exps};
        for (size_t i = 0; i < TB_ARRAY_LEN(ws); i++)
            if (ws[i]->data) want_rp += tb_repack_size(ws[i]->type, ws[i]->row_bytes, ws[i]->n_out, ws[i]->n_mat);
        const tb_weight_t *g = &L->gate_exps, *u = &L->up_exps, *d = &L->down_exps;
        if (!g->data || !copy_of(g, 0)) continue;
        const size_t mb = tb_repack_size(g->type, g->row_bytes, g->n_out, 1);
        assert_true(mb % 64 == 0);
        const bool triple = copy_of(d, 0) && d->n_mat == g->n_mat &&
                            tb_repack_size(d->type, d->row_bytes, d->n_out, 1) == mb;
        for (int64_t e = 0; e < g->n_mat; e++) {
            assert_ptr_equal(copy_of(u, e), copy_of(g, e) + mb);
            if (triple) assert_ptr_equal(copy_of(d, e), copy_of(u, e) + mb);
            const uint8_t *last = triple ? copy_of(d, e) : copy_of(u, e);
            if (e + 1 < g->n_mat) assert_ptr_equal(copy_of(g, e + 1), last + mb);
        }
        if (copy_of(d, 0) && !triple) {
            const size_t md = tb_repack_size(d->type, d->row_bytes, d->n_out, 1);
            for (int64_t e = 0; e + 1 < d->n_mat; e++) assert_ptr_equal(copy_of(d, e + 1), copy_of(d, e) + md);
        }
        *triples += triple;
        paired++;
    }
    assert_int_equal(m->info.repack_bytes, want_rp);
    tb_model_free(m);
    return paired;
}

static void test_gate_up_interleaved(void **st) {
    (void)st;
    const int types[] = {-1, TB_TYPE_TQ2_0, TB_TYPE_TQ1_0, TB_TYPE_Q4_0, TB_TYPE_Q8_0, TB_TYPE_F16};
    int paired = 0, triples = 0;
    for (size_t i = 0; i < TB_ARRAY_LEN(types); i++) {
        paired += check_file("maple-tiny", types[i], &triples);
        paired += check_file("moe-tiny", types[i], &triples);
    }
    /* on x86-64 with AVX2 or better some of these types repack, and the
     * tiny presets' down stacks (n_ff_exp = n_embd) have gate's bytes */
    if (tb_isa_active() == TB_ISA_AVX512 || tb_isa_active() == TB_ISA_AVX2) assert_true(triples > 0);
    print_message("layers with gate/up placed as pairs: %d, with down too: %d\n", paired, triples);
}

/* The repacked copy of half k of w (split_columns' halves), or NULL. */
static const uint8_t *half_copy(const tb_weight_t *w, int k) {
    return tb_repack_lookup((const uint8_t *)w->data + (size_t)(k * w->half_rows) * w->row_bytes, w->row_bytes,
                            tb_isa_active(), w->type);
}

/* One matrix stack's run-time bytes (repacked copy, or its arena copy)
 * agree between two loads of the same file. */
static void same_weight(const tb_weight_t *wa, const tb_weight_t *wb) {
    if (!wa->data) { assert_null(wb->data); return; }
    assert_int_equal(wa->half_rows, wb->half_rows);
    if (wa->half_rows && copy_of(wa, 0)) {       /* two halves, each its own copy */
        const size_t hb = tb_repack_size(wa->type, tb_type_row_bytes(wa->type, wa->n_in), wa->half_rows, 1);
        for (int k = 0; k < 2; k++) assert_memory_equal(half_copy(wa, k), half_copy(wb, k), hb);
        return;
    }
    const size_t rb = tb_repack_size(wa->type, tb_type_row_bytes(wa->type, wa->n_in), wa->n_out, 1);
    for (int64_t e = 0; e < wa->n_mat; e++) {
        const uint8_t *ca = copy_of(wa, e), *cb = copy_of(wb, e);
        if (ca) { assert_non_null(cb); assert_memory_equal(ca, cb, rb); continue; }
        assert_null(cb);
        assert_ptr_not_equal(wa->data, wb->data);       /* two arena copies */
        assert_memory_equal((const uint8_t *)wa->data + (size_t)e * wa->mat_bytes,
                            (const uint8_t *)wb->data + (size_t)e * wb->mat_bytes, wa->mat_bytes);
    }
}

static void same_placement(const tb_model_t *a, const tb_model_t *b) {
    assert_int_equal(a->info.repack_bytes, b->info.repack_bytes);
    assert_int_equal(a->info.resident_bytes, b->info.resident_bytes);
    for (int32_t il = 0; il < a->info.n_layer; il++) {
        const tb_layer_t *La = &a->layers[il], *Lb = &b->layers[il];
        const tb_weight_t *wa[] = {&La->wq, &La->wk, &La->wv, &La->wo, &La->ffn_gate, &La->ffn_up,
                                   &La->ffn_down, &La->router, &La->gate_exps, &La->up_exps, &La->down_exps};
        const tb_weight_t *wb[] = {&Lb->wq, &Lb->wk, &Lb->wv, &Lb->wo, &Lb->ffn_gate, &Lb->ffn_up,
                                   &Lb->ffn_down, &Lb->router, &Lb->gate_exps, &Lb->up_exps, &Lb->down_exps};
        for (size_t i = 0; i < TB_ARRAY_LEN(wa); i++) same_weight(wa[i], wb[i]);
        for (int h = 0; h < 2; h++) {
            if (La->wo_cut) same_weight(&La->wo_sl[h], &Lb->wo_sl[h]);
            if (La->down_cut) same_weight(&La->down_sl[h], &Lb->down_sl[h]);
        }
    }
    same_weight(&a->output, &b->output);
}

static void test_threads_same_bytes(void **st) {
    (void)st;
    const char *presets[] = {"maple-tiny", "llama-tiny"};
    for (size_t p = 0; p < TB_ARRAY_LEN(presets); p++) {
        char path[512];
        assert_int_equal(th_synth(th_dir, presets[p], TB_TYPE_TQ2_0, path, sizeof path), TB_OK);
        tb_model_t *one, *three;
        tb_model_params_t p1 = {.weights = TB_WEIGHTS_COPY, .n_threads = 1};
        tb_model_params_t p3 = {.weights = TB_WEIGHTS_COPY, .n_threads = 3};
        if (tb_model_load_ex(path, &p1, &one) != TB_OK) fail_msg("%s", tb_last_error());
        if (tb_model_load_ex(path, &p3, &three) != TB_OK) fail_msg("%s", tb_last_error());
        same_placement(one, three);
        tb_model_free(one);
        tb_model_free(three);
    }
}

/* Expected cuts: Wo (want_wo: cut or not), ffn_down (want_down). Each
 * slice must hold exactly its columns of the file rows (read through its
 * own row stride: a repacked slice stays a view of the file rows, a copied
 * one is packed), and its placed bytes (repacked copy, or arena copy) must
 * add up to what the whole matrix would take: slices cost no memory. */
static void check_slices(const char *preset, int type, bool want_wo, bool want_down) {
    char path[512];
    assert_int_equal(th_synth(th_dir, preset, type, path, sizeof path), TB_OK);
    tb_model_t *m;
    if (tb_model_load(path, &m) != TB_OK) fail_msg("%s: %s", path, tb_last_error());
    const tb_model_info_t *in = &m->info;
    int split = 0;
    for (int32_t il = 0; il < in->n_layer; il++) {
        const tb_layer_t *L = &m->layers[il];
        const int64_t wo_cut = (int64_t)(in->n_head_kv / 2) * (in->n_head / in->n_head_kv) * in->head_dim;
        assert_int_equal(L->wo_cut, want_wo ? wo_cut : 0);
        if (!want_down) assert_int_equal(L->down_cut, 0);
        else assert_true(L->down_cut > 0 && L->down_cut < L->ffn_down.n_in);
        split += L->wo_cut > 0;
        const tb_weight_t *w[2] = {&L->wo, &L->ffn_down}, *sl[2] = {L->wo_sl, L->down_sl};
        const int64_t cut[2] = {L->wo_cut, L->down_cut};
        for (int k = 0; k < 2; k++) {
            if (!cut[k]) continue;
            const tb_type_traits_t *tr = tb_type_traits(w[k]->type);
            const size_t c0 = (size_t)(cut[k] / tr->blck) * tr->bytes;   /* bytes of slice 0 per row */
            assert_int_equal(sl[k][0].n_in + sl[k][1].n_in, w[k]->n_in);
            assert_int_equal(sl[k][0].n_in, cut[k]);
            size_t placed = 0, whole = tb_repack_size(w[k]->type, w[k]->row_bytes, w[k]->n_out, 1);
            if (!whole) whole = w[k]->mat_bytes;
            for (int h = 0; h < 2; h++) {
                const tb_weight_t *x = &sl[k][h];
                const size_t rp = tb_repack_size(x->type, tb_type_row_bytes(x->type, x->n_in), x->n_out, 1);
                if (rp) assert_non_null(copy_of(x, 0));                   /* found under the view */
                else assert_int_equal(x->row_bytes, tb_type_row_bytes(x->type, x->n_in));   /* packed */
                placed += rp ? rp : x->mat_bytes;
            }
            assert_int_equal(placed, whole);
            for (int64_t r = 0; r < w[k]->n_out; r++) {
                const uint8_t *f = (const uint8_t *)w[k]->data + (size_t)r * w[k]->row_bytes;
                assert_memory_equal((const uint8_t *)sl[k][0].data + (size_t)r * sl[k][0].row_bytes, f, c0);
                assert_memory_equal((const uint8_t *)sl[k][1].data + (size_t)r * sl[k][1].row_bytes, f + c0,
                                    w[k]->row_bytes - c0);
            }
        }
    }
    assert_int_equal(in->split_layers, split);
    tb_model_free(m);
}

static void test_split_slices(void **st) {
    (void)st;
    check_slices("llama-tiny", TB_TYPE_Q4_0, true, true);
    check_slices("llama-tiny", TB_TYPE_Q8_0, true, true);
    check_slices("maple-tiny", TB_TYPE_Q4_0, true, false);   /* MoE: Wo alone */
    check_slices("moe-tiny", TB_TYPE_Q8_0, true, false);
    check_slices("llama-tiny", TB_TYPE_F16, true, true);     /* f32 activations */
    check_slices("llama-tiny", TB_TYPE_BF16, true, true);
    check_slices("maple-tiny", TB_TYPE_F16, false, false);   /* MoE, f32-activation experts */
    check_slices("llama-tiny", TB_TYPE_TQ2_0, false, false); /* Wo's cut inside a 256-block */
}

/* Bytes of w's repacked copy, of one half when it has two. */
static size_t copy_bytes(const tb_weight_t *w) {
    return tb_repack_size(w->type, tb_type_row_bytes(w->type, w->n_in), w->half_rows ? w->half_rows : w->n_out, 1);
}

/* The split groups of one file (the halves' rows, then each thread's
 * stretch); returns the number of groups checked. */
static int check_groups(const char *preset, int type) {
    char path[512];
    assert_int_equal(th_synth(th_dir, preset, type, path, sizeof path), TB_OK);
    tb_model_t *m;
    if (tb_model_load(path, &m) != TB_OK) fail_msg("%s: %s", path, tb_last_error());
    int groups = 0;
    for (int32_t il = 0; il < m->info.n_layer; il++) {
        const tb_layer_t *L = &m->layers[il];
        if (!L->wo_cut) {
            assert_int_equal(L->wq.half_rows, 0);
            continue;
        }
        const int64_t hd = m->info.head_dim, gq = (int64_t)(m->info.n_head / m->info.n_head_kv) * hd;
        assert_int_equal(L->wq.half_rows, m->info.n_head_kv / 2 * gq);   /* thread 0's kv heads */
        assert_int_equal(L->wk.half_rows, m->info.n_head_kv / 2 * hd);
        assert_int_equal(L->wv.half_rows, m->info.n_head_kv / 2 * hd);
        if (L->down_cut) {
            assert_int_equal(L->ffn_gate.half_rows, L->down_cut);
            assert_int_equal(L->ffn_up.half_rows, L->down_cut);
        }
        const tb_weight_t *att[3] = {&L->wq, &L->wk, &L->wv}, *ffn[2] = {&L->ffn_gate, &L->ffn_up};
        const tb_weight_t *const *hv[2] = {att, ffn};
        const tb_weight_t *sl[2] = {L->wo_sl, L->down_sl};
        const int nh[2] = {3, L->down_cut ? 2 : 0};
        for (int g = 0; g < 2; g++) {
            if (!nh[g] || !copy_of(hv[g][0], 0)) continue;
            const uint8_t *at = half_copy(hv[g][0], 0);
            for (int k = 0; k < 2; k++) {
                for (int j = 0; j < nh[g]; j++) {
                    assert_ptr_equal(half_copy(hv[g][j], k), at);
                    at += copy_bytes(hv[g][j]);
                }
                assert_ptr_equal(copy_of(&sl[g][k], 0), at);
                at += copy_bytes(&sl[g][k]);
            }
            groups++;
        }
    }
    tb_model_free(m);
    return groups;
}

static void test_split_groups(void **st) {
    (void)st;
    const int types[] = {TB_TYPE_Q4_0, TB_TYPE_Q8_0, TB_TYPE_F16, TB_TYPE_BF16, TB_TYPE_TQ2_0};
    int groups = 0;
    for (size_t i = 0; i < TB_ARRAY_LEN(types); i++) {
        groups += check_groups("llama-tiny", types[i]);
        groups += check_groups("maple-tiny", types[i]);
    }
    /* on x86-64 with AVX2 or better Q4_0 and Q8_0 repack */
    if (tb_isa_active() == TB_ISA_AVX512 || tb_isa_active() == TB_ISA_AVX2) assert_true(groups > 0);
    print_message("split groups placed thread by thread: %d\n", groups);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gate_up_interleaved),
        cmocka_unit_test(test_threads_same_bytes),
        cmocka_unit_test(test_split_slices),
        cmocka_unit_test(test_split_groups),
    };
    return cmocka_run_group_tests(tests, th_setup, th_teardown);
}
