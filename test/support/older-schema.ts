import type { Store } from '../../src/storage/gateway.js';

/**
 * A migrated store taken back to schema version 15, as the previous release left it: the view of
 * 0018, the columns of 0017 and the tables of 0016 gone, and their ledger rows. Later migrations
 * that change only settings or views still apply on top of it.
 */
export async function backToSchema15(store: Store): Promise<void> {
  await store.command('DROP VIEW decision_revocations');
  for (const t of ['findings', 'team_findings']) {
    await store.command(`ALTER TABLE ${t} DROP COLUMN fix_seconds`);
    await store.command(`ALTER TABLE ${t} DROP COLUMN latest_at`);
  }
  await store.command('DROP TABLE finding_decisions');
  await store.command('DROP TABLE finding_decision_revocations');
  await store.command('DELETE FROM schema_migrations WHERE version >= 16');
}
