/*
 * Confinement of the file tools to their root directories.
 *
 * A path is resolved lexically first (against the primary root, `..` folded), and never handed
 * to the file system in the form the model wrote it. Then the deepest part of it that exists is
 * resolved with realpath, which follows every symbolic link on the way; the real path plus the
 * part that does not exist yet must lie inside a root's real path. So `../x`, `/etc/passwd`, a
 * link inside the root that points outside, and a link to an outside directory used as a prefix
 * are all refused. A link whose target does not exist is refused as well: writing through it
 * would create its target, which could be anywhere.
 *
 * Operations then use the real path, and open files with O_NOFOLLOW, so a link swapped in for
 * the last component after the check is not followed. Swapping a directory higher up for a link
 * between the check and the call remains a race; only a process already running as the user
 * can try it, and such a process (run_bash included) is not confined by these tools anyway.
 */
import { constants, lstatSync, realpathSync } from 'node:fs';
import { basename, dirname, isAbsolute, join, relative, resolve } from 'node:path';
import { ExecgateError, describeValue } from '../../errors';
import { isInside } from '../../fs/paths';

export const O_NOFOLLOW = constants.O_NOFOLLOW ?? 0;

export interface ResolvedPath {
  /** The real path the operation uses. */
  readonly real: string;
  /** The real path of the root it lies in. */
  readonly root: string;
  /** What messages show: relative to the base when inside it, else absolute. */
  readonly display: string;
  /** Whether the path (its last component, links followed) exists. */
  readonly exists: boolean;
}

export class FileRoots {
  /** Lexical absolute roots. */
  readonly roots: readonly string[];
  /** What relative paths resolve against; default the first root. */
  readonly base: string;

  constructor(roots: readonly string[], base?: string) {
    if (roots.length === 0 || roots.some((root) => typeof root !== 'string' || root === '')) {
      throw new ExecgateError('EXECGATE_ERR_INVALID_OPTION', 'Expected `roots` to be a non-empty list of directory paths for the file tools.', { option: 'roots' });
    }
    this.roots = Object.freeze(roots.map((root) => resolve(root)));
    this.base = resolve(base ?? this.roots[0]);
  }

  /** Real paths of the roots that exist. */
  #realRoots(): string[] {
    const real: string[] = [];
    for (const root of this.roots) {
      try {
        real.push(realpathSync(root));
      } catch {
        // A root that does not exist confines nothing and admits nothing.
      }
    }
    return real;
  }

  display(real: string): string {
    let base: string;
    try {
      base = realpathSync(this.base);
    } catch {
      return real;
    }
    return isInside(real, base) ? relative(base, real) || '.' : real;
  }

  /** Resolves `input`, following links in every component, and checks it stays inside a root. */
  resolve(input: unknown, what = 'path'): ResolvedPath {
    return this.#resolveLexical(this.#lexical(input, what), input as string, what);
  }

  #resolveLexical(lexical: string, input: string, what: string): ResolvedPath {
    const { real, exists } = resolveReal(lexical, input, what);
    const root = this.#realRoots().find((candidate) => isInside(real, candidate));
    if (root === undefined) throw outside(input, what);
    return { real, root, exists, display: this.display(real) };
  }

  /**
   * Resolves `input` without following its last component: the parent is resolved and checked,
   * the last name is kept as is. For operations on a directory entry itself (remove, move), so
   * that removing a link removes the link, not its target. A root itself is refused.
   */
  resolveEntry(input: unknown, what = 'path'): ResolvedPath {
    const lexical = this.#lexical(input, what);
    const isRoot = (): ExecgateError =>
      new ExecgateError('EXECGATE_ERR_PATH_INVALID', `The ${what} \`${input as string}\` is a root directory of the file tools; it cannot be removed or moved.`, { path: input });
    if (this.roots.includes(lexical) || dirname(lexical) === lexical) throw isRoot();
    const parent = this.#resolveLexical(dirname(lexical), input as string, what);
    const real = join(parent.real, basename(lexical));
    if (this.#realRoots().includes(real)) throw isRoot();
    let exists = true;
    try {
      lstatSync(real);
    } catch {
      exists = false;
    }
    return { real, root: parent.root, exists, display: this.display(real) };
  }

  #lexical(input: unknown, what: string): string {
    if (typeof input !== 'string' || input === '') {
      throw new ExecgateError('EXECGATE_ERR_PATH_INVALID', `Expected the ${what} to be a non-empty string, got ${describeValue(input)}.`);
    }
    if (input.includes('\0')) {
      throw new ExecgateError('EXECGATE_ERR_PATH_INVALID', `The ${what} contains a NUL byte.`);
    }
    return isAbsolute(input) ? resolve(input) : resolve(this.base, input);
  }
}

function outside(input: string, what: string): ExecgateError {
  return new ExecgateError(
    'EXECGATE_ERR_PATH_OUTSIDE_ROOT',
    `The ${what} \`${input}\` leads outside the directories the file tools may use.`,
    { path: input },
  );
}

/** The real path of `lexical`: realpath of its deepest existing part, plus the rest. */
function resolveReal(lexical: string, input: string, what: string): { real: string; exists: boolean } {
  const missing: string[] = [];
  let current = lexical;
  for (;;) {
    let present = true;
    try {
      lstatSync(current);
    } catch {
      present = false;
    }
    if (present) break;
    const parent = dirname(current);
    if (parent === current) break;
    missing.unshift(basename(current));
    current = parent;
  }
  let realExisting: string;
  try {
    realExisting = realpathSync(current);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ELOOP') {
      // `current` exists as a directory entry but cannot be followed: a dangling or looping link.
      throw new ExecgateError(
        'EXECGATE_ERR_PATH_OUTSIDE_ROOT',
        `The ${what} \`${input}\` goes through a symbolic link whose target does not exist or loops; it is not followed.`,
        { path: input },
      );
    }
    throw new ExecgateError('EXECGATE_ERR_FILE_OP_FAILED', `Cannot resolve the ${what} \`${input}\` (${code ?? 'error'}).`, { path: input, errno: code });
  }
  return { real: missing.length === 0 ? realExisting : join(realExisting, ...missing), exists: missing.length === 0 };
}
