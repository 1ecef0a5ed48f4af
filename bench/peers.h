/*
 * peers.h — results of other engines (llama.cpp's llama-bench, mlx-lm) in
 * ternbench's database: the parsed row every input format becomes
 * (import_parse.c), and the import / export / merge commands' shared parts.
 *
 * A row is what one llama-bench output line holds: its fields by llama-bench's
 * own names as text (booleans as "0"/"1"), plus the repetition samples when
 * the format has them (JSON and JSONL: samples_ns, samples_ts). mlx-lm output
 * is turned into rows of the same names (n_prompt, n_gen, samples_ts, ...).
 */
#ifndef TB_BENCH_PEERS_H
#define TB_BENCH_PEERS_H

#include <stddef.h>
#include <stdint.h>

typedef enum {
    TB_PEER_FMT_NONE = -1,
    TB_PEER_FMT_LB_JSON, TB_PEER_FMT_LB_JSONL, TB_PEER_FMT_LB_SQL,
    TB_PEER_FMT_LB_CSV, TB_PEER_FMT_LB_MD, TB_PEER_FMT_MLX,
    TB_PEER_FMT_COUNT
} tb_peer_fmt_t;

#define TB_PEER_MAX_FIELDS 64

typedef struct tb_peer_row {
    int line;                          /* 1-based line of the row in its file  */
    int n;                             /* fields in key/val                    */
    char *key[TB_PEER_MAX_FIELDS];
    char *val[TB_PEER_MAX_FIELDS];
    int n_ns, n_ts;                    /* samples; -1 when the format has none */
    int64_t *samples_ns;               /* (n_ns,) nanoseconds per repetition   */
    double *samples_ts;                /* (n_ts,) tokens per second            */
} tb_peer_row_t;

typedef struct tb_peer_rows {
    tb_peer_row_t *v;                  /* (n,) */
    int n, cap;
} tb_peer_rows_t;

/* Format name ("llama-bench-json", ...) and back (TB_PEER_FMT_NONE if unknown). */
const char *tb_peer_fmt_name(tb_peer_fmt_t f);
tb_peer_fmt_t tb_peer_fmt_from_name(const char *name);
/* The engine a format's rows come from ("llama.cpp", "mlx-lm"). */
const char *tb_peer_fmt_engine(tb_peer_fmt_t f);
/* Guess the format from the text; TB_PEER_FMT_NONE when nothing fits. */
tb_peer_fmt_t tb_peer_detect(const char *text, size_t len);

/* Parse text (NUL-terminated, len bytes) of format f into rows. On a bad row
 * returns -1 with "LINE: reason" in err (the caller prefixes the file name);
 * rows is then partly filled and must still be freed. */
int tb_peer_parse(tb_peer_fmt_t f, const char *text, size_t len, tb_peer_rows_t *rows,
                  char *err, size_t cap);
void tb_peer_rows_free(tb_peer_rows_t *rows);

/* The row's field (NULL when absent). */
const char *tb_peer_get(const tb_peer_row_t *r, const char *key);
/* Set (add or replace) a field; 0, or -1 when out of memory / too many. */
int tb_peer_set(tb_peer_row_t *r, const char *key, const char *val);

/* llama-bench's fields, in its output order (NULL-terminated), and whether
 * a field is an integer / boolean / real in its JSON and SQL output. */
extern const char *const tb_llamabench_fields[];
typedef enum { TB_LB_STR, TB_LB_BOOL, TB_LB_INT, TB_LB_REAL } tb_lb_type_t;
tb_lb_type_t tb_llamabench_field_type(const char *field);

/* export --format llama-bench-json|llama-bench-sql (export_llamabench.c):
 * every prefill / decode / pp+tg test of the selected runs (sel: a temp table
 * of run ids, or all runs when all_runs) as one llama-bench row on stdout.
 * Returns the exit status (0, or 1 after printing the reason). */
struct sqlite3;
int tb_export_llamabench(struct sqlite3 *db, int sql, int all_runs);

/* One SQL statement with bound values (peers_sql.c). types: one letter per
 * '?': 't' text (const char *, NULL binds NULL), 'i' int64_t, 'I' int64_t
 * with < 0 bound as NULL, 'd' double. When out is not NULL the first column
 * of the first row goes there (*out = -1 when there is no row). Returns
 * SQLITE_OK or SQLite's code; the message is sqlite3_errmsg(db). */
int tb_peer_sql(struct sqlite3 *db, int64_t *out, const char *sql, const char *types, ...);
/* UTC now as "YYYY-MM-DDTHH:MM:SSZ". */
void tb_peer_utc_now(char buf[32]);

#endif
