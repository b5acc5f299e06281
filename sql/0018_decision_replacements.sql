-- A replacing decision revokes the one it replaces in its own row (SPEC §12.3 "Writes are atomic"):
-- the decision and that revocation are one row of one INSERT, so a PUT cannot store one without
-- the other (two inserts into two tables could: the first committed, the second failed). Explicit
-- revocations (DELETE) stay rows of finding_decision_revocations. Readers take every revocation
-- from decision_revocations, which shows both kinds with the columns of that table.
ALTER TABLE finding_decisions ADD COLUMN IF NOT EXISTS replaces Array(UUID);

CREATE VIEW IF NOT EXISTS decision_revocations AS
SELECT decision_id, finding_id, revoked_at, revoked_by FROM finding_decision_revocations
UNION ALL
SELECT arrayJoin(replaces) AS decision_id, finding_id, created_at AS revoked_at, by AS revoked_by
FROM finding_decisions
WHERE notEmpty(replaces);
