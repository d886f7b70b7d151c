-- yeetui schema, version 8: permission questions from runs in other processes. A pane's worker has no one to
-- ask in its own window, so a tool call under an `ask` rule is written here; the yeetui that follows the pane
-- shows the dialog and writes the answer, which the worker polls for. `answer` stays NULL until then;
-- 'withdrawn' when the run stopped waiting (cancelled, timed out) before anyone answered.
CREATE TABLE permission_asks (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    pane_run_id TEXT NOT NULL,
    run_id TEXT NOT NULL,
    session_id TEXT NOT NULL,
    agent_label TEXT NOT NULL,
    tool TEXT NOT NULL,
    subject TEXT NOT NULL,
    arguments TEXT NOT NULL DEFAULT '{}',
    answer TEXT CHECK (answer IN ('allow_once', 'allow_always', 'deny', 'withdrawn')),
    created_at TEXT NOT NULL,
    answered_at TEXT
);
CREATE INDEX permission_asks_open ON permission_asks (answer, pane_run_id);
