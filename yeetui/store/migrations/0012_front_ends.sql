-- yeetui schema, version 12: permission questions any yeetui with dialogs may answer. A run started from
-- outside (an MCP client's `spawn`) has no yeetui following it; its questions are posted `open_to_all` and
-- asked in every TUI on this data dir (the first answer wins). `front_ends` lists the processes that show
-- dialogs now — a TUI adds itself at start and leaves at quitting; a row whose process is gone (a crash) means
-- nothing — so such a run knows at once whether anybody could answer, and refuses the call when nobody can.
CREATE TABLE front_ends (
    pid INTEGER PRIMARY KEY,
    pid_start INTEGER,
    started_at TEXT NOT NULL
);
ALTER TABLE permission_asks ADD COLUMN open_to_all INTEGER NOT NULL DEFAULT 0;
CREATE INDEX permission_asks_open_to_all ON permission_asks (open_to_all, answer);
