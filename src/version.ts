import fs from 'node:fs';

/**
 * The version of package.json: one level above src/ in a checkout, two above dist/src/ in a
 * build (the image copies package.json to /app).
 */
export function packageVersion(): string {
  for (const up of ['../package.json', '../../package.json']) {
    try {
      const pkg = JSON.parse(fs.readFileSync(new URL(up, import.meta.url), 'utf8')) as { name?: string; version?: string };
      if (pkg.name === 'vulndb' && pkg.version) return pkg.version;
    } catch {
      // not there: look one level higher
    }
  }
  return 'unknown';
}
