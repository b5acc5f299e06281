/**
 * The scope key under which finding_total_values (sql/0014) holds a findings list's totals: 'all',
 * or 'team:<id>' for a team's list. The write side keeps the values (src/ingest/totals.ts).
 */
export const totalScope = (team: string | undefined) => (team !== undefined ? `team:${team}` : 'all');
