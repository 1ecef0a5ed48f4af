/*
 * cmd_tokenize.c — `ternbench tokenize` and `ternbench detokenize`.
 *
 *   tokenize -m F.gguf (--text T | --file F) [--ids-only] [--no-special] [--parse-special]
 *       one "id<TAB>piece" line per token (piece: the token's bytes, special
 *       tokens shown by their text), or with --ids-only the ids on one line
 *   detokenize -m F.gguf IDS...
 *       the text the ids stand for, exactly (no newline added); ids may be
 *       separate arguments or comma/space separated in one
 *
 * Only the tokenizer is built (tb_gguf_open + tb_tokenizer_from_gguf): the
 * weights are never touched, so this works on vocabulary-only GGUF files.
 */
#include "commands.h"
#include "scenario.h"
#include "ternbench.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int usage_error(const char *cmd, const char *usage, const char *fmt, const char *arg) {
    fprintf(stderr, "ternbench %s: ", cmd);
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\nusage: ternbench %s %s\n", cmd, usage);
    return 2;
}

static int engine_error(const char *cmd) {
    fprintf(stderr, "ternbench %s: %s\n", cmd, tb_last_error());
    return 1;
}

/* Open path and build its tokenizer; on failure prints and returns 1. */
static int open_tokenizer(const char *cmd, const char *path, tb_gguf_t **g, tb_tokenizer_t **t) {
    *g = NULL;
    *t = NULL;
    if (tb_gguf_open(path, g) != TB_OK) return engine_error(cmd);
    if (tb_tokenizer_from_gguf(*g, t) != TB_OK) {
        int rc = engine_error(cmd);
        tb_gguf_close(*g);
        *g = NULL;
        return rc;
    }
    return 0;
}

/* ===================================================================== */
/* tokenize                                                               */
/* ===================================================================== */

static const char tok_usage[] =
    "-m F.gguf (--text T | --file F) [--ids-only] [--no-special] [--parse-special]";

/* Print a piece with control bytes escaped, so each token stays on one line. */
static void print_piece(const char *p, int n) {
    for (int i = 0; i < n; i++) {
        unsigned char c = (unsigned char)p[i];
        if (c == '\n') fputs("\\n", stdout);
        else if (c == '\t') fputs("\\t", stdout);
        else if (c == '\\') fputs("\\\\", stdout);
        else if (c < 0x20 || c == 0x7F) printf("\\x%02x", c);
        else putchar(c);
    }
}

int cmd_tokenize(int argc, char **argv) {
    static const struct option opts[] = {
        {"model", required_argument, 0, 'm'}, {"text", required_argument, 0, 'x'},
        {"file", required_argument, 0, 'f'},  {"ids-only", no_argument, 0, 'i'},
        {"no-special", no_argument, 0, 'n'},  {"parse-special", no_argument, 0, 'p'},
        {0, 0, 0, 0},
    };
    const char *model = NULL, *text = NULL, *file = NULL;
    bool ids_only = false, add_special = true, parse_special = false;
    int c;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":m:", opts, NULL)) != -1) {
        switch (c) {
        case 'm': model = optarg; break;
        case 'x': text = optarg; break;
        case 'f': file = optarg; break;
        case 'i': ids_only = true; break;
        case 'n': add_special = false; break;
        case 'p': parse_special = true; break;
        case ':': return usage_error("tokenize", tok_usage, "option %s needs a value", argv[optind - 1]);
        default: return usage_error("tokenize", tok_usage, "unknown option '%s'", argv[optind - 1]);
        }
    }
    if (optind < argc) return usage_error("tokenize", tok_usage, "unexpected argument '%s'", argv[optind]);
    if (!model) return usage_error("tokenize", tok_usage, "%s", "-m is required");
    if (!text == !file) return usage_error("tokenize", tok_usage, "%s", "give exactly one of --text and --file");

    size_t len = 0;
    char *owned = NULL;
    if (file) {
        if (tb_input_read(file, "text file", TB_PROMPT_MAX_BYTES, &owned, &len) != TB_OK) {
            fprintf(stderr, "ternbench tokenize: %s\n", tb_last_error());
            return 2;   /* an input error, as a bad scenario is */
        }
        text = owned;
    } else {
        len = strlen(text);
    }
    tb_gguf_t *g;
    tb_tokenizer_t *tok;
    int rc = open_tokenizer("tokenize", model, &g, &tok);
    if (rc) { free(owned); return rc; }

    int cap = (int)(len + 16 < 1 << 30 ? len + 16 : 1 << 30);
    int32_t *ids = malloc((size_t)cap * sizeof *ids);
    int n = ids ? tb_tokenize(tok, text, len, add_special, parse_special, ids, cap) : TB_ERR_NOMEM;
    if (n > cap) {                          /* more ids than bytes (+ specials): retry */
        int32_t *more = realloc(ids, (size_t)n * sizeof *ids);
        if (more) { ids = more; cap = n; n = tb_tokenize(tok, text, len, add_special, parse_special, ids, cap); }
        else n = TB_ERR_NOMEM;
    }
    if (n < 0) {
        if (n == TB_ERR_NOMEM && !*tb_last_error()) fprintf(stderr, "ternbench tokenize: out of memory\n");
        else engine_error("tokenize");
        rc = 1;
    } else if (ids_only) {
        for (int i = 0; i < n; i++) printf(i ? " %d" : "%d", ids[i]);
        printf("\n");
    } else {
        char piece[512];
        for (int i = 0; i < n; i++) {
            int k = tb_token_to_bytes(tok, ids[i], true, piece, sizeof piece);
            printf("%d\t'", ids[i]);
            if (k > 0) print_piece(piece, k < (int)sizeof piece ? k : (int)sizeof piece);
            printf("'\n");
        }
    }
    free(ids);
    free(owned);
    tb_tokenizer_free(tok);
    tb_gguf_close(g);
    return rc;
}

/* ===================================================================== */
/* detokenize                                                             */
/* ===================================================================== */

static const char detok_usage[] = "-m F.gguf IDS...";

int cmd_detokenize(int argc, char **argv) {
    static const struct option opts[] = {{"model", required_argument, 0, 'm'}, {0, 0, 0, 0}};
    const char *model = NULL;
    int c;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "+:m:", opts, NULL)) != -1) {
        switch (c) {
        case 'm': model = optarg; break;
        case ':': return usage_error("detokenize", detok_usage, "option %s needs a value", argv[optind - 1]);
        default: return usage_error("detokenize", detok_usage, "unknown option '%s'", argv[optind - 1]);
        }
    }
    if (!model) return usage_error("detokenize", detok_usage, "%s", "-m is required");
    if (optind >= argc) return usage_error("detokenize", detok_usage, "%s", "no ids given");

    /* parse all ids first: a bad id is a usage error before any output */
    int n = 0, cap = 64;
    int32_t *ids = malloc((size_t)cap * sizeof *ids);
    for (int a = optind; a < argc && ids; a++) {
        const char *s = argv[a];
        if (s[0] == '-' && (s[1] < '0' || s[1] > '9')) {   /* an option after the ids */
            free(ids);
            return usage_error("detokenize", detok_usage, "unknown option '%s'", s);
        }
        if (!s[strspn(s, ", ")]) {   /* nothing but separators: not an id, never id 0 */
            free(ids);
            return usage_error("detokenize", detok_usage, "'%s' is not a token id (an empty value)", argv[a]);
        }
        while (*s) {
            if (*s == ',' || *s == ' ') { s++; continue; }
            char *end;
            errno = 0;
            long v = strtol(s, &end, 10);
            if (errno || end == s || v < 0 || v > INT32_MAX || (*end && *end != ',' && *end != ' ')) {
                free(ids);
                return usage_error("detokenize", detok_usage, "'%s' is not a token id", argv[a]);
            }
            if (n == cap) {
                int32_t *more = realloc(ids, (size_t)(cap *= 2) * sizeof *ids);
                if (!more) { free(ids); ids = NULL; break; }
                ids = more;
            }
            ids[n++] = (int32_t)v;
            s = end;
        }
    }
    if (!ids) { fprintf(stderr, "ternbench detokenize: out of memory\n"); return 1; }

    tb_gguf_t *g;
    tb_tokenizer_t *tok;
    int rc = open_tokenizer("detokenize", model, &g, &tok);
    if (rc) { free(ids); return rc; }
    tb_detok_t *d = NULL;
    char out[1024];
    if (tb_detok_new(tok, &d) != TB_OK) rc = engine_error("detokenize");
    for (int i = 0; i < n && !rc; i++) {   /* a long token drains in several calls */
        for (int k = tb_detok_push(d, ids[i], out, sizeof out); !rc && k != 0;
             k = tb_detok_drain(d, out, sizeof out)) {
            if (k < 0) rc = engine_error("detokenize");
            else fwrite(out, 1, (size_t)k, stdout);
        }
    }
    for (int k = 1; !rc && k != 0;) {
        k = tb_detok_flush(d, out, sizeof out);
        if (k < 0) rc = engine_error("detokenize");
        else fwrite(out, 1, (size_t)k, stdout);
    }
    fflush(stdout);
    if (d) tb_detok_free(d);
    tb_tokenizer_free(tok);
    tb_gguf_close(g);
    free(ids);
    return rc;
}
