-- yeetui schema, version 3: run labels (`oracle#3`) are numbered per profile within one session tree (a
-- top-level session and all its descendants). The counter is taken and bumped in the transaction that
-- writes the run, so labels stay unique however many spawns — or processes — race for one.
CREATE TABLE run_labels (
    root_session_id TEXT NOT NULL,
    profile TEXT NOT NULL,
    last INTEGER NOT NULL,
    PRIMARY KEY (root_session_id, profile)
);
