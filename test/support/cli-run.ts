import { execFile } from 'node:child_process';
import { promisify } from 'node:util';

/** The `vulndb` command as a process (`node --import tsx src/cli/main.ts …`), its exit code and output. */

const exec = promisify(execFile);

/** A Redis URL nothing answers on: for commands that must not touch anyone's keys. */
export const NO_REDIS = 'redis://127.0.0.1:1';

export interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

export async function runVulndb(args: string[], env: Record<string, string> = {}, timeoutMs = 60_000): Promise<Run> {
  const options = { env: { ...process.env, LOG_LEVEL: 'error', REDIS_URL: NO_REDIS, ...env }, timeout: timeoutMs };
  try {
    const { stdout, stderr } = await exec(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', ...args], options);
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}
