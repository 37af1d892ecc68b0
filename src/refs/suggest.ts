/*
 * "Did you mean": the known name closest to a mistyped one. Names only ever come from the
 * stores' listings (never values). Distance is the optimal string alignment distance
 * (Levenshtein plus swapping two neighbours, the commonest typo: `gihtub`), as commander uses
 * for mistyped commands; a candidate is offered only when it is close relative to its length.
 */

function getEditDistance(a: string, b: string): number {
  const d: number[][] = Array.from({ length: a.length + 1 }, (_, i) => [i, ...new Array<number>(b.length).fill(0)]);
  for (let j = 1; j <= b.length; j++) (d[0])[j] = j;
  for (let i = 1; i <= a.length; i++) {
    const row = d[i];
    const above = d[i - 1];
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      row[j] = Math.min(above[j] + 1, row[j - 1] + 1, above[j - 1] + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) {
        row[j] = Math.min(row[j], (d[i - 2])[j - 2] + 1);
      }
    }
  }
  return (d[a.length])[b.length];
}

/** Known names within a small distance of `name`, closest first (at most three). */
export function suggestNames(name: string, known: Iterable<string>): string[] {
  const lower = name.toLowerCase();
  const scored: Array<{ candidate: string; distance: number }> = [];
  for (const candidate of new Set(known)) {
    if (candidate === name) continue;
    const distance = getEditDistance(lower, candidate.toLowerCase());
    // Up to a third of the name may differ (at least one edit, at most four).
    const limit = Math.min(4, Math.max(1, Math.floor(Math.max(name.length, candidate.length) / 3)));
    if (distance <= limit) scored.push({ candidate, distance });
  }
  return scored.sort((x, y) => x.distance - y.distance || x.candidate.localeCompare(y.candidate)).slice(0, 3).map((s) => s.candidate);
}
