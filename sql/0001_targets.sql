-- Targets and their team associations (SPEC §2.1, §6.6).
-- A target's id is UUIDv5 of its identifier, so the worker and POST /targets can create the
-- same target concurrently and rows collapse on merge; readers count with FINAL.
CREATE TABLE IF NOT EXISTS targets
(
    id         UUID,
    identifier String,
    created_at DateTime('UTC')
)
ENGINE = ReplacingMergeTree
ORDER BY id;

-- Append-only: associations are never removed. A team's findings are "the findings of its
-- targets", resolved at query time, so re-associating teams needs no backfill anywhere.
-- associated_seq orders a target's teams (association order, then request order); a pair
-- written twice by racing requests keeps its smallest seq when read.
CREATE TABLE IF NOT EXISTS target_teams
(
    team           String,
    target_id      UUID,
    associated_seq UInt64,
    -- Sorted for "the targets of a team"; rendering asks "the teams of these targets".
    INDEX target_teams_target target_id TYPE bloom_filter(0.01) GRANULARITY 1
)
ENGINE = MergeTree
ORDER BY (team, target_id)
SETTINGS index_granularity = 1024;
