-- yeetui schema, version 10: when the process recorded in `agent_runs.pid` started (clock ticks since boot, as
-- in /proc/PID/stat; NULL when unknown). Recovery ends a run only when its process is really gone: a live
-- process with that pid but another start time is an unrelated one that reused the pid, and a run of the
-- recovering process itself (same pid, same start) is live in its memory, never an orphan.
ALTER TABLE agent_runs ADD COLUMN pid_start INTEGER;
