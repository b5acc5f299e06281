/** A benchmark's `--name value` option, or `fallback` when it is not given. */
export const optionOf =
  (args: readonly string[]) =>
  (name: string, fallback: string): string => {
    const i = args.indexOf(`--${name}`);
    return i >= 0 ? args[i + 1]! : fallback;
  };
