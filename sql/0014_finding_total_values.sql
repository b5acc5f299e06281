-- The totals of finding_totals (0012) as one value per scope, for direct joins: a findings page
-- joins its total by key instead of summing finding_totals in a scalar subquery, which cost the
-- embedded engine about 2.5 ms per page (any MergeTree read costs a few milliseconds to plan).
-- finding_totals stays the truth; these values are rewritten from it after every committed
-- ingest batch and team association (src/findings/totals.ts), one writer at a time.
CREATE TABLE IF NOT EXISTS finding_total_values
(
    scope String,
    open  UInt64,
    fixed UInt64
)
ENGINE = EmbeddedRocksDB
PRIMARY KEY scope;

INSERT INTO finding_total_values
SELECT scope, toUInt64(sum(open)), toUInt64(sum(fixed))
FROM finding_totals
GROUP BY scope;
