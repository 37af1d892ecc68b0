/*
 * The small programs execgate starts (src/programs/, copied to dist/programs/ by the build): the
 * gates and the warm stub a sandboxed run starts with, the egress bridges, the watchdog, the
 * spawn helper. Real files that shellcheck and the linter read; the shell and bridge programs are
 * loaded here once as the text a `bash -c` or `node -e` gets (a shell program's full-line
 * comments dropped: they would only lengthen that argv). The seccomp filter is a file too,
 * handed to bubblewrap on a descriptor.
 */
import { existsSync, readFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';

/** src/programs next to src/process, or dist/programs next to dist/process. */
export const PROGRAMS_DIR = join(__dirname, '..', 'programs');

const cache = new Map<string, string>();

function load(name: string): string {
  let text = cache.get(name);
  if (text === undefined) {
    text = readFileSync(join(PROGRAMS_DIR, name), 'utf8');
    if (/\.(sh|bash)$/.test(name)) text = text.split('\n').filter((line) => line.trim() !== '' && !line.trimStart().startsWith('#')).join('\n');
    else text = text.replace(/^\/\*[\s\S]*?\*\/\n/, '');
    cache.set(name, text);
  }
  return text;
}

/*
 * A bash that execs the next program does not pass on the environment it was given: it sets
 * SHLVL, drops an OLDPWD that is not a directory, cannot export names it keeps for itself. A
 * program run through one of these bash scripts must get exactly the run's environment, so the
 * script reads the environment it started with (/proc/self/environ, before anything changes it)
 * and its final `exec "$@"` becomes `env -i` with that list. (CLOSE_FDS, the bash loop that
 * closes inherited descriptors, comes first in each: see process/inherited-fds.ts.)
 */
function asExactBash(script: string, closeFds: string): string {
  const exact = script.replace(/^exec "\$@"$/m, 'exec /usr/bin/env -i -- "${__execgate_env[@]}" "$@"');
  if (exact === script) throw new Error('a program to be run as exact bash must end with exec "$@"');
  return `mapfile -d '' __execgate_env </proc/self/environ\n${closeFds}\n${exact}`;
}

/**
 * A program run as a file (node `require`s what sits beside it in dist/): dist/programs/NAME,
 * also when this module runs from its TypeScript source (tests run the built copy).
 */
export function getProgramFile(name: string): string {
  const here = join(PROGRAMS_DIR, name);
  return basename(dirname(PROGRAMS_DIR)) === 'dist' ? here : join(PROGRAMS_DIR, '..', '..', 'dist', 'programs', name);
}

/** The cold gate for runs on pipes (POSIX sh). */
export function getGateScript(): string {
  return load('gate.sh');
}

/** The same gate as a bash that first closes inherited descriptors (when this process holds any). */
export function getBashGateScript(closeFds: string): string {
  return asExactBash(load('gate.sh'), closeFds);
}

/** The gate for runs on a terminal (bash). */
export function getPtyGateScript(closeFds: string): string {
  return asExactBash(load('pty-gate.bash'), closeFds);
}

/** What starts bubblewrap for a run on a terminal, outside the sandbox (bash). */
export function getPtyLaunchScript(closeFds: string): string {
  return asExactBash(load('pty-launch.bash'), closeFds);
}

/** The waiting bash of a warm sandbox. */
export function getWarmStubScript(): string {
  return load('warm-stub.bash');
}

/** The watchdog that ends a dead gateway's runs (bash). */
export function getWatchdogScript(): string {
  return load('watchdog.bash');
}

/** The egress bridge a run with a network namespace of its own starts its shell through (node). */
export function getRunBridgeSource(): string {
  return load('egress-run-bridge.js');
}

/** What opens the egress listener of a gateway's shared network namespace and hands it to the gateway (node). */
export function getEgressListenerSource(): string {
  return load('egress-listener.js');
}

/** Kernel architecture names (uname -m) to the filter files generated for them. */
const SECCOMP_FILES: Readonly<Record<string, string>> = Object.freeze({ x64: 'x86_64.bpf', arm64: 'aarch64.bpf' });

/**
 * The seccomp filter for this architecture (scripts/generate-seccomp.py), or undefined where
 * none was generated: the sandbox report then says the run has no system call filter.
 */
export function getSeccompFilterPath(): string | undefined {
  const file = SECCOMP_FILES[process.arch];
  if (file === undefined) return undefined;
  const path = join(PROGRAMS_DIR, 'seccomp', file);
  return existsSync(path) ? path : undefined;
}

/** The program that hands a run's connect(2) calls to the gateway, as `python3 -c` text (full-line comments dropped). */
export function getConnectInstallSource(): string {
  let text = cache.get('tcp-install.py');
  if (text === undefined) {
    text = readFileSync(join(PROGRAMS_DIR, 'tcp-install.py'), 'utf8').split('\n').filter((line) => !line.trimStart().startsWith('#')).join('\n');
    cache.set('tcp-install.py', text);
  }
  return text;
}

/** The gateway's connect supervisor (python3, run as a file outside every sandbox). */
export function getConnectSupervisorPath(): string {
  return join(PROGRAMS_DIR, 'tcp-supervisor.py');
}

/**
 * The connect hand-off filter for this architecture (scripts/generate-seccomp.py,
 * connect-notify), as the hex text the hand-off program takes; undefined where none was made.
 */
export function getConnectFilterHex(): string | undefined {
  const file = SECCOMP_FILES[process.arch];
  if (file === undefined) return undefined;
  const path = join(PROGRAMS_DIR, 'seccomp', `connect-notify-${file}`);
  return existsSync(path) ? readFileSync(path).toString('hex') : undefined;
}
