-- Issues (SPEC §2.2). Each row is a claim about an issue made by one detection: its details
-- claim (cwe_id, recommendations, reference_links; the earliest detection wins) and its labels
-- claim (the latest detection with non-empty labels wins). Rows are only appended; the winning
-- claim is chosen when reading (issues_current), so the result does not depend on arrival
-- order or on which worker wrote first.
CREATE TABLE IF NOT EXISTS issues
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
ENGINE = MergeTree
ORDER BY id;

-- Aggregates get private names first: ClickHouse aliases are visible everywhere in a query, so
-- `argMin(cwe_id, ...) AS cwe_id` would refer to itself.
CREATE VIEW IF NOT EXISTS issues_current AS
SELECT
    id,
    summary_w         AS summary,
    description_w     AS description,
    cwe_id_w          AS cwe_id,
    recommendations_w AS recommendations,
    reference_links_w AS reference_links,
    detail_key,
    labels_w          AS labels,
    labels_key
FROM
(
    SELECT
        id,
        any(summary)                                                                   AS summary_w,
        any(description)                                                               AS description_w,
        argMin(cwe_id, (detail_time, detail_check_id, detail_pos))                     AS cwe_id_w,
        argMin(recommendations, (detail_time, detail_check_id, detail_pos))            AS recommendations_w,
        argMin(reference_links, (detail_time, detail_check_id, detail_pos))            AS reference_links_w,
        min((detail_time, detail_check_id, detail_pos))                                AS detail_key,
        argMaxIf(labels, (labels_time, labels_check_id, labels_pos), notEmpty(labels)) AS labels_w,
        maxIf((labels_time, labels_check_id, labels_pos), notEmpty(labels))            AS labels_key
    FROM issues
    GROUP BY id
);
