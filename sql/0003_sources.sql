-- Sources: one row per ingested check execution (SPEC §2.3). Its id is UUIDv5 of the duplicate
-- key (name, component, instance, options), so "already ingested" is an id lookup. The worker
-- writes a batch's sources last: a source row is the commit marker of its report.
-- Sorted for the state derivation's read: all sources of one family on one target, by time.
CREATE TABLE IF NOT EXISTS sources
(
    id        UUID,
    family_id UUID,
    target_id UUID,
    name      LowCardinality(String),
    component LowCardinality(String),
    instance  String,
    options   String,
    time      DateTime('UTC'),
    -- Lookups by id (duplicate check, GET /sources/{id}): small granules, few false positives.
    INDEX sources_id_bf id TYPE bloom_filter(0.001) GRANULARITY 1
)
ENGINE = ReplacingMergeTree
ORDER BY (target_id, family_id, time, id)
SETTINGS index_granularity = 1024;

-- The latest source time of each family on each target. A report later than its family's head
-- extends the history at its end, so the worker can update findings incrementally; an earlier
-- (out-of-order) report makes it rebuild that family's periods from the full history.
CREATE TABLE IF NOT EXISTS family_heads
(
    target_id UUID,
    family_id UUID,
    last_time DateTime('UTC')
)
ENGINE = ReplacingMergeTree(last_time)
ORDER BY (target_id, family_id);

CREATE MATERIALIZED VIEW IF NOT EXISTS sources_to_family_heads TO family_heads AS
SELECT target_id, family_id, max(time) AS last_time
FROM sources
GROUP BY target_id, family_id;
