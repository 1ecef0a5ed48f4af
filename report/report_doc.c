/*
 * report_doc.c — the report document, written twice as it is built: as
 * Markdown (report.md) and as self-contained HTML (report.html: inline CSS,
 * SVG charts inlined, no reference to anything outside the file).
 */
#include "report_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* ===================================================================== */
/* Escaping                                                               */
/* ===================================================================== */

static void html_esc(rp_buf_t *b, const char *s) {
    for (; *s; s++) {
        switch (*s) {
        case '&': rp_buf_puts(b, "&amp;"); break;
        case '<': rp_buf_puts(b, "&lt;"); break;
        case '>': rp_buf_puts(b, "&gt;"); break;
        case '"': rp_buf_puts(b, "&quot;"); break;
        case '\'': rp_buf_puts(b, "&#39;"); break;
        default: rp_buf_put(b, s, 1);
        }
    }
}

/* A Markdown table cell: '|' escaped, newlines flattened. */
static void md_cell(rp_buf_t *b, const char *s) {
    for (; *s; s++) {
        if (*s == '|') rp_buf_puts(b, "\\|");
        else if (*s == '\n' || *s == '\r') rp_buf_puts(b, " ");
        else rp_buf_put(b, s, 1);
    }
}

/* ===================================================================== */
/* Document                                                               */
/* ===================================================================== */

static const char CSS[] =
    "body{font-family:system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;max-width:1100px;"
    "margin:2em auto;padding:0 1em;color:#1b1b1b;line-height:1.45}"
    "h1{border-bottom:2px solid #ddd;padding-bottom:.3em}"
    "h2{margin-top:2em;border-bottom:1px solid #eee}"
    "table{border-collapse:collapse;margin:1em 0;font-size:.92em}"
    "th,td{border:1px solid #ccc;padding:.3em .6em}"
    "th{background:#f3f3f3}"
    "td.r,th.r{text-align:right;font-variant-numeric:tabular-nums}"
    "tr:nth-child(even) td{background:#fafafa}"
    "pre{background:#f6f8fa;padding:.8em;overflow-x:auto;font-size:.85em}"
    ".note{color:#8a6d3b;background:#fcf8e3;padding:.4em .8em;border-left:3px solid #f0ad4e}"
    "figure{margin:1.5em 0}"
    "figure svg{max-width:100%;height:auto;display:block}"
    "figcaption{font-size:.85em;color:#555}";

void rp_doc_begin(rp_doc_t *d, const char *title) {
    memset(d, 0, sizeof *d);
    rp_buf_printf(&d->md, "# %s\n\n", title);
    rp_buf_puts(&d->html, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
                          "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>");
    html_esc(&d->html, title);
    rp_buf_printf(&d->html, "</title>\n<style>%s</style>\n</head>\n<body>\n<h1>", CSS);
    html_esc(&d->html, title);
    rp_buf_puts(&d->html, "</h1>\n");
}

void rp_doc_end(rp_doc_t *d) {
    if (d->in_table) rp_doc_table_end(d);
    rp_buf_puts(&d->html, "</body>\n</html>\n");
}

void rp_doc_free(rp_doc_t *d) {
    rp_buf_free(&d->md);
    rp_buf_free(&d->html);
}

void rp_doc_heading(rp_doc_t *d, int level, const char *text) {
    if (d->in_table) rp_doc_table_end(d);
    if (level < 2) level = 2;
    if (level > 4) level = 4;
    rp_buf_printf(&d->md, "%.*s %s\n\n", level, "####", text);
    rp_buf_printf(&d->html, "<h%d>", level);
    html_esc(&d->html, text);
    rp_buf_printf(&d->html, "</h%d>\n", level);
}

static void para(rp_doc_t *d, const char *cls, const char *fmt, va_list ap) {
    if (d->in_table) rp_doc_table_end(d);
    char *s = NULL;
    if (vasprintf(&s, fmt, ap) < 0) { d->md.oom = d->html.oom = 1; return; }
    rp_buf_printf(&d->md, "%s%s%s\n\n", cls ? "> " : "", s, "");
    rp_buf_printf(&d->html, "<p%s>", cls ? " class=\"note\"" : "");
    html_esc(&d->html, s);
    rp_buf_puts(&d->html, "</p>\n");
    free(s);
}

void rp_doc_para(rp_doc_t *d, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    para(d, NULL, fmt, ap);
    va_end(ap);
}

void rp_doc_note(rp_doc_t *d, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    para(d, "note", fmt, ap);
    va_end(ap);
}

/* One line of cells: "| a | b |" in markdown, <tag>a</tag><tag>b</tag> in
 * html (right-aligned columns get class "r"). */
static void cells(rp_doc_t *d, const char *const *v, const char *tag) {
    rp_buf_puts(&d->md, "|");
    for (int i = 0; i < d->n_cols; i++) {
        rp_buf_puts(&d->md, " ");
        md_cell(&d->md, v[i]);
        rp_buf_puts(&d->md, " |");
        rp_buf_printf(&d->html, "<%s%s>", tag, d->align[i] == 'r' ? " class=\"r\"" : "");
        html_esc(&d->html, v[i]);
        rp_buf_printf(&d->html, "</%s>", tag);
    }
    rp_buf_puts(&d->md, "\n");
}

void rp_doc_table(rp_doc_t *d, int n_cols, const char *const *head, const char *align) {
    if (d->in_table) rp_doc_table_end(d);
    d->in_table = 1;
    d->n_cols = n_cols > 31 ? 31 : n_cols;
    snprintf(d->align, sizeof d->align, "%s", align);
    rp_buf_puts(&d->html, "<table>\n<thead><tr>");
    cells(d, head, "th");
    rp_buf_puts(&d->md, "|");
    for (int i = 0; i < d->n_cols; i++)
        rp_buf_puts(&d->md, d->align[i] == 'r' ? " ---: |" : " --- |");
    rp_buf_puts(&d->md, "\n");
    rp_buf_puts(&d->html, "</tr></thead>\n<tbody>\n");
}

void rp_doc_row(rp_doc_t *d, const char *const *v) {
    if (!d->in_table) return;
    rp_buf_puts(&d->html, "<tr>");
    cells(d, v, "td");
    rp_buf_puts(&d->html, "</tr>\n");
}

void rp_doc_table_end(rp_doc_t *d) {
    if (!d->in_table) return;
    d->in_table = 0;
    rp_buf_puts(&d->md, "\n");
    rp_buf_puts(&d->html, "</tbody>\n</table>\n");
}

void rp_doc_pre(rp_doc_t *d, const char *text) {
    if (d->in_table) rp_doc_table_end(d);
    rp_buf_printf(&d->md, "```\n%s%s```\n\n", text, text[0] && text[strlen(text) - 1] == '\n' ? "" : "\n");
    rp_buf_puts(&d->html, "<pre>");
    html_esc(&d->html, text);
    rp_buf_puts(&d->html, "</pre>\n");
}

/* Read a whole file into a NUL-terminated malloc'd string. */
static int slurp(const char *path, char **out) {
    FILE *f = fopen(path, "rb");
    if (!f) return tb_err(TB_ERR_IO, "report: cannot read %s: %s", path, strerror(errno));
    rp_buf_t b = {0};
    char tmp[8192];
    size_t n;
    while ((n = fread(tmp, 1, sizeof tmp, f)) > 0) rp_buf_put(&b, tmp, n);
    int err = ferror(f);
    fclose(f);
    if (err || b.oom) {
        rp_buf_free(&b);
        return tb_err(err ? TB_ERR_IO : TB_ERR_NOMEM, "report: cannot read %s", path);
    }
    *out = b.p ? b.p : strdup("");
    return *out ? TB_OK : tb_err(TB_ERR_NOMEM, "report: out of memory");
}

int rp_doc_chart(rp_doc_t *d, const char *dir, const char *name, const char *title) {
    if (d->in_table) rp_doc_table_end(d);
    char path[4096];
    snprintf(path, sizeof path, "%s/%s.svg", dir, name);
    char *svg;
    int rc = slurp(path, &svg);
    if (rc) return rc;
    rp_buf_printf(&d->md, "![%s](%s.svg)\n\n", title, name);
    rp_buf_printf(&d->md, "[PNG](%s.png) · [gnuplot script](%s.gp) · [data](%s.dat)\n\n", name, name, name);
    rp_buf_puts(&d->html, "<figure>\n");
    char idp[80];
    snprintf(idp, sizeof idp, "%s-", name);
    rc = rp_svg_inline(svg, idp, &d->html);
    free(svg);
    if (rc) return tb_err_prefix(rc, "%s", path);
    rp_buf_puts(&d->html, "<figcaption>");
    html_esc(&d->html, title);
    rp_buf_printf(&d->html, " — files beside this report: %s.svg, %s.png, %s.gp, %s.dat</figcaption>\n</figure>\n",
                  name, name, name, name);
    return TB_OK;
}

/* ===================================================================== */
/* SVG inlining                                                            */
/* ===================================================================== */

static int starts(const char *p, const char *s) { return !strncmp(p, s, strlen(s)); }

int rp_svg_inline(const char *svg, const char *idp, rp_buf_t *out) {
    const char *p = strstr(svg, "<svg");
    if (!p) return tb_err(TB_ERR_FORMAT, "SVG: no <svg> element");
    const char *tag_end = strchr(p, '>');
    if (!tag_end) return tb_err(TB_ERR_FORMAT, "SVG: byte %td: unterminated <svg> tag", p - svg);
    /* the root tag: keep attributes except xmlns / xmlns:* */
    rp_buf_puts(out, "<svg");
    for (const char *q = p + 4; q < tag_end;) {
        while (q < tag_end && (*q == ' ' || *q == '\n' || *q == '\t' || *q == '\r')) q++;
        if (q >= tag_end) break;
        const char *a = q;
        while (q < tag_end && *q != '=') q++;
        if (q >= tag_end) break;
        q++;
        char quote = *q;
        if (quote != '"' && quote != '\'') return tb_err(TB_ERR_FORMAT, "SVG: byte %td: unquoted attribute", q - svg);
        const char *close = memchr(q + 1, quote, (size_t)(tag_end - q - 1));
        if (!close) return tb_err(TB_ERR_FORMAT, "SVG: byte %td: unterminated attribute", q - svg);
        q = close + 1;
        if (starts(a, "xmlns")) continue;
        rp_buf_puts(out, " ");
        rp_buf_put(out, a, (size_t)(q - a));
    }
    rp_buf_puts(out, " role=\"img\">");
    /* the body: drop comments, prefix ids and local references */
    for (p = tag_end + 1; *p;) {
        if (starts(p, "<!--")) {
            const char *e = strstr(p + 4, "-->");
            if (!e) return tb_err(TB_ERR_FORMAT, "SVG: byte %td: unterminated comment", p - svg);
            p = e + 3;
        } else if (starts(p, "id='") || starts(p, "id=\"")) {
            rp_buf_put(out, p, 4);
            rp_buf_puts(out, idp);
            p += 4;
        } else if (starts(p, "href='#") || starts(p, "href=\"#") || starts(p, "url(#")) {
            size_t k = starts(p, "url(#") ? 5 : 7;
            rp_buf_put(out, p, k);
            rp_buf_puts(out, idp);
            p += k;
        } else {
            rp_buf_put(out, p, 1);
            p++;
        }
    }
    rp_buf_puts(out, "\n");
    return out->oom ? tb_err(TB_ERR_NOMEM, "report: out of memory inlining SVG") : TB_OK;
}
