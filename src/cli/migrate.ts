import { cliConfig } from './config.js';

/** `vulndb migrate`: applies the SQL migrations of sql/ (also done at every start). */
export async function migrateCommand(): Promise<void> {
  const cfg = await cliConfig();
  const [{ createLogger }, { openStore }, { migrate }] = await Promise.all([
    import('../log.js'),
    import('../storage/gateway.js'),
    import('../storage/migrate.js'),
  ]);
  const store = await openStore(cfg.store);
  try {
    const applied = await migrate(store, createLogger(cfg.logLevel));
    process.stdout.write(applied.length ? `applied migrations ${applied.join(', ')}\n` : 'schema up to date\n');
  } finally {
    await store.close();
  }
}
