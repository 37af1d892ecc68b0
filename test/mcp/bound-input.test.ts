/*
 * process_write with a secret the policy binds to hosts (`secrets.bind`), through the official
 * SDK client against the built `execgate mcp`: the run started without it, so writing it would
 * put an injected value inside the sandbox, or an env-delivered one into a run whose connections
 * are not held to its hosts. Refused as a tool error; nothing reaches the process.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { makeTempDir } from '../helpers/tmp';
import { serverEnv, startStdio, structured, textOf, waitFor, type StdioServer } from './helpers';

jest.setTimeout(60_000);

const INJECTED = 'INJECTED-only-value-9911-Mcp';
const NARROWED = 'NARROWED-env-value-7731-Mcp';
const reversed = (value: string): string => [...value].reverse().join('');

describe('execgate mcp: process_write of a bound secret', () => {
  const tmp = makeTempDir('execgate-mcp-bound-');
  const home = join(tmp.dir, 'home');
  const launch = join(tmp.dir, 'launch');
  let server: StdioServer;

  beforeAll(async () => {
    mkdirSync(home);
    mkdirSync(launch);
    const policy = join(tmp.dir, 'policy.yaml');
    writeFileSync(policy, [
      'version: 1',
      'extends: execgate:default',
      'secrets:',
      '  bind:',
      '    - { ref: "secret:api-token", hosts: [registry.npmjs.org], delivery: inject }',
      '    - { ref: "secret:env-token", hosts: [registry.npmjs.org], delivery: env }',
      '',
    ].join('\n'));
    server = await startStdio({
      args: ['--policy', policy],
      cwd: launch,
      env: serverEnv(home, { EXECGATE_SECRET_API_TOKEN: INJECTED, EXECGATE_SECRET_ENV_TOKEN: NARROWED }),
    });
  });

  afterAll(async () => {
    await server.close();
    tmp.cleanup();
  });

  test.each([['api-token', 'inject'], ['env-token', 'env']])('<<secret:%s>> (delivery %s): a tool error naming the reference; the process gets only what follows', async (name, delivery) => {
    // The value reversed would escape masking: it must not reach the process at all.
    const started = structured(await server.bash('read -r t; printf "%s\\n" "$t" | rev', { mode: 'background' }));
    const id = started.process_id as string;
    const wrote = await server.call('process_write', { id, data: `<<secret:${name}>>\n` });
    expect(wrote.isError).toBe(true);
    expect(textOf(wrote)).toMatch(new RegExp(`^EXECGATE_ERR_POLICY_DENIED: <<secret:${name}>> is bound to hosts in \`secrets.bind\` \\(registry.npmjs.org, delivery \`${delivery}\`\\)`));
    expect(textOf(wrote)).toContain('Nothing was written.');
    expect((await server.call('process_write', { id, data: 'plain\n' })).isError).toBeFalsy();
    expect(await waitFor(async () => structured(await server.call('process_status', { id, wait: 5 })).state !== 'running', 30_000)).toBe(true);
    expect(structured(await server.call('process_output', { id })).text).toContain('nialp\n');
    const seen = server.seen.join('\n');
    for (const value of [INJECTED, NARROWED]) {
      expect(seen).not.toContain(value);
      expect(seen).not.toContain(reversed(value));
    }
  });
});
