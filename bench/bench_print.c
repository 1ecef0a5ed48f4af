/*
 * bench_print.c — the output of `ternbench bench` (bench.h): the text table
 * and its notes, or one JSON object per test and comparison, and the
 * --profile splits.
 */
#include "bench.h"
#include "commands.h"
#include "stats.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* The file name without its directories. */
static const char *base_name(const char *path) {
    const char *b = strrchr(path, '/');
    return b ? b + 1 : path;
}

/* The per-phase split of a profiled decode run: ms per token, share of the
 * run's wall time, weight GB/s of the phase and its % of the roofline bw
 * (the tg test's median probe). Attention's GB/s counts the KV bytes
 * tb_model_bytes_per_token gives for the run's mid depth. Then where the
 * phase's pool passes spend their time, per pass: waking the threads, the
 * prologue (norm / SwiGLU / quantization and its wait), the tail (first
 * thread done until the pass returns), and the GB/s of what is left (the
 * threads streaming rows): a short pass that loses to these and a long
 * one that streams slowly look alike in the GB/s column, not here. */
static void print_profile(const char *path, const tb_profile_t *p, const tb_bytes_per_token_t *bpt,
                          double bw, bool json) {
    const double tok = (double)p->tokens;
    uint64_t rest = p->total_ns;
    if (json) {
        printf("{\"profile\": \"tg%.0f\", \"model\": ", tok);
        cmd_json_str(path);
        printf(", \"total_ms_per_token\": %.4f, \"phases\": [", p->total_ns / 1e6 / tok);
    } else {
        printf("# profile of %s, one more decode run (%.0f tokens, %.3f ms/token):\n"
               "%-10s %10s %7s %9s %9s %9s %8s %7s %8s %7s %9s\n",
               base_name(path), tok, p->total_ns / 1e6 / tok, "phase", "ms/token", "share", "GB/s", "roofline",
               "pass/tok", "us/pass", "wake", "prologue", "tail", "stream");
    }
    for (int i = 0; i < TB_PHASE_COUNT; i++) {
        const tb_phase_stats_t *ph = &p->phase[i];
        rest = rest > ph->ns ? rest - ph->ns : 0;
        const double bytes = i == TB_PHASE_ATTENTION ? (double)bpt->kv * tok : (double)ph->bytes;
        const double gbps = ph->ns ? bytes / (double)ph->ns : 0;
        const double np = ph->passes ? (double)ph->passes : 1.0;          /* per-pass figures, us */
        const double over = (double)(ph->wake_ns + ph->prologue_ns + ph->tail_ns);
        const double stream = (double)ph->ns > over ? bytes / ((double)ph->ns - over) : 0;   /* GB/s */
        if (json)
            printf("%s{\"phase\": \"%s\", \"ms_per_token\": %.4f, \"share_pct\": %.2f, \"gbps\": %.3f, "
                   "\"roofline_pct\": %.2f, \"passes_per_token\": %.3f, \"us_per_pass\": %.3f, "
                   "\"wake_us\": %.3f, \"prologue_us\": %.3f, \"tail_us\": %.3f, \"stream_gbps\": %.3f}",
                   i ? ", " : "", tb_phase_name((tb_phase_t)i), ph->ns / 1e6 / tok,
                   100.0 * (double)ph->ns / (double)p->total_ns, gbps, 100.0 * gbps / bw, ph->passes / tok,
                   ph->ns / 1e3 / np, ph->wake_ns / 1e3 / np, ph->prologue_ns / 1e3 / np, ph->tail_ns / 1e3 / np,
                   stream);
        else if (ph->calls && ph->passes)
            printf("%-10s %10.3f %6.1f%% %9.2f %8.1f%% %9.1f %8.2f %7.2f %8.2f %7.2f %9.2f\n",
                   tb_phase_name((tb_phase_t)i), ph->ns / 1e6 / tok, 100.0 * (double)ph->ns / (double)p->total_ns,
                   gbps, 100.0 * gbps / bw, ph->passes / tok, ph->ns / 1e3 / np, ph->wake_ns / 1e3 / np,
                   ph->prologue_ns / 1e3 / np, ph->tail_ns / 1e3 / np, stream);
        else if (ph->calls)
            printf("%-10s %10.3f %6.1f%% %9.2f %8.1f%%\n", tb_phase_name((tb_phase_t)i), ph->ns / 1e6 / tok,
                   100.0 * (double)ph->ns / (double)p->total_ns, gbps, 100.0 * gbps / bw);
    }
    if (json) printf("], \"other_ms_per_token\": %.4f}\n", rest / 1e6 / tok);
    else printf("%-10s %10.3f %6.1f%%\n", "other", rest / 1e6 / tok, 100.0 * (double)rest / (double)p->total_ns);
}

/* The per-rep samples of a test: tok/s and the probes either side (the
 * rep is charged against the higher), the settled count and its median;
 * the CPU probes either side (clock, vector), the full-speed count and its
 * median, the vector-shared count, the steal of each rep. */
static void print_json_reps(const bench_result_t *r, int R) {
    printf(", \"rep_tokens_per_s\": [");
    for (int i = 0; i < R; i++) printf("%s%.3f", i ? ", " : "", r->tps[i]);
    printf("], \"rep_probe_gbps\": [");
    for (int i = 0; i < R; i++) printf("%s[%.3f, %.3f]", i ? ", " : "", r->probe[2 * i], r->probe[2 * i + 1]);
    printf("], \"settled_reps\": %d, \"roofline_pct_settled\": ", r->settled);
    if (r->settled) printf("%.2f", r->roofline_pct_settled);
    else printf("null");
    printf(", \"rep_cpu_ghz\": [");
    for (int i = 0; i < R; i++) printf("%s[%.3f, %.3f]", i ? ", " : "", r->cpu[2 * i], r->cpu[2 * i + 1]);
    printf("], \"rep_vec_gops\": [");
    for (int i = 0; i < R; i++) printf("%s[%.3f, %.3f]", i ? ", " : "", r->vec[2 * i], r->vec[2 * i + 1]);
    printf("], \"cpu_full_reps\": %d, \"roofline_pct_cpu_full\": ", r->cpu_full);
    if (r->cpu_full) printf("%.2f", r->roofline_pct_cpu_full);
    else printf("null");
    printf(", \"vec_shared_reps\": %d, \"rep_steal_pct\": [", r->vec_shared);
    for (int i = 0; i < R; i++) {
        if (isfinite(r->steal[i])) printf("%s%.2f", i ? ", " : "", r->steal[i]);
        else printf("%snull", i ? ", " : "");
    }
    printf("]");
}

/* The split passes of one more decode run at 2 threads (the split profile):
 * per pass kind, passes per token and per pass the mean us of each
 * thread's wait, prologue and work, and of the two ends' skew; then the
 * work's parts: its own rows, the attention (attention passes) and its
 * output slice. */
static void print_split_profile(const char *path, const tb_split_profile_t *sp, double ms_tok, int n_tok,
                                bool json) {
    if (json) {
        printf("{\"split_profile\": \"tg%d\", \"model\": ", n_tok);
        cmd_json_str(path);
        printf(", \"ms_per_token\": %.4f, \"passes\": [", ms_tok);
    } else {
        printf("# split decode of %s, one more decode run (%d tokens, %.3f ms/token), us per pass, "
               "thread 0 / thread 1; the work's parts: its own rows, attention, its output slice "
               "(and other rows it took; after a router pass thread 0's routing):\n"
               "%-10s %9s %17s %17s %19s %9s %19s %17s %17s\n",
               base_name(path), n_tok, ms_tok, "pass", "pass/tok", "wait", "prologue", "work", "skew", "rows",
               "attention", "out");
    }
    int first = 1;
    for (int i = 0; i < TB_SPLIT_PASS_COUNT; i++) {
        const tb_split_stats_t *st = &sp->pass[i];
        if (!st->passes) continue;
        const double np = (double)st->passes, us = 1e3 * np;   /* ns sums -> us per pass */
        const bool attn = i == TB_SPLIT_ATTN;
        if (json) {
            printf("%s{\"pass\": \"%s\", \"passes_per_token\": %.3f, \"wait_us\": [%.3f, %.3f], "
                   "\"prologue_us\": [%.3f, %.3f], \"work_us\": [%.3f, %.3f], \"skew_us\": %.3f, "
                   "\"rows_us\": [%.3f, %.3f], \"out_us\": [%.3f, %.3f]",
                   first ? "" : ", ", tb_split_pass_name((tb_split_pass_t)i), np / n_tok, st->wait_ns[0] / us,
                   st->wait_ns[1] / us, st->prologue_ns[0] / us, st->prologue_ns[1] / us, st->work_ns[0] / us,
                   st->work_ns[1] / us, st->skew_ns / us, st->rows_ns[0] / us, st->rows_ns[1] / us,
                   st->out_ns[0] / us, st->out_ns[1] / us);
            if (attn) printf(", \"attention_us\": [%.3f, %.3f]", st->attn_ns[0] / us, st->attn_ns[1] / us);
            printf("}");
        } else {
            printf("%-10s %9.1f %8.2f /%7.2f %8.2f /%7.2f %9.2f /%8.2f %9.2f %9.2f /%8.2f",
                   tb_split_pass_name((tb_split_pass_t)i), np / n_tok, st->wait_ns[0] / us, st->wait_ns[1] / us,
                   st->prologue_ns[0] / us, st->prologue_ns[1] / us, st->work_ns[0] / us, st->work_ns[1] / us,
                   st->skew_ns / us, st->rows_ns[0] / us, st->rows_ns[1] / us);
            if (attn) printf(" %8.2f /%7.2f", st->attn_ns[0] / us, st->attn_ns[1] / us);
            else printf(" %17s", "-");
            printf(" %8.2f /%7.2f\n", st->out_ns[0] / us, st->out_ns[1] / us);
        }
        first = 0;
    }
    if (json) printf("]}\n");
}

void bench_print_json(const bench_var_t *v, int nv, int n_res, const bench_ratio_t *cmp, const bench_opts_t *o,
                      double bw_before, double bw_after) {
    const char *isa = tb_isa_name(tb_isa_active());
    for (int t = 0; t < n_res; t++)
        for (int k = 0; k < nv; k++) {
            const bench_result_t *r = &v[k].res[t];
            printf("{\"test\": \"%s\", \"tokens_per_s\": %.3f, \"stddev\": %.3f, \"bytes_per_token\": %.0f, "
                   "\"achieved_gbps\": %.3f, \"roofline_pct\": %.2f, \"roofline_pct_min\": %.2f, "
                   "\"roofline_pct_max\": %.2f, \"bandwidth_gbps\": %.3f, "
                   "\"bandwidth_before_gbps\": %.3f, \"bandwidth_after_gbps\": %.3f, \"isa\": \"%s\", "
                   "\"features\": \"%s\", \"prefetch_bytes\": %zu, \"prefetch_l2\": %s, \"threads\": %d, \"ctx\": %d, \"reps\": %d, "
                   "\"type\": \"%s\", \"weights\": \"%s\", \"resident_bytes\": %llu, \"load_s\": %.3f, \"model\": ",
                   r->test, r->tps_median, r->tps_stddev, r->bytes_per_token, r->gbps, r->roofline_pct,
                   r->roofline_pct_min, r->roofline_pct_max, r->bw_median, bw_before, bw_after, isa,
                   tb_isa_features(), tb_prefetch_bytes(), tb_prefetch_l2() ? "true" : "false", o->threads, o->ctx, o->reps, tb_type_name(v[k].info.main_type),
                   o->mmap ? "mmap" : "copy", (unsigned long long)v[k].info.resident_bytes,
                   v[k].info.load_ns / 1e9);
            cmd_json_str(v[k].path);
            printf(", \"head\": ");
            cmd_json_str(bench_head(o, k) ? bench_head(o, k) : "exact");
            printf(", \"head_approximate\": %s", bench_head(o, k) ? "true" : "false");
            printf(", \"run_id\": %lld, \"run_uuid\": \"%s\", \"db\": ", (long long)v[k].run_id, v[k].uuid);
            if (o->db) cmd_json_str(o->db);
            else printf("null");
            printf(", \"interleave\": \"%s\"", r->tok_n && o->tok_turns ? "token" : "rep");
            print_json_reps(r, o->reps);
            if (r->tok_n)
                printf(", \"itl_p50_ms\": %.6f, \"itl_p90_ms\": %.6f, \"itl_p99_ms\": %.6f, "
                       "\"itl_max_ms\": %.6f, \"stall_pct\": %.2f, \"p50_roofline_pct\": %.4f",
                       r->tok_ms_p50, r->tok_ms_p90, r->tok_ms_p99, r->tok_ms_max, r->stall_pct,
                       r->p50_roofline_pct);
            printf("}\n");
        }
    for (int t = 0; t < n_res; t++)
        for (int k = 1; k < nv; k++) {
            const bench_ratio_t *c = &cmp[t * nv + k];
            printf("{\"compare\": \"%s\", \"model\": ", v[k].res[t].test);
            cmd_json_str(v[k].path);
            printf(", \"baseline\": ");
            cmd_json_str(v[0].path);
            printf(", \"ratio_median\": %.4f, \"ratio_min\": %.4f, \"ratio_max\": %.4f, \"faster_reps\": %d, "
                   "\"reps\": %d, \"sign_p\": %.4g, \"interleave\": \"%s\"", c->rep.median, c->rep.min, c->rep.max,
                   (int)c->rep.faster, o->reps, c->rep.sign_p, c->tok.n ? "token" : "rep");
            if (c->tok.n)
                printf(", \"token_pairs\": %zu, \"token_ratio_median\": %.4f, \"token_ratio_q25\": %.4f, "
                       "\"token_ratio_q75\": %.4f, \"token_faster\": %zu, \"token_sign_p\": %.4g",
                       c->tok.n, c->tok.median, c->tok.q25, c->tok.q75, c->tok.faster, c->tok.sign_p);
            if (c->tok_rep_median) {
                printf(", \"rep_token_ratio\": [");
                for (int i = 0; i < o->reps; i++) printf("%s%.4f", i ? ", " : "", c->tok_rep_median[i]);
                printf("]");
            }
            printf("}\n");
        }
    for (int k = 0; k < nv; k++) {
        if (v[k].prof.tokens) print_profile(v[k].path, &v[k].prof, &v[k].bpt, v[k].res[n_res - 1].bw_median, true);
        if (v[k].sprof.runs) print_split_profile(v[k].path, &v[k].sprof, v[k].sprof_ms, o->n_gen, true);
    }
}

void bench_print_table(const bench_var_t *v, int nv, int n_res, const bench_ratio_t *cmp, const bench_opts_t *o,
                       double bw_before, double bw_after) {
    const char *isa = tb_isa_name(tb_isa_active());
    for (int k = 0; k < nv; k++) {
        const tb_model_info_t *in = &v[k].info;
        printf("# %s: %s %s, %.2f GB weights; isa %s [%s]; prefetch %zu B%s; %d thread(s)\n", v[k].path, in->arch,
               tb_type_name(in->main_type), in->weight_bytes / 1e9, isa, tb_isa_features(), tb_prefetch_bytes(),
               tb_prefetch_l2() ? " + L2 stage" : "", o->threads);
        printf("# weights %s: %.2f GB resident in huge-page copies (%.2f GB repacked), loaded in %.2f s\n",
               o->mmap ? "mmap" : "copy", in->resident_bytes / 1e9, in->repack_bytes / 1e9, in->load_ns / 1e9);
        if (o->db) printf("# recorded as run %lld (%s) in %s\n", (long long)v[k].run_id, v[k].uuid, o->db);
        if (bench_head(o, k))
            printf("# %s: APPROXIMATE output head %s: clustered rows, approximate logits; bytes/token count the"
                   " rows it read\n", v[k].path, bench_head(o, k));
    }
    if (nv > 1 && o->tok_turns)
        printf("# the files take turns inside every rep (forward on even reps, backward on odd), in decode "
               "token by token (each token's order alternating too)\n");
    else if (nv > 1) printf("# the files take turns inside every rep (forward on even reps, backward on odd)\n");
    for (int k = 0; k < nv; k++)
        if (o->profile && o->threads == 2 && v[k].info.split_layers > 0)
            printf("# %s: decode at 2 threads runs its layers split (two passes per dense layer, three per MoE "
                   "layer); the phase profile below does not, so that its phases can be timed apart, and the "
                   "split profile after it times the split passes\n",
                   base_name(v[k].path));
    printf("# read bandwidth %.2f GB/s first, %.2f GB/s last; each rep is charged against the higher\n"
           "# of the probes taken just before and just after it (median roofline per test below)\n",
           bw_before, bw_after);
    printf("%-8s ", "test");
    const int mw = o->n_heads > 1 ? 44 : 28;   /* "FILE APPROX approx:C:T" */
    if (nv > 1) printf("%-*s ", mw, "model");
    printf("%12s %9s %14s %10s %9s %9s %15s\n", "tok/s", "stddev", "bytes/token", "GB/s", "roof GB/s",
           "roofline", "range");
    for (int t = 0; t < n_res; t++)
        for (int k = 0; k < nv; k++) {
            const bench_result_t *r = &v[k].res[t];
            printf("%-8s ", r->test);
            if (nv > 1) {   /* the same file under two heads: the head names the row */
                char name[96];
                if (bench_head(o, k)) snprintf(name, sizeof name, "%s APPROX %s", base_name(v[k].path), bench_head(o, k));
                else snprintf(name, sizeof name, "%s%s", base_name(v[k].path), o->n_heads > 1 ? " exact" : "");
                printf("%-*.*s ", mw, mw, name);
            }
            printf("%12.2f %9.2f %14.0f %10.2f %9.2f %8.1f%% %6.1f-%5.1f%%\n", r->tps_median, r->tps_stddev,
                   r->bytes_per_token, r->gbps, r->bw_median, r->roofline_pct, r->roofline_pct_min,
                   r->roofline_pct_max);
        }
    for (int t = 0; t < n_res; t++)
        for (int k = 0; k < nv; k++) {
            const bench_result_t *r = &v[k].res[t];
            if (r->settled == o->reps) continue;
            printf("# %s%s%s: %d of %d reps settled (their probes within %.0f%%)", r->test, nv > 1 ? " " : "",
                   nv > 1 ? base_name(v[k].path) : "", r->settled, o->reps, 100.0 * PROBE_AGREE);
            if (r->settled) printf(": %.1f%% of roofline over those\n", r->roofline_pct_settled);
            else printf("\n");
        }
    for (int t = 0; t < n_res; t++)
        for (int k = 0; k < nv; k++) {
            const bench_result_t *r = &v[k].res[t];
            if (r->cpu_full == o->reps) continue;
            printf("# %s%s%s: %d of %d reps ran at full speed (both CPU probes, slowest thread, >= %.0f%% of the "
                   "best: %.2f GHz; they read %.2f-%.2f)", r->test, nv > 1 ? " " : "",
                   nv > 1 ? base_name(v[k].path) : "", r->cpu_full, o->reps, 100.0 * CPU_FULL, r->cpu_max,
                   r->cpu_min, r->cpu_max);
            if (r->cpu_full) printf(": %.1f%% of roofline over those\n", r->roofline_pct_cpu_full);
            else printf("\n");
        }
    for (int t = 0; t < n_res; t++)
        for (int k = 0; k < nv; k++) {
            const bench_result_t *r = &v[k].res[t];
            if (!r->vec_shared) continue;
            printf("# %s%s%s: %d of %d reps had both vector probes under %.0f%% of the best (%.2f ops/ns; they read "
                   "%.2f-%.2f): their cores' vector units ran slow around them (on a VM: the host's SMT sibling)\n",
                   r->test, nv > 1 ? " " : "", nv > 1 ? base_name(v[k].path) : "", r->vec_shared, o->reps,
                   100.0 * CPU_FULL, r->vec_max, r->vec_min, r->vec_max);
        }
    for (int t = 0; t < n_res; t++)
        for (int k = 0; k < nv; k++) {
            const bench_result_t *r = &v[k].res[t];
            double lo = INFINITY, hi = -INFINITY, sum = 0;
            int m = 0;
            for (int i = 0; i < o->reps; i++)
                if (isfinite(r->steal[i])) {
                    lo = fmin(lo, r->steal[i]);
                    hi = fmax(hi, r->steal[i]);
                    sum += r->steal[i];
                    m++;
                }
            if (!m || hi < STEAL_NOTE) continue;
            printf("# %s%s%s: the hypervisor stole %.1f%% of the CPU time of the timed evals on average (%.1f-%.1f%% "
                   "per rep; /proc/stat)\n", r->test, nv > 1 ? " " : "", nv > 1 ? base_name(v[k].path) : "", sum / m, lo,
                   hi);
        }
    for (int t = 0; t < n_res; t++)
        for (int k = 0; k < nv; k++) {
            const bench_result_t *r = &v[k].res[t];
            if (!r->tok_n) continue;
            printf("# %s%s%s: token latency p50 %.2f, p90 %.2f, p99 %.2f, max %.2f ms over %zu tokens; "
                   "%.1f%% of the time in stalls (tokens > %.1f x p50); at p50 %.1f%% of roofline\n",
                   r->test, nv > 1 ? " " : "", nv > 1 ? base_name(v[k].path) : "", r->tok_ms_p50,
                   r->tok_ms_p90, r->tok_ms_p99, r->tok_ms_max, r->tok_n, r->stall_pct, TB_STALL_FACTOR,
                   r->p50_roofline_pct);
        }
    for (int t = 0; t < n_res; t++)
        for (int k = 1; k < nv; k++) {
            const bench_ratio_t *c = &cmp[t * nv + k];
            printf("# %s: %s / %s = %.3f (median of %d paired reps, %.3f-%.3f), faster in %d of %d, "
                   "sign test p = %.3g\n", v[k].res[t].test, base_name(v[k].path), base_name(v[0].path),
                   c->rep.median, o->reps, c->rep.min, c->rep.max, (int)c->rep.faster, o->reps, c->rep.sign_p);
            if (c->tok.n)
                printf("# %s: token by token %.4f (median of %zu paired tokens, quartiles %.4f-%.4f), faster in "
                       "%zu, sign test p = %.3g\n", v[k].res[t].test, c->tok.median, c->tok.n, c->tok.q25,
                       c->tok.q75, c->tok.faster, c->tok.sign_p);
        }
    for (int k = 0; k < nv; k++) {
        if (v[k].prof.tokens) print_profile(v[k].path, &v[k].prof, &v[k].bpt, v[k].res[n_res - 1].bw_median, false);
        if (v[k].sprof.runs) print_split_profile(v[k].path, &v[k].sprof, v[k].sprof_ms, o->n_gen, false);
    }
}

