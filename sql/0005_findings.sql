-- Findings: the current state of each (issue, target, affected_resource), as versioned rows.
-- The worker appends a new version only when a finding's derived state changes; readers take
-- the latest version with FINAL.
--
-- OPEN periods are two parallel arrays (found_at[i], fixed_at[i]); a period that has not ended
-- has fixed_at = 2106-02-07 06:28:15 (the largest DateTime, "never"), so "OPEN at T" is simply
-- found_at <= T < fixed_at. family_periods keeps each detecting family's own periods (SPEC §3.5),
-- from which the union in found_at/fixed_at is derived.
--
-- The scalar columns after the arrays are precomputed from the periods so the statistics evaluated
-- at "now" (current exposure, total exposure, MTTR without dates) scan plain columns.
--
-- A finding's current attributes are those of its latest FOUND event (SPEC §3.5.6). The row keeps
-- only that event's score (statistics need it for every finding); details, resources and the last
-- source are read from finding_events for the findings a request shows. So a repeated detection
-- that changes neither the periods nor the score writes no new version.
--
-- prev_status/prev_severity record the state this version replaces ('NONE' for a new finding):
-- each insert carries its own delta, which feeds finding_state_deltas (0006) atomically.
CREATE TABLE IF NOT EXISTS findings
(
    id                       UUID,
    target_id                UUID,
    issue_id                 UUID,
    affected_resource        String,
    version                  UInt32,
    status                   Enum8('OPEN' = 1, 'FIXED' = 2),
    score                    Float64,
    severity                 Enum8('informational' = 0, 'low' = 1, 'medium' = 2, 'high' = 3, 'critical' = 4),
    found_at                 Array(DateTime('UTC')),
    fixed_at                 Array(DateTime('UTC')),
    first_found_at           DateTime('UTC'),
    last_found_at            DateTime('UTC'),
    closed_exposure          UInt64,
    ttr_sum                  UInt64,
    ttr_count                UInt32,
    family_ids               Array(UUID),
    family_periods           Array(Tuple(family_id UUID, found_at DateTime('UTC'), fixed_at DateTime('UTC'))),
    prev_status              Enum8('NONE' = 0, 'OPEN' = 1, 'FIXED' = 2),
    prev_severity            Enum8('informational' = 0, 'low' = 1, 'medium' = 2, 'high' = 3, 'critical' = 4),
    updated_at               DateTime('UTC'),
    INDEX findings_id_bf id TYPE bloom_filter(0.001) GRANULARITY 1,
    INDEX findings_issue_bf issue_id TYPE bloom_filter(0.001) GRANULARITY 1
)
ENGINE = ReplacingMergeTree(version)
ORDER BY (target_id, id)
SETTINGS index_granularity = 1024;
