/*
 * Gateway.prepare (and the MCP server, which calls it once a client has listed its tools): the
 * first sandboxed run's set-up made ahead (the shared network namespace, the egress proxy, a warm
 * sandbox), with nothing run and nothing recorded; nothing it started outlives close(), even
 * when close() comes while it is still going.
 */
import { mkdirSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { createGateway, type Gateway } from '../../src/gateway';
import { DEFAULT_POLICY } from '../../src/policy/effective';
import { ExecgateMcpServer } from '../../src/mcp';
import { baseEnv, makeTempDir, waitFor } from '../helpers/tmp';
import { describeSandboxed, sandboxPolicy } from './helpers';

jest.setTimeout(120_000);

let tmp: ReturnType<typeof makeTempDir>;
let work: string;
const open: Gateway[] = [];

beforeEach(() => {
  tmp = makeTempDir('execgate-prepare-');
  work = join(tmp.dir, 'work');
  mkdirSync(work);
  mkdirSync(join(tmp.dir, 'home'));
});
afterEach(async () => {
  await Promise.all(open.splice(0).map((gateway) => gateway.close()));
  tmp.cleanup();
});

function gatewayWith(policy = sandboxPolicy(), state = 'state'): Gateway {
  const gateway = createGateway({ policy, home: join(tmp.dir, state), env: baseEnv({ HOME: join(tmp.dir, 'home') }), cwd: work });
  open.push(gateway);
  return gateway;
}

function events(gateway: Gateway, state = 'state'): string[] {
  void gateway;
  return readFileSync(join(tmp.dir, state, 'audit.log'), 'utf8').trim().split('\n').map((line) => (JSON.parse(line) as { event: string }).event);
}

/** This process's descendants (pids), read from /proc's parent links. */
function descendants(): number[] {
  const parents = new Map<number, number>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'latin1');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (fields[0] !== 'Z' && fields[0] !== 'X') parents.set(Number(entry), Number(fields[1]));
    } catch { /* gone */ }
  }
  return [...parents.keys()].filter((pid) => {
    for (let at = parents.get(pid); at !== undefined && at > 1; at = parents.get(at)) if (at === process.pid) return true;
    return false;
  });
}

describeSandboxed('Gateway.prepare', () => {
  test('sets up a warm sandbox (and the egress proxy of the default network) with nothing run or recorded; the first run starts in it', async () => {
    const gateway = gatewayWith();
    const before = events(gateway);
    await gateway.prepare();
    expect(gateway.warmSandboxes).toMatchObject({ waiting: 1, warm: 0, cold: 0 });
    // No exec record, no other record: nothing was asked for.
    expect(events(gateway)).toEqual(before);
    const result = await gateway.exec({ command: 'echo first; test -n "$HTTPS_PROXY" && echo proxied' });
    expect(result.stdout).toBe('first\nproxied\n');
    expect(gateway.warmSandboxes).toMatchObject({ warm: 1, cold: 0 });
    expect(events(gateway).filter((event) => event.startsWith('exec.'))).toEqual(['exec.request', 'exec.started', 'exec.finished']);
  });

  test('twice, or while a run sets the next sandbox up: one sandbox, no error', async () => {
    const gateway = gatewayWith();
    await Promise.all([gateway.prepare(), gateway.prepare()]);
    expect(gateway.warmSandboxes?.waiting).toBe(1);
    await gateway.exec({ command: 'true' });
    await gateway.prepare();
    expect(await waitFor(() => gateway.warmSandboxes?.waiting === 1, 30_000)).toBe(true);
    expect(gateway.warmSandboxes).toMatchObject({ waiting: 1, warm: 1, cold: 0 });
  });

  test('with the sandbox off, or a policy that refuses the command it plans with, it resolves and sets nothing up', async () => {
    const off = gatewayWith({ ...DEFAULT_POLICY, sandbox: { ...DEFAULT_POLICY.sandbox, mode: 'off' } }, 'off');
    await expect(off.prepare()).resolves.toBeUndefined();
    expect(off.warmSandboxes?.waiting ?? 0).toBe(0);
    const strict = gatewayWith(sandboxPolicy({}, { rules: { default: 'deny', uncertain: 'deny', list: [] } }), 'strict');
    await expect(strict.prepare()).resolves.toBeUndefined();
    expect(strict.warmSandboxes?.waiting ?? 0).toBe(0);
    expect(events(strict, 'strict').filter((event) => event.startsWith('exec.'))).toEqual([]);
    await expect(strict.exec({ command: 'true' })).rejects.toMatchObject({ code: 'EXECGATE_ERR_POLICY_DENIED' });
  });

  test.each([0, 5, 20, 60, 150])('close() %i ms into it (still setting up, or done): it resolves, and nothing it started outlives the gateway', async (delay) => {
    const alive = new Set(descendants());
    const gateway = gatewayWith();
    const prepared = gateway.prepare();
    await new Promise((resolve) => setTimeout(resolve, delay));
    await gateway.close();
    await expect(prepared).resolves.toBeUndefined();
    expect(await waitFor(() => descendants().every((pid) => alive.has(pid)), 20_000)).toBe(true);
    expect(gateway.warmSandboxes?.waiting ?? 0).toBe(0);
  });

  test('the MCP server prepares its gateway once a client has listed the tools: the first call starts warm', async () => {
    const gateway = gatewayWith();
    const mcp = new ExecgateMcpServer({ gateway, workdir: work });
    const { server } = mcp.openSession();
    const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
    await server.connect(serverSide);
    const client = new Client({ name: 'prepare-test', version: '1' });
    await client.connect(clientSide);
    try {
      expect(gateway.warmSandboxes?.waiting).toBe(0);
      await client.listTools();
      expect(await waitFor(() => gateway.warmSandboxes?.waiting === 1, 30_000)).toBe(true);
      expect(events(gateway).filter((event) => event.startsWith('exec.'))).toEqual([]);
      const result = await client.callTool({ name: 'bash', arguments: { command: 'echo from-mcp' } });
      expect(result.isError).toBeFalsy();
      expect(JSON.stringify(result.content)).toContain('from-mcp');
      expect(gateway.warmSandboxes).toMatchObject({ warm: 1, cold: 0 });
    } finally {
      await client.close();
      await mcp.close();
    }
  });
});
