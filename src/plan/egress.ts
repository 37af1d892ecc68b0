/*
 * The egress step's helper: the sandbox's launch with the run's egress proxy files bound in.
 */
import type { SandboxLaunch } from '../process/bwrap/launch';
import type { BwrapMount } from '../process/bwrap/spec';

/** The launch with the egress proxy's files bound in (after every other mount), and the mount check told where they go. */
export function withEgressBinds(launch: SandboxLaunch, mounts: readonly BwrapMount[]): SandboxLaunch {
  const binds = [...launch.check.binds];
  for (const mount of mounts) if (mount.kind === 'bind') binds.push({ source: mount.source, dest: mount.dest });
  return Object.freeze({
    ...launch,
    spec: Object.freeze({ ...launch.spec, mounts: Object.freeze([...launch.spec.mounts, ...mounts]) }),
    check: Object.freeze({ ...launch.check, binds: Object.freeze(binds) }),
  });
}
