-- What every ingest batch pays whatever its size (issue 32), made smaller:
--
-- * The key-value tables of 0012 and 0014 take their writes into RocksDB's memtable instead of
--   building an SST file per insert and ingesting it (the engine's default for EmbeddedRocksDB,
--   made for bulk loads). Every batch writes finding_latest_events (through the events' view) and,
--   after a status change, finding_total_values: each such write waited 15–20 ms on the file
--   against about 1.5 ms into the memtable, and every ingested file is one more for key lookups to
--   look into until a compaction. A table of another layout (src/storage/cluster.ts) has no such
--   setting: these statements are left out there.
-- * The two views that copy a findings insert into its targets' teams (0009) join it with the
--   teams of the block's targets only, instead of every association there is: a view's query reads
--   the inserted block wherever it names its source table. Each findings insert read and
--   deduplicated the whole of target_teams twice (8,000 rows at 100k findings, 80,000 at 1M).
--   Same rows out, so nothing is rebuilt.
ALTER TABLE finding_latest_events MODIFY SETTING optimize_for_bulk_insert = 0;

ALTER TABLE issue_objects MODIFY SETTING optimize_for_bulk_insert = 0;

ALTER TABLE target_objects MODIFY SETTING optimize_for_bulk_insert = 0;

ALTER TABLE finding_total_values MODIFY SETTING optimize_for_bulk_insert = 0;

ALTER TABLE findings_to_team_findings MODIFY QUERY
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
INNER JOIN
(
    SELECT DISTINCT team, target_id FROM target_teams WHERE target_id IN (SELECT target_id FROM findings)
) AS t ON t.target_id = f.target_id;

ALTER TABLE finding_state_deltas_to_team_counts MODIFY QUERY
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
INNER JOIN
(
    SELECT DISTINCT team, target_id FROM target_teams WHERE target_id IN (SELECT target_id FROM finding_state_deltas)
) AS t ON t.target_id = d.target_id;
