-- yeetui schema, version 1.
-- Timestamps are UTC ISO-8601 strings with microseconds ("2025-01-31T12:00:00.000000+00:00"): they sort as
-- text and read well in the sqlite3 shell. JSON columns hold text written by json.dumps / pydantic.

CREATE TABLE sessions (
    id          TEXT PRIMARY KEY,                 -- uuid4 hex
    key         TEXT NOT NULL UNIQUE,             -- agent:<profile>:primary|subagent:<id>
    parent_id   TEXT REFERENCES sessions(id) ON DELETE CASCADE,
    depth       INTEGER NOT NULL DEFAULT 0 CHECK (depth >= 0),
    profile     TEXT NOT NULL,
    title       TEXT NOT NULL DEFAULT '',
    model       TEXT,
    workspace   TEXT,                             -- JSON object or NULL
    cwd         TEXT,
    status      TEXT NOT NULL DEFAULT 'active',
    created_at  TEXT NOT NULL,
    updated_at  TEXT NOT NULL
);
CREATE INDEX sessions_parent ON sessions(parent_id, created_at);
CREATE INDEX sessions_updated ON sessions(updated_at);

CREATE TABLE agent_runs (
    id            TEXT PRIMARY KEY,               -- uuid4 hex
    session_id    TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    parent_run_id TEXT REFERENCES agent_runs(id) ON DELETE SET NULL,
    profile       TEXT NOT NULL,
    model         TEXT,
    prompt        TEXT NOT NULL DEFAULT '',
    status        TEXT NOT NULL,                  -- yeetui.events.RunStatus
    result        TEXT,                           -- JSON or NULL
    usage         TEXT,                           -- JSON of yeetui.messages.Usage
    cost          REAL,                           -- USD; NULL when the price is unknown
    error         TEXT,
    label         TEXT,
    workflow      TEXT,
    worktree      TEXT,                           -- path of the worktree the run works in
    created_at    TEXT NOT NULL,
    started_at    TEXT,
    finished_at   TEXT,
    pid           INTEGER                         -- the process responsible for the run
);
CREATE INDEX agent_runs_session ON agent_runs(session_id, created_at);
CREATE INDEX agent_runs_status ON agent_runs(status);
CREATE INDEX agent_runs_parent ON agent_runs(parent_run_id);

CREATE TABLE messages (
    id          INTEGER PRIMARY KEY,
    session_id  TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    run_id      TEXT REFERENCES agent_runs(id) ON DELETE SET NULL,
    seq         INTEGER NOT NULL,                 -- 1, 2, … within the session
    role        TEXT NOT NULL,
    body        TEXT NOT NULL,                    -- JSON of yeetui.messages.Message
    partial     INTEGER NOT NULL DEFAULT 0 CHECK (partial IN (0, 1)),
    created_at  TEXT NOT NULL,
    updated_at  TEXT NOT NULL,
    UNIQUE (session_id, seq)
);
CREATE INDEX messages_run ON messages(run_id);

CREATE TABLE inbox_items (
    id          INTEGER PRIMARY KEY,
    session_id  TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,   -- the recipient
    run_id      TEXT REFERENCES agent_runs(id) ON DELETE SET NULL,
    kind        TEXT NOT NULL,
    title       TEXT NOT NULL DEFAULT '',
    body        TEXT NOT NULL DEFAULT '',
    data        TEXT,                             -- JSON object or NULL
    status      TEXT NOT NULL DEFAULT 'unread' CHECK (status IN ('unread', 'read', 'dismissed')),
    dedupe_key  TEXT UNIQUE,
    created_at  TEXT NOT NULL,
    updated_at  TEXT NOT NULL
);
CREATE INDEX inbox_items_session ON inbox_items(session_id, status, created_at);

CREATE TABLE breadcrumbs (
    id               INTEGER PRIMARY KEY,
    session_id       TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    child_session_id TEXT REFERENCES sessions(id) ON DELETE SET NULL,
    run_id           TEXT REFERENCES agent_runs(id) ON DELETE SET NULL,
    summary          TEXT NOT NULL,
    created_at       TEXT NOT NULL
);
CREATE INDEX breadcrumbs_session ON breadcrumbs(session_id, created_at);

CREATE TABLE worktrees (
    id               TEXT PRIMARY KEY,            -- uuid4 hex
    path             TEXT NOT NULL,
    branch           TEXT NOT NULL,
    base_branch      TEXT,
    repo             TEXT NOT NULL,
    owner_session_id TEXT REFERENCES sessions(id) ON DELETE SET NULL,
    status           TEXT NOT NULL DEFAULT 'active',   -- 'deleted' rows are kept as history
    created_at       TEXT NOT NULL,
    updated_at       TEXT NOT NULL
);
-- One live registry entry per path; a deleted worktree's path may be used again.
CREATE UNIQUE INDEX worktrees_live_path ON worktrees(path) WHERE status != 'deleted';
CREATE INDEX worktrees_repo ON worktrees(repo, status);
CREATE INDEX worktrees_owner ON worktrees(owner_session_id);

CREATE TABLE workflow_states (
    run_id      TEXT PRIMARY KEY REFERENCES agent_runs(id) ON DELETE CASCADE,
    workflow    TEXT NOT NULL,
    state       TEXT NOT NULL,                    -- JSON object
    updated_at  TEXT NOT NULL
);
