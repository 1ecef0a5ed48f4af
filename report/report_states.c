/*
 * report_states.c — `report --split GBPS`: every test's repetitions split
 * by the machine state they ran in, for machines whose read bandwidth
 * moves between levels (a KVM guest whose host places its vCPUs on one
 * chiplet or on two reads ~33 or ~60 GB/s, and moves between them within
 * seconds). A repetition is "low" or "high" when both its bandwidth probes
 * lie on one side of GBPS and are settled (tb_an_settled), else "mixed";
 * a cell is the median over its repetitions, their count beside it.
 * Compare cells within a state, never across: the mix of states differs
 * from run to run.
 */
#include "analysis.h"
#include "report_int.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* The state of a repetition: 0 low, 1 high, 2 mixed. */
static int state_of(double before, double after, double split) {
    if (!tb_an_settled(before, after)) return 2;
    if (before < split && after < split) return 0;
    if (before >= split && after >= split) return 1;
    return 2;
}

static void cell(char *b, size_t n, const double *v, int k, int dec) {
    if (!k) { snprintf(b, n, "—"); return; }
    snprintf(b, n, "%.*f (%d)", dec, tb_stats_median(v, (size_t)k), k);
}

int rp_states_write(rp_ctx_t *c) {
    const double split = c->opts->split_gbps;
    if (!(split > 0)) return TB_OK;
    rp_doc_t *d = c->doc;
    rp_doc_heading(d, 2, "Repetitions by machine state");
    rp_doc_para(d, "Split at %.1f GB/s: a repetition is low or high when both its bandwidth probes lie on one side"
                   " and agree within %.0f %%, else mixed; each cell is the median over its repetitions (their"
                   " count). Compare within a state.", split, 100 * TB_AN_PROBE_AGREE);
    static const char *const h[] = {"model", "test", "low % roofline", "high % roofline", "mixed % roofline",
                                    "low t/s", "high t/s", "mixed t/s"};
    int rows = 0;
    for (int i = 0; i < c->set->n_runs; i++) {
        const rp_run_t *r = &c->set->runs[i];
        for (int j = 0; j < r->n_tests; j++) {
            const rp_test_t *t = &r->tests[j];
            tb_metric_id_t hm = !strcmp(t->kind, "prefill") ? TB_M_PREFILL_TOK_PER_S : TB_M_DECODE_TOK_PER_S;
            if (strcmp(t->kind, "prefill") && strcmp(t->kind, "decode") && strcmp(t->kind, "generate")) continue;
            tb_an_test_t at;
            int rc = tb_an_test_load(c->set->db, t->id, &at);
            if (rc) return rc;
            double pct[3][256], tps[3][256];
            int np[3] = {0}, nt[3] = {0};
            const double *bb = tb_an_series(&at, TB_M_BW_BEFORE_GBPS), *ba = tb_an_series(&at, TB_M_BW_AFTER_GBPS);
            const double *pc = tb_an_series(&at, TB_M_ROOFLINE_PCT), *tv = tb_an_series(&at, hm);
            for (int k = 0; k < at.n_rep && k < 256; k++) {
                if (!isfinite(bb[k]) || !isfinite(ba[k])) continue;
                int s = state_of(bb[k], ba[k], split);
                if (isfinite(pc[k])) pct[s][np[s]++] = pc[k];
                if (isfinite(tv[k])) tps[s][nt[s]++] = tv[k];
            }
            tb_an_test_free(&at);
            if (!nt[0] && !nt[1] && !nt[2]) continue;
            if (!rows++) rp_doc_table(d, 8, h, "llrrrrrr");
            char x[6][48];
            for (int s = 0; s < 3; s++) {
                cell(x[s], sizeof x[s], pct[s], np[s], 1);
                cell(x[3 + s], sizeof x[3 + s], tps[s], nt[s], 2);
            }
            const char *cells[] = {r->series, t->label, x[0], x[1], x[2], x[3], x[4], x[5]};
            rp_doc_row(d, cells);
        }
    }
    if (rows) rp_doc_table_end(d);
    else rp_doc_note(d, "No repetition with both bandwidth probes recorded in the selected runs.");
    return TB_OK;
}
