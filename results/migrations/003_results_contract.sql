-- results/migrations/003_results_contract.sql — schema version 3.
--
-- The typed results contract:
--   * test_params: one typed row per test parameter (integer, real or
--     text), the truth behind tests.params, which the store now builds from
--     these rows with json_group_object instead of text assembled by hand;
--   * summaries are derived when read (median, spread, paired ratios) from
--     the per-repetition rows, so the pseudo-repetition rows (repetition
--     -1: METRIC, METRIC:stddev, :min, :max, repetitions) go; the one
--     test-level figure among them, the reference workload's slowdown,
--     becomes tests.ref_slowdown_pct;
--   * every repetition is bracketed by probes: the clock and vector probes
--     taken after a repetition were named cpu_ghz_min / vec_gops_min and
--     are now cpu_ghz_after / vec_gops_after (beside *_before);
--   * token_events.dur_ns: a decode token's own step time (tokens of
--     several models may take turns, so t_ns differences are not latencies);
--   * windows.refill_ns / refills: harness time spent re-filling the
--     context inside a sustained window, taken out of its rate, and how
--     many context-full events it held (0: a clean window).

CREATE TABLE IF NOT EXISTS test_params (
    test_id       INTEGER NOT NULL REFERENCES tests(id) ON DELETE CASCADE,
    key           TEXT NOT NULL,
    value         ANY,                  -- INTEGER, REAL or TEXT as declared by the runner
    PRIMARY KEY (test_id, key)
) STRICT, WITHOUT ROWID;

INSERT OR IGNORE INTO test_params (test_id, key, value)
    SELECT t.id, j.key, j.atom FROM tests t, json_each(t.params) j
    WHERE json_valid(t.params) AND j.type NOT IN ('object', 'array', 'null');

ALTER TABLE tests ADD COLUMN ref_slowdown_pct REAL;
UPDATE tests SET ref_slowdown_pct = (SELECT value FROM measurements m WHERE m.test_id = tests.id
                                     AND m.repetition = -1 AND m.metric = 'ref_slowdown_pct');

UPDATE OR REPLACE measurements SET metric = 'cpu_ghz_after' WHERE metric = 'cpu_ghz_min';
UPDATE OR REPLACE measurements SET metric = 'vec_gops_after' WHERE metric = 'vec_gops_min';

-- A summary row goes when it is derivable: a spread row, the count, the
-- slowdown (moved above), or a metric the test has per-repetition rows of.
DELETE FROM measurements WHERE repetition < 0 AND (
    instr(metric, ':') > 0 OR metric IN ('repetitions', 'ref_slowdown_pct')
    OR metric IN ('cpu_ghz_after', 'vec_gops_after')
    OR EXISTS (SELECT 1 FROM measurements x WHERE x.test_id = measurements.test_id
               AND x.repetition >= 0 AND x.metric = measurements.metric));

ALTER TABLE token_events ADD COLUMN dur_ns INTEGER;
ALTER TABLE windows ADD COLUMN refill_ns INTEGER NOT NULL DEFAULT 0;
ALTER TABLE windows ADD COLUMN refills INTEGER NOT NULL DEFAULT 0;

CREATE INDEX IF NOT EXISTS test_params_key ON test_params(key, value);
