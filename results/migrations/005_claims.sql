-- results/migrations/005_claims.sql — schema version 5: claim checks.
--
-- One row per evaluated condition of a claim check (`ternbench claim`,
-- or a scenario's [claim] section): a model on a device at one context and
-- one output head, with the claimed speed when there is one. The row keeps
-- the inputs, everything the check computed (bytes per token, the bandwidth
-- and where it came from, the roofline, the projected interval and its
-- basis, the verdict), the calibration table it was fitted on (path, row
-- count, hash), and — for `this`, measured — the decode speed measured
-- beside it. Provenance (host, build and commit, time) is the run's: every
-- claim belongs to a run; `ternbench claim` records a run of its own.
--
-- measured_tok_s is the figure the claim was placed against: from a
-- scenario, the headline statistic over the measuring decode test's
-- repetitions (measured_test_id points to their rows); from the command,
-- one timed decode (measured_test_id NULL).

CREATE TABLE IF NOT EXISTS claims (
    id                 INTEGER PRIMARY KEY,
    run_id             INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    section            TEXT NOT NULL,        -- scenario section ("claim.maple"); "claim" for the command
    idx                INTEGER NOT NULL,     -- condition index within the section
    -- inputs
    model              TEXT NOT NULL,        -- preset name, or the GGUF's general.name
    model_source       TEXT NOT NULL CHECK (model_source IN ('preset', 'gguf')),
    model_path         TEXT,                 -- the GGUF file; NULL for a preset
    weights            TEXT NOT NULL,        -- weight layout ("mlx-maple", "tq2_0", ...)
    bits_per_weight    REAL NOT NULL,        -- per stored projection weight (what the fit compares)
    device             TEXT NOT NULL,        -- device profile id, or 'this'
    device_name        TEXT NOT NULL,
    device_class       TEXT NOT NULL,
    backend            TEXT,                 -- cpu / gpu / npu; NULL: any
    runtime            TEXT,                 -- mlx, llama.cpp, ...; NULL: any
    ctx                INTEGER NOT NULL,     -- KV positions while decoding
    head               TEXT NOT NULL,        -- 'exact' or 'approx:CENTROIDS:PROBES'
    head_approx        INTEGER NOT NULL CHECK (head_approx IN (0, 1)),
    kv_type            TEXT NOT NULL,
    claimed_tok_s      REAL,                 -- NULL: projection only
    prompt_tokens      INTEGER,              -- time-to-first-token claim: prompt length
    claimed_ttft_ms    REAL,
    -- outputs
    bytes_per_token    INTEGER NOT NULL,
    weight_bytes       INTEGER NOT NULL,     -- of which: weights touched (head excluded)
    head_bytes         INTEGER NOT NULL,     --           the output head (its read rows when approximate)
    kv_bytes           INTEGER NOT NULL,     --           the KV cache read
    bandwidth_gbps     REAL NOT NULL,
    bandwidth_kind     TEXT NOT NULL CHECK (bandwidth_kind IN ('nominal', 'estimate', 'measured')),
    bandwidth_source   TEXT NOT NULL,
    roofline_tok_s     REAL NOT NULL,
    projected_lo_tok_s REAL,                 -- NULL: no comparable calibration row
    projected_hi_tok_s REAL,
    basis_rows         INTEGER NOT NULL,     -- calibration rows the interval is drawn from
    basis              TEXT NOT NULL,        -- how they were chosen
    basis_refs         TEXT NOT NULL,        -- JSON list of "FILE:LINE" of (up to 64 of) them
    best_efficiency    REAL,                 -- the best basis row's share of its peak
    verdict            TEXT CHECK (verdict IN ('impossible', 'beyond published efficiency', 'plausible')),
    verdict_detail     TEXT,
    implied_gbps       REAL,                 -- bandwidth the claim needs
    implied_pct_peak   REAL,                 -- ... as % of bandwidth_gbps
    ttft_min_ms        REAL,
    ttft_verdict       TEXT CHECK (ttft_verdict IN ('impossible', 'plausible')),
    measured_tok_s     REAL,
    measured_test_id   INTEGER REFERENCES tests(id) ON DELETE SET NULL,
    calibration_path   TEXT NOT NULL,
    calibration_rows   INTEGER NOT NULL,
    calibration_hash   TEXT NOT NULL,        -- 16 hex digits (FNV-1a of every row)
    assumptions        TEXT NOT NULL,        -- JSON list of strings
    UNIQUE (run_id, section, idx)
) STRICT;

CREATE INDEX IF NOT EXISTS claims_run ON claims(run_id);
CREATE INDEX IF NOT EXISTS claims_device ON claims(device, model);
