import fs from 'node:fs';
import path from 'node:path';

/**
 * Where the benchmarks write their results: `bench/results/<name>.json` holds the latest run of a
 * kind, and every run is also kept as `bench/results/runs/<name>-<UTC time>.json` (not committed),
 * so that a figure quoted from one run survives the next run of the same kind until it is filed
 * under a name of its own.
 */
export function writeResults(name: string, result: unknown): { latest: string; kept: string } {
  const latest = path.join('bench/results', `${name}.json`);
  // To the second: two short runs of one kind within a minute keep a file each.
  const stamp = new Date().toISOString().slice(0, 19).replace(/:/g, '');
  const kept = path.join('bench/results/runs', `${name}-${stamp}Z.json`);
  const text = `${JSON.stringify(result, null, 2)}\n`;
  fs.mkdirSync(path.dirname(kept), { recursive: true });
  fs.writeFileSync(latest, text);
  fs.writeFileSync(kept, text);
  return { latest, kept };
}
