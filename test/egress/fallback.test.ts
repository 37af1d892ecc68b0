/*
 * A sandboxed run that cannot join the gateway's shared network namespace (no shared network in
 * the sandbox context, as where nsenter is missing) gets a network namespace of its own: the
 * plan then brings a bridge of its own, started inside its sandbox, to the proxy's shared socket,
 * with the run's own credentials. The plan's argv is spawned as every executor spawns it.
 */
import { readFileSync } from 'node:fs';
import { request, type IncomingMessage } from 'node:http';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { EgressProxy } from '../../src/egress/proxy';
import { directSpawner } from '../../src/process/spawner';
import { startGated } from '../../src/process/bwrap/gate';
import { preparePlan } from '../../src/plan/prepare';
import { DEFAULT_POLICY, type EffectivePolicy } from '../../src/policy/effective';
import { RefStore } from '../../src/refs/store';
import { checkPlatform } from '../../src/sandbox/detect';
import { baseEnv, makeTempDir } from '../helpers/tmp';

const maybe = checkPlatform(undefined).ok ? describe : describe.skip;

maybe('a run with a network namespace of its own', () => {
  let tmp: ReturnType<typeof makeTempDir>;
  let service: Server;
  let proxy: EgressProxy;
  const hits: Array<string | undefined> = [];

  beforeAll(async () => {
    tmp = makeTempDir('execgate-egress-fallback-');
    service = createServer((req, res) => { hits.push(req.url); res.end('reached'); });
    await new Promise<void>((resolve) => service.listen(0, '127.0.0.1', resolve));
    const port = (service.address() as AddressInfo).port;
    proxy = new EgressProxy({ runtimeDir: tmp.dir, resolver: async () => ['203.0.113.10'], dial: () => ({ host: '127.0.0.1', port }) });
  });
  afterAll(async () => {
    await proxy.close();
    await new Promise((resolve) => service.close(resolve));
    tmp.cleanup();
  });

  test('reaches the proxy through its own bridge; its credentials are refused once the run is released', async () => {
    const policy: EffectivePolicy = { ...DEFAULT_POLICY, sandbox: { ...DEFAULT_POLICY.sandbox, mode: 'required' } };
    const env = baseEnv();
    const plan = await preparePlan({
      refs: new RefStore(), policy, env, cwd: tmp.dir, shell: '/bin/bash', supportedModes: new Set(['sync']),
      sandbox: { home: join(tmp.dir, 'state') },
      egress: () => proxy,
    }, { command: 'curl -sS --max-time 20 http://service.test/own; echo; echo "$HTTP_PROXY" > proxy-url' });
    expect(plan.sandbox).toMatchObject({ sandboxed: true, network: { mode: 'open', shared: false } });
    expect(plan.network).toMatchObject({ mode: 'open', namespace: 'own', proxy: 'egress' });
    expect(plan.launch!.spec.unshare).toContain('net');
    // Started as every sandboxed run is: behind the gate, its mounts checked first.
    const child = await startGated(directSpawner, { shell: plan.shell, args: plan.args, env: plan.env, cwd: plan.cwd, stdin: 'ignore', sandbox: plan.launch! });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => { output += chunk.toString(); });
    child.stderr.on('data', (chunk: Buffer) => { output += chunk.toString(); });
    await child.exit;
    await new Promise<void>((resolve) => { if (child.stdout.readableEnded) resolve(); else child.stdout.once('end', () => resolve()); });
    expect(output).toBe('reached\n');
    expect(hits).toEqual(['/own']);
    // The run's own proxy URL names its bridge's port, which is gone with it; its credentials,
    // presented on the proxy's socket directly, are refused once the run is released.
    const url = new URL(readFileSync(join(tmp.dir, 'proxy-url'), 'utf8').trim());
    const ask = async (): Promise<number> => {
      const socketPath = await proxy.sharedSocketPath();
      return new Promise((resolve, reject) => {
        const req = request({
          // A new connection each time: the run's connections end with it (a kept-alive one would be gone).
          socketPath, agent: false, path: 'http://service.test/late', headers: { host: 'service.test', 'proxy-authorization': `Basic ${Buffer.from(`${decodeURIComponent(url.username)}:${decodeURIComponent(url.password)}`).toString('base64')}` },
        }, (res: IncomingMessage) => { res.resume(); resolve(res.statusCode ?? 0); });
        req.on('error', reject);
        req.end();
      });
    };
    expect(await ask()).toBe(200);
    await plan.resources.release();
    expect(await ask()).toBe(407);
    expect(hits).toEqual(['/own', '/late']);
  });
});
