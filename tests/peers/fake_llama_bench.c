/*
 * fake_llama_bench.c — a stand-in for llama.cpp's llama-bench in tests of
 * `[engine] kind = llama.cpp` (test_peer_run.c).
 *
 * It accepts the invocation the adapter makes (-m F -t T -p P -n N -d D
 * -r 1 -b B -ub B -ctk K -ctv V -o jsonl; anything else is an error, as in
 * the real tool) and prints one jsonl row in the layout a real llama-bench
 * printed (tests/peers/fixtures/llama-bench.jsonl: the same fields in the
 * same order, build c2e63492b (10346)), with the case asked for filled in
 * and a fixed sample of 2 ms per token (500 tok/s).
 *
 * $FAKE_LB_MODE: "exit" prints an error to stderr and exits 1, "garbage"
 * prints a line that is not JSON, "mismatch" answers for another prompt
 * length, "two" prints the row twice. Every call appends its arguments to
 * $FAKE_LB_LOG when set.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv) {
    const char *m = NULL, *t = "0", *p = "512", *n = "128", *d = "0", *r = "5", *o = "md", *b = "2048",
               *ub = "512", *ctk = "f16", *ctv = "f16";
    for (int i = 1; i < argc; i++) {
        const char **dst = !strcmp(argv[i], "-m") ? &m : !strcmp(argv[i], "-t") ? &t
                         : !strcmp(argv[i], "-p") ? &p : !strcmp(argv[i], "-n") ? &n
                         : !strcmp(argv[i], "-d") ? &d : !strcmp(argv[i], "-r") ? &r
                         : !strcmp(argv[i], "-o") ? &o : !strcmp(argv[i], "-b") ? &b
                         : !strcmp(argv[i], "-ub") ? &ub : !strcmp(argv[i], "-ctk") ? &ctk
                         : !strcmp(argv[i], "-ctv") ? &ctv : NULL;
        if (!dst || i + 1 >= argc) {
            fprintf(stderr, "error: invalid parameter for argument: %s\n", argv[i]);
            return 1;
        }
        *dst = argv[++i];
    }
    const char *log = getenv("FAKE_LB_LOG");
    if (log && *log) {
        FILE *f = fopen(log, "a");
        if (f) {
            for (int i = 1; i < argc; i++) fprintf(f, "%s%s", i > 1 ? " " : "", argv[i]);
            fputc('\n', f);
            fclose(f);
        }
    }
    if (!m || strcmp(r, "1") || strcmp(o, "jsonl")) {
        fprintf(stderr, "error: expected -m FILE -r 1 -o jsonl\n");
        return 2;
    }
    const char *mode = getenv("FAKE_LB_MODE");
    if (!mode) mode = "";
    if (!strcmp(mode, "exit")) {
        fprintf(stderr, "llama_model_load: error loading model: fake failure\nmain: error: failed to load model '%s'\n", m);
        return 1;
    }
    if (!strcmp(mode, "garbage")) {
        printf("this is not llama-bench output\n");
        return 0;
    }
    long long np = atoll(p), ng = atoll(n), nd = atoll(d);
    if (!strcmp(mode, "mismatch")) np += 1;
    long long ns = (np + ng) * 2000000LL;
    double ts = 1e9 * (double)(np + ng) / (double)ns;
    const char *base = strrchr(m, '/') ? strrchr(m, '/') + 1 : m;
    for (int k = 0; k < (!strcmp(mode, "two") ? 2 : 1); k++)
        printf("{\"build_commit\": \"c2e63492b\", \"build_number\": 10346, \"cpu_info\": \"Intel(R) Xeon(R) "
               "Processor\", \"gpu_info\": \"\", \"backends\": \"CPU\", \"model_filename\": \"%s\", "
               "\"model_type\": \"llama ?B all F32\", \"model_size\": 5772288, \"model_n_params\": 1443072, "
               "\"n_batch\": %s, \"n_ubatch\": %s, \"n_threads\": %s, \"cpu_mask\": \"0x0\", \"cpu_strict\": "
               "false, \"poll\": 50, \"type_k\": \"%s\", \"type_v\": \"%s\", \"n_gpu_layers\": -1, \"n_cpu_moe\": 0, "
               "\"split_mode\": \"layer\", \"main_gpu\": 0, \"no_kv_offload\": false, \"flash_attn\": -1, "
               "\"devices\": \"auto\", \"tensor_split\": \"0.00\", \"tensor_buft_overrides\": \"none\", "
               "\"load_mode\": \"mmap\", \"embeddings\": false, \"no_op_offload\": 0, \"no_host\": false, "
               "\"fit_target\": 0, \"fit_min_ctx\": 0, \"n_prompt\": %lld, \"n_gen\": %lld, \"n_depth\": %lld, "
               "\"test_time\": \"2026-12-03T12:51:17Z\", \"avg_ns\": %lld, \"stddev_ns\": 0, \"avg_ts\": %f, "
               "\"stddev_ts\": 0.000000, \"samples_ns\": [ %lld ],\"samples_ts\": [ %g ]}\n",
               base, b, ub, t, ctk, ctv, np, ng, nd, ns, ts, ns, ts);
    return 0;
}
