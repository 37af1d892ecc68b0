/*
 * A restricted secret's command must run the program the policy names. `git` is looked up through
 * PATH, so a PATH entry that a run can write (the workspace, a writable home directory) or that is
 * relative (`.`, an empty entry, `bin`) lets an earlier run put its own `git` in front of the real
 * one. Every name a restricted text looks up is checked: each PATH entry searched before the
 * program is found (all of them when it is not found) must be absolute and not writable by the run.
 *
 * Writable by the run: for a sandboxed run, inside the writable paths of its plan (the workspace
 * roots, `sandbox.filesystem.writable`) and not under a read-only one; for an
 * unsandboxed run, writable by this user (access(2)), except that a root-owned directory that
 * only root may write counts as the system's when the gateway runs as root: an unsandboxed run as
 * root can replace any program, which no check of PATH can change (SECURITY.md).
 */
import { accessSync, constants, realpathSync, statSync } from 'node:fs';
import { dirname, isAbsolute, join, relative, sep } from 'node:path';

/** What the check needs of a run's sandbox plan (sandbox/plan.ts SandboxReport). */
export type RunView = { readonly sandboxed: true; readonly writable: readonly string[]; readonly readOnly: readonly string[] } | { readonly sandboxed: false };

export interface UnsafeLookup {
  readonly program: string;
  readonly entry: string;
  readonly why: 'relative' | 'writable';
}

// Bash builtins and keywords: never looked up through PATH (`enable -n` is a command of its own).
const BUILTINS = new Set(
  ('. : [ [[ ]] alias bg bind break builtin caller cd command compgen complete compopt continue declare dirs disown echo enable eval exec exit export false fc fg ' +
    'getopts hash help history jobs kill let local logout mapfile popd printf pushd pwd read readarray readonly return set shift shopt source suspend test times trap ' +
    'true type typeset ulimit umask unalias unset wait ! { } case do done elif else esac fi for function if in select then time until while coproc').split(' '),
);

/** The first lookup of `programs` through `path` that could reach a program a run put there. */
export function findUnsafeLookup(programs: Iterable<string>, path: string | undefined, isWritable: (directory: string) => boolean): UnsafeLookup | undefined {
  const entries = (path ?? '').split(':');
  for (const program of new Set(programs)) {
    if (program.includes('/') || BUILTINS.has(program) || program === '') continue;
    for (const entry of entries) {
      if (!isAbsolute(entry)) return { program, entry, why: 'relative' };
      if (isWritable(entry)) return { program, entry, why: 'writable' };
      if (isExecutableFile(join(entry, program))) break;
    }
  }
  return undefined;
}

function isExecutableFile(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return statSync(path).isFile();
  } catch {
    return false;
  }
}

/** Whether a run planned as `sandbox` can create or replace files in `directory` (see the header). */
export function getRunWritable(sandbox: RunView): (directory: string) => boolean {
  if (sandbox.sandboxed) {
    // The private /tmp starts empty for every run: nothing an earlier run wrote is there.
    const writable = sandbox.writable.filter((entry) => entry !== '/tmp (private)');
    const { readOnly } = sandbox;
    return (directory) => {
      // A symlinked entry is where it points; one not created yet, where it would be.
      const real = getRealPath(directory);
      return [directory, real].some((path) => writable.some((root) => isInside(path, root)) && !readOnly.some((root) => isInside(path, root)));
    };
  }
  const root = process.getuid?.() === 0;
  return (directory) => {
    const existing = nearestExisting(directory);
    try {
      accessSync(existing, constants.W_OK);
    } catch {
      return false;
    }
    if (!root) return true;
    const stat = statSync(existing);
    return stat.uid !== 0 || (stat.mode & 0o022) !== 0;
  };
}

function isInside(path: string, root: string): boolean {
  const rel = relative(root, path);
  return rel === '' || (!rel.startsWith(`..${sep}`) && rel !== '..' && !isAbsolute(rel));
}

function getRealPath(path: string): string {
  const existing = nearestExisting(path);
  try {
    return join(realpathSync(existing), relative(existing, path));
  } catch {
    return path;
  }
}

/** A directory that does not exist yet is as writable as the one it would be created in. */
function nearestExisting(path: string): string {
  let current = path;
  for (;;) {
    try {
      statSync(current);
      return current;
    } catch {
      const parent = dirname(current);
      if (parent === current) return current;
      current = parent;
    }
  }
}
