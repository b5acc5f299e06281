-- FOUND events: one per (finding, source) whose report contained the finding (SPEC §2.5).
-- Append-only; id is UUIDv5(finding, source). (time, check_id, pos) is the event's rank for
-- "latest FOUND event" tie-breaks (SPEC §3.5.6). The latest event of a finding gives its current
-- attributes and last source: the source's fields (immutable) are copied here so that rendering a
-- finding needs no lookup in sources (check_id is the source's instance, time its time).
-- Small granules: pages read the events of a few findings at a time.
CREATE TABLE IF NOT EXISTS finding_events
(
    id                       UUID,
    finding_id               UUID,
    source_id                UUID,
    family_id                UUID,
    target_id                UUID,
    source_name              LowCardinality(String),
    component                LowCardinality(String),
    options                  LowCardinality(String),
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
SETTINGS index_granularity = 256;
