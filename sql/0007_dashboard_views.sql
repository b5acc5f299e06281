-- Read-only views for Grafana and ad-hoc SQL: the latest finding versions, one row per OPEN
-- period (fixed_at NULL while open), and each target's current teams.
CREATE VIEW IF NOT EXISTS findings_current AS
SELECT * FROM findings FINAL;

CREATE VIEW IF NOT EXISTS finding_periods AS
SELECT
    finding_id,
    target_id,
    issue_id,
    severity,
    score,
    status,
    period.1 AS period_found_at,
    if(period.2 = toDateTime(4294967295, 'UTC'), NULL, period.2) AS period_fixed_at
FROM
(
    SELECT id AS finding_id, target_id, issue_id, severity, score, status, arrayJoin(arrayZip(found_at, fixed_at)) AS period
    FROM findings FINAL
);

CREATE VIEW IF NOT EXISTS target_team_members AS
SELECT team, target_id, min(associated_seq) AS associated_seq
FROM target_teams
GROUP BY team, target_id;
