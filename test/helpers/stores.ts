/** Which stores the suites run against: `BELAY_STORES=sqlite,postgres` (default both). */
export function storesUnderTest(): Array<'sqlite' | 'postgres'> {
  const raw = process.env.BELAY_STORES ?? 'sqlite,postgres';
  return raw.split(',').map((s) => s.trim()).filter((s): s is 'sqlite' | 'postgres' => s === 'sqlite' || s === 'postgres');
}
