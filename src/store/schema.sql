-- tide's SQLite schema (src/store/store.c embeds this file at build time).
--
-- Each line "-- migration N: title" starts migration N (N = 1, 2, ... in
-- order, never renumbered, never edited once released: add a new one). A
-- database at version V gets every migration above V, each in its own
-- transaction together with its row in schema_version, so a crash leaves the
-- database at some whole version. Statements end with ';' at the end of a line.

-- migration 1: initial schema
-- Key/value settings fixed when the database is created (cluster, policy
-- knobs) and a few running values (epoch).
CREATE TABLE meta (
  key   TEXT PRIMARY KEY,
  value TEXT NOT NULL
) WITHOUT ROWID;

-- Inference services of the current epoch, in engine index order.
CREATE TABLE services (
  idx              INTEGER PRIMARY KEY,
  name             TEXT NOT NULL UNIQUE,
  gpus_per_replica INTEGER NOT NULL,
  replica_rps      REAL NOT NULL,
  min_replicas     INTEGER NOT NULL,
  max_replicas     INTEGER NOT NULL,
  warmup_s         INTEGER NOT NULL,
  gpu_types        INTEGER NOT NULL DEFAULT 0, -- bitmask of the cluster's GPU types, 0 = any
  fixed_replicas   INTEGER NOT NULL DEFAULT 0
);

-- Training jobs as submitted, plus their last known state (for queries; the
-- engine rebuilt from events_in is the authority).
CREATE TABLE jobs (
  id              TEXT PRIMARY KEY,
  seq             INTEGER NOT NULL UNIQUE,     -- submission order (list cursor)
  team            TEXT NOT NULL,
  priority        INTEGER NOT NULL,
  gpus            INTEGER NOT NULL,
  gang_gpus       INTEGER NOT NULL,
  dp_min          INTEGER NOT NULL,
  duration_s      INTEGER NOT NULL,
  ckpt_interval_s INTEGER NOT NULL,
  ckpt_s          INTEGER NOT NULL,
  restore_s       INTEGER NOT NULL,
  gpu_types       INTEGER NOT NULL DEFAULT 0,
  command         TEXT,
  env             TEXT,                         -- JSON object of strings
  state           TEXT NOT NULL DEFAULT 'queued',
  submitted_s     INTEGER NOT NULL,
  updated_s       INTEGER NOT NULL
);
CREATE INDEX jobs_team_seq ON jobs(team, seq);
CREATE INDEX jobs_state_seq ON jobs(state, seq);

-- Every engine step: its time and the epoch (service set) it belongs to.
CREATE TABLE steps (
  step   INTEGER PRIMARY KEY,
  time_s INTEGER NOT NULL,
  epoch  INTEGER NOT NULL
);

-- Every event fed to the engine, in the order fed. step is NULL while the
-- event is accepted but not yet fed (it goes into the next step).
CREATE TABLE events_in (
  seq          INTEGER PRIMARY KEY,
  step         INTEGER,
  time_s       INTEGER NOT NULL,
  kind         TEXT NOT NULL,                   -- tide_event_name(), or team_set
  job_id       TEXT,
  job          INTEGER,
  service      INTEGER,
  service_name TEXT,
  replica      INTEGER,
  node         INTEGER,
  phase        INTEGER,
  value        REAL,
  source       TEXT,                            -- api, backend, demand, recovery, daemon
  payload      TEXT                             -- JSON (team_set)
);
CREATE INDEX events_in_step ON events_in(step);

-- Every action the engine returned, persisted before it is enacted.
CREATE TABLE actions (
  seq          INTEGER PRIMARY KEY,             -- shares one sequence with events_in
  step         INTEGER NOT NULL,
  time_s       INTEGER NOT NULL,
  kind         TEXT NOT NULL,                   -- tide_action_name()
  reason       TEXT,
  job_id       TEXT,
  job          INTEGER,
  service      INTEGER,
  service_name TEXT,
  replica      INTEGER,
  lease        INTEGER,
  width        INTEGER,
  gpus         INTEGER,
  deadline_s   INTEGER,
  value        REAL,
  gpu_ids      TEXT                             -- "0,1,2,3" for START / RESIZE / REPLICA_START
);
CREATE INDEX actions_step ON actions(step);

-- Checkpoint manifests reported by jobs (committed or not).
CREATE TABLE checkpoints (
  id         INTEGER PRIMARY KEY,
  job_id     TEXT NOT NULL,
  time_s     INTEGER NOT NULL,
  step       INTEGER,
  bytes      INTEGER,
  shards     INTEGER,
  committed  INTEGER NOT NULL,
  progress_s REAL
);
CREATE INDEX checkpoints_job ON checkpoints(job_id, id);

-- Cumulative GPU-seconds snapshots (for /v1/usage windows).
CREATE TABLE usage (
  time_s     INTEGER NOT NULL,
  owner_kind TEXT NOT NULL,                     -- team, service, idle
  owner      TEXT NOT NULL,
  class      TEXT NOT NULL,
  state      TEXT NOT NULL,
  tier       TEXT NOT NULL,
  gpu_s      REAL NOT NULL,
  PRIMARY KEY (time_s, owner_kind, owner, class, state, tier)
) WITHOUT ROWID;

-- migration 2: audit trail
-- Every request to a write route of the API (docs/api.md, "Audit trail"):
-- who (the token's team and role), from where, what (method, path, a
-- bounded copy of the body and the whole body's SHA-256) and the outcome.
-- Append-only: rows are never updated (the trigger refuses it); the only
-- deletes are the retention's (oldest first).
CREATE TABLE audit (
  id          INTEGER PRIMARY KEY AUTOINCREMENT,
  time        REAL NOT NULL,                    -- wall clock, Unix seconds
  team        TEXT NOT NULL,                    -- "" when no valid token
  role        TEXT NOT NULL,                    -- admin, submitter, viewer, router, none
  peer        TEXT NOT NULL,                    -- the client's address
  method      TEXT NOT NULL,
  path        TEXT NOT NULL,
  kind        TEXT NOT NULL,                    -- the route's audit kind (submit, cancel, ...)
  request     TEXT NOT NULL,                    -- the body's first bytes (bounded)
  bytes       INTEGER NOT NULL,                 -- the body's whole length
  digest      TEXT NOT NULL,                    -- SHA-256 of the whole body (hex)
  status      INTEGER NOT NULL,                 -- the HTTP status answered
  error       TEXT,                             -- the error code (EINVAL, EPERM, ...)
  message     TEXT                              -- the error message
);
CREATE INDEX audit_time ON audit(time);
CREATE TRIGGER audit_append_only BEFORE UPDATE ON audit
BEGIN
  SELECT RAISE(ABORT, 'the audit trail is append-only');
END;

-- migration 3: model pipeline
-- The model pipeline's registry (src/daemon/pipe.c): JSON documents by kind
-- (model: spec and aliases, key = name; version: key = "model/number";
-- publish: a job's publish rule, key = job id; replica: the version a
-- replica runs, key = "epoch/replica").
CREATE TABLE pipeline (
  kind  TEXT NOT NULL,
  key   TEXT NOT NULL,
  value TEXT NOT NULL,
  PRIMARY KEY (kind, key)
) WITHOUT ROWID;

-- What happened in the pipeline (registered, evaluated, rollout steps,
-- promotions, rollbacks), in order.
CREATE TABLE pipeline_events (
  id      INTEGER PRIMARY KEY,
  time_s  INTEGER NOT NULL,
  model   TEXT NOT NULL,
  version INTEGER NOT NULL,
  kind    TEXT NOT NULL,
  detail  TEXT
);
CREATE INDEX pipeline_events_model ON pipeline_events(model, id);

-- migration 4: engine snapshots
-- The state after a step (engine and what the daemon derives), written in
-- that step's transaction every so many steps; recovery restores the newest
-- intact one of the epoch and replays only the steps after it. The last two
-- are kept. checksum: FNV-1a 64 of state, hex.
CREATE TABLE snapshots (
  step       INTEGER PRIMARY KEY,
  epoch      INTEGER NOT NULL,
  time_s     INTEGER NOT NULL,
  version    INTEGER NOT NULL,                  -- the writer's snapshot format
  checksum   TEXT NOT NULL,
  state      BLOB NOT NULL
);

-- migration 5: RL trajectory ledger
-- The exactly-once ledger of agentic RL runs (src/store/rl.c, docs/api.md
-- "RL trajectory ledger"): one row per run (a job that registered), and one
-- per acknowledged trajectory. Independent of the engine: neither replay nor
-- snapshots touch these rows; what was committed is what a restart finds.
-- policy_version is the trainer's policy: the weights after step k are
-- version k. The counters are cumulative (duplicates and stale_rejected are
-- answers that wrote no trajectory row).
CREATE TABLE rl_runs (
  job_id          TEXT PRIMARY KEY,
  max_staleness   INTEGER NOT NULL,             -- policy versions a trajectory may lag
  batch_size      INTEGER NOT NULL,             -- trajectories a trainer step consumes
  step            INTEGER NOT NULL DEFAULT 0,   -- trainer steps acknowledged
  policy_version  INTEGER NOT NULL DEFAULT 0,
  accepted        INTEGER NOT NULL DEFAULT 0,
  duplicates      INTEGER NOT NULL DEFAULT 0,
  stale_rejected  INTEGER NOT NULL DEFAULT 0,   -- refused when pushed
  stale_dropped   INTEGER NOT NULL DEFAULT 0,   -- queued, too old when a step came
  consumed        INTEGER NOT NULL DEFAULT 0,
  created_s       INTEGER NOT NULL
) WITHOUT ROWID;

-- Acknowledged trajectories, in arrival order (seq). state: queued,
-- consumed or dropped-stale; step: the trainer step that consumed or
-- dropped it (NULL while queued).
CREATE TABLE rl_trajectories (
  seq             INTEGER PRIMARY KEY,
  job_id          TEXT NOT NULL,
  traj_id         TEXT NOT NULL,
  policy_version  INTEGER NOT NULL,
  state           TEXT NOT NULL DEFAULT 'queued',
  step            INTEGER,
  accepted_step   INTEGER NOT NULL,             -- the trainer's step when it was accepted
  payload         TEXT,                         -- the trajectory as pushed (JSON)
  UNIQUE (job_id, traj_id)
);
CREATE INDEX rl_trajectories_queue ON rl_trajectories(job_id, state, policy_version, seq);
CREATE INDEX rl_trajectories_step ON rl_trajectories(job_id, step);

-- migration 6: service slo_target and stage_s
-- Every field of a service spec survives a restart: its own SLO target (0 =
-- the config's slo_target) and the seconds of its warm-up staged without GPUs
-- (0 = none; docs/engine.md "Weight staging"). The defaults are what a
-- database of version 5 meant.
ALTER TABLE services ADD COLUMN slo_target REAL NOT NULL DEFAULT 0;
ALTER TABLE services ADD COLUMN stage_s INTEGER NOT NULL DEFAULT 0;
