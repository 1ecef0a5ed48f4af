-- results/schema.sql — the ternbench results database, schema version 1.
--
-- Compiled into the ternbench binary; applied by the store when
-- PRAGMA user_version is below the version here. Later versions add
-- migrations (results/migrations) rather than editing this file's tables.
--
-- Conventions: every table is STRICT; times are monotonic nanoseconds
-- (*_ns) or UTC ISO-8601 text (*_utc); every metric carries its unit.

PRAGMA foreign_keys = ON;

-- One row per distinct machine (deduplicated by fingerprint = hash of the facts).
CREATE TABLE IF NOT EXISTS hosts (
    id            INTEGER PRIMARY KEY,
    fingerprint   TEXT NOT NULL UNIQUE,
    hostname      TEXT NOT NULL,
    cpu_vendor    TEXT NOT NULL,        -- libcpuid vendor string
    cpu_brand     TEXT NOT NULL,
    cpu_family    INTEGER,
    cpu_model     INTEGER,
    cpu_stepping  INTEGER,
    cores         INTEGER,
    threads       INTEGER,
    l1d_kb        INTEGER,
    l2_kb         INTEGER,
    l3_kb         INTEGER,
    isa_flags     TEXT NOT NULL,        -- space-separated CPU flags libcpuid reports
    mem_bytes     INTEGER,
    os            TEXT NOT NULL,        -- e.g. "Debian GNU/Linux 12 (bookworm)"
    kernel        TEXT NOT NULL,        -- uname -srm
    first_seen_utc TEXT NOT NULL
) STRICT;

-- One row per distinct build of ternbench.
CREATE TABLE IF NOT EXISTS builds (
    id            INTEGER PRIMARY KEY,
    fingerprint   TEXT NOT NULL UNIQUE,
    version       TEXT NOT NULL,
    git_commit    TEXT NOT NULL,        -- "unknown" outside a checkout
    git_dirty     INTEGER NOT NULL,     -- 0/1
    compiler      TEXT NOT NULL,
    cflags        TEXT NOT NULL,
    build_type    TEXT NOT NULL,
    isa_best      TEXT NOT NULL,        -- highest tier this CPU supports
    first_seen_utc TEXT NOT NULL
) STRICT;

-- One row per distinct model file (by content hash).
CREATE TABLE IF NOT EXISTS models (
    id             INTEGER PRIMARY KEY,
    content_hash   TEXT NOT NULL UNIQUE, -- hex of a hash over header + sampled data
    path           TEXT NOT NULL,        -- path it was last seen at
    name           TEXT NOT NULL,
    arch           TEXT NOT NULL,
    main_type      TEXT NOT NULL,        -- type holding most weight bytes
    weight_types   TEXT NOT NULL,        -- "tq2_0:168,f32:97,q4_K:1" (type:tensor count)
    file_bytes     INTEGER NOT NULL,
    n_params       INTEGER NOT NULL,
    n_params_active INTEGER NOT NULL,
    n_layer        INTEGER NOT NULL,
    n_embd         INTEGER NOT NULL,
    n_vocab        INTEGER NOT NULL,
    n_expert       INTEGER NOT NULL,
    n_expert_used  INTEGER NOT NULL,
    synth_preset   TEXT,                 -- preset name when synthesized, else NULL
    synth_seed     INTEGER,
    first_seen_utc TEXT NOT NULL
) STRICT;

-- Normalized scenario text (every default resolved) and its hash.
CREATE TABLE IF NOT EXISTS scenarios (
    id            INTEGER PRIMARY KEY,
    hash          TEXT NOT NULL UNIQUE,
    name          TEXT NOT NULL,        -- file stem, e.g. "quick"
    source_path   TEXT NOT NULL,
    normalized    TEXT NOT NULL
) STRICT;

CREATE TABLE IF NOT EXISTS runs (
    id            INTEGER PRIMARY KEY,
    uuid          TEXT NOT NULL UNIQUE,
    started_utc   TEXT NOT NULL,
    ended_utc     TEXT,
    status        TEXT NOT NULL CHECK (status IN ('running', 'complete', 'failed', 'interrupted')),
    pid           INTEGER NOT NULL,     -- to detect runs left 'running' by a dead process
    host_id       INTEGER NOT NULL REFERENCES hosts(id),
    build_id      INTEGER NOT NULL REFERENCES builds(id),
    model_id      INTEGER REFERENCES models(id),
    scenario_id   INTEGER NOT NULL REFERENCES scenarios(id),
    threads       INTEGER NOT NULL,
    isa           TEXT NOT NULL,        -- tier actually used
    kv_type       TEXT NOT NULL,
    bandwidth_gbps_before REAL,         -- read-bandwidth probe at start (roofline)
    bandwidth_gbps_after  REAL,         -- and at the end
    error         TEXT                  -- message when failed
) STRICT;

CREATE TABLE IF NOT EXISTS run_tags (
    run_id        INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    key           TEXT NOT NULL,
    value         TEXT NOT NULL,
    PRIMARY KEY (run_id, key)
) STRICT;

-- One row per executed test section of a run (e.g. "decode" at depth 512).
CREATE TABLE IF NOT EXISTS tests (
    id            INTEGER PRIMARY KEY,
    run_id        INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    section       TEXT NOT NULL,        -- scenario section name, e.g. "decode.depths"
    kind          TEXT NOT NULL CHECK (kind IN ('prefill', 'decode', 'ttft', 'generate', 'sustained')),
    label         TEXT NOT NULL,        -- llama-bench style: "pp512", "tg128@d4096", ...
    params        TEXT NOT NULL,        -- JSON object of the test's parameters
    status        TEXT NOT NULL CHECK (status IN ('running', 'complete', 'failed', 'interrupted')),
    thermal_state TEXT,                 -- 'nominal', 'throttled', 'unknown'
    error         TEXT
) STRICT;

-- Every number: one row per (test, repetition, metric). repetition = -1 for
-- summaries over repetitions (median, stddev, ...), >= 0 for one repetition.
CREATE TABLE IF NOT EXISTS measurements (
    id            INTEGER PRIMARY KEY,
    test_id       INTEGER NOT NULL REFERENCES tests(id) ON DELETE CASCADE,
    repetition    INTEGER NOT NULL,
    metric        TEXT NOT NULL,        -- e.g. "decode_tok_per_s", "ttft_ms", "itl_p99_ms"
    value         REAL NOT NULL,
    unit          TEXT NOT NULL,        -- "tok/s", "ms", "GB/s", "%", "B", "J/tok", "chars/s"
    UNIQUE (test_id, repetition, metric)
) STRICT;

-- Raw per-token samples.
CREATE TABLE IF NOT EXISTS token_events (
    test_id       INTEGER NOT NULL REFERENCES tests(id) ON DELETE CASCADE,
    repetition    INTEGER NOT NULL,
    idx           INTEGER NOT NULL,     -- token index within the repetition
    phase         TEXT NOT NULL CHECK (phase IN ('prefill', 'decode')),
    t_ns          INTEGER NOT NULL,     -- monotonic ns since the repetition started
    token_id      INTEGER NOT NULL,
    text          BLOB,                 -- detokenized bytes emitted at this token
    PRIMARY KEY (test_id, repetition, idx)
) STRICT, WITHOUT ROWID;

-- Thermal / frequency / energy samples taken during a run.
CREATE TABLE IF NOT EXISTS sensor_samples (
    run_id        INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    test_id       INTEGER REFERENCES tests(id) ON DELETE CASCADE,
    t_ns          INTEGER NOT NULL,     -- monotonic ns since the run started
    sensor        TEXT NOT NULL,        -- e.g. "thermal_zone0", "cpu0_freq", "rapl_package_energy", "ref_workload"
    value         REAL NOT NULL,
    unit          TEXT NOT NULL         -- "C", "MHz", "J", "ms"
) STRICT;

-- Sensors looked for but absent on this host (recorded as absent, never as zero).
CREATE TABLE IF NOT EXISTS sensor_absent (
    run_id        INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    sensor        TEXT NOT NULL,
    reason        TEXT NOT NULL,
    PRIMARY KEY (run_id, sensor)
) STRICT;

CREATE INDEX IF NOT EXISTS measurements_metric ON measurements(metric);
CREATE INDEX IF NOT EXISTS tests_run ON tests(run_id);
CREATE INDEX IF NOT EXISTS sensor_samples_run ON sensor_samples(run_id, t_ns);

PRAGMA user_version = 1;
