-- Each closed OPEN period's duration in seconds (fixed_at − found_at), in period order, and the
-- finding's latest instant (its last period's end if closed, else its start): what /stats/sla at
-- "now" reads instead of the two period arrays (src/stats/sla.ts). Derived by the
-- engine from the arrays on every insert (MATERIALIZED), so no writer changes; parts written before
-- this migration are rewritten by MATERIALIZE COLUMN, and until then the engine computes the value
-- from the arrays when it reads them. The team copy derives it from its own arrays.
ALTER TABLE findings ADD COLUMN IF NOT EXISTS fix_seconds Array(UInt32)
    MATERIALIZED arrayMap((f, x) -> toUInt32(toInt64(x) - toInt64(f)),
                          arrayFilter((f, x) -> x != toDateTime(4294967295, 'UTC'), found_at, fixed_at),
                          arrayFilter(x -> x != toDateTime(4294967295, 'UTC'), fixed_at));

ALTER TABLE team_findings ADD COLUMN IF NOT EXISTS fix_seconds Array(UInt32)
    MATERIALIZED arrayMap((f, x) -> toUInt32(toInt64(x) - toInt64(f)),
                          arrayFilter((f, x) -> x != toDateTime(4294967295, 'UTC'), found_at, fixed_at),
                          arrayFilter(x -> x != toDateTime(4294967295, 'UTC'), fixed_at));

ALTER TABLE findings ADD COLUMN IF NOT EXISTS latest_at DateTime('UTC')
    MATERIALIZED if(arrayElement(fixed_at, -1) = toDateTime(4294967295, 'UTC'), last_found_at, arrayElement(fixed_at, -1));

ALTER TABLE team_findings ADD COLUMN IF NOT EXISTS latest_at DateTime('UTC')
    MATERIALIZED if(arrayElement(fixed_at, -1) = toDateTime(4294967295, 'UTC'), last_found_at, arrayElement(fixed_at, -1));

ALTER TABLE findings MATERIALIZE COLUMN fix_seconds;

ALTER TABLE team_findings MATERIALIZE COLUMN fix_seconds;

ALTER TABLE findings MATERIALIZE COLUMN latest_at;

ALTER TABLE team_findings MATERIALIZE COLUMN latest_at;
