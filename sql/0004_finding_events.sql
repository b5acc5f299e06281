-- FOUND events: one per (finding, source) whose report contained the finding (SPEC §2.5).
-- Append-only; id is UUIDv5(finding, source). (time, check_id, pos) is the event's rank for
-- "latest FOUND event" tie-breaks (SPEC §3.5.6).
CREATE TABLE IF NOT EXISTS finding_events
(
    id                       UUID,
    finding_id               UUID,
    source_id                UUID,
    family_id                UUID,
    target_id                UUID,
    time                     DateTime('UTC'),
    check_id                 String,
    pos                      UInt32,
    score                    Float64,
    details                  String,
    resources                String,
    fingerprint              String,
    affected_resource_string String,
    impact_details           String
)
ENGINE = ReplacingMergeTree
ORDER BY (finding_id, time, id)
SETTINGS index_granularity = 2048;
