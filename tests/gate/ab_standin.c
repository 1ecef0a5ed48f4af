/*
 * ab_standin.c — a stand-in for `ternbench bench --db FILE --tag K=V ...`
 * in test_ab.c: called as `NAME bench ... -r 1 --db FILE --tag K=V ...`,
 * it records one complete run through results/store.h with those tags:
 * test tg8 (decode), decode_tok_per_s at repetition 0 = 50 x (0.9 when its
 * name contains "slow") x (1 + 0.001 (pair mod 3)). A name containing
 * "fail" exits 1 without recording. Each call appends "SIDE PAIR\n" to
 * $AB_LOG, so the test can check the order of the turns.
 */
#include "store.h"
#include "ternbench.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv) {
    if (argc < 2 || strcmp(argv[1], "bench")) { fprintf(stderr, "standin: expected 'bench'\n"); return 2; }
    const char *db = NULL, *keys[8], *vals[8];
    static char kv[8][128];
    int n_tags = 0, reps = 0, pair = 0;
    const char *side = "?";
    for (int i = 2; i + 1 < argc; i++) {
        if (!strcmp(argv[i], "--db")) db = argv[++i];
        else if (!strcmp(argv[i], "-r")) reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--tag") && n_tags < 8) {
            snprintf(kv[n_tags], sizeof kv[n_tags], "%s", argv[++i]);
            char *eq = strchr(kv[n_tags], '=');
            if (!eq) return 2;
            *eq = 0;
            keys[n_tags] = kv[n_tags];
            vals[n_tags] = eq + 1;
            if (!strcmp(keys[n_tags], "ab.side")) side = vals[n_tags];
            if (!strcmp(keys[n_tags], "ab.pair")) pair = atoi(vals[n_tags]);
            n_tags++;
        }
    }
    if (!db || reps != 1) { fprintf(stderr, "standin: needs --db and -r 1\n"); return 2; }
    const char *log = getenv("AB_LOG");
    if (log) {
        FILE *f = fopen(log, "a");
        if (f) { fprintf(f, "%s %d\n", side, pair); fclose(f); }
    }
    if (strstr(argv[0], "fail")) return 1;
    double scale = strstr(argv[0], "slow") ? 0.9 : 1.0;
    tb_store_t *s;
    if (tb_store_open(db, &s, NULL)) { fprintf(stderr, "standin: %s\n", tb_last_error()); return 1; }
    tb_host_facts_t h = {.cpu_family = -1, .cpu_model = -1, .cpu_stepping = -1, .cores = -1, .threads = -1,
                         .l1d_kb = -1, .l2_kb = -1, .l3_kb = -1, .mem_bytes = -1};
    snprintf(h.fingerprint, sizeof h.fingerprint, "standin-host");
    tb_build_facts_t b = {0};
    snprintf(b.fingerprint, sizeof b.fingerprint, "standin-%s", side);
    snprintf(b.git_commit, sizeof b.git_commit, "unknown");
    int64_t hid, bid, sid, rid, tid;
    tb_run_facts_t r = {.model_id = -1, .threads = 1, .isa = "avx2", .kv_type = "f16", .bandwidth_gbps_before = -1,
                        .record_tokens = 1, .n_tags = n_tags, .tag_keys = keys, .tag_values = vals};
    snprintf(r.uuid, sizeof r.uuid, "standin-%s-%d-%llu", side, pair, (unsigned long long)tb_now_ns());
    int rc = tb_store_put_host(s, &h, &hid);
    if (!rc) rc = tb_store_put_build(s, &b, &bid);
    if (!rc) rc = tb_store_put_scenario(s, "standin", "bench", "(bench)", "bench\n", &sid);
    r.host_id = hid; r.build_id = bid; r.scenario_id = sid;
    if (!rc) rc = tb_store_run_begin(s, &r, &rid);
    if (!rc) rc = tb_store_test_begin(s, rid, "bench", "decode", "tg8", NULL, 0, &tid);
    if (!rc) rc = tb_store_tx_begin(s);
    if (!rc) rc = tb_store_add_measurement(s, tid, 0, "decode_tok_per_s", 50 * scale * (1 + 0.001 * (pair % 3)), "tok/s");
    if (!rc) rc = tb_store_tx_commit(s);
    if (!rc) rc = tb_store_test_end(s, tid, "complete", "nominal", NULL, NAN);
    if (!rc) rc = tb_store_run_end(s, rid, "complete", NULL, -1);
    if (rc) fprintf(stderr, "standin: %s\n", tb_last_error());
    tb_store_close(s);
    return rc ? 1 : 0;
}
