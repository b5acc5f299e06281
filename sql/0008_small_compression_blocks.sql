-- Point lookups (a page's findings, their issues, targets, teams and latest events; a source by
-- id) read a few granules each, but a granule is decompressed with its whole compression block,
-- 64 KiB to 1 MiB by default. Blocks of 4–8 KiB halve those lookups at 1M findings for about 8%
-- more disk; scans are unaffected. Applies to parts written from now on (merges rewrite the rest).
ALTER TABLE findings MODIFY SETTING min_compress_block_size = 4096, max_compress_block_size = 8192;
ALTER TABLE finding_events MODIFY SETTING min_compress_block_size = 4096, max_compress_block_size = 8192;
ALTER TABLE issues MODIFY SETTING min_compress_block_size = 4096, max_compress_block_size = 8192;
ALTER TABLE targets MODIFY SETTING min_compress_block_size = 4096, max_compress_block_size = 8192;
ALTER TABLE target_teams MODIFY SETTING min_compress_block_size = 4096, max_compress_block_size = 8192;
ALTER TABLE sources MODIFY SETTING min_compress_block_size = 4096, max_compress_block_size = 8192;
