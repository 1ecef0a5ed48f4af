-- results/migrations/002_windows_and_bytes.sql — schema version 2.
--
-- Adds what the harness records beyond version 1:
--   * models.bytes_per_token: bytes read to decode one token at depth 0
--     (tb_model_bytes_per_token, KV type of the run);
--   * runs.record_tokens: 0 when the scenario turned per-token recording off
--     ([protocol] record_tokens = false; used to measure recording overhead);
--   * windows: one row per window of a `sustained` test (tok/s over time).

ALTER TABLE models ADD COLUMN bytes_per_token INTEGER;
ALTER TABLE runs ADD COLUMN record_tokens INTEGER NOT NULL DEFAULT 1;

CREATE TABLE IF NOT EXISTS windows (
    test_id       INTEGER NOT NULL REFERENCES tests(id) ON DELETE CASCADE,
    repetition    INTEGER NOT NULL,
    idx           INTEGER NOT NULL,     -- window index within the repetition
    n_tokens      INTEGER NOT NULL,
    t0_ns         INTEGER NOT NULL,     -- monotonic ns since the repetition started
    t1_ns         INTEGER NOT NULL,
    tok_per_s     REAL NOT NULL,
    ctx_pos       INTEGER NOT NULL,     -- KV position at the window's end
    PRIMARY KEY (test_id, repetition, idx)
) STRICT, WITHOUT ROWID;

CREATE INDEX IF NOT EXISTS runs_status ON runs(status);
