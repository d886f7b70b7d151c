-- yeetui schema, version 15: a child's result is delivered (announced into its parent's conversation, or
-- returned as a blocking spawn's tool result) and then consumed (a model turn of the parent saw it). Compaction
-- and resume read this, not the transcript: a result delivered but not yet seen is delivered again after a
-- compaction summary took it away; one already seen is never replayed.
ALTER TABLE inbox_items ADD COLUMN consumed_at TEXT;
