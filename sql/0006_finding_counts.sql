-- Open/fixed counts per target × severity × status, maintained by materialized views.
-- Every findings insert carries the state it replaces (prev_status/prev_severity); the first view
-- turns that into -1/+1 delta rows, the second sums them into one row per target holding a counter
-- per status × severity (one row per target keeps a team's read to as many rows as it has
-- targets). A team's counts are the sum over its targets' rows, so team (re)associations change
-- nothing here.
CREATE TABLE IF NOT EXISTS finding_state_deltas
(
    target_id  UUID,
    finding_id UUID,
    version    UInt32,
    changed_at DateTime('UTC'),
    severity   Enum8('informational' = 0, 'low' = 1, 'medium' = 2, 'high' = 3, 'critical' = 4),
    status     Enum8('OPEN' = 1, 'FIXED' = 2),
    delta      Int8
)
ENGINE = MergeTree
ORDER BY (target_id, changed_at, finding_id);

CREATE TABLE IF NOT EXISTS finding_counts
(
    target_id           UUID,
    open_critical       Int64,
    open_high           Int64,
    open_medium         Int64,
    open_low            Int64,
    open_informational  Int64,
    fixed_critical      Int64,
    fixed_high          Int64,
    fixed_medium        Int64,
    fixed_low           Int64,
    fixed_informational Int64
)
ENGINE = SummingMergeTree
ORDER BY target_id;

-- A version whose status and severity equal the ones it replaces produces no delta.
CREATE MATERIALIZED VIEW IF NOT EXISTS findings_to_state_deltas TO finding_state_deltas AS
SELECT
    target_id,
    finding_id,
    version,
    changed_at,
    transition.1 AS severity,
    transition.2 AS status,
    transition.3 AS delta
FROM
(
    SELECT
        target_id,
        id         AS finding_id,
        version,
        updated_at AS changed_at,
        arrayJoin(arrayConcat(
            if(prev_status = 'NONE', [], [(toString(prev_severity), toString(prev_status), toInt8(-1))]),
            [(toString(severity), toString(status), toInt8(1))]
        )) AS transition
    FROM findings
    WHERE NOT (toString(prev_status) = toString(status) AND prev_severity = severity)
);

CREATE MATERIALIZED VIEW IF NOT EXISTS finding_state_deltas_to_counts TO finding_counts AS
SELECT
    target_id,
    toInt64(if(status = 'OPEN' AND severity = 'critical', delta, 0))       AS open_critical,
    toInt64(if(status = 'OPEN' AND severity = 'high', delta, 0))           AS open_high,
    toInt64(if(status = 'OPEN' AND severity = 'medium', delta, 0))         AS open_medium,
    toInt64(if(status = 'OPEN' AND severity = 'low', delta, 0))            AS open_low,
    toInt64(if(status = 'OPEN' AND severity = 'informational', delta, 0))  AS open_informational,
    toInt64(if(status = 'FIXED' AND severity = 'critical', delta, 0))      AS fixed_critical,
    toInt64(if(status = 'FIXED' AND severity = 'high', delta, 0))          AS fixed_high,
    toInt64(if(status = 'FIXED' AND severity = 'medium', delta, 0))        AS fixed_medium,
    toInt64(if(status = 'FIXED' AND severity = 'low', delta, 0))           AS fixed_low,
    toInt64(if(status = 'FIXED' AND severity = 'informational', delta, 0)) AS fixed_informational
FROM finding_state_deltas;
