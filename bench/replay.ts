/**
 * npm run bench:replay -- --scale 100k|1m [--rebuild]
 *
 * Replays a benchmark dataset's synthetic history (bench/lib/dataset.ts) into bench/.data/<scale>
 * as `vulndb import --direct` would, and writes the replay's time to
 * bench/results/replay-<scale>.json. A dataset already built is kept (bench:api reuses it) unless
 * --rebuild is given.
 */
import fs from 'node:fs';
import { dataDirOf, openDataset, SCALES, type Scale } from './lib/dataset.js';

const args = process.argv.slice(2);
const i = args.indexOf('--scale');
const scale = (i >= 0 ? args[i + 1] : '100k') as Scale;
if (!(scale in SCALES)) throw new Error(`--scale must be one of ${Object.keys(SCALES).join(', ')}`);
if (args.includes('--rebuild')) fs.rmSync(dataDirOf(scale), { recursive: true, force: true });
else if (fs.existsSync(dataDirOf(scale))) console.log(`${dataDirOf(scale)} exists: kept (--rebuild replays it again)`);
const { dataset, store } = await openDataset(scale);
await store.close();
console.log(JSON.stringify(dataset));
