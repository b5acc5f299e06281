import type { Command } from 'commander';
import type { Config } from '../config.js';
import type { Logger } from '../log.js';
import type { Service } from '../service.js';
import { cliConfig } from './config.js';
import { usageError } from './exit.js';

/** `vulndb serve [all|api|worker] [--demo]`: runs the service (imported here, not when the CLI starts). */

/**
 * Installed before the service starts: a signal during start-up (the worker may already hold
 * jobs) lets the start finish and then stops gracefully, instead of ending the process at once.
 * Whatever Redis and the store do, the process ends within SHUTDOWN_TIMEOUT_MS (SPEC §3.7): the
 * service bounds each step of its stop, and a timer ends the process should that not suffice.
 */
function onSignals(starting: Promise<Service>, timeoutMs: number, log: Logger) {
  let started: Service | undefined;
  starting.then(
    (service) => {
      started = service;
    },
    () => undefined,
  );
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) {
      log.warn('second signal: exiting without waiting', { signal });
      process.exit(1);
    }
    stopping = true;
    log.info('signal received, stopping gracefully', { signal, timeoutMs });
    // In this same turn: close() stops taking jobs and requests as it is called.
    const closed = started ? started.close() : starting.then((service) => service.close());
    setTimeout(() => {
      log.error('the stop took longer than SHUTDOWN_TIMEOUT_MS: exiting without waiting', { timeoutMs });
      process.exit(1);
    }, timeoutMs).unref();
    closed.then(
      () => process.exit(0),
      (err) => {
        log.error('shutdown failed', { err });
        process.exit(1);
      },
    );
  };
  process.on('SIGINT', () => stop('SIGINT'));
  process.on('SIGTERM', () => stop('SIGTERM'));
}

/** Starts the service with the given roles, stopping it gracefully on SIGINT or SIGTERM. */
export async function runService(cfg: Config, roles: { api: boolean; worker: boolean }): Promise<{ service: Service; log: Logger }> {
  const [{ createLogger }, { startService }] = await Promise.all([import('../log.js'), import('../service.js')]);
  const log = createLogger(cfg.logLevel);
  const starting = startService(cfg, { ...roles, log });
  onSignals(starting, cfg.shutdownTimeoutMs, log);
  return { service: await starting, log };
}

export async function serve(role: string | undefined, opts: { demo?: boolean }, command: Command): Promise<void> {
  const r = role ?? 'all';
  if (!['all', 'api', 'worker'].includes(r)) usageError(command, `unknown role "${r}": use all, api or worker`);
  const config = await cliConfig();
  const { service, log } = await runService(config, { api: r !== 'worker', worker: r !== 'api' });
  if (opts.demo) {
    const [{ seedDemo }, { checksQueue }, { defaultRedisNames }] = await Promise.all([
      import('../demo/seed.js'),
      import('../queue/producer.js'),
      import('../queue/redis.js'),
    ]);
    const queue = service.queue ?? checksQueue(service.redis, defaultRedisNames);
    if (service.metricsApiUrl)
      log.info('triage page', { page: `${service.metricsApiUrl}/ui/`, signIn: await demoSignIn(config, service.metricsApiUrl) });
    await seedDemo({ store: service.store, locks: service.locks, queue, log });
    if (service.dbApiUrl) {
      log.info('demo ready: try these', {
        findings: `${service.dbApiUrl}/findings?status=OPEN`,
        size: `${service.dbApiUrl}/stats/size`,
        open: `${service.dbApiUrl}/stats/open`,
        mttr: `${service.dbApiUrl}/stats/mttr`,
      });
    }
  }
}

/** A sign-in address for the demo: an admin token for 8 hours in the fragment (never sent to a server). */
async function demoSignIn(config: Config, metricsApiUrl: string): Promise<string> {
  const { mintToken } = await import('./token-mint.js');
  try {
    return `${metricsApiUrl}/ui/signin#token=${mintToken(config, { sub: 'demo-admin', teams: [], admin: true, ttl: 8 * 3600 })}`;
  } catch {
    return `${metricsApiUrl}/ui/signin (mint a token with \`vulndb token\`)`;
  }
}
