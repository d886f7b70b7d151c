-- yeetui schema, version 7: what the worktree registry needs to give work back. `kind` tells a git worktree
-- from a local clone; `base_commit` is the commit the branch started from (a reviewer reads
-- `base_commit...branch`); `label` names the run or task it was made for; `status` gains `merged` and
-- `discarded` (the directory may still be there until cleanup).
ALTER TABLE worktrees ADD COLUMN kind TEXT NOT NULL DEFAULT 'worktree';
ALTER TABLE worktrees ADD COLUMN base_commit TEXT;
ALTER TABLE worktrees ADD COLUMN label TEXT;
