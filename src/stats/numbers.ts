/** Numbers as the APIs render them (SPEC §0.2). */

/** Rounded half away from zero at the second decimal. */
export function round2(x: number): number {
  const r = Math.round(Math.abs(x) * 100 + 1e-9) / 100;
  return x < 0 ? -r : r;
}
