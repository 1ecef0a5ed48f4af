-- results/migrations/004_peers.sql — schema version 4: peers in the same database.
--
-- Runs of other engines (llama.cpp's llama-bench, mlx-lm) imported from their
-- output files sit beside ternbench's own runs:
--   * runs.engine: 'ternbench' for runs measured by ternbench, else the peer
--     ('llama.cpp', 'mlx-lm'); runs.engine_version: the peer's version text
--     (llama.cpp: "b<build_number> (<build_commit>)"); NULL for ternbench.
--   * runs.import_id: the imported file the run came from (NULL: measured).
--   * imports: one row per imported file, keyed by the SHA-256 of its bytes,
--     so importing the same file twice adds nothing.
--   * merge_sources: one row per database merged in (ternbench merge).
-- An imported run still has every NOT NULL reference of a measured run: its
-- host, build and scenario rows describe what the file says (see
-- docs/peers.md: fingerprints and hashes start with "peer:" there).

CREATE TABLE IF NOT EXISTS imports (
    id            INTEGER PRIMARY KEY,
    content_hash  TEXT NOT NULL UNIQUE,  -- SHA-256 hex of the file's bytes
    format        TEXT NOT NULL,         -- llama-bench-json, ..., mlx-lm
    source_path   TEXT NOT NULL,         -- path given to ternbench import
    file_bytes    INTEGER NOT NULL,
    n_rows        INTEGER NOT NULL,      -- rows read from the file
    n_runs        INTEGER NOT NULL,      -- runs added (rows already present are skipped)
    imported_utc  TEXT NOT NULL
) STRICT;

CREATE TABLE IF NOT EXISTS merge_sources (
    id            INTEGER PRIMARY KEY,
    source_path   TEXT NOT NULL,
    n_runs        INTEGER NOT NULL,      -- runs added by this merge
    n_same        INTEGER NOT NULL,      -- runs already present with the same content
    merged_utc    TEXT NOT NULL
) STRICT;

ALTER TABLE runs ADD COLUMN engine TEXT NOT NULL DEFAULT 'ternbench';
ALTER TABLE runs ADD COLUMN engine_version TEXT;
ALTER TABLE runs ADD COLUMN import_id INTEGER REFERENCES imports(id);

CREATE INDEX IF NOT EXISTS runs_engine ON runs(engine);
