/*
 * What `execgate run` tells a person on stderr besides the command's own output: variables
 * given with --env that the command will not see, references no source knows, and the one
 * warning of the gateway worth a line (a keyring that should have answered and did not).
 * Notices name variables and references, never a value.
 */
import { sanitizeEnv } from '../env';
import type { EffectivePolicy } from '../policy/effective';
import { getSanitizerSettings } from '../policy/env-settings';
import type { CliIo } from './io';

/** A logger for the gateway that prints plain `execgate: warning: ...` lines, each once. */
export interface CliLogger {
  warn(obj: unknown, msg?: string): void;
}

/*
 * A server without a D-Bus session has no keyring, and saying so on every run is noise: the
 * line is printed only where a keyring is expected (macOS, Windows, a Linux session with a
 * bus), or when the person asked for --verbose.
 */
export function isKeyringExpected(env: NodeJS.ProcessEnv, platform: NodeJS.Platform = process.platform): boolean {
  if (platform === 'darwin' || platform === 'win32') return true;
  return Boolean(env.DBUS_SESSION_BUS_ADDRESS);
}

export function createCliLogger(io: CliIo, options: { verbose: boolean; prefix?: string }): CliLogger {
  const printed = new Set<string>();
  const prefix = options.prefix ?? 'execgate';
  return {
    warn(obj: unknown, msg?: string): void {
      const text = msg ?? (typeof obj === 'string' ? obj : '');
      const fromKeyring = typeof obj === 'object' && obj !== null && (obj as { source?: unknown }).source === 'keyring';
      if (fromKeyring && !options.verbose && !isKeyringExpected(io.env)) return;
      const line = `${prefix}: warning: ${text.replace(/\s*\n\s*/g, ' ')}`;
      if (printed.has(line)) return;
      printed.add(line);
      io.stderr.write(`${line}\n`);
    },
  };
}

/**
 * One line per --env variable the command will not receive as given: removed (a hazard, an
 * invalid name), withheld (it looks like a secret), or replaced by the policy. The same
 * sanitizer and policy the run uses decide, so the notice is printed before the run starts.
 */
export function getEnvNotices(requested: Readonly<Record<string, string>>, policy: EffectivePolicy, pty: boolean): string[] {
  const names = Object.keys(requested);
  if (names.length === 0) return [];
  const judged = sanitizeEnv({ ...getSanitizerSettings(policy.env), inherited: {}, requested, replace: true, pty });
  const notices: string[] = [];
  for (const name of names) {
    if (judged.removed.includes(name)) {
      notices.push(`--env ${name} was removed: it can change how programs load or behave (a hazard, see policies/README.md), or its name or value is not valid`);
    } else if (judged.withheld.includes(name)) {
      notices.push(
        `--env ${name} was withheld: it looks like a secret. Store the value (\`execgate secret set\`) and write <<secret:NAME>> ` +
          'in the command, or let the name through with `env.allowSecrets` in a policy',
      );
    } else if (name in policy.env.set || (name === 'PATH' && policy.env.path !== undefined)) {
      notices.push(`--env ${name} is replaced by the policy's own value (\`env.${name === 'PATH' ? 'path' : 'set'}\`)`);
    }
  }
  return notices;
}
