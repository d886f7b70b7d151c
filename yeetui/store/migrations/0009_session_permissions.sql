-- yeetui schema, version 9: the permission dialog's "Always" answers, kept per session. Each row allows one
-- tool on one exact subject (the literal command or path) for every later run of the session: the next prompt,
-- and the session resumed in another process. Deleted with the session.
CREATE TABLE session_permissions (
    session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    tool TEXT NOT NULL,
    subject TEXT NOT NULL,
    created_at TEXT NOT NULL,
    PRIMARY KEY (session_id, tool, subject)
);
