-- yeetui schema, version 2: the spawn options of a run (timeout, session_context, cleanup, mode, …) as JSON,
-- so a run can be started or resumed by another process (`yeetui agent run --run-id`).
ALTER TABLE agent_runs ADD COLUMN options TEXT;
-- When an inbox item's announcement was appended to the recipient's conversation; NULL = not yet.
-- Set in the same transaction as the message insert, so an announcement happens exactly once.
ALTER TABLE inbox_items ADD COLUMN announced_at TEXT;
