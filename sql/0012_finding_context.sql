-- What a findings page shows besides the finding's own row (SPEC §6.1), kept by key so that the
-- page is one statement: its rows joined with these tables by direct key lookups
-- (EmbeddedRocksDB, join_algorithm = 'direct': no hash table is built, each page row looks its
-- key up). Before this migration a page ran a statement per lookup (rows, count, issues, targets
-- with teams, latest events), and the embedded engine costs several milliseconds per statement
-- whatever it reads. A RocksDB table holds one value per key and a write replaces it, so each is
-- written only with values that win under the SPEC's rules:
--   * finding_latest_events: each finding's latest FOUND event (SPEC §3.5.6). The worker flags the
--     event of a batch that becomes its finding's latest (became_latest) and the view below copies
--     exactly those rows, inside the same insert as the events.
--   * issue_objects: each issue as exposed (details of its earliest detection, labels of its latest
--     detection with labels, SPEC §2.2), written by the worker after the claims it merges.
--   * target_objects: each target's identifier and teams in association order, written when the
--     worker creates the target and by POST /targets.
-- The source of truth stays where it was (finding_events, issues, targets and target_teams); these
-- tables are derived from it and are rebuilt from it here.

ALTER TABLE finding_events ADD COLUMN IF NOT EXISTS became_latest UInt8 DEFAULT 0;

CREATE TABLE IF NOT EXISTS finding_latest_events
(
    finding_id               UUID,
    time                     DateTime('UTC'),
    check_id                 String,
    pos                      UInt32,
    source_id                UUID,
    source_name              String,
    component                String,
    options                  String,
    details                  String,
    impact_details           String,
    resources                String,
    affected_resource_string String
)
ENGINE = EmbeddedRocksDB
PRIMARY KEY finding_id;

CREATE MATERIALIZED VIEW IF NOT EXISTS finding_events_to_latest TO finding_latest_events AS
SELECT finding_id, time, check_id, pos, source_id, source_name, component, options, details, impact_details, resources,
       affected_resource_string
FROM finding_events
WHERE became_latest = 1;

-- Like every backfill here it runs before any ingest worker writes (see 0011). A write replaces a
-- key's value, so running it again after a crash rewrites the same values.
INSERT INTO finding_latest_events
SELECT finding_id, e.1, e.2, e.3, e.4, e.5, e.6, e.7, e.8, e.9, e.10, e.11
FROM
(
    SELECT finding_id,
           argMax((time, check_id, pos, source_id, toString(source_name), toString(component), toString(options), details,
                   impact_details, resources, affected_resource_string), (time, check_id, pos)) AS e
    FROM finding_events
    GROUP BY finding_id
);

CREATE TABLE IF NOT EXISTS issue_objects
(
    id              UUID,
    summary         String,
    description     String,
    cwe_id          UInt32,
    recommendations Array(String),
    reference_links Array(String),
    labels          Array(String)
)
ENGINE = EmbeddedRocksDB
PRIMARY KEY id;

INSERT INTO issue_objects
SELECT id, summary, description, cwe_id, recommendations, reference_links, labels
FROM issues_current;

CREATE TABLE IF NOT EXISTS target_objects
(
    id         UUID,
    identifier String,
    teams      Array(String)
)
ENGINE = EmbeddedRocksDB
PRIMARY KEY id;

INSERT INTO target_objects
SELECT t.id, t.identifier, tt.teams
FROM targets AS t FINAL
LEFT JOIN
(
    SELECT target, arrayMap(x -> x.2, arraySort(groupArray((seq, team)))) AS teams
    FROM
    (
        SELECT target_id AS target, team, min(associated_seq) AS seq
        FROM target_teams
        GROUP BY target_id, team
    )
    GROUP BY target
) AS tt ON tt.target = t.id;

-- OPEN and FIXED findings in all and per team (scope 'all' or 'team:<id>'), summed from the
-- per-target counters (0006, 0009): the total of a findings list without filters, or filtered by
-- status only, is one row here instead of a count of the list.
CREATE TABLE IF NOT EXISTS finding_totals
(
    scope String,
    open  Int64,
    fixed Int64
)
ENGINE = SummingMergeTree
ORDER BY scope;

INSERT INTO finding_totals
SELECT 'all',
       sum(open_critical + open_high + open_medium + open_low + open_informational),
       sum(fixed_critical + fixed_high + fixed_medium + fixed_low + fixed_informational)
FROM finding_counts
WHERE (SELECT count() FROM finding_totals WHERE scope = 'all') = 0;

INSERT INTO finding_totals
SELECT concat('team:', team),
       sum(open_critical + open_high + open_medium + open_low + open_informational),
       sum(fixed_critical + fixed_high + fixed_medium + fixed_low + fixed_informational)
FROM team_finding_counts
WHERE (SELECT count() FROM finding_totals WHERE scope != 'all') = 0
GROUP BY team;

CREATE MATERIALIZED VIEW IF NOT EXISTS finding_counts_to_totals TO finding_totals AS
SELECT 'all' AS scope,
       sum(open_critical + open_high + open_medium + open_low + open_informational)      AS open,
       sum(fixed_critical + fixed_high + fixed_medium + fixed_low + fixed_informational) AS fixed
FROM finding_counts;

CREATE MATERIALIZED VIEW IF NOT EXISTS team_finding_counts_to_totals TO finding_totals AS
SELECT concat('team:', team) AS scope,
       sum(open_critical + open_high + open_medium + open_low + open_informational)      AS open,
       sum(fixed_critical + fixed_high + fixed_medium + fixed_low + fixed_informational) AS fixed
FROM team_finding_counts
GROUP BY team;
