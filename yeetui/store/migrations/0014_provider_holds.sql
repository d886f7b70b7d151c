-- yeetui schema, version 14: a provider whose quota or credit is spent is held — runs queued for it are not
-- started into the same refusal — until the hold's time is up or a request to it succeeds again.
CREATE TABLE provider_holds (
    provider TEXT PRIMARY KEY,
    reason TEXT NOT NULL,
    since TEXT NOT NULL,
    until TEXT NOT NULL
);
