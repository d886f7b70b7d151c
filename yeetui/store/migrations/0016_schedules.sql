-- yeetui schema, version 16: scheduled agents. A schedule names a project, a profile, a prompt and when
-- (`spec`: a cron expression or `every 30m`); `next_at` is its next trigger. Each trigger is fired once, whatever
-- number of yeetui processes look: firing it is inserting its row in `schedule_fires` (the primary key is the
-- trigger), in the same transaction that moves `next_at` on. A row claimed by a process that died before it
-- launched the run is launched by the next process to look.
CREATE TABLE schedules (
    id TEXT PRIMARY KEY,
    project_dir TEXT NOT NULL,
    profile TEXT NOT NULL,
    prompt TEXT NOT NULL,
    spec TEXT NOT NULL,
    missed TEXT NOT NULL CHECK (missed IN ('skip', 'once')),
    approve INTEGER NOT NULL DEFAULT 0,
    budget TEXT,
    paused INTEGER NOT NULL DEFAULT 0,
    pause_reason TEXT,
    next_at TEXT NOT NULL,
    failures INTEGER NOT NULL DEFAULT 0,
    created_at TEXT NOT NULL
);
CREATE TABLE schedule_fires (
    schedule_id TEXT NOT NULL,
    due_at TEXT NOT NULL,
    claimed_by INTEGER NOT NULL,
    claimed_at TEXT NOT NULL,
    run_id TEXT,
    skipped INTEGER NOT NULL DEFAULT 0,
    outcome TEXT,
    PRIMARY KEY (schedule_id, due_at)
);
