import { sqlString } from './manifest.js';

/**
 * Where a ClickHouse server writes a snapshot (SPEC §14, server mode): a destination configured on
 * the server, named on the command line as `disk:<disk>/<name>` (a disk allowed by the server's
 * `backups.allowed_disk`) or `s3:<https URL>` (credentials from BACKUP_S3_ACCESS_KEY_ID and
 * BACKUP_S3_SECRET_ACCESS_KEY, else the server's own S3 configuration). A secret never appears in
 * what is shown or logged: `shown` names the destination without it, and `redact` scrubs it from
 * the server's error messages.
 */

export type Destination =
  | { kind: 'disk'; disk: string; name: string }
  | { kind: 's3'; url: string; accessKeyId?: string; secretAccessKey?: string };

export class DestinationError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'DestinationError';
  }
}

const USAGE = 'a server destination is disk:<disk>/<name> (a disk the server allows for backups) or s3:https://<bucket URL>/<name>';

export function parseDestination(text: string, env: Record<string, string | undefined> = {}): Destination {
  const disk = /^disk:([A-Za-z0-9_-]+)\/(.+)$/.exec(text);
  if (disk) {
    const name = disk[2]!;
    if (name.split('/').some((part) => part === '..' || part === ''))
      throw new DestinationError(`${text}: the name under the disk has an empty or ".." part`);
    return { kind: 'disk', disk: disk[1]!, name };
  }
  const s3 = /^s3:(https?:\/\/\S+)$/.exec(text);
  if (s3) {
    let url: URL;
    try {
      url = new URL(s3[1]!);
    } catch {
      throw new DestinationError(`${text}: not a URL; ${USAGE}`);
    }
    if (url.username || url.password)
      throw new DestinationError('the S3 URL must not hold credentials: set BACKUP_S3_ACCESS_KEY_ID and BACKUP_S3_SECRET_ACCESS_KEY');
    const accessKeyId = env.BACKUP_S3_ACCESS_KEY_ID?.trim();
    const secretAccessKey = env.BACKUP_S3_SECRET_ACCESS_KEY?.trim();
    if (Boolean(accessKeyId) !== Boolean(secretAccessKey))
      throw new DestinationError(
        'BACKUP_S3_ACCESS_KEY_ID and BACKUP_S3_SECRET_ACCESS_KEY go together (or neither: the server’s own S3 configuration)',
      );
    return { kind: 's3', url: url.href, ...(accessKeyId && secretAccessKey ? { accessKeyId, secretAccessKey } : {}) };
  }
  throw new DestinationError(`${text}: ${USAGE}`);
}

/** The destination as BACKUP … TO / RESTORE … FROM take it (holds the secret: never log it). */
export function destinationSql(d: Destination): string {
  if (d.kind === 'disk') return `Disk(${sqlString(d.disk)}, ${sqlString(d.name)})`;
  const keys = d.accessKeyId ? `, ${sqlString(d.accessKeyId)}, ${sqlString(d.secretAccessKey!)}` : '';
  return `S3(${sqlString(d.url)}${keys})`;
}

/** The destination as the operator named it, without secrets. */
export const shown = (d: Destination) => (d.kind === 'disk' ? `disk:${d.disk}/${d.name}` : `s3:${d.url}`);

/** `text` with the destination's secret replaced (server errors may quote the statement). */
export function redact(d: Destination, text: string): string {
  return d.kind === 's3' && d.secretAccessKey ? text.replaceAll(d.secretAccessKey, '[HIDDEN]') : text;
}
