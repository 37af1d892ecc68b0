/*
 * Can this machine start a bubblewrap sandbox? The probe starts the helper with the same
 * namespaces a run gets and a shell that exits 0, so a kernel that refuses user or network
 * namespaces, a seccomp profile that blocks unshare(2), or a helper that is not bubblewrap at all
 * are all found the same way, by failing, before any run depends on it. The answer is cached per
 * helper path and process; a policy may point `sandbox.helper` elsewhere, which is another entry.
 *
 * A probe is a process start on every CLI start (a fifth to a half of `execgate run -- true`,
 * measured), so a success is also remembered on disk, in the state directory, under a key made of
 * everything the answer depends on: the helper file itself (device, inode, size, mode, owner,
 * change and modification times), the kernel release, this process's user namespace, user and
 * group ids, capabilities, no-new-privileges and seccomp state, and the sysctls that limit or
 * forbid namespaces. Any change to one of them is another key, so the next start probes again.
 * Only successes are remembered: a forged or stale entry can only make execgate try bubblewrap,
 * and a bubblewrap that then fails refuses the run (EXECGATE_ERR_SANDBOX_FAILED, nothing run) and
 * drops the entry; it can never make a run go unsandboxed. A failure is probed again every start,
 * so its reason is always the helper's own words of that moment.
 */
import { spawnSync } from 'node:child_process';
import { accessSync, closeSync, constants, fstatSync, openSync, readFileSync, readlinkSync, readSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { release } from 'node:os';
import { join } from 'node:path';
import type { JoinMemory } from '../process/bwrap/network';

/**
 * Whether bubblewrap can sandbox runs on this machine: the helper found, or the reason it cannot.
 */
export type PlatformCheck =
  | { readonly ok: true; readonly helper: string }
  | { readonly ok: false; readonly helper?: string; readonly reason: string };

/** Where `bwrap` is looked for when the policy names no helper: system paths only, never $PATH. */
export const HELPER_CANDIDATES: readonly string[] = Object.freeze(['/usr/bin/bwrap', '/usr/local/bin/bwrap', '/bin/bwrap']);

/** The file in the state directory that remembers the helpers that passed the probe. */
export const PLATFORM_CACHE_FILE = 'sandbox-platform.json';

const PROBE_TIMEOUT_MS = 10_000;
/** At most this many helpers are remembered (a policy may name its own). */
const MAX_REMEMBERED = 8;
/** The file is a few hundred bytes; anything larger is not ours and is ignored. */
const MAX_CACHE_BYTES = 64 * 1024;
const cache = new Map<string, PlatformCheck>();

function isExecutable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

function findHelper(): string | undefined {
  return HELPER_CANDIDATES.find(isExecutable);
}

/** The probe's argv: every namespace a run may get, nothing mounted writable. */
function getProbeArgs(): string[] {
  return [
    '--ro-bind', '/', '/', '--dev', '/dev', '--proc', '/proc', '--tmpfs', '/tmp',
    '--unshare-pid', '--unshare-ipc', '--unshare-uts', '--unshare-net',
    '--die-with-parent', '--new-session', '--cap-drop', 'ALL',
    '--', '/bin/sh', '-c', 'exit 0',
  ];
}

function probe(helper: string): PlatformCheck {
  if (!isExecutable(helper)) return { ok: false, helper, reason: `the sandbox helper ${helper} does not exist or is not executable` };
  const result = spawnSync(helper, getProbeArgs(), { encoding: 'utf8', timeout: PROBE_TIMEOUT_MS, env: { PATH: '/usr/bin:/bin' }, stdio: ['ignore', 'ignore', 'pipe'] });
  if (result.error) return { ok: false, helper, reason: `the sandbox helper ${helper} could not be started (${(result.error as NodeJS.ErrnoException).code ?? result.error.message})` };
  if (result.status === 0) return { ok: true, helper };
  const said = (result.stderr ?? '').trim().split('\n')[0]?.slice(0, 300) || `exit status ${result.status ?? result.signal}`;
  return { ok: false, helper, reason: `the sandbox helper ${helper} cannot create namespaces here: ${said}` };
}

function readOr(path: string, fallback = '-'): string {
  try {
    return readFileSync(path, 'latin1').trim();
  } catch {
    return fallback;
  }
}

/** The sysctls that limit or forbid the namespaces a sandbox makes (Debian, Ubuntu, upstream). */
const NAMESPACE_SYSCTLS: readonly string[] = Object.freeze([
  '/proc/sys/kernel/unprivileged_userns_clone',
  '/proc/sys/kernel/apparmor_restrict_unprivileged_userns',
  '/proc/sys/user/max_user_namespaces',
  '/proc/sys/user/max_mnt_namespaces',
  '/proc/sys/user/max_pid_namespaces',
  '/proc/sys/user/max_net_namespaces',
  '/proc/sys/user/max_ipc_namespaces',
  '/proc/sys/user/max_uts_namespaces',
]);

/** The lines of /proc/self/status that decide what this process may unshare. */
const STATUS_FIELDS = /^(?:Uid|Gid|CapEff|CapPrm|CapBnd|NoNewPrivs|Seccomp|Seccomp_filters):.*$/gm;

/**
 * Everything the probe's answer depends on, as one string; undefined when the helper cannot be
 * identified (then nothing is remembered).
 */
export function getPlatformKey(helper: string): string | undefined {
  let file;
  try {
    file = statSync(helper, { bigint: true });
  } catch {
    return undefined;
  }
  const parts = [
    helper,
    `${file.dev}:${file.ino}:${file.size}:${file.mode}:${file.uid}:${file.gid}:${file.mtimeNs}:${file.ctimeNs}`,
    release(),
    (() => { try { return readlinkSync('/proc/self/ns/user'); } catch { return '-'; } })(),
    readOr('/proc/self/status').match(STATUS_FIELDS)?.join(';') ?? '-',
    ...NAMESPACE_SYSCTLS.map((path) => readOr(path)),
  ];
  return parts.join('\n');
}

type Remembered = Record<string, string>;

/** The remembered successes (helper → key): only a regular file of this user's, never a link. */
function readRemembered(file: string): Remembered {
  let fd: number;
  try {
    fd = openSync(file, constants.O_RDONLY | (constants.O_NOFOLLOW ?? 0));
  } catch {
    return {};
  }
  try {
    const stat = fstatSync(fd);
    if (!stat.isFile() || stat.size > MAX_CACHE_BYTES || (typeof process.getuid === 'function' && stat.uid !== process.getuid())) return {};
    const bytes = Buffer.alloc(stat.size);
    const read = readSync(fd, bytes, 0, bytes.length, 0);
    const parsed = JSON.parse(bytes.subarray(0, read).toString('utf8')) as unknown;
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) return {};
    const entries = Object.entries(parsed as Record<string, unknown>).filter((entry): entry is [string, string] => typeof entry[1] === 'string');
    return Object.fromEntries(entries);
  } catch {
    return {};
  } finally {
    closeSync(fd);
  }
}

/** Rewrites the file (a new file renamed over the old one, 0600); a failure only costs a probe next time. */
function writeRemembered(file: string, remembered: Remembered): void {
  const temp = `${file}.${process.pid}.tmp`;
  try {
    writeFileSync(temp, JSON.stringify(remembered), { mode: 0o600, flag: 'wx' });
    renameSync(temp, file);
  } catch {
    rmSync(temp, { force: true });
  }
}

function remember(stateDir: string, helper: string, key: string): void {
  const file = join(stateDir, PLATFORM_CACHE_FILE);
  const remembered = readRemembered(file);
  if (remembered[helper] === key) return;
  delete remembered[helper];
  const kept = Object.entries(remembered).slice(-(MAX_REMEMBERED - 1));
  writeRemembered(file, Object.fromEntries([...kept, [helper, key]]));
}

/*
 * Whether bubblewrap, entered with nsenter into a network namespace another bubblewrap of this
 * user made, can set a run up there: learned by a probe run the first time a gateway shares a
 * namespace (process/bwrap/network.ts), remembered in the same file under `join:HELPER`, keyed by
 * the helper's platform key and nsenter's file. A remembered success skips that probe (a fork,
 * nsenter, bubblewrap and a shell: a tenth of a CLI start's processes); it is forgotten with the
 * rest when a run's sandbox fails to set up (forgetPlatformCheck), and the gateway's shared
 * namespace taken on its word is then dropped, so the next run probes again.
 */
function getJoinKey(helper: string, nsenter: string): string | undefined {
  const platform = getPlatformKey(helper);
  if (platform === undefined) return undefined;
  let file;
  try {
    file = statSync(nsenter, { bigint: true });
  } catch {
    return undefined;
  }
  return `${platform}\n${nsenter}\n${file.dev}:${file.ino}:${file.size}:${file.mode}:${file.uid}:${file.mtimeNs}:${file.ctimeNs}`;
}

/** Whether entering a shared namespace with `nsenter` and running `helper` there was remembered as working. */
export function recallJoin(stateDir: string, helper: string, nsenter: string): boolean {
  const key = getJoinKey(helper, nsenter);
  return key !== undefined && readRemembered(join(stateDir, PLATFORM_CACHE_FILE))[`join:${helper}`] === key;
}

/** Remember that entering a shared namespace worked (the probe passed). */
export function rememberJoin(stateDir: string, helper: string, nsenter: string): void {
  const key = getJoinKey(helper, nsenter);
  if (key !== undefined) remember(stateDir, `join:${helper}`, key);
}

/** The remembered join of `helper` in `stateDir`, as a shared namespace asks it. */
export function joinMemory(stateDir: string, helper: string): JoinMemory {
  return {
    recall: (nsenter) => recallJoin(stateDir, helper, nsenter),
    remember: (nsenter) => rememberJoin(stateDir, helper, nsenter),
  };
}

/**
 * Forgets what was learned about the sandbox helper, in this process and in `stateDir`: called
 * when bubblewrap failed to set up a run, so that the next check probes again.
 */
export function forgetPlatformCheck(stateDir?: string): void {
  cache.clear();
  if (stateDir === undefined) return;
  const file = join(stateDir, PLATFORM_CACHE_FILE);
  try {
    statSync(file);
  } catch {
    return;
  }
  writeRemembered(file, {});
}

function probeOrRecall(helper: string, stateDir: string | undefined): PlatformCheck {
  if (!isExecutable(helper)) return probe(helper);
  const key = stateDir === undefined ? undefined : getPlatformKey(helper);
  if (stateDir !== undefined && key !== undefined && readRemembered(join(stateDir, PLATFORM_CACHE_FILE))[helper] === key) return { ok: true, helper };
  const answer = probe(helper);
  if (answer.ok && stateDir !== undefined && key !== undefined) remember(stateDir, helper, key);
  return answer;
}

/**
 * Whether runs can be sandboxed, with the helper to use or why not. With `options.stateDir` (the
 * state directory), a success is remembered there, and one remembered under the same platform key
 * is taken without starting the probe.
 */
export function checkPlatform(configuredHelper?: string, options: { readonly stateDir?: string } = {}): PlatformCheck {
  const key = configuredHelper ?? '';
  const cached = cache.get(key);
  if (cached) return cached;
  let answer: PlatformCheck;
  if (process.platform !== 'linux') {
    answer = { ok: false, reason: `no sandbox is implemented for ${process.platform} (Linux with bubblewrap only; SECURITY.md says what would isolate here)` };
  } else {
    const helper = configuredHelper ?? findHelper();
    answer = helper === undefined
      ? { ok: false, reason: `bubblewrap (bwrap) is not installed (looked in ${HELPER_CANDIDATES.join(', ')}); install the \`bubblewrap\` package` }
      : probeOrRecall(helper, options.stateDir);
  }
  cache.set(key, Object.freeze(answer));
  return answer;
}
