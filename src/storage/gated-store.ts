import type { CommitGate } from '../locks/commit-gate.js';
import type { QueryParams, StatementOptions, Store } from './gateway.js';

/**
 * The store whose statements that change data pass the process's commit gate
 * (src/locks/commit-gate.ts): while a snapshot holds it, a decision, a webhook subscription, a
 * team association or a totals rewrite waits instead of landing between two tables of the
 * snapshot. Reads never wait.
 */
export function gatedStore(store: Store, gate: CommitGate): Store {
  return {
    ...store,
    mode: store.mode,
    database: store.database,
    query: <T>(sql: string, params?: QueryParams, opts?: StatementOptions) => store.query<T>(sql, params, opts),
    queryFields: (sql, params) => store.queryFields(sql, params),
    command: (sql, params, opts) => gate.pass(() => store.command(sql, params, opts)),
    insert: (table, rows, opts) => gate.pass(() => store.insert(table, rows, opts)),
    ping: () => store.ping(),
    close: () => store.close(),
    prioritized: () => gatedStore(store.prioritized(), gate),
  };
}
