-- yeetui schema, version 6: the process groups that agents' commands run in, while they may run. A yeetui
-- process that is killed outright cannot end them; the next one to recover finds the rows of a dead owner
-- and ends the groups still there (`leader_start` tells the recorded leader from a process that reused its pid).
CREATE TABLE tool_processes (
    owner_pid INTEGER NOT NULL,
    pgid INTEGER NOT NULL,
    leader_start INTEGER,
    run_id TEXT,
    created_at TEXT NOT NULL,
    PRIMARY KEY (owner_pid, pgid)
);
