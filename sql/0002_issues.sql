-- Issues (SPEC §2.2). The worker appends claims about an issue, each made by one detection:
--   details claim (cwe_id, recommendations, reference_links): the earliest detection wins;
--   labels claim: the latest detection with non-empty labels wins (a claim without labels
--   carries the smallest possible key, so it never wins over a real one).
-- Claims go into a Null table; a materialized view folds them into aggregate states, which
-- merges collapse to one row per issue. The winner is therefore independent of arrival order
-- and of which worker wrote first, and the table stays as small as the set of issues.
CREATE TABLE IF NOT EXISTS issue_claims
(
    id              UUID,
    summary         String,
    description     String,
    cwe_id          UInt32,
    recommendations Array(String),
    reference_links Array(String),
    detail_time     DateTime('UTC'),
    detail_check_id String,
    detail_pos      UInt32,
    labels          Array(String),
    labels_time     DateTime('UTC'),
    labels_check_id String,
    labels_pos      UInt32
)
ENGINE = Null;

CREATE TABLE IF NOT EXISTS issues
(
    id          UUID,
    summary     SimpleAggregateFunction(any, String),
    description SimpleAggregateFunction(any, String),
    details     AggregateFunction(argMin, Tuple(UInt32, Array(String), Array(String)), Tuple(DateTime('UTC'), String, UInt32)),
    detail_key  SimpleAggregateFunction(min, Tuple(DateTime('UTC'), String, UInt32)),
    labels      AggregateFunction(argMax, Array(String), Tuple(DateTime('UTC'), String, UInt32)),
    labels_key  SimpleAggregateFunction(max, Tuple(DateTime('UTC'), String, UInt32))
)
ENGINE = AggregatingMergeTree
ORDER BY id
-- Pages look issues up a few ids at a time; small granules keep them from reading every state.
SETTINGS index_granularity = 128;

CREATE MATERIALIZED VIEW IF NOT EXISTS issue_claims_to_issues TO issues AS
SELECT
    id,
    any(summary)                                                                             AS summary,
    any(description)                                                                         AS description,
    argMinState((cwe_id, recommendations, reference_links), (detail_time, detail_check_id, detail_pos)) AS details,
    min((detail_time, detail_check_id, detail_pos))                                          AS detail_key,
    argMaxState(labels, (labels_time, labels_check_id, labels_pos))                           AS labels,
    max((labels_time, labels_check_id, labels_pos))                                          AS labels_key
FROM issue_claims
GROUP BY id;

-- The current issue: one row per id with the winning claims.
CREATE VIEW IF NOT EXISTS issues_current AS
SELECT
    id,
    summary_w              AS summary,
    description_w          AS description,
    details_w.1            AS cwe_id,
    details_w.2            AS recommendations,
    details_w.3            AS reference_links,
    detail_key_w           AS detail_key,
    labels_w               AS labels,
    labels_key_w           AS labels_key
FROM
(
    SELECT
        id,
        any(summary)          AS summary_w,
        any(description)      AS description_w,
        argMinMerge(details)  AS details_w,
        min(detail_key)       AS detail_key_w,
        argMaxMerge(labels)   AS labels_w,
        max(labels_key)       AS labels_key_w
    FROM issues
    GROUP BY id
);
