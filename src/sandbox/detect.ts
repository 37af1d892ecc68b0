/*
 * Can this machine start a bubblewrap sandbox? Asked once per helper path and process: the
 * probe starts the helper with the same namespaces a run gets and a shell that exits 0, so a
 * kernel that refuses user or network namespaces, a seccomp profile that blocks unshare(2), or a
 * helper that is not bubblewrap at all are all found the same way, by failing, before any run
 * depends on it. The answer is cached (it does not change while the process lives); a policy
 * may point `sandbox.helper` elsewhere, which is a different cache entry.
 */
import { spawnSync } from 'node:child_process';
import { accessSync, constants } from 'node:fs';

/**
 * Whether bubblewrap can sandbox runs on this machine: the helper found, or the reason it cannot.
 */
export type PlatformCheck =
  | { readonly ok: true; readonly helper: string }
  | { readonly ok: false; readonly helper?: string; readonly reason: string };

/** Where `bwrap` is looked for when the policy names no helper: system paths only, never $PATH. */
export const HELPER_CANDIDATES: readonly string[] = Object.freeze(['/usr/bin/bwrap', '/usr/local/bin/bwrap', '/bin/bwrap']);

const PROBE_TIMEOUT_MS = 10_000;
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

/** Whether runs can be sandboxed, with the helper to use or why not. */
export function checkPlatform(configuredHelper?: string): PlatformCheck {
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
      : probe(helper);
  }
  cache.set(key, Object.freeze(answer));
  return answer;
}

