/*
 * test_e2e_disk.c — full disks, killed processes and broken databases
 * through the real `ternbench` binary. A full disk is simulated with
 * RLIMIT_FSIZE in the child (SIGXFSZ ignored, so writes fail with EFBIG).
 *   - model synth / model quantize: non-zero exit, the error named, no file
 *     under the final name (an earlier file there kept intact), no .tmp;
 *   - run into a database holding an earlier run: integrity ok, the earlier
 *     run's rows unchanged, the new run never left 'running';
 *   - report: a clear error, the earlier report kept; unwritable --out;
 *   - run killed (SIGKILL) while synthesizing its cached model: the cache
 *     only ever holds complete models under their final names;
 *   - a database that is not SQLite or is a truncated SQLite file: a clear
 *     error from every command, and the file left byte for byte as it was.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "e2e.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* ===================================================================== */
/* Fixtures                                                               */
/* ===================================================================== */

static const char *GOOD_INI =
    "[model]\npath = m.gguf\n"
    "[engine]\nthreads = 1\n"
    "[protocol]\nwarmup = 0\nrepetitions = 2\nbandwidth_probe = 0\nthrottle_check = false\n"
    "sensor_interval = 20ms\n"
    "[decode]\ntokens = 4\n"
    "[generate]\nprompt_tokens = 4\ntokens = 4\n";

static int64_t model_bytes;   /* size of m.gguf */

static int group_setup(void **state) {
    (void)state;
    e2e_res_t r;
    E2E_RUN(&r, E2E_NO_LIMIT, "model", "synth", "--preset", "llama-tiny", "--out", "m.gguf", "--quiet");
    int ok = r.status == 0;
    if (!ok) fprintf(stderr, "model synth failed (%d): %s\n", r.status, r.err);
    e2e_res_free(&r);
    if (!ok) return -1;
    model_bytes = e2e_size("m.gguf");
    e2e_write("good.ini", GOOD_INI, (size_t)-1);
    E2E_RUN(&r, E2E_NO_LIMIT, "run", "good.ini", "--db", "base.db", "-q");
    ok = r.status == 0;
    if (!ok) fprintf(stderr, "run good.ini failed (%d): %s\n", r.status, r.err);
    e2e_res_free(&r);
    return ok ? 0 : -1;
}

/* Copy TMP/from to TMP/to byte for byte. */
/* Size of the GGUF writer's temporary BASE.XXXXXX.tmp in TMP, or -1. */
static int64_t temp_size(const char *base) {
    char p[512];
    e2e_path(p, sizeof p, ".");
    DIR *d = opendir(p);
    int64_t sz = -1;
    size_t bl = strlen(base);
    for (struct dirent *e; d && (e = readdir(d));) {
        size_t l = strlen(e->d_name);
        if (l == bl + 11 && !strncmp(e->d_name, base, bl) && !strcmp(e->d_name + l - 4, ".tmp"))
            sz = e2e_size(e->d_name);
    }
    if (d) closedir(d);
    return sz;
}

static void copy_file(const char *from, const char *to) {
    size_t n;
    char *b = e2e_slurp(from, &n);
    if (!b) fail_msg("cannot read %s", from);
    e2e_write(to, b, n);
    free(b);
}

/* True when TMP/a and TMP/b hold the same bytes. */
static int same_bytes(const char *a, const char *b) {
    size_t na, nb;
    char *x = e2e_slurp(a, &na), *y = e2e_slurp(b, &nb);
    int same = x && y && na == nb && memcmp(x, y, na) == 0;
    free(x);
    free(y);
    return same;
}

/* ===================================================================== */
/* model synth / quantize on a full disk                                  */
/* ===================================================================== */

/* Write OUT under RLIMIT_FSIZE = limit, with an earlier file at OUT when
 * `keep` (it must survive). The command is args with OUT last but one. */
static void full_disk_writer(const char *const *args, int64_t limit, int keep, const char *what) {
    const char *out = "out.gguf";
    if (keep) e2e_write(out, "an earlier file that must survive\n", (size_t)-1);
    e2e_res_t r;
    e2e_run(E2E_FSIZE(limit), args, &r);
    char label[256];
    snprintf(label, sizeof label, "%s, limit %lld, %s", what, (long long)limit, keep ? "earlier file" : "no file");
    e2e_assert_clean(&r, label);
    if (r.status == 0) fail_msg("%s: exit 0 on a full disk", label);
    e2e_assert_err_has(&r, label, out, "File too large", NULL);
    if (keep) {
        size_t n;
        char *b = e2e_slurp(out, &n);
        if (!b || strncmp(b, "an earlier file", 15) != 0) fail_msg("%s: the earlier %s was overwritten", label, out);
        free(b);
    } else if (e2e_size(out) >= 0) {
        fail_msg("%s: %s exists after a failed write (%lld bytes)", label, out, (long long)e2e_size(out));
    }
    if (temp_size("out.gguf") >= 0) fail_msg("%s: out.gguf.XXXXXX.tmp left behind", label);
    e2e_res_free(&r);
}

static void test_synth_full_disk(void **state) {
    (void)state;
    const char *const args[] = {"model", "synth", "--preset", "llama-tiny", "--out", "out.gguf", "--quiet", NULL};
    /* the header, the metadata, the tensor data, the last buffered flush */
    const int64_t limits[] = {0, 4096, 65536, 1 << 20, model_bytes - 4096, model_bytes - 1};
    char p[512];
    e2e_path(p, sizeof p, "out.gguf");
    for (size_t i = 0; i < sizeof limits / sizeof limits[0]; i++) {
        full_disk_writer(args, limits[i], (int)(i & 1), "model synth");
        remove(p);
    }
}

static void test_quantize_full_disk(void **state) {
    (void)state;
    const char *const args[] = {"model", "quantize", "m.gguf", "out.gguf", "--type", "q8_0", NULL};
    e2e_res_t r;
    E2E_RUN(&r, E2E_NO_LIMIT, "model", "quantize", "m.gguf", "q.gguf", "--type", "q8_0");
    assert_int_equal(r.status, 0);
    e2e_res_free(&r);
    int64_t qbytes = e2e_size("q.gguf");
    assert_true(qbytes > 65536);
    const int64_t limits[] = {0, 8192, qbytes / 2, qbytes - 1};
    char p[512];
    e2e_path(p, sizeof p, "out.gguf");
    for (size_t i = 0; i < sizeof limits / sizeof limits[0]; i++) {
        full_disk_writer(args, limits[i], (int)(i & 1), "model quantize");
        remove(p);
    }
}

/* ===================================================================== */
/* run into an existing database on a full disk                           */
/* ===================================================================== */

/* Everything recorded for run 1, as text. */
static char *run1_rows(const char *db) {
    char *a = e2e_db_query(db, "SELECT * FROM runs WHERE id = 1");
    char *b = e2e_db_query(db, "SELECT t.*, (SELECT group_concat(x.metric || '=' || x.value || x.unit, ',')"
                               " FROM (SELECT * FROM measurements WHERE test_id = t.id ORDER BY id) x)"
                               " FROM tests t WHERE run_id = 1 ORDER BY id");
    char *c = e2e_db_query(db, "SELECT count(*), sum(t_ns), sum(token_id) FROM token_events e"
                               " JOIN tests t ON t.id = e.test_id WHERE t.run_id = 1");
    char *d = e2e_db_query(db, "SELECT count(*), sum(value) FROM sensor_samples WHERE run_id = 1");
    size_t n = strlen(a) + strlen(b) + strlen(c) + strlen(d) + 1;
    char *all = malloc(n);
    assert_non_null(all);
    snprintf(all, n, "%s%s%s%s", a, b, c, d);
    free(a); free(b); free(c); free(d);
    return all;
}

static void test_run_full_disk(void **state) {
    (void)state;
    char base[512], db[512];
    e2e_path(base, sizeof base, "base.db");
    e2e_path(db, sizeof db, "fd.db");
    char *want = run1_rows(base);
    assert_non_null(strstr(want, "complete"));
    int64_t size = e2e_size("base.db");
    assert_true(size > 0);
    /* open fails; a few pages of WAL; below and above the database size */
    const int64_t limits[] = {0, 16384, 49152, size / 2, size + 8192};
    for (size_t i = 0; i < sizeof limits / sizeof limits[0]; i++) {
        remove(db);
        copy_file("base.db", "fd.db");
        e2e_res_t r;
        E2E_RUN(&r, E2E_FSIZE(limits[i]), "run", "good.ini", "--db", "fd.db", "-q");
        char label[128];
        snprintf(label, sizeof label, "run, limit %lld", (long long)limits[i]);
        e2e_assert_clean(&r, label);
        if (r.status != 0) e2e_assert_err_has(&r, label, "fd.db", NULL);
        char *left = e2e_db_query(db, "SELECT group_concat(status, ',') FROM runs WHERE id > 1");
        print_message("%s: exit %d, new run %s", label, r.status, left);
        /* a run the dying process could not close is announced as such */
        if (strstr(left, "running")) e2e_assert_err_has(&r, label, "stays 'running'", NULL);
        free(left);
        e2e_res_free(&r);

        /* the file is sound and the earlier run untouched */
        char *ic = e2e_db_query(db, "PRAGMA integrity_check");
        if (strcmp(ic, "ok\n") != 0) fail_msg("%s: integrity_check: %s", label, ic);
        free(ic);
        char *got = run1_rows(db);
        if (strcmp(want, got) != 0) fail_msg("%s: run 1 changed:\nbefore %s\nafter  %s", label, want, got);
        free(got);

        /* the next open settles whatever the dead writer left 'running' */
        E2E_RUN(&r, E2E_NO_LIMIT, "list", "--db", "fd.db");
        e2e_assert_clean(&r, label);
        if (r.status != 0) fail_msg("%s: list after the failed run: exit %d: %s", label, r.status, r.err);
        e2e_res_free(&r);
        char *st = e2e_db_query(db, "SELECT id, status FROM runs WHERE id > 1 AND status NOT IN"
                                    " ('failed', 'interrupted', 'complete')"
                                    " UNION ALL SELECT run_id, 'test ' || status FROM tests"
                                    " WHERE status = 'running'");
        if (st[0]) fail_msg("%s: left unfinished:\n%s", label, st);
        free(st);
        /* a run recorded as complete must really be complete */
        char *cm = e2e_db_query(db, "SELECT r.id FROM runs r WHERE r.id > 1 AND r.status = 'complete'"
                                    " AND (SELECT count(*) FROM tests t WHERE t.run_id = r.id"
                                    " AND t.status = 'complete') <> 2");
        if (cm[0]) fail_msg("%s: run %s marked complete with missing tests", label, cm);
        free(cm);
    }
    free(want);
}

/* ===================================================================== */
/* report: full disk, unwritable output                                   */
/* ===================================================================== */

static void test_report_full_disk(void **state) {
    (void)state;
    e2e_res_t r;
    E2E_RUN(&r, E2E_NO_LIMIT, "report", "--db", "base.db", "--out", "rep");
    if (r.status != 0) fail_msg("report: exit %d: %s", r.status, r.err);
    e2e_res_free(&r);
    copy_file("rep/report.html", "report-before.html");
    copy_file("rep/report.md", "report-md-before.md");

    /* no room at all: the database is still read (as list, show and export read it on a
     * full disk), and the failure names the output that did not fit, not the database */
    E2E_RUN(&r, E2E_FSIZE(0), "report", "--db", "base.db", "--out", "rep");
    e2e_assert_clean(&r, "report, limit 0");
    assert_true(r.status != 0);
    e2e_assert_err_has(&r, "report, limit 0", "rep/", "File too large", NULL);
    if (strstr(r.err, "not a ternbench results database"))
        fail_msg("report, limit 0: a full disk blamed on the database: %s", r.err);
    e2e_res_free(&r);
    assert_true(same_bytes("rep/report.html", "report-before.html"));

    /* the database opens, the report does not fit */
    E2E_RUN(&r, E2E_FSIZE(40 * 1024), "report", "--db", "base.db", "--out", "rep");
    e2e_assert_clean(&r, "report, limit 40k");
    assert_true(r.status != 0);
    e2e_assert_err_has(&r, "report, limit 40k", "rep/", "File too large", NULL);
    e2e_res_free(&r);
    /* nothing lost: the earlier report is whole, no temporary left */
    assert_true(same_bytes("rep/report.html", "report-before.html"));
    assert_true(same_bytes("rep/report.md", "report-md-before.md"));
    assert_int_equal(e2e_size("rep/report.html.tmp"), -1);
    assert_int_equal(e2e_size("rep/report.md.tmp"), -1);
}

static void test_report_unwritable(void **state) {
    (void)state;
    e2e_write("afile", "x", 1);
    const char *outs[3] = {"afile/sub", "afile", NULL};
    int n = 2;
    struct stat st;
    if (stat("/proc/self", &st) == 0 && S_ISDIR(st.st_mode)) outs[n++] = "/proc/self";
    for (int i = 0; i < n; i++) {
        e2e_res_t r;
        E2E_RUN(&r, E2E_NO_LIMIT, "report", "--db", "base.db", "--out", outs[i], "--no-charts");
        e2e_assert_clean(&r, outs[i]);
        if (r.status == 0) fail_msg("report --out %s: exit 0", outs[i]);
        e2e_assert_err_has(&r, outs[i], outs[i], NULL);
        e2e_res_free(&r);
    }
    if (geteuid() != 0) {   /* permissions do not bind root */
        char p[512];
        e2e_path(p, sizeof p, "ro");
        assert_int_equal(mkdir(p, 0555), 0);
        e2e_res_t r;
        E2E_RUN(&r, E2E_NO_LIMIT, "report", "--db", "base.db", "--out", "ro", "--no-charts");
        e2e_assert_clean(&r, "ro");
        assert_true(r.status != 0);
        e2e_assert_err_has(&r, "ro", "ro/report", NULL);
        e2e_res_free(&r);
    }
}

/* export / show / report of a run that does not exist */
static void test_unknown_run(void **state) {
    (void)state;
    const char *const cmds[][10] = {
        {"export", "--run", "999", "--db", "base.db", NULL},
        {"export", "--run", "zzz", "--db", "base.db", "--format", "json", NULL},
        {"show", "999", "--db", "base.db", NULL},
        {"report", "--run", "999", "--db", "base.db", "--out", "rep999", "--no-charts", NULL},
    };
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
        e2e_res_t r;
        e2e_run(E2E_NO_LIMIT, cmds[i], &r);
        e2e_assert_clean(&r, cmds[i][0]);
        if (r.status == 0) fail_msg("%s %s %s: exit 0", cmds[i][0], cmds[i][1], cmds[i][2]);
        e2e_assert_err_has(&r, cmds[i][0], i == 1 ? "zzz" : "999", NULL);
        /* no half export on stdout */
        if (i < 2 && strstr(r.out, "decode")) fail_msg("export printed rows for an unknown run:\n%s", r.out);
        e2e_res_free(&r);
    }
    assert_int_equal(e2e_size("rep999/report.html"), -1);
}

/* Output that cannot be written (stdout on a full disk) is a failure. */
static void test_full_stdout(void **state) {
    (void)state;
    const char *const cmds[][10] = {
        {"model", "info", "m.gguf", NULL},
        {"tokenize", "-m", "m.gguf", "--text", "hello", NULL},
        {"generate", "-m", "m.gguf", "-p", "hi", "-n", "4", "-t", "1", NULL},
        {"scenario", "explain", "good.ini", NULL},
        {"list", "--db", "base.db", NULL},
        {"show", "1", "--db", "base.db", NULL},
        {"export", "--run", "1", "--db", "base.db", NULL},
        {"export", "--run", "1", "--db", "base.db", "--format", "json", NULL},
    };
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
        char what[128];
        snprintf(what, sizeof what, "%s %s > full disk", cmds[i][0], cmds[i][1]);
        e2e_res_t r;
        e2e_run(E2E_FULL_STDOUT(1 << 20), cmds[i], &r);
        e2e_assert_clean(&r, what);
        if (r.status == 0) fail_msg("%s: exit 0 though nothing could be written", what);
        e2e_assert_err_has(&r, what, "standard output", NULL);
        e2e_res_free(&r);
    }
    assert_int_equal(e2e_size("full-stdout.txt"), 1 << 20);
}

/* list/show/export on a database that does not exist: an error, and no
 * empty database (or its directory) appears in its place */
static void test_missing_db(void **state) {
    (void)state;
    const char *const cmds[][8] = {
        {"list", "--db", "typo/none.db", NULL},
        {"show", "1", "--db", "typo/none.db", NULL},
        {"export", "--run", "1", "--db", "typo/none.db", NULL},
        {"report", "--db", "typo/none.db", "--out", "rep-none", "--no-charts", NULL},
    };
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
        e2e_res_t r;
        e2e_run(E2E_NO_LIMIT, cmds[i], &r);
        e2e_assert_clean(&r, cmds[i][0]);
        if (r.status == 0) fail_msg("%s on a missing database: exit 0", cmds[i][0]);
        e2e_assert_err_has(&r, cmds[i][0], "typo/none.db", NULL);
        e2e_res_free(&r);
        assert_int_equal(e2e_size("typo/none.db"), -1);
    }
}

/* ===================================================================== */
/* Broken database files                                                  */
/* ===================================================================== */

static void test_corrupt_db(void **state) {
    (void)state;
    size_t n;
    char *db = e2e_slurp("base.db", &n);
    assert_non_null(db);
    assert_true(n > 8192);
    char junk[6000];
    for (size_t i = 0; i < sizeof junk; i++) junk[i] = (char)((i * 2654435761u) >> 13);
    e2e_write("junk.db", junk, sizeof junk);
    e2e_write("text.db", "this is not a database\n", (size_t)-1);
    e2e_write("trunc.db", db, n / 2);
    /* a valid header, the rest destroyed */
    memset(db + 4096, 0xA5, n - 4096);
    e2e_write("mangled.db", db, n);
    free(db);
    const char *files[] = {"junk.db", "text.db", "trunc.db", "mangled.db"};
    for (size_t f = 0; f < sizeof files / sizeof files[0]; f++) {
        char orig[64];
        snprintf(orig, sizeof orig, "%s.orig", files[f]);
        copy_file(files[f], orig);
        const char *const cmds[][10] = {
            {"list", "--db", files[f], NULL},
            {"show", "1", "--db", files[f], NULL},
            {"export", "--run", "1", "--db", files[f], NULL},
            {"report", "--db", files[f], "--out", "repx", "--no-charts", NULL},
            {"run", "good.ini", "--db", files[f], "-q", NULL},
        };
        for (size_t c = 0; c < sizeof cmds / sizeof cmds[0]; c++) {
            char what[128];
            snprintf(what, sizeof what, "%s --db %s", cmds[c][0], files[f]);
            e2e_res_t r;
            e2e_run(E2E_NO_LIMIT, cmds[c], &r);
            e2e_assert_clean(&r, what);
            if (r.status == 0) fail_msg("%s: exit 0; stdout:\n%.2000s", what, r.out);
            e2e_assert_err_has(&r, what, files[f], NULL);
            if (!strstr(r.err, "not a ternbench results database") && !strstr(r.err, "malformed"))
                fail_msg("%s: the message does not say what is wrong with the file:\n%s", what, r.err);
            e2e_res_free(&r);
            if (!same_bytes(files[f], orig)) fail_msg("%s: the database file was modified", what);
        }
    }
}

/* ===================================================================== */
/* Killed while synthesizing the cached model                              */
/* ===================================================================== */

/* Largest file size among the entries of TMP/dir (-1: none). */
static int64_t largest_in(const char *dir) {
    char p[512];
    e2e_path(p, sizeof p, dir);
    DIR *d = opendir(p);
    if (!d) return -1;
    int64_t best = -1;
    for (struct dirent *e; (e = readdir(d));) {
        if (e->d_name[0] == '.') continue;
        char f[1024];
        struct stat st;
        snprintf(f, sizeof f, "%s/%s", p, e->d_name);
        if (stat(f, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > best) best = st.st_size;
    }
    closedir(d);
    return best;
}

/* Every file in TMP/dir not named as a temporary is a complete model. */
static void assert_cache_complete(const char *dir, const char *label) {
    char p[512];
    e2e_path(p, sizeof p, dir);
    DIR *d = opendir(p);
    if (!d) return;
    for (struct dirent *e; (e = readdir(d));) {
        if (e->d_name[0] == '.' || strstr(e->d_name, ".part") || strstr(e->d_name, ".tmp")) continue;
        char f[1024];
        snprintf(f, sizeof f, "%s/%s", dir, e->d_name);
        if (e2e_size(f) != model_bytes)
            fail_msg("%s: %s is %lld bytes, a complete model is %lld", label, f, (long long)e2e_size(f),
                     (long long)model_bytes);
        e2e_res_t r;
        E2E_RUN(&r, E2E_NO_LIMIT, "model", "info", f);
        if (r.status != 0) fail_msg("%s: cached %s does not load: %s", label, f, r.err);
        e2e_res_free(&r);
    }
    closedir(d);
}

static void sleep_ms(int ms) {
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static void test_kill_during_synth(void **state) {
    (void)state;
    e2e_write("synth.ini",
              "[model]\nsynth = llama-tiny\ncache_dir = cache\n"
              "[engine]\nthreads = 1\n"
              "[protocol]\nwarmup = 0\nrepetitions = 1\nbandwidth_probe = 0\nthrottle_check = false\n"
              "[decode]\ntokens = 2\n", (size_t)-1);
    /* kill as soon as the partial file exists, a third in, near the end */
    const int64_t at[] = {0, model_bytes / 3, model_bytes - model_bytes / 8};
    int killed = 0;
    for (size_t i = 0; i < sizeof at / sizeof at[0]; i++) {
        char label[64];
        snprintf(label, sizeof label, "kill at %lld bytes", (long long)at[i]);
        pid_t pid = e2e_spawn(E2E_NO_LIMIT, (const char *const[]){"run", "synth.ini", "--db", "k.db", "-q", NULL});
        /* poll the cache (1 ms steps, at most 60 s) until enough was written */
        for (int t = 0; t < 60000; t++) {
            if (largest_in("cache") > at[i]) break;
            siginfo_t si = {0};   /* exited already? (WNOWAIT: e2e_wait reaps it) */
            if (waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT) == 0 && si.si_pid == pid) break;
            sleep_ms(1);
        }
        int k = kill(pid, SIGKILL) == 0;
        e2e_res_t r;
        e2e_wait(pid, &r);
        if (k && r.status == 1000 + SIGKILL) killed++;
        e2e_res_free(&r);
        assert_cache_complete("cache", label);
        /* remove the published model (if the kill came late) to kill the next synthesis */
        char p[512];
        e2e_path(p, sizeof p, "cache");
        DIR *d = opendir(p);
        for (struct dirent *e; d && (e = readdir(d));) {
            if (e->d_name[0] == '.' || strstr(e->d_name, ".part") || strstr(e->d_name, ".tmp")) continue;
            char f[1024];
            snprintf(f, sizeof f, "%s/%s", p, e->d_name);
            remove(f);
        }
        if (d) closedir(d);
    }
    print_message("killed %d of 3 runs during synthesis\n", killed);
    /* the next run synthesizes a complete model and runs */
    e2e_res_t r;
    E2E_RUN(&r, E2E_NO_LIMIT, "run", "synth.ini", "--db", "k.db", "-q");
    if (r.status != 0) fail_msg("run after the kills: exit %d: %s", r.status, r.err);
    e2e_res_free(&r);
    assert_cache_complete("cache", "after the kills");
    /* and the dead runs' partial files are gone (each is model-sized) */
    char cdir[512];
    e2e_path(cdir, sizeof cdir, "cache");
    DIR *cd = opendir(cdir);
    assert_non_null(cd);
    for (struct dirent *e; (e = readdir(cd));)
        if (strstr(e->d_name, ".part")) fail_msg("stale partial model left in the cache: %s", e->d_name);
    closedir(cd);
    char db[512];
    e2e_path(db, sizeof db, "k.db");
    char *st = e2e_db_query(db, "SELECT status FROM runs ORDER BY id DESC LIMIT 1");
    assert_string_equal(st, "complete\n");
    free(st);
    /* and a second run reuses it */
    E2E_RUN(&r, E2E_NO_LIMIT, "run", "synth.ini", "--db", "k.db", "-q");
    assert_int_equal(r.status, 0);
    e2e_res_free(&r);

    /* `model synth` killed mid-write: never a file under the final name */
    pid_t pid = e2e_spawn(E2E_NO_LIMIT, (const char *const[]){"model", "synth", "--preset", "llama-tiny",
                                                             "--out", "k.gguf", "--quiet", NULL});
    for (int t = 0; t < 60000 && temp_size("k.gguf") < model_bytes / 2 && e2e_size("k.gguf") < 0; t++) sleep_ms(1);
    kill(pid, SIGKILL);
    e2e_wait(pid, &r);
    int64_t fin = e2e_size("k.gguf");
    if (fin >= 0 && fin != model_bytes) fail_msg("killed model synth left k.gguf of %lld bytes", (long long)fin);
    e2e_res_free(&r);

    /* SIGTERM / SIGINT mid-write: no half file and no k2.gguf.XXXXXX.tmp litter either */
    const int sigs[] = {SIGTERM, SIGINT};
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) {
        pid = e2e_spawn(E2E_NO_LIMIT, (const char *const[]){"model", "synth", "--preset", "maple-tiny",
                                                           "--out", "k2.gguf", "--quiet", NULL});
        for (int t = 0; t < 60000 && temp_size("k2.gguf") < (1 << 20) && e2e_size("k2.gguf") < 0; t++) sleep_ms(1);
        kill(pid, sigs[i]);
        e2e_wait(pid, &r);
        if (r.status == 1000 + sigs[i]) {
            assert_int_equal(e2e_size("k2.gguf"), -1);
            assert_int_equal(temp_size("k2.gguf"), -1);
        } else {
            print_message("model synth finished before signal %d (exit %d)\n", sigs[i], r.status);
        }
        e2e_res_free(&r);
        char p[512];
        e2e_path(p, sizeof p, "k2.gguf");
        remove(p);
    }
}

/* A FIFO where a file is expected is refused, never waited on forever. */
static void test_fifo_inputs(void **state) {
    (void)state;
    char p[512];
    e2e_path(p, sizeof p, "fifo");
    assert_int_equal(mkfifo(p, 0644), 0);
    e2e_write("fifo.ini", "[model]\npath = fifo\n[decode]\ntokens = 2\n", (size_t)-1);
    const char *const cmds[][10] = {
        {"model", "info", "fifo", NULL},
        {"generate", "-m", "fifo", "-n", "2", NULL},
        {"bench", "-m", "fifo", "-n", "2", "-p", "2", "-r", "1", NULL},
        {"model", "quantize", "fifo", "q.gguf", "--type", "q8_0", NULL},
        {"list", "--db", "fifo", NULL},
        {"report", "--db", "fifo", "--out", "repf", "--no-charts", NULL},
        {"run", "good.ini", "--db", "fifo", "-q", NULL},
        {"scenario", "check", "fifo.ini", NULL},
    };
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
        char what[128];
        snprintf(what, sizeof what, "%s %s %s (fifo)", cmds[i][0], cmds[i][1], cmds[i][2]);
        e2e_res_t r;
        e2e_run(E2E_NO_LIMIT, cmds[i], &r);
        e2e_assert_clean(&r, what);
        if (r.status == 0) fail_msg("%s: exit 0", what);
        e2e_assert_err_has(&r, what, "fifo", NULL);
        e2e_res_free(&r);
    }
}

int main(int argc, char **argv) {
    if (e2e_init(argc, argv, "disk") != 0) return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_synth_full_disk),
        cmocka_unit_test(test_quantize_full_disk),
        cmocka_unit_test(test_run_full_disk),
        cmocka_unit_test(test_report_full_disk),
        cmocka_unit_test(test_report_unwritable),
        cmocka_unit_test(test_unknown_run),
        cmocka_unit_test(test_full_stdout),
        cmocka_unit_test(test_missing_db),
        cmocka_unit_test(test_corrupt_db),
        cmocka_unit_test(test_fifo_inputs),
        cmocka_unit_test(test_kill_during_synth),
    };
    int failed = cmocka_run_group_tests(tests, group_setup, NULL);
    e2e_cleanup();
    return failed;
}
