import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * A small reader of the repository's Dockerfile, for the tests that check it statically
 * (test/deploy.test.ts) and the one that runs its CMD (test/image-command.test.ts): stages, their
 * instructions (continuation lines joined, comments dropped) and the exec-form CMD.
 */

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

export interface Instruction {
  keyword: string;
  args: string;
}

export interface Stage {
  /** The image of FROM. */
  from: string;
  /** The name given by `AS`, if any. */
  name: string | undefined;
  instructions: Instruction[];
}

export function parseDockerfile(text: string): Stage[] {
  const lines: string[] = [];
  let pending = '';
  for (const raw of text.split('\n')) {
    if (/^\s*#/.test(raw) && pending === '') continue;
    const line = raw.replace(/\s+$/, '');
    if (line.endsWith('\\')) {
      pending += `${line.slice(0, -1)} `;
      continue;
    }
    const full = (pending + line).trim();
    pending = '';
    if (full !== '') lines.push(full);
  }
  const stages: Stage[] = [];
  for (const line of lines) {
    const m = /^(\w+)\s+(.*)$/.exec(line);
    if (!m) throw new Error(`unreadable Dockerfile line: ${line}`);
    const keyword = m[1]!.toUpperCase();
    const args = m[2]!.replace(/\s+/g, ' ');
    if (keyword === 'FROM') {
      const from = /^(\S+)(?:\s+AS\s+(\S+))?$/i.exec(args);
      if (!from) throw new Error(`unreadable FROM: ${line}`);
      stages.push({ from: from[1]!, name: from[2], instructions: [] });
      continue;
    }
    const stage = stages[stages.length - 1];
    if (!stage) throw new Error(`instruction before FROM: ${line}`);
    stage.instructions.push({ keyword, args });
  }
  return stages;
}

export function readDockerfile(): Stage[] {
  return parseDockerfile(fs.readFileSync(path.join(ROOT, 'Dockerfile'), 'utf8'));
}

/** The CMD of a stage in exec form (a JSON array); throws on the shell form. */
export function execCmd(stage: Stage): string[] {
  const cmds = stage.instructions.filter((i) => i.keyword === 'CMD');
  if (cmds.length !== 1) throw new Error(`expected one CMD in the stage, found ${cmds.length}`);
  const parsed: unknown = JSON.parse(cmds[0]!.args);
  if (!Array.isArray(parsed) || !parsed.every((a) => typeof a === 'string')) throw new Error(`CMD is not in exec form: ${cmds[0]!.args}`);
  return parsed as string[];
}

/** The JavaScript entry file of a node command line: the first argument ending in .js or .mjs. */
export function entryOf(argv: string[]): { index: number; file: string } {
  const index = argv.findIndex((a, i) => i > 0 && /\.m?js$/.test(a));
  if (index < 0) throw new Error(`no .js entry in ${JSON.stringify(argv)}`);
  return { index, file: argv[index]! };
}
