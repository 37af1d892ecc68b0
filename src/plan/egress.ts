/*
 * The egress step's helper: the sandbox's launch with the run's egress proxy files bound in.
 */
import type { SandboxLaunch } from '../process/bwrap/launch';

export /** The launch with the egress proxy's files bound in, and the mount check told where they go. */
function withEgressBinds(launch: SandboxLaunch, bwrapArgs: readonly string[]): SandboxLaunch {
  const binds = [...launch.check.binds];
  for (let i = 0; i < bwrapArgs.length; i++) {
    if (bwrapArgs[i] === '--ro-bind' || bwrapArgs[i] === '--bind') {
      binds.push({ source: bwrapArgs[i + 1], dest: bwrapArgs[i + 2] });
      i += 2;
    }
  }
  return Object.freeze({ ...launch, options: Object.freeze([...launch.options, ...bwrapArgs]), check: Object.freeze({ ...launch.check, binds: Object.freeze(binds) }) });
}
