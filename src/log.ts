import { pino, stdSerializers, stdTimeFunctions, type Logger as Pino } from 'pino';

/**
 * Structured logs through pino: one JSON object per line on stderr (`time`, `level` as a word,
 * `msg`, then the fields), levels from LOG_LEVEL. Components log through child loggers with their
 * own fields (`component`, `api`, `requestId`). The interface keeps the message first, so call
 * sites read as sentences; an `err` field is serialised with its name, message and stack.
 */

export type LogLevel = 'debug' | 'info' | 'warn' | 'error' | 'silent';
export type LogFields = Record<string, unknown>;

export interface Logger {
  debug(msg: string, fields?: LogFields): void;
  info(msg: string, fields?: LogFields): void;
  warn(msg: string, fields?: LogFields): void;
  error(msg: string, fields?: LogFields): void;
  child(fields: LogFields): Logger;
}

function adapt(p: Pino): Logger {
  return {
    debug: (msg, fields) => p.debug(fields ?? {}, msg),
    info: (msg, fields) => p.info(fields ?? {}, msg),
    warn: (msg, fields) => p.warn(fields ?? {}, msg),
    error: (msg, fields) => p.error(fields ?? {}, msg),
    child: (fields) => adapt(p.child(fields)),
  };
}

/** `write` receives each line without its newline (tests); by default lines go to stderr, synchronously. */
export function createLogger(level: LogLevel = 'info', base: LogFields = {}, write?: (line: string) => void): Logger {
  const destination = write ? { write: (line: string) => write(line.replace(/\n$/, '')) } : pino.destination({ fd: 2, sync: true });
  const root = pino(
    {
      level,
      base: undefined,
      messageKey: 'msg',
      timestamp: stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
      serializers: { err: stdSerializers.err },
    },
    destination,
  );
  return adapt(Object.keys(base).length > 0 ? root.child(base) : root);
}

export const silentLogger: Logger = createLogger('silent');
