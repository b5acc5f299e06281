-- Findings and their counts clustered by team: a copy of each finding's current row and of its
-- target's counters per team of the target, so a request scoped to one team reads that team's
-- contiguous range instead of testing every row of the organisation against the team's set of
-- targets (a team's targets are spread over the whole of tables sorted by target id).
--
-- Maintained in two ways, both under the target's lock (src/ingest/target-locks.ts), so that no
-- change is missed whichever comes first:
--   * every findings insert and every counter delta is copied for the teams its target has at that
--     moment (the views below join the inserted block with target_teams);
--   * associating a target with a team copies the target's current findings and counters into that
--     team (src/targets/team-copies.ts).
-- Associations are never removed (SPEC §6.6), so rows never leave a team.
CREATE TABLE IF NOT EXISTS team_findings
(
    team              String,
    target_id         UUID,
    id                UUID,
    issue_id          UUID,
    affected_resource String,
    version           UInt32,
    status            Enum8('OPEN' = 1, 'FIXED' = 2),
    score             Float64,
    severity          Enum8('informational' = 0, 'low' = 1, 'medium' = 2, 'high' = 3, 'critical' = 4),
    found_at          Array(DateTime('UTC')),
    fixed_at          Array(DateTime('UTC')),
    first_found_at    DateTime('UTC'),
    last_found_at     DateTime('UTC'),
    closed_exposure   UInt64,
    ttr_sum           UInt64,
    ttr_count         UInt32
)
ENGINE = ReplacingMergeTree(version)
-- In the byte order of the ids' text within a team (SPEC §5.4): a team's findings page reads only
-- its own rows.
ORDER BY (team, UUIDToNum(id))
SETTINGS index_granularity = 1024, min_compress_block_size = 4096, max_compress_block_size = 8192;

CREATE MATERIALIZED VIEW IF NOT EXISTS findings_to_team_findings TO team_findings AS
SELECT
    t.team AS team,
    f.target_id AS target_id,
    f.id AS id,
    f.issue_id AS issue_id,
    f.affected_resource AS affected_resource,
    f.version AS version,
    f.status AS status,
    f.score AS score,
    f.severity AS severity,
    f.found_at AS found_at,
    f.fixed_at AS fixed_at,
    f.first_found_at AS first_found_at,
    f.last_found_at AS last_found_at,
    f.closed_exposure AS closed_exposure,
    f.ttr_sum AS ttr_sum,
    f.ttr_count AS ttr_count
FROM findings AS f
INNER JOIN (SELECT DISTINCT team, target_id FROM target_teams) AS t ON t.target_id = f.target_id;

-- Findings stored before this migration.
INSERT INTO team_findings
SELECT
    t.team, f.target_id, f.id, f.issue_id, f.affected_resource, f.version, f.status, f.score, f.severity,
    f.found_at, f.fixed_at, f.first_found_at, f.last_found_at, f.closed_exposure, f.ttr_sum, f.ttr_count
FROM findings AS f FINAL
INNER JOIN (SELECT DISTINCT team, target_id FROM target_teams) AS t ON t.target_id = f.target_id;

-- Counters per team × target, fed by the same deltas as finding_counts (0006).
CREATE TABLE IF NOT EXISTS team_finding_counts
(
    team                String,
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
ORDER BY (team, target_id);

CREATE MATERIALIZED VIEW IF NOT EXISTS finding_state_deltas_to_team_counts TO team_finding_counts AS
SELECT
    t.team AS team,
    d.target_id AS target_id,
    toInt64(if(d.status = 'OPEN' AND d.severity = 'critical', d.delta, 0))       AS open_critical,
    toInt64(if(d.status = 'OPEN' AND d.severity = 'high', d.delta, 0))           AS open_high,
    toInt64(if(d.status = 'OPEN' AND d.severity = 'medium', d.delta, 0))         AS open_medium,
    toInt64(if(d.status = 'OPEN' AND d.severity = 'low', d.delta, 0))            AS open_low,
    toInt64(if(d.status = 'OPEN' AND d.severity = 'informational', d.delta, 0))  AS open_informational,
    toInt64(if(d.status = 'FIXED' AND d.severity = 'critical', d.delta, 0))      AS fixed_critical,
    toInt64(if(d.status = 'FIXED' AND d.severity = 'high', d.delta, 0))          AS fixed_high,
    toInt64(if(d.status = 'FIXED' AND d.severity = 'medium', d.delta, 0))        AS fixed_medium,
    toInt64(if(d.status = 'FIXED' AND d.severity = 'low', d.delta, 0))           AS fixed_low,
    toInt64(if(d.status = 'FIXED' AND d.severity = 'informational', d.delta, 0)) AS fixed_informational
FROM finding_state_deltas AS d
-- A pair associated twice (possible before POST /targets took the target's lock) must not count twice.
INNER JOIN (SELECT DISTINCT team, target_id FROM target_teams) AS t ON t.target_id = d.target_id;

-- Counters stored before this migration.
INSERT INTO team_finding_counts
SELECT
    t.team, c.target_id,
    c.open_critical, c.open_high, c.open_medium, c.open_low, c.open_informational,
    c.fixed_critical, c.fixed_high, c.fixed_medium, c.fixed_low, c.fixed_informational
FROM finding_counts AS c
INNER JOIN (SELECT DISTINCT team, target_id FROM target_teams) AS t ON t.target_id = c.target_id;
