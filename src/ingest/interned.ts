import { memoizedIds } from '../domain/ids.js';

/**
 * One instance of equal values among what ingestion holds in memory. Every scan repeats the texts
 * of its issues and most of its detections' texts, a batch's stored findings repeat their targets,
 * issues and families, and batches in flight hold thousands of reports and tens of thousands of
 * findings for seconds. Sharing equal values instead of keeping a copy each makes a report held in
 * memory markedly smaller, and so cuts the main thread's young-generation collections, which copy
 * whatever is still alive. Bounded by the characters remembered: cleared when full, so unique texts (long details, say)
 * cost at most the budget.
 */
class Interner<T> {
  private values = new Map<string, T>();
  private chars = 0;

  constructor(private readonly maxChars: number) {}

  /** The value remembered under `key`, or the one `make` builds from the key's own copy. */
  get(key: string, make: (ownKey: string) => T): T {
    const known = this.values.get(key);
    if (known !== undefined) return known;
    if (this.chars + key.length > this.maxChars) {
      this.values.clear();
      this.chars = 0;
    }
    const kept = own(key);
    const value = make(kept);
    this.values.set(kept, value);
    this.chars += key.length;
    return value;
  }
}

/**
 * A copy of `s` that holds only its own characters: a text cut from a larger one (a field of a
 * row read from the store) would keep all of that text alive while it is remembered here.
 */
const own = (s: string): string => JSON.parse(JSON.stringify(s)) as string;

/**
 * The texts and lists of one ingesting process, shared among the reports it holds and the findings
 * it loads (ReportBatcher owns one), and the ids derived from them. Bounded: 8 M characters of
 * texts, 4 M of lists, 100,000 ids of each kind.
 */
export class Interned {
  private readonly texts = new Interner<string>(8_000_000);
  private readonly lists = new Interner<string[]>(4_000_000);
  /** Issue ids by summary and description, as `issueId` gives them (remembered: scans repeat them). */
  readonly issueId: (summary: string, description: string) => string = memoizedIds('issue');
  /** Finding ids by target, issue and affected resource, as `findingId` gives them. */
  readonly findingId: (targetId: string, issueId: string, affectedResource: string) => string = memoizedIds('finding');

  /** The shared instance of a text equal to `s`. */
  text(s: string): string {
    return s === '' ? s : this.texts.get(s, (kept) => kept);
  }

  /** The shared instance of a list of texts equal to `l` (its users never mutate it). */
  list(l: string[]): string[] {
    return l.length === 0 ? l : this.lists.get(JSON.stringify(l), () => l);
  }
}
