import type { Config } from '../config.js';
import { CliError, EXIT } from './exit.js';

/**
 * The configuration of a command, loaded when its action runs (src/config.ts pulls in zod, which
 * `vulndb --help` should not pay for). An invalid configuration is a one-line error, exit code 2.
 */
export async function configGetter(): Promise<() => Config> {
  const { ConfigError, loadConfig } = await import('../config.js');
  return () => {
    try {
      return loadConfig();
    } catch (err) {
      if (err instanceof ConfigError) throw new CliError(err.message, EXIT.usage);
      throw err;
    }
  };
}

export const cliConfig = async (): Promise<Config> => (await configGetter())();
