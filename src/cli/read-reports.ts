import fs from 'node:fs';
import path from 'node:path';
import readline from 'node:readline';
import type { Readable } from 'node:stream';
import { CliError, EXIT } from './exit.js';

/**
 * Reads reports for `vulndb import` from files, directories (recursively: *.json, *.jsonl,
 * *.ndjson) or standard input. A file may hold one report, a JSON array of reports, or JSON lines
 * (one report per line); large inputs are streamed line by line, so backfills of millions of
 * reports should use JSON lines. With `--format sarif|trivy` each file (directories: *.json,
 * *.sarif) is one scanner document, converted to reports (SPEC §13).
 */

export interface ReadRecord {
  /** Where the record came from, e.g. `reports.jsonl:12` or `batch.json[3]`. */
  origin: string;
  data?: unknown;
  /** Set when `data` is a report the reader already validated (a scanner document's): not checked again. */
  checked?: boolean;
  /** Why the record could not be read as JSON. */
  error?: string;
}

const REPORT_FILE = /\.(json|jsonl|ndjson)$/i;
/** Inputs up to this size are read whole, so a pretty-printed document or array works. */
export const WHOLE_DOCUMENT_BYTES = 64 * 1024 * 1024;

/** The files of scanner documents (`--format sarif|trivy`) a directory input holds. */
export const DOCUMENT_FILE = /\.(json|sarif)$/i;

/** The files of the inputs, directories walked recursively for the files whose names match `files`. */
export function listInputFiles(inputs: string[], files: RegExp = REPORT_FILE): string[] {
  const out: string[] = [];
  const visit = (p: string) => {
    const stat = fs.statSync(p);
    if (stat.isDirectory()) {
      for (const entry of fs.readdirSync(p).sort()) {
        const child = path.join(p, entry);
        if (fs.statSync(child).isDirectory() || files.test(entry)) visit(child);
      }
    } else {
      out.push(p);
    }
  };
  for (const input of inputs) if (input !== '-') visit(input);
  return out;
}

function* documentRecords(text: string, origin: string): Generator<ReadRecord> {
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch {
    yield* lineRecords(text.split('\n'), origin);
    return;
  }
  if (Array.isArray(doc)) {
    for (let i = 0; i < doc.length; i++) yield { origin: `${origin}[${i}]`, data: doc[i] };
  } else {
    yield { origin, data: doc };
  }
}

function* lineRecords(lines: Iterable<string>, origin: string, firstLine = 1): Generator<ReadRecord> {
  let n = firstLine - 1;
  for (const line of lines) {
    n += 1;
    if (line.trim() === '') continue;
    yield parseLine(line, `${origin}:${n}`);
  }
}

function parseLine(line: string, origin: string): ReadRecord {
  try {
    return { origin, data: JSON.parse(line) };
  } catch (err) {
    return { origin, error: `not valid JSON: ${(err as Error).message}` };
  }
}

async function* streamRecords(stream: Readable, origin: string): AsyncGenerator<ReadRecord> {
  const head: string[] = [];
  let headBytes = 0;
  const lines = readline.createInterface({ input: stream, crlfDelay: Infinity });
  const iterator = lines[Symbol.asyncIterator]();
  // Small inputs are parsed as one document (object, array, or JSON lines as a fallback).
  for (;;) {
    const next = await iterator.next();
    if (next.done) {
      yield* documentRecords(head.join('\n'), origin);
      return;
    }
    head.push(next.value);
    headBytes += next.value.length + 1;
    if (headBytes > WHOLE_DOCUMENT_BYTES) break;
  }
  // Too large for a document: JSON lines from here on.
  yield* lineRecords(head, origin);
  let n = head.length;
  for (;;) {
    const next = await iterator.next();
    if (next.done) return;
    n += 1;
    if (next.value.trim() !== '') yield parseLine(next.value, `${origin}:${n}`);
  }
}

/** How far reading has come: bytes of the input files read so far (stdin is not counted). */
export interface ReadPosition {
  bytes: number;
}

export async function* readReports(inputs: string[], stdin: Readable = process.stdin, position?: ReadPosition): AsyncGenerator<ReadRecord> {
  let done = 0;
  for (const input of inputs) {
    if (input === '-') {
      yield* streamRecords(stdin, 'stdin');
      continue;
    }
    for (const file of listInputFiles([input])) {
      const stream = fs.createReadStream(file, 'utf8');
      if (!position) {
        yield* streamRecords(stream, file);
        continue;
      }
      for await (const record of streamRecords(stream, file)) {
        position.bytes = done + stream.bytesRead;
        yield record;
      }
      done += stream.bytesRead;
      position.bytes = done;
    }
  }
}

const FS_REASONS: Record<string, string> = {
  ENOENT: 'no such file',
  EACCES: 'permission denied',
  EPERM: 'permission denied',
  EISDIR: 'is a directory',
  ENOTDIR: 'not a directory',
  ELOOP: 'too many symbolic links',
  EMFILE: 'too many open files',
};

/** A file system error of reading the inputs as a one-line CLI error (`cannot read x.json: no such file`), exit code 2. */
export function inputError(err: unknown): CliError | undefined {
  const e = err as NodeJS.ErrnoException;
  if (!(err instanceof Error) || typeof e.code !== 'string' || !e.syscall) return undefined;
  const reason = FS_REASONS[e.code] ?? e.code.toLowerCase();
  return new CliError(`cannot read ${e.path ?? 'the input'}: ${reason}`, EXIT.usage);
}

/** Reading the inputs failed half way (a file removed or made unreadable meanwhile): one line, exit 2. */
export async function readingInputs<T>(work: Promise<T>): Promise<T> {
  try {
    return await work;
  } catch (err) {
    throw inputError(err) ?? err;
  }
}

/**
 * Checks before anything is enqueued or written that every input exists and can be read, and
 * returns their total size (undefined when stdin is among them). Throws a `CliError` (exit 2).
 */
export function checkInputs(inputs: string[], files: RegExp = REPORT_FILE): number | undefined {
  try {
    const found = listInputFiles(inputs, files);
    for (const f of found) fs.accessSync(f, fs.constants.R_OK);
    if (inputs.includes('-')) return undefined;
    return found.reduce((sum, f) => sum + fs.statSync(f).size, 0);
  } catch (err) {
    throw inputError(err) ?? err;
  }
}
