/**
 * npm run build:ui — bundles the triage page (ui/src) into ui/dist: app.js, app.css (the page's and
 * uPlot's styles) and index.html. The service serves ui/dist at /ui/ (src/ui/routes.ts).
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const here = path.dirname(fileURLToPath(import.meta.url));
const out = path.join(here, 'dist');

export async function buildUi(): Promise<string> {
  fs.mkdirSync(out, { recursive: true });
  await build({
    entryPoints: { app: path.join(here, 'src/main.ts') },
    bundle: true,
    format: 'esm',
    target: 'es2022',
    minify: true,
    sourcemap: false,
    legalComments: 'none',
    outdir: out,
    logLevel: 'warning',
  });
  fs.copyFileSync(path.join(here, 'index.html'), path.join(out, 'index.html'));
  return out;
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const dir = await buildUi();
  console.log(`triage page built in ${path.relative(process.cwd(), dir)}`);
}
