/*
 * Writable paths that no sandbox could keep apart from what it hides, refused before anything
 * runs: an audit log whose directory is a writable root or holds one, and a writable root that is
 * a home directory or holds the directory of a credential path. Apart from the view (paths.ts)
 * because the gateway asks when it starts, before any run has a view, and each run asks again.
 */
import { dirname, join, resolve } from 'node:path';
import { ExecgateError } from '../errors';
import { DEFAULT_HIDDEN_PATHS } from '../policy/effective';
import { isInside } from '../fs/paths';
import { getHomes, getUserHome, getWantedWritable, real } from './host-paths';

/**
 * Refuses an audit log that no run could be kept from: its directory is a writable root (the
 * workspace, a `cwd.roots` entry or a `sandbox.filesystem.writable` path), or holds one, so
 * hiding the directory would hide the workspace. Checked when the gateway starts.
 */
export function checkAuditPlacement(input: { auditPath: string; roots: readonly string[]; workspace: string; writable: readonly string[]; env: Readonly<Record<string, string | undefined>>; userHome: string }): void {
  const userHome = getUserHome(input.env, input.userHome);
  const dir = dirname(input.auditPath);
  const where = real(dir) ?? resolve(dir);
  for (const wanted of getWantedWritable(input.roots, input.workspace, input.writable, userHome)) {
    const root = real(wanted) ?? resolve(wanted);
    if (where === root || isInside(root, where)) {
      throw new ExecgateError(
        'EXECGATE_ERR_AUDIT_IN_WORKSPACE',
        `The audit log ${input.auditPath} is in ${dir}, which ${where === root ? 'is' : 'holds'} the writable ${wanted === input.workspace ? 'workspace' : 'path'} ${wanted}: sandboxed runs could read, rewrite or lock the log there, and hiding its directory would hide the workspace. Put the audit log in a directory of its own (\`audit.path\` in the policy, the \`audit.path\` option, or the default in the state directory), inside the workspace if need be (that directory is then hidden from every run). The gateway was not started.`,
        { path: input.auditPath, root: wanted },
      );
    }
  }
}

/**
 * Refuses a writable path that is the home directory or holds it, or that holds the directory of
 * a built-in credential path (`~/.cargo` for `~/.cargo/credentials.toml`, `~/.config` for
 * `~/.config/gh`). A run that may write beside a credential path outlasts what hides it: it can
 * make one that does not exist yet a symlink into the workspace (`~/.ssh -> ~`), so that what the
 * user later writes there (`ssh-keygen`, `cargo login`) lands where every run reads it; it can
 * point one at a system directory (`~/.aws -> /usr`), which every later run would then hide; and
 * a credential file the host replaces by rename while a run lasts (`git credential approve`) is no
 * longer covered in that run, since a directory the run must write in cannot be made a directory
 * of the run's own. Every home counts ($HOME, the account's, os.homedir()). Checked when the
 * gateway starts and for every run (a reloaded policy may name new roots).
 */
export function checkWorkspacePlacement(input: { roots: readonly string[]; workspace: string; writable: readonly string[]; env: Readonly<Record<string, string | undefined>>; userHome: string }): void {
  const homes = getHomes(input.env, input.userHome);
  // The directories that hold a built-in credential path, under every home: a home itself among them.
  const holders = new Map<string, string>();
  for (const home of homes) {
    holders.set(home, home);
    for (const path of DEFAULT_HIDDEN_PATHS) {
      if (!path.startsWith('~/')) continue;
      const credential = join(home, path.slice(2));
      const parent = dirname(credential);
      if (parent !== home && !holders.has(real(parent) ?? parent)) holders.set(real(parent) ?? parent, credential);
    }
  }
  for (const wanted of getWantedWritable(input.roots, input.workspace, input.writable, getUserHome(input.env, input.userHome))) {
    const root = real(wanted) ?? resolve(wanted);
    const held = [...holders.keys()].find((dir) => dir === root || isInside(dir, root));
    if (held === undefined) continue;
    const what = wanted === input.workspace && input.roots.length === 0 ? `The workspace ${wanted} (the gateway's working directory)` : `The writable path ${wanted}`;
    const home = homes.find((h) => h === held);
    const why = home !== undefined
      ? `${home === root ? 'is' : 'holds'} the home directory ${home}, where credential files live (~/.ssh, ~/.aws, ~/.git-credentials, ~/.npmrc, ...)`
      : `${held === root ? 'is' : 'holds'} ${held}, the directory of the credential path ${holders.get(held)}`;
    throw new ExecgateError(
      'EXECGATE_ERR_WORKSPACE_HOLDS_HOME',
      `${what} ${why}: a run allowed to write there could plant a symlink at a credential path, or read a credential file replaced while it runs. Use a project directory as the workspace (\`execgate mcp --workdir ~/project\`, \`cd ~/project\` before \`execgate run\`, the \`cwd\` option) or name one in \`cwd.roots\`, and no directory of the home directory's credential paths in \`sandbox.filesystem.writable\`. Nothing was run.`,
      { path: wanted, home: home ?? homes.find((h) => isInside(held, h)) ?? held, holds: held },
    );
  }
}
