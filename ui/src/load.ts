import { useEffect, useState } from 'preact/hooks';
import { ApiError } from './api.js';

export type Loaded<T> = { state: 'loading' } | { state: 'error'; error: ApiError | Error } | { state: 'done'; data: T };

/** Runs `load` whenever `key` changes and keeps only the latest answer. */
export function useLoad<T>(load: () => Promise<T>, key: string): [Loaded<T>, () => void] {
  const [loaded, setLoaded] = useState<Loaded<T>>({ state: 'loading' });
  const [round, setRound] = useState(0);
  useEffect(() => {
    let current = true;
    setLoaded({ state: 'loading' });
    load().then(
      (data) => current && setLoaded({ state: 'done', data }),
      (error: Error) => current && setLoaded({ state: 'error', error }),
    );
    return () => {
      current = false;
    };
  }, [key, round]);
  return [loaded, () => setRound((r) => r + 1)];
}

export const isNotFound = (e: Error) => e instanceof ApiError && e.status === 404;
