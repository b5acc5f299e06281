/**
 * Settles as `work` does, unless `ms` pass first: then as `onTimeout` does (its value, or what it
 * throws). The timer never outlives the race, and `work` is not cancelled: it runs on unobserved.
 */
export async function within<T, F>(work: Promise<T>, ms: number, onTimeout: () => F): Promise<T | F> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<F>((resolve, reject) => {
    timer = setTimeout(() => {
      try {
        resolve(onTimeout());
      } catch (err) {
        reject(err);
      }
    }, ms);
  });
  try {
    return await Promise.race([work, late]);
  } finally {
    clearTimeout(timer);
  }
}
