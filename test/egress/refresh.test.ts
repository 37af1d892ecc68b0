/*
 * A value the proxy holds for a run, kept current while the run lives: a credential-process
 * source (`secrets.sources`) answers `secret:gh` with a token that expires in two seconds; a
 * background run in the real sandbox sends requests through the proxy with the sentinel, before
 * and after that expiry. The server sees the first token, then the second one the source gave
 * when it was asked again, with no new run; the run never holds either (its sentinel stays), and
 * the echoes of both are cleaned from what it reads.
 */
import { chmodSync, existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { createGateway, type Gateway } from '../../src/gateway';
import { checkPlatform } from '../../src/sandbox/detect';
import { expectNoLeak } from '../helpers/leak';
import { baseEnv, makeTempDir } from '../helpers/tmp';
import { makeNames, publicCa, startService, type TestService } from './helpers';

const FIRST = 'ghp_F1rstT0kenValue9xYzQ8wVu7tSr6qPo5nM4';
const SECOND = 'ghp_S2condT0kenValue1aBcD2eFgH3iJkL4mNo5';
const maybe = checkPlatform(undefined).ok ? describe : describe.skip;

let tmp: ReturnType<typeof makeTempDir>;
let service: TestService;
let gateway: Gateway;
let work: string;
let home: string;

beforeAll(async () => {
  tmp = makeTempDir('execgate-egress-refresh-');
  service = await startService('allowed');
  work = join(tmp.dir, 'work');
  home = join(tmp.dir, 'home');
  mkdirSync(work);
  mkdirSync(join(tmp.dir, 'bin'));
  // The source: the first call gives FIRST for two seconds, every later one SECOND for an hour.
  const program = join(tmp.dir, 'bin', 'vault');
  writeFileSync(program, `#!/bin/bash
echo x >> "$0.calls"
if [ "$(wc -l < "$0.calls")" -eq 1 ]; then printf '{"value":"${FIRST}","expiresIn":2}'; else printf '{"value":"${SECOND}","expiresIn":3600}'; fi
`);
  chmodSync(program, 0o755);
  const policy = join(tmp.dir, 'policy.yaml');
  writeFileSync(policy, [
    'version: 1',
    'sandbox: { mode: required, network: { mode: allowlist, allow: [allowed.test] } }',
    'secrets:',
    '  bind:',
    '    - { ref: "secret:gh", hosts: [allowed.test], delivery: inject }',
    '  sources:',
    `    - { name: vault-kv, command: ["${program}", "{name}"], refs: ["secret:gh"], format: json }`,
  ].join('\n'));
  gateway = createGateway({ home, env: baseEnv(), cwd: work, policyFile: policy, egress: { ...makeNames({ 'allowed.test': service }), upstreamCa: [publicCa.certPem], runtimeDir: tmp.dir } });
});

afterAll(async () => {
  await gateway?.close();
  await service.close();
  tmp.cleanup();
});

async function waitForLines(path: string, lines: number): Promise<void> {
  const count = (): number => (existsSync(path) && statSync(path).size > 0 ? readFileSync(path, 'utf8').split('\n').filter(Boolean).length : 0);
  for (let i = 0; i < 400 && count() < lines; i++) await delay(50);
  expect(count()).toBeGreaterThanOrEqual(lines);
}

maybe('an injected value from a credential-process source, refreshed while the run lives', () => {
  test('a background run\'s requests carry the new token once the first has expired; the run holds the sentinel throughout', async () => {
    const script = [
      'request() { curl -sS --max-time 20 -H "Authorization: Bearer <<secret:gh>>" "https://allowed.test/$1" >> seen.txt; echo >> seen.txt; echo "$1" >> done.txt; }',
      'request before',
      // Past the first token's two seconds: the plan's check asks the source again meanwhile.
      'while [ ! -e go ]; do sleep 0.1; done',
      'request after',
      'printf %s "<<secret:gh>>" > sentinel.txt',
    ].join('\n');
    const background = await gateway.exec({ command: script, mode: 'background', cwd: work });
    await waitForLines(join(work, 'done.txt'), 1);
    await delay(2_500);
    writeFileSync(join(work, 'go'), '');
    await waitForLines(join(work, 'done.txt'), 2);
    await gateway.background.wait(background.id, 20_000);
    expect(service.seen.map((seen) => [seen.url, seen.headers.authorization])).toEqual([
      ['/before', `Bearer ${FIRST}`],
      ['/after', `Bearer ${SECOND}`],
    ]);
    const sentinel = readFileSync(join(work, 'sentinel.txt'), 'utf8');
    expect(sentinel).toHaveLength(FIRST.length);
    expect([FIRST, SECOND]).not.toContain(sentinel);
    // The service echoes the header: both tokens were cleaned from what the run read.
    const seen = readFileSync(join(work, 'seen.txt'), 'utf8');
    expect(seen).toContain('"service":"allowed"');
    expectNoLeak(seen, [FIRST, SECOND]);
    expectNoLeak(readFileSync(background.outputPath, 'utf8'), [FIRST, SECOND]);
  });
});
