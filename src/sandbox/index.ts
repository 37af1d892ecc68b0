/*
 * The OS sandbox of every run (Linux: bubblewrap). See plan.ts for how it joins the one path.
 */
export { checkSandboxCwd, planSandbox, type SandboxContext, type SandboxedCommand, type SandboxReport } from './plan';
export { checkPlatform, type PlatformCheck } from './detect';
export { SharedNetwork } from '../process/bwrap/network';
