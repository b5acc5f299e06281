/**
 * Progress of a long command on stderr: one line rewritten in place on a terminal (at most ten
 * times a second), a line every five seconds otherwise (logs, CI).
 */
export function progressShower() {
  const tty = process.stderr.isTTY;
  let last = 0;
  return {
    show(text: string, force = false) {
      const now = performance.now();
      if (!force && now - last < (tty ? 100 : 5000)) return;
      last = now;
      process.stderr.write(tty ? `\r\x1b[2K${text}` : `${text}\n`);
    },
    end() {
      if (tty) process.stderr.write('\n');
    },
  };
}

/** `42 s`, `3 min 5 s`, `2 h 10 min`; `?` when unknown. */
export function formatDuration(seconds: number): string {
  if (!Number.isFinite(seconds) || seconds < 0) return '?';
  const s = Math.round(seconds);
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min ${s % 60} s`;
  return `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min`;
}

export function formatBytes(bytes: number): string {
  if (bytes >= 1e9) return `${(bytes / 1e9).toFixed(1)} GB`;
  if (bytes >= 1e6) return `${(bytes / 1e6).toFixed(1)} MB`;
  return `${(bytes / 1e3).toFixed(1)} kB`;
}

/**
 * The head of an import's progress line: `37% of 1.2 GB, 12,000 reports/s, ETA 1 min 5 s` when
 * the input size is known (files), `12,000 reports/s` otherwise (stdin). The share is of the
 * input bytes read, so it is right whatever the size of the reports.
 */
export function importRate(p: { read: number; bytesRead: number }, totalBytes: number | undefined, seconds: number): string {
  const rate = `${seconds > 0 ? Math.round(p.read / seconds).toLocaleString('en') : 0} reports/s`;
  if (totalBytes === undefined || totalBytes === 0) return rate;
  const share = Math.min(1, p.bytesRead / totalBytes);
  const bytesPerSecond = seconds > 0 ? p.bytesRead / seconds : 0;
  const eta = share >= 1 ? '' : `, ETA ${bytesPerSecond > 0 ? formatDuration((totalBytes - p.bytesRead) / bytesPerSecond) : '?'}`;
  return `${Math.floor(share * 100)}% of ${formatBytes(totalBytes)}, ${rate}${eta}`;
}
