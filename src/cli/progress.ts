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
