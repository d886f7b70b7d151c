-- yeetui schema, version 4: the run slots shared by every yeetui process on this data dir. A run holds a
-- slot while it executes (`held`), waits for one in queue order (`waiting`, by `seq`), or has lent its slot
-- to a child it blocks on (`lent`). A row whose process is gone is reclaimed by the next process that looks.
CREATE TABLE run_slots (
    run_id TEXT PRIMARY KEY,
    pid INTEGER NOT NULL,
    seq INTEGER NOT NULL,
    state TEXT NOT NULL CHECK (state IN ('waiting', 'held', 'lent'))
);
CREATE INDEX run_slots_state ON run_slots (state, seq);
