-- yeetui schema, version 11: a permission question nobody could be asked. A headless run's pane worker (or a
-- worker whose yeetui asks nobody) refuses every tool call under an `ask` rule; it records each refusal here
-- with the answer 'unattended', so the `yeetui run` that started the pane can count and name them. SQLite
-- cannot change a CHECK constraint in place: the table is copied into one that allows the new answer.
CREATE TABLE permission_asks_v11 (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    pane_run_id TEXT NOT NULL,
    run_id TEXT NOT NULL,
    session_id TEXT NOT NULL,
    agent_label TEXT NOT NULL,
    tool TEXT NOT NULL,
    subject TEXT NOT NULL,
    arguments TEXT NOT NULL DEFAULT '{}',
    answer TEXT CHECK (answer IN ('allow_once', 'allow_always', 'deny', 'withdrawn', 'unattended')),
    created_at TEXT NOT NULL,
    answered_at TEXT
);
INSERT INTO permission_asks_v11 SELECT id, pane_run_id, run_id, session_id, agent_label, tool, subject, arguments,
    answer, created_at, answered_at FROM permission_asks;
DROP TABLE permission_asks;
ALTER TABLE permission_asks_v11 RENAME TO permission_asks;
CREATE INDEX permission_asks_open ON permission_asks (answer, pane_run_id);
