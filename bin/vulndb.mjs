#!/usr/bin/env node
// The `vulndb` command. In a development checkout (tsx installed, src/ present) it runs the
// TypeScript sources through tsx's loader, so it never runs a stale build; elsewhere (an install
// without dev dependencies, such as the image) it runs the compiled CLI of `npm run build`
// (dist/src/cli/main.js). The image's CMD and compose commands call that file with node directly.
import fs from 'node:fs';

const source = new URL('../src/cli/main.ts', import.meta.url);
const compiled = new URL('../dist/src/cli/main.js', import.meta.url);

async function tsxLoader() {
  try {
    return await import('tsx/esm/api');
  } catch (err) {
    if (err?.code === 'ERR_MODULE_NOT_FOUND') return undefined;
    throw err;
  }
}

const tsx = fs.existsSync(source) ? await tsxLoader() : undefined;
if (tsx) {
  tsx.register();
  await import(source.href);
} else if (fs.existsSync(compiled)) {
  await import(compiled.href);
} else {
  process.stderr.write('vulndb: neither tsx with src/ (npm ci) nor a build in dist/ (npm run build) is available\n');
  process.exit(1);
}
