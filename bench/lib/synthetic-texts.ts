import { startThread } from './thread.js';
import type { SyntheticOptions } from './synthetic.js';

/**
 * A synthetic history as JSON lines, generated in a thread of its own: what a replay reads from
 * a JSON lines file, without the generator's work landing on the main thread that ingests it.
 */
export async function* syntheticTexts(opts: SyntheticOptions): AsyncGenerator<string> {
  const worker = startThread(new URL('./synthetic-thread.ts', import.meta.url), opts);
  const waiting: { resolve: (t: string[]) => void; reject: (e: unknown) => void }[] = [];
  worker.on('message', (texts: string[]) => waiting.shift()!.resolve(texts));
  worker.on('error', (err) => {
    for (const w of waiting.splice(0)) w.reject(err);
  });
  const next = () =>
    new Promise<string[]>((resolve, reject) => {
      waiting.push({ resolve, reject });
      worker.postMessage('more');
    });
  try {
    // One chunk generated ahead while the current one is consumed.
    let pending = next();
    for (;;) {
      const texts = await pending;
      if (texts.length === 0) return;
      pending = next();
      yield* texts;
    }
  } finally {
    await worker.terminate();
  }
}
