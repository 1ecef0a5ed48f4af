-- results/migrations/006_quality_tests.sql — schema version 6: the
-- [quality] test kind.
--
-- tests.kind gains 'quality': a test scoring the run's model against a
-- reference on a text (perplexity, KL divergence, same top-1; its metrics
-- are ppl, kld_mean, same_top_pct, ... in results/metrics.c, its typed
-- parameters the reference, both models' SHA-256 and the text's).
--
-- SQLite cannot alter a CHECK constraint in place, so the table is rebuilt
-- (SQLite's "other kinds of table schema changes" procedure; the store runs
-- migrations with foreign keys off and checks them after the step). Row ids
-- are kept, so every child row (measurements, token_events, windows,
-- sensor_samples, test_params) still points at its test.

CREATE TABLE tests_new (
    id            INTEGER PRIMARY KEY,
    run_id        INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    section       TEXT NOT NULL,        -- scenario section name, e.g. "decode.depths"
    kind          TEXT NOT NULL CHECK (kind IN ('prefill', 'decode', 'ttft', 'generate', 'sustained',
                                                'quality')),
    label         TEXT NOT NULL,        -- llama-bench style: "pp512", "tg128@d4096", "quality512"
    params        TEXT NOT NULL,        -- JSON object of the test's parameters
    status        TEXT NOT NULL CHECK (status IN ('running', 'complete', 'failed', 'interrupted')),
    thermal_state TEXT,                 -- 'nominal', 'throttled', 'unknown'
    error         TEXT,
    ref_slowdown_pct REAL
) STRICT;

INSERT INTO tests_new (id, run_id, section, kind, label, params, status, thermal_state, error, ref_slowdown_pct)
    SELECT id, run_id, section, kind, label, params, status, thermal_state, error, ref_slowdown_pct
    FROM tests;

DROP TABLE tests;
ALTER TABLE tests_new RENAME TO tests;
CREATE INDEX IF NOT EXISTS tests_run ON tests(run_id);
