/*
 * A default-policy `execgate run` starts the gateway's shared network namespace (its holder and
 * the egress listener's process) before the gateway's modules load, and the gateway takes those:
 * one holder, entered by the run as any other. Only where the policy is known without reading a
 * file: no --policy, no $EXECGATE_POLICY, not a background run, not help.
 */
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { isDefaultPolicyRun } from '../../src/cli/prestart';
import { checkPlatform } from '../../src/sandbox/detect';
import { baseEnv, makeTempDir } from '../helpers/tmp';
import { CLI } from './helpers';

jest.setTimeout(60_000);

test('which command lines start the namespace ahead', () => {
  const env = {};
  expect(isDefaultPolicyRun(['run', '--', 'true'], env)).toBe(true);
  expect(isDefaultPolicyRun(['run', 'true'], env)).toBe(true);
  expect(isDefaultPolicyRun(['run', '--json', '--cwd', '/tmp', '--env', 'A=--policy', '--mode', 'pty', '--', 'true'], env)).toBe(true);
  expect(isDefaultPolicyRun(['run', '--mode=sync', '--', 'true', '--policy', 'x'], env)).toBe(true);
  expect(isDefaultPolicyRun(['run', '--policy', 'p.yaml', '--', 'true'], env)).toBe(false);
  expect(isDefaultPolicyRun(['run', '--policy=p.yaml', '--', 'true'], env)).toBe(false);
  expect(isDefaultPolicyRun(['run', '--mode', 'background', '--', 'true'], env)).toBe(false);
  expect(isDefaultPolicyRun(['run', '--mode=background', '--', 'true'], env)).toBe(false);
  expect(isDefaultPolicyRun(['run', '--help'], env)).toBe(false);
  expect(isDefaultPolicyRun(['run', '--', 'true'], { EXECGATE_POLICY: 'p.yaml' })).toBe(false);
  expect(isDefaultPolicyRun(['run', '--', 'true'], { EXECGATE_POLICY: '' })).toBe(true);
  expect(isDefaultPolicyRun(['policy', 'show'], env)).toBe(false);
});

(checkPlatform(undefined).ok ? describe : describe.skip)('the CLI process', () => {
  let tmp: ReturnType<typeof makeTempDir>;
  beforeEach(() => { tmp = makeTempDir('execgate-prestart-'); });
  afterEach(() => tmp.cleanup());

  /** Runs the CLI with a hook that records the order of holder spawns and the gateway's loading. */
  function run(args: string[]): { status: number | null; stdout: string; events: string[] } {
    const hook = join(tmp.dir, 'hook.js');
    writeFileSync(hook, [
      "const cp = require('child_process'); const M = require('module'); const events = [];",
      "const spawn = cp.spawn; cp.spawn = function (file, argv) { if (/bwrap$/.test(file) && (argv || []).includes('--unshare-net') && (argv || []).includes('--info-fd')) events.push('holder'); return spawn.apply(this, arguments); };",
      "const load = M._load; M._load = function (request) { const m = load.apply(this, arguments); if (/\\/gateway$/.test(request) && !events.includes('gateway')) events.push('gateway'); return m; };",
      "process.on('exit', () => process.stderr.write('EVENTS:' + events.join(',') + '\\n'));",
    ].join('\n'));
    const result = spawnSync(process.execPath, ['-r', hook, CLI, ...args], {
      cwd: tmp.dir, encoding: 'utf8', timeout: 30_000, env: baseEnv({ EXECGATE_HOME: join(tmp.dir, 'home') }),
    });
    const events = /EVENTS:(.*)/.exec(result.stderr)?.[1].split(',').filter(Boolean) ?? [];
    return { status: result.status, stdout: result.stdout, events };
  }

  test('a default-policy run: the holder starts before the gateway loads, and the run uses it (one holder; the run is proxied)', () => {
    const result = run(['run', '--', 'printf "%s %s" "${HTTP_PROXY:+proxied}" "$(readlink /proc/self/ns/net)"']);
    expect(result.status).toBe(0);
    expect(result.events).toEqual(['holder', 'gateway']);
    expect(result.stdout).toMatch(/^proxied net:\[\d+\]$/);
  });

  test('with a policy file nothing starts ahead: the gateway starts its holder itself', () => {
    writeFileSync(join(tmp.dir, 'policy.yaml'), 'version: 1\n');
    const result = run(['run', '--policy', 'policy.yaml', '--', 'true']);
    expect(result.status).toBe(0);
    expect(result.events).toEqual(['gateway', 'holder']);
  });
});
