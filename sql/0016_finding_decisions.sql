-- Triage decisions (SPEC §12.3), kept apart from the scan history: re-ingestion, replays and
-- recomputation never touch these tables. Both are append-only, so together they are the audit
-- trail: a decision row is never changed, a revocation (explicit, or by a replacing decision) is a
-- row of its own. A decision's state at an instant is derived from them (src/decisions/active.ts).
--
-- created_at and revoked_at keep milliseconds so that the trail orders decisions made within one
-- second; at a reference instant T they count from their whole second (SPEC §0.2). expires_at is
-- a client's RFC 3339 instant, whole seconds. target_id is the finding's (it never changes), so
-- suppressed findings are found by the findings tables' sort key.
CREATE TABLE IF NOT EXISTS finding_decisions
(
    id          UUID,
    finding_id  UUID,
    target_id   UUID,
    decision    Enum8('false_positive' = 1, 'accepted_risk' = 2),
    reason      String,
    by          String,
    created_at  DateTime64(3, 'UTC'),
    expires_at  Nullable(DateTime('UTC')),
    fingerprint String
)
ENGINE = MergeTree
ORDER BY (finding_id, created_at, id);

CREATE TABLE IF NOT EXISTS finding_decision_revocations
(
    decision_id UUID,
    finding_id  UUID,
    revoked_at  DateTime64(3, 'UTC'),
    revoked_by  String
)
ENGINE = MergeTree
ORDER BY (finding_id, revoked_at, decision_id);
