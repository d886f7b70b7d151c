-- yeetui schema, version 5: control of a run from any yeetui process. A command (`abort`, `cancel` — wrap up
-- gracefully —, `steer` with a message) is written here for the run; the process that executes the run picks
-- it up within a fraction of a second and marks it taken. Commands for a run that already ended are moot.
CREATE TABLE run_commands (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    run_id TEXT NOT NULL,
    kind TEXT NOT NULL CHECK (kind IN ('abort', 'cancel', 'steer')),
    body TEXT NOT NULL DEFAULT '',
    sender TEXT NOT NULL DEFAULT 'user',
    created_at TEXT NOT NULL,
    taken_at TEXT
);
CREATE INDEX run_commands_open ON run_commands (taken_at, run_id);
