-- A store at rest reads about as fast as a store just built (issue 32). Background merges leave a
-- table that took a stream of small inserts in several parts: the merge selector does not merge a
-- small part into a much larger one. Reads with FINAL, sums over counters and aggregate states then
-- merge across those parts at every statement: after 60 batches of 200 reports at 100k, the sum of
-- eight uncached reads stayed 20–45% slower than on the dataset as built, 105 s later and with no
-- merge running (bench/HISTORY.md). With this setting a background merge takes every part of a
-- table once all of them are older than a minute, so a few minutes after the last batch each table
-- is one part again (two at 100k, four at 1M: the merges go table by table), and under a steady
-- stream a read finds at most about a minute's worth of small parts beside the big one. The merges
-- run on the engine's background threads, not in the statements' turns (src/storage/time-limits.ts).
--
-- Left out, the tables whose reads do not merge across parts and which are large, so that
-- rewriting them every minute under a steady stream would cost more than it gains (rows at 1M):
-- finding_events (20M; point lookups by finding), sources (2M; read with DISTINCT, not FINAL) and
-- finding_state_deltas (1.4M; read by nothing but the views that sum it into the counters).
ALTER TABLE findings MODIFY SETTING min_age_to_force_merge_seconds = 60;

ALTER TABLE team_findings MODIFY SETTING min_age_to_force_merge_seconds = 60;

ALTER TABLE finding_counts MODIFY SETTING min_age_to_force_merge_seconds = 60;

ALTER TABLE team_finding_counts MODIFY SETTING min_age_to_force_merge_seconds = 60;

ALTER TABLE issue_finding_counts MODIFY SETTING min_age_to_force_merge_seconds = 60;

ALTER TABLE finding_totals MODIFY SETTING min_age_to_force_merge_seconds = 60;

ALTER TABLE issues MODIFY SETTING min_age_to_force_merge_seconds = 60;

ALTER TABLE family_heads MODIFY SETTING min_age_to_force_merge_seconds = 60;

ALTER TABLE targets MODIFY SETTING min_age_to_force_merge_seconds = 60;

ALTER TABLE target_teams MODIFY SETTING min_age_to_force_merge_seconds = 60;
