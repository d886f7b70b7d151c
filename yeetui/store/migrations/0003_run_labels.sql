-- yeetui schema, version 3: the counter behind run labels (`oracle#3`), one per profile for the whole data
-- dir, so a label names one run in `agents list`, the ledger and `/cancel`. It is taken and bumped in the
-- transaction that writes the run, so labels stay unique however many spawns — or processes — race for one.
CREATE TABLE run_labels (
    profile TEXT PRIMARY KEY,
    last INTEGER NOT NULL
);
