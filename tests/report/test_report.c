/*
 * test_report.c — `ternbench report` from a fixture database: every file is
 * produced, SVGs parse and carry plotted data, the HTML is self-contained,
 * the Markdown tables match the golden files and the fixture's formulas,
 * gnuplot missing degrades to tables plus one warning, and runs without
 * data produce notes instead of empty charts.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "fixture.h"
#include "report_int.h"

#include <dirent.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static char tmp[1024];      /* the test's mkdtemp directory            */
static char db[1100];       /* fixture database inside it              */
static int have_gnuplot;

/* ===================================================================== */
/* Helpers                                                                 */
/* ===================================================================== */

static int exists(const char *dir, const char *name) {
    char p[4096];
    struct stat st;
    snprintf(p, sizeof p, "%s/%s", dir, name);
    return stat(p, &st) == 0 && st.st_size > 0;
}

static char *read_out(const char *dir, const char *name) {
    char p[4096];
    snprintf(p, sizeof p, "%s/%.255s", dir, name);
    char *s = fx_slurp(p, NULL);
    assert_non_null(s);
    return s;
}

/* Names in dir ending with ext, sorted; returns count. */
static int list_ext(const char *dir, const char *ext, char names[][256], int cap) {
    DIR *d = opendir(dir);
    assert_non_null(d);
    struct dirent *e;
    int n = 0;
    size_t el = strlen(ext);
    while ((e = readdir(d)) && n < cap) {
        size_t l = strlen(e->d_name);
        if (l > el && !strcmp(e->d_name + l - el, ext)) snprintf(names[n++], 256, "%s", e->d_name);
    }
    closedir(d);
    qsort(names, (size_t)n, 256, (int (*)(const void *, const void *))strcmp);
    return n;
}

/* Run argv with stdout/stderr captured into files; returns exit status. */
static int run_prog(char *const argv[], const char *out, const char *err) {
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        int fo = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644), fe = open(err, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fo >= 0) dup2(fo, 1);
        if (fe >= 0) dup2(fe, 2);
        execv(argv[0], argv);
        _exit(127);
    }
    int st;
    assert_true(waitpid(pid, &st, 0) == pid);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

static tb_report_opts_t opts_runs(const char *out, int n, const int *ids) {
    tb_report_opts_t o = tb_report_default_opts();
    o.db_path = db;
    o.out_dir = out;
    o.sel.kind = TB_REPORT_SEL_RUNS;
    o.sel.n = n;
    for (int i = 0; i < n; i++) o.sel.ids[i] = ids[i];
    return o;
}

static void subdir(char *buf, size_t n, const char *name) { snprintf(buf, n, "%s/%s", tmp, name); }

/* ===================================================================== */
/* Fixture setup                                                           */
/* ===================================================================== */

static int group_setup(void **state) {
    (void)state;
    if (fx_tempdir(tmp, sizeof tmp)) return -1;
    snprintf(db, sizeof db, "%s/fixture.db", tmp);
    char gp[4096];
    have_gnuplot = rp_gnuplot_find(NULL, gp, sizeof gp) == TB_OK;
    tb_clear_error();
    return fx_build(db);
}

static int group_teardown(void **state) {
    (void)state;
    fx_rmtree(tmp);
    return 0;
}

/* ===================================================================== */
/* Full report                                                             */
/* ===================================================================== */

static const char *const CHARTS[] = {"decode_depth", "prefill_prompt", "itl_cdf", "formats", "roofline"};

static void test_full_report_files(void **state) {
    (void)state;
    if (!have_gnuplot) skip();
    char out[2048];
    subdir(out, sizeof out, "full");
    const int ids[] = {1, 2, 3, 4};
    tb_report_opts_t o = opts_runs(out, 4, ids);
    tb_report_result_t res;
    assert_int_equal(tb_report_write(&o, &res), TB_OK);
    assert_int_equal(res.n_runs, 4);
    assert_false(res.gnuplot_missing);
    assert_string_equal(res.warning, "");
    assert_true(exists(out, "report.md"));
    assert_true(exists(out, "report.html"));
    for (size_t i = 0; i < sizeof CHARTS / sizeof *CHARTS; i++) {
        static const char *const ext[] = {".svg", ".png", ".gp", ".dat"};
        for (int k = 0; k < 4; k++) {
            char f[256];
            snprintf(f, sizeof f, "%s%s", CHARTS[i], ext[k]);
            if (!exists(out, f)) fail_msg("missing %s", f);
        }
    }
    char names[64][256];
    int n_sus = 0, n = list_ext(out, ".svg", names, 64);
    for (int i = 0; i < n; i++) n_sus += !strncmp(names[i], "sustained_r", 11);
    assert_int_equal(n_sus, 2);                             /* runs 1 and 2 */
    assert_int_equal(n, 5 + 2);
    assert_int_equal(res.n_rendered, 7);
    assert_int_equal(res.n_charts, 7);
    assert_int_equal(list_ext(out, ".png", names, 64), 7);
    assert_int_equal(list_ext(out, ".log", names, 64), 0);   /* no gnuplot errors */
    /* PNG signature */
    char *png = read_out(out, "decode_depth.png");
    assert_memory_equal(png, "\x89PNG\r\n\x1a\n", 8);
    free(png);
    /* the sustained chart of run 1 shades the throttled span 30..45 s */
    n = list_ext(out, ".gp", names, 64);
    for (int i = 0; i < n; i++) {
        if (strncmp(names[i], "sustained_r1_", 13)) continue;
        char *gp = read_out(out, names[i]);
        assert_non_null(strstr(gp, "rect from 30, graph 0 to 45, graph 1"));
        assert_non_null(strstr(gp, "axes x1y2"));
        free(gp);
    }
}

/* Tiny checks on top of xmllint: gnuplot's plot groups with path data. */
static void test_svgs_parse_and_plot(void **state) {
    (void)state;
    if (!have_gnuplot) skip();
    char out[2048];
    subdir(out, sizeof out, "full");
    char names[64][256];
    int n = list_ext(out, ".svg", names, 64);
    assert_true(n >= 5);
    int xmllint = access("/usr/bin/xmllint", X_OK) == 0;
    for (int i = 0; i < n; i++) {
        char p[4096], o[2048], e[2048];
        snprintf(p, sizeof p, "%s/%.255s", out, names[i]);
        if (xmllint) {
            snprintf(o, sizeof o, "%s/xmllint.out", tmp);
            snprintf(e, sizeof e, "%s/xmllint.err", tmp);
            char *argv[] = {"/usr/bin/xmllint", "--noout", "--nonet", p, NULL};
            if (run_prog(argv, o, e) != 0) fail_msg("%s does not parse as XML", names[i]);
        }
        char *svg = fx_slurp(p, NULL);
        assert_non_null(svg);
        assert_non_null(strstr(svg, "<svg"));
        assert_non_null(strstr(svg, "</svg>"));
        const char *g = strstr(svg, "id=\"gnuplot_plot_1");
        if (!g) fail_msg("%s: no plotted series", names[i]);
        /* a path with at least two coordinate pairs after the first series */
        const char *d = strstr(g, "d='M");
        if (!d) fail_msg("%s: no path data", names[i]);
        double x0, y0, x1, y1;
        assert_int_equal(sscanf(d, "d='M%lf,%lf L%lf,%lf", &x0, &y0, &x1, &y1), 4);
        free(svg);
    }
}

static void test_html_self_contained(void **state) {
    (void)state;
    if (!have_gnuplot) skip();
    char out[2048];
    subdir(out, sizeof out, "full");
    char *h = read_out(out, "report.html");
    static const char *const banned[] = {"http:", "https:", "//", "src=", "<link", "@import", "<script",
                                         "<?xml", "<!DOCTYPE svg", "xmlns", "file:", "data:"};
    for (size_t i = 0; i < sizeof banned / sizeof *banned; i++)
        if (strstr(h, banned[i])) fail_msg("report.html contains '%s'", banned[i]);
    /* every href and url() points inside the document */
    for (const char *p = h; (p = strstr(p, "href=")); p += 5)
        if (p[6] != '#') fail_msg("external href: %.40s", p);
    for (const char *p = h; (p = strstr(p, "url(")); p += 4)
        if (p[4] != '#') fail_msg("external url(): %.40s", p);
    int svgs = 0;
    for (const char *p = h; (p = strstr(p, "<svg")); p += 4) svgs++;
    assert_int_equal(svgs, 7);
    assert_non_null(strstr(h, "<style>"));
    assert_non_null(strstr(h, "</html>"));
    free(h);
    /* the Markdown links each chart file that exists beside it */
    char *md = read_out(out, "report.md");
    for (size_t i = 0; i < sizeof CHARTS / sizeof *CHARTS; i++) {
        char l[256];
        snprintf(l, sizeof l, "](%s.svg)", CHARTS[i]);
        if (!strstr(md, l)) fail_msg("report.md does not link %s.svg", CHARTS[i]);
    }
    free(md);
}

/* ===================================================================== */
/* Golden Markdown and independently computed values                       */
/* ===================================================================== */

static void golden(const char *out, const char *golden_name) {
    char *md = read_out(out, "report.md");
    char gp[4096];
    const char *root = getenv("TB_SOURCE_ROOT");
    snprintf(gp, sizeof gp, "%s/tests/report/%s", root ? root : ".", golden_name);
    if (getenv("TB_UPDATE_GOLDEN")) {
        FILE *f = fopen(gp, "w");
        assert_non_null(f);
        fputs(md, f);
        fclose(f);
    }
    char *want = fx_slurp(gp, NULL);
    if (!want) fail_msg("cannot read golden %s", gp);
    if (strcmp(md, want)) {
        size_t i = 0;
        while (md[i] && md[i] == want[i]) i++;
        fail_msg("%s differs from %s at byte %zu: got \"%.80s\" want \"%.80s\"", "report.md", gp, i, md + i, want + i);
    }
    free(md);
    free(want);
}

static void test_golden_tables(void **state) {
    (void)state;
    char out[2048];
    subdir(out, sizeof out, "golden");
    const int ids[] = {1, 2, 3, 4};
    tb_report_opts_t o = opts_runs(out, 4, ids);
    o.diffable = o.no_charts = true;
    assert_int_equal(tb_report_write(&o, NULL), TB_OK);
    golden(out, "golden_report.md");
    char *md = read_out(out, "report.md");
    assert_null(strstr(md, "2026-01-0"));             /* no timestamps */
    assert_null(strstr(md, "/models/"));              /* no paths      */
    assert_null(strstr(md, tmp));
    free(md);
    /* deterministic: a second run writes the same bytes */
    char out2[2048];
    subdir(out2, sizeof out2, "golden2");
    o.out_dir = out2;
    assert_int_equal(tb_report_write(&o, NULL), TB_OK);
    char *a = read_out(out, "report.md"), *b = read_out(out2, "report.md");
    assert_string_equal(a, b);
    free(a); free(b);
    a = read_out(out, "report.html"); b = read_out(out2, "report.html");
    assert_string_equal(a, b);
    free(a); free(b);
}

/* The llama-bench row "| tiny SERIES | ... | LABEL | M ± S |" of the report. */
static void expect_row(const char *md, const char *series, const char *label, double med, double sd) {
    char want[256];
    snprintf(want, sizeof want, "| %s | %.2f ± %.2f |", label, med, sd);
    for (const char *p = md; (p = strstr(p, "\n| tiny ")); p++) {
        const char *eol = strchr(p + 1, '\n');
        size_t len = eol ? (size_t)(eol - p) : strlen(p);
        char line[1024];
        snprintf(line, sizeof line, "%.*s", (int)len, p + 1);
        char s[128];
        snprintf(s, sizeof s, "| %s |", series);
        if (!strncmp(line, s, strlen(s)) && strstr(line, want)) return;
    }
    fail_msg("no row for %s %s with '%s'", series, label, want);
}

static void test_values_match_formulas(void **state) {
    (void)state;
    char out[2048];
    subdir(out, sizeof out, "golden");
    char *md = read_out(out, "report.md");
    static const char *const series[] = {"", "tiny tq2_0 @aaaaaaa", "tiny q4_0", "tiny f16", "tiny tq2_0 @bbbbbbb"};
    for (int r = 1; r <= 4; r++) {
        static const int n[] = {64, 128, 256}, d[] = {0, 256, 1024};
        for (int i = 0; i < 3; i++) {
            double v[3], w[3];
            for (int k = 0; k < 3; k++) { v[k] = fx_prefill(r, n[i], k); w[k] = fx_decode(r, d[i], k); }
            /* by hand: the median is repetition 1; sd of {m(1-e), m, m(1+e)} is m·e */
            double sdp = r == 3 ? v[1] * 0.01 : sqrt(((v[0] - v[1]) * (v[0] - v[1]) + (v[2] - v[1]) * (v[2] - v[1])) / 2);
            double sdd = r == 3 ? w[1] * 0.02 : sqrt(((w[0] - w[1]) * (w[0] - w[1]) + (w[2] - w[1]) * (w[2] - w[1])) / 2);
            char lp[32], ld[32];
            snprintf(lp, sizeof lp, "pp%d", n[i]);
            snprintf(ld, sizeof ld, d[i] ? "tg32@d%d" : "tg32", d[i]);
            expect_row(md, series[r], lp, v[1], sdp);
            expect_row(md, series[r], ld, w[1], sdd);
        }
    }
    /* run 1 sustained: windows 60-0.1w except 42 for 6..8 → median of 12 */
    assert_non_null(strstr(md, "| sustained3000 | 70.0 | throttled | — | — | throttled |"));
    assert_non_null(strstr(md, "| sustained400 | 95.5 | nominal | — | — | no throttling |"));
    /* core clock probes (cpu_ghz_after per repetition): run 1's generate test 2.50, 2.45, 2.40 (96 %:
     * steady); run 2's 2.50, 2.40, 1.60 (64 % of its best, under 85 %: slowed); the vector
     * probes (vec_gops_after) of both 9.00, 8.95, 8.90 (steady); of run 2's tg32 9.00, 5.60,
     * 5.40 with its clock steady at 2.50 (the last two under 85 %, the higher 62 %): vector
     * units shared; of run 1's tg32 9.00, 5.00, 8.90 (one low probe): no slowdown */
    assert_non_null(strstr(md, "| pp16+tg64 | — | not recorded | 2.40-2.50 | 8.90-9.00 | no slowdown seen (clock and "
                               "vector probes) |"));
    assert_non_null(strstr(md, "| pp16+tg64 | — | not recorded | 1.60-2.50 | 8.90-9.00 | cores slowed (clock probe fell "
                               "to 64%: 1.60 of 2.50 GHz) |"));
    assert_non_null(strstr(md, "| tg32 | — | not recorded | 2.50-2.50 | 5.40-9.00 | vector units shared (probes "
                               "either side of a repetition <= 62%: 5.60 of 9.00 ops/ns) |"));
    assert_non_null(strstr(md, "| tg32 | — | not recorded | 2.50-2.50 | 5.00-9.00 | no slowdown seen (clock and "
                               "vector probes) |"));
    assert_non_null(strstr(md, "Run 2: sensors absent on this host: cpufreq (no scaling_cur_freq); rapl (no readable RAPL counter)."));
    free(md);
}

static void test_compare_speedup(void **state) {
    (void)state;
    char out[2048];
    subdir(out, sizeof out, "compare");
    tb_report_opts_t o = tb_report_default_opts();
    o.db_path = db;
    o.out_dir = out;
    o.diffable = o.no_charts = true;
    o.compare = true;
    assert_int_equal(tb_report_parse_sel("format:q4_0", &o.baseline), TB_OK);
    assert_int_equal(tb_report_parse_sel("format:TQ2_0", &o.target), TB_OK);
    tb_report_result_t res;
    assert_int_equal(tb_report_write(&o, &res), TB_OK);
    assert_int_equal(res.n_runs, 3);
    char *md = read_out(out, "report.md");
    /* compare side has runs 1 and 4: the median of two is their mean */
    double b = fx_decode(2, 0, 1), c = 0.5 * (fx_decode(1, 0, 1) + fx_decode(4, 0, 1));
    char want[256];
    snprintf(want, sizeof want, "| tg32 | %.2f | %.2f | %.2fx |", b, c, c / b);
    if (!strstr(md, want)) fail_msg("no comparison row '%s'", want);
    /* TTFT: only runs 1 (base 10 ms) and 2 (14 ms) have it: speedup base ÷ compare */
    snprintf(want, sizeof want, "| pp16+tg64 | — | — | — | %.2f | %.2f | %.2fx |", 19.1, 15.1, 19.1 / 15.1);
    if (!strstr(md, want)) fail_msg("no TTFT row '%s'", want);
    free(md);
    golden(out, "golden_compare.md");
    /* a run on both sides, or a side mixing formats, is refused rather than merged */
    assert_int_equal(tb_report_parse_sel("1,2", &o.baseline), TB_OK);
    assert_int_equal(tb_report_parse_sel("2", &o.target), TB_OK);
    assert_int_equal(tb_report_write(&o, &res), TB_ERR_ARG);
    assert_non_null(strstr(tb_last_error(), "run 2 is selected by both"));
    assert_int_equal(tb_report_parse_sel("3", &o.target), TB_OK);
    assert_int_equal(tb_report_write(&o, &res), TB_ERR_ARG);
    assert_non_null(strstr(tb_last_error(), "several weight formats (tq2_0, q4_0)"));
}

/* ===================================================================== */
/* Degraded paths                                                          */
/* ===================================================================== */

static void test_missing_gnuplot(void **state) {
    (void)state;
    char out[2048];
    subdir(out, sizeof out, "nognuplot");
    const int ids[] = {1, 2};
    tb_report_opts_t o = opts_runs(out, 2, ids);
    setenv("TB_GNUPLOT", "/nonexistent/bin/gnuplot", 1);
    tb_report_result_t res;
    int rc = tb_report_write(&o, &res);
    unsetenv("TB_GNUPLOT");
    assert_int_equal(rc, TB_OK);
    assert_true(res.gnuplot_missing);
    assert_non_null(strstr(res.warning, "/nonexistent/bin/gnuplot"));
    assert_non_null(strstr(res.warning, "charts skipped"));
    assert_int_equal(res.n_rendered, 0);
    assert_true(exists(out, "report.md") && exists(out, "report.html"));
    assert_true(exists(out, "decode_depth.gp") && exists(out, "decode_depth.dat"));
    char names[64][256];
    assert_int_equal(list_ext(out, ".svg", names, 64), 0);
    assert_int_equal(list_ext(out, ".png", names, 64), 0);
    char *md = read_out(out, "report.md");
    assert_non_null(strstr(md, "| tiny tq2_0 | "));    /* tables still there */
    assert_non_null(strstr(md, "Charts were not rendered"));
    assert_null(strstr(md, ".svg)"));
    free(md);

    /* the CLI prints exactly one warning and succeeds */
    const char *broot = getenv("TB_BUILD_ROOT");
    char exe[4096];
    snprintf(exe, sizeof exe, "%s/ternbench", broot ? broot : ".");
    if (access(exe, X_OK) != 0) return;
    char o2[2048], fo[2048], fe[2048];
    subdir(o2, sizeof o2, "nognuplot-cli");
    subdir(fo, sizeof fo, "cli.out");
    subdir(fe, sizeof fe, "cli.err");
    setenv("TB_GNUPLOT", "/nonexistent/gnuplot", 1);
    char *argv[] = {exe, "report", "--db", db, "--run", "1", "2", "--out", o2, NULL};
    int st = run_prog(argv, fo, fe);
    unsetenv("TB_GNUPLOT");
    assert_int_equal(st, 0);
    char *err = fx_slurp(fe, NULL);
    assert_non_null(err);
    int warnings = 0;
    for (const char *p = err; (p = strstr(p, "warning")); p++) warnings++;
    assert_int_equal(warnings, 1);
    free(err);
    assert_true(exists(o2, "report.md"));
}

static void test_run_without_data(void **state) {
    (void)state;
    char out[2048];
    subdir(out, sizeof out, "empty");
    const int ids[] = {5};
    tb_report_opts_t o = opts_runs(out, 1, ids);
    tb_report_result_t res;
    assert_int_equal(tb_report_write(&o, &res), TB_OK);
    assert_int_equal(res.n_charts, 0);
    assert_int_equal(res.n_rendered, 0);
    assert_true(res.n_skipped >= 5);
    char names[64][256];
    assert_int_equal(list_ext(out, ".svg", names, 64), 0);
    assert_int_equal(list_ext(out, ".gp", names, 64), 0);
    char *md = read_out(out, "report.md");
    assert_non_null(strstr(md, "Skipped: no decode test"));
    assert_non_null(strstr(md, "'failed'"));
    assert_non_null(strstr(md, "model file missing"));
    free(md);
}

static void test_bad_inputs(void **state) {
    (void)state;
    char out[2048];
    subdir(out, sizeof out, "bad");
    const int ids[] = {99};
    tb_report_opts_t o = opts_runs(out, 1, ids);
    assert_int_equal(tb_report_write(&o, NULL), TB_ERR_NOT_FOUND);
    assert_non_null(strstr(tb_last_error(), "99"));
    char nodb[2048];
    subdir(nodb, sizeof nodb, "absent.db");
    o = opts_runs(out, 0, ids);
    o.sel.kind = TB_REPORT_SEL_LAST;
    o.sel.n = 1;
    o.db_path = nodb;
    assert_int_equal(tb_report_write(&o, NULL), TB_ERR_IO);
    assert_non_null(strstr(tb_last_error(), "absent.db"));
    /* a database that is not a results store */
    char junk[2048];
    subdir(junk, sizeof junk, "junk.db");
    FILE *f = fopen(junk, "w");
    assert_non_null(f);
    fputs("not sqlite at all, just text\n", f);
    fclose(f);
    o.db_path = junk;
    assert_true(tb_report_write(&o, NULL) < 0);
    /* an empty tag selection */
    o.db_path = db;
    assert_int_equal(tb_report_parse_sel("format=bf16", &o.sel), TB_OK);
    assert_int_equal(tb_report_write(&o, NULL), TB_ERR_NOT_FOUND);
}

/* ===================================================================== */
/* Units: selectors, JSON, statistics, SVG inlining                        */
/* ===================================================================== */

static void test_parse_sel(void **state) {
    (void)state;
    tb_report_sel_t s;
    assert_int_equal(tb_report_parse_sel("3,5,8", &s), TB_OK);
    assert_int_equal(s.kind, TB_REPORT_SEL_RUNS);
    assert_int_equal(s.n, 3);
    assert_int_equal(s.ids[2], 8);
    assert_int_equal(tb_report_parse_sel("last:4", &s), TB_OK);
    assert_int_equal(s.kind, TB_REPORT_SEL_LAST);
    assert_int_equal(s.n, 4);
    assert_int_equal(tb_report_parse_sel("suite=fixture", &s), TB_OK);
    assert_int_equal(s.kind, TB_REPORT_SEL_TAG);
    assert_string_equal(s.key, "suite");
    assert_string_equal(s.value, "fixture");
    assert_int_equal(tb_report_parse_sel("tag:a=b=c", &s), TB_OK);
    assert_string_equal(s.key, "a");
    assert_string_equal(s.value, "b=c");
    assert_int_equal(tb_report_parse_sel("commit:abc123", &s), TB_OK);
    assert_int_equal(s.kind, TB_REPORT_SEL_COMMIT);
    static const char *const bad[] = {"", "3,x", "0", "last:0", "last:", "=v", "k=", "commit:", "nonsense"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        if (tb_report_parse_sel(bad[i], &s) != TB_ERR_ARG) fail_msg("selector '%s' accepted", bad[i]);
    assert_non_null(strstr(tb_last_error(), "nonsense"));
}

static void test_json_number(void **state) {
    (void)state;
    double v = 0;
    const char *j = "{\"s\": \"x\\\"depth\\\":1}\", \"n\": {\"depth\": 7}, \"a\": [1, {\"b\": 2}], \"depth\": 4096}";
    assert_int_equal(rp_json_number(j, "depth", &v), TB_OK);
    assert_true(v == 4096);
    assert_int_equal(rp_json_number(j, "missing", &v), TB_ERR_NOT_FOUND);
    assert_int_equal(rp_json_number("{\"depth\": \"deep\"}", "depth", &v), TB_ERR_NOT_FOUND);
    assert_int_equal(rp_json_number("{\"a\" 1}", "depth", &v), TB_ERR_FORMAT);
    assert_non_null(strstr(tb_last_error(), "byte 5"));
    assert_int_equal(rp_json_number("[1]", "depth", &v), TB_ERR_FORMAT);
    assert_int_equal(rp_json_number("{\"x\": [1, 2", "depth", &v), TB_ERR_FORMAT);
}

static void test_stats(void **state) {
    (void)state;
    double v[] = {4, 1, 3, 2};
    assert_true(rp_median(v, 4) == 2.5);
    assert_true(rp_median(v, 3) == 3);
    assert_true(isnan(rp_median(v, 0)));
    assert_true(fabs(rp_stddev(v, 4) - sqrt(5.0 / 3.0)) < 1e-12);
    assert_true(rp_stddev(v, 1) == 0);
    double s[] = {10, 20, 30, 40, 50};
    assert_true(rp_percentile_sorted(s, 5, 50) == 30);
    assert_true(fabs(rp_percentile_sorted(s, 5, 90) - 46) < 1e-12);
    assert_true(rp_percentile_sorted(s, 5, 100) == 50);
}

static void test_svg_inline(void **state) {
    (void)state;
    const char *svg = "<?xml version=\"1.0\"?>\n<!DOCTYPE svg PUBLIC \"-//W3C//DTD SVG 1.1//EN\" "
                      "\"http://www.w3.org/Graphics/SVG/1.1/DTD/svg11.dtd\">\n"
                      "<svg width=\"10\" height=\"10\"\n xmlns=\"http://www.w3.org/2000/svg\"\n"
                      " xmlns:xlink=\"http://www.w3.org/1999/xlink\">\n<!-- made by hand -->"
                      "<defs><path id='gpPt0' d='M0,0'/></defs><use xlink:href='#gpPt0' filter='url(#tb)'/>"
                      "<g id=\"gnuplot_plot_1\"><path d='M1,2 L3,4'/></g></svg>\n";
    rp_buf_t b = {0};
    assert_int_equal(rp_svg_inline(svg, "c1-", &b), TB_OK);
    assert_null(strstr(b.p, "http"));
    assert_null(strstr(b.p, "xmlns"));
    assert_null(strstr(b.p, "<!--"));
    assert_null(strstr(b.p, "<?xml"));
    assert_non_null(strstr(b.p, "<svg width=\"10\" height=\"10\""));
    assert_non_null(strstr(b.p, "id='c1-gpPt0'"));
    assert_non_null(strstr(b.p, "href='#c1-gpPt0'"));
    assert_non_null(strstr(b.p, "url(#c1-tb)"));
    assert_non_null(strstr(b.p, "id=\"c1-gnuplot_plot_1\""));
    rp_buf_free(&b);
    assert_int_equal(rp_svg_inline("<html/>", "x", &b), TB_ERR_FORMAT);
    rp_buf_free(&b);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_sel),
        cmocka_unit_test(test_json_number),
        cmocka_unit_test(test_stats),
        cmocka_unit_test(test_svg_inline),
        cmocka_unit_test(test_full_report_files),
        cmocka_unit_test(test_svgs_parse_and_plot),
        cmocka_unit_test(test_html_self_contained),
        cmocka_unit_test(test_golden_tables),
        cmocka_unit_test(test_values_match_formulas),
        cmocka_unit_test(test_compare_speedup),
        cmocka_unit_test(test_missing_gnuplot),
        cmocka_unit_test(test_run_without_data),
        cmocka_unit_test(test_bad_inputs),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
