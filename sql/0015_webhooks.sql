-- Webhook subscriptions (SPEC §9.1), managed by admins through the metrics API. Versioned rows:
-- a subscription is written once (version 1) and deleted by a tombstone (version 2, deleted = 1),
-- so reads take the latest version of each id (FINAL) and skip tombstones. The secret is kept to
-- sign deliveries and never returned by the API. Empty teams = every team, empty events = every
-- event type.
CREATE TABLE IF NOT EXISTS webhooks
(
    id         UUID,
    url        String,
    secret     String,
    teams      Array(String),
    events     Array(LowCardinality(String)),
    created_at DateTime('UTC'),
    version    UInt32,
    deleted    UInt8
)
ENGINE = ReplacingMergeTree(version)
ORDER BY id;
