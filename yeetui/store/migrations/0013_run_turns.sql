-- yeetui schema, version 13: budgets that halt a whole tree of runs (`yeetui.runs.budget`).
-- How many model requests a run made, stored with its usage after each one, so a budget's turn limit counts a
-- whole tree across processes.
ALTER TABLE agent_runs ADD COLUMN turns INTEGER NOT NULL DEFAULT 0;
-- A `halt` command: the process that keeps a budget tells another process to stop its run of the halted tree.
-- SQLite cannot change a CHECK constraint in place: the table is copied into one that allows the new kind.
CREATE TABLE run_commands_v13 (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    run_id TEXT NOT NULL,
    kind TEXT NOT NULL CHECK (kind IN ('abort', 'cancel', 'steer', 'halt')),
    body TEXT NOT NULL DEFAULT '',
    sender TEXT NOT NULL DEFAULT 'user',
    created_at TEXT NOT NULL,
    taken_at TEXT
);
INSERT INTO run_commands_v13 SELECT id, run_id, kind, body, sender, created_at, taken_at FROM run_commands;
DROP TABLE run_commands;
ALTER TABLE run_commands_v13 RENAME TO run_commands;
CREATE INDEX run_commands_open ON run_commands (taken_at, run_id);
