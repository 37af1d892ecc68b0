/*
 * A credential-process source puts the reference's name into its program's arguments, and a
 * secret manager's client (a file store, `pass`, `vault kv get secret/agents/{name}`) reads that
 * name as a path. The policy's patterns (`refs: ["secret:team/*"]`, `secrets.allow`) match the name
 * as text, and `*` matches `/` and `.`, so `secret:team/../admin/root` matches `secret:team/*`
 * while it names a secret outside `team/`. A name with a `.`, `..` or empty path segment is never
 * handed to a source program: the lookup fails closed, and the program is not run.
 */
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import { createGateway } from '../../src/gateway';
import { createProcessSources } from '../../src/refs/sources/process';
import { baseEnv, makeTempDir } from '../helpers/tmp';

const TEAM = 'team-token-5d1c8e2a9f7b3046';
const ADMIN = 'admin-root-9c4e1a7b2d8f6035';

let tmp: ReturnType<typeof makeTempDir>;
let store: string;
let reader: string;
beforeEach(() => {
  tmp = makeTempDir('execgate-source-paths-');
  store = join(tmp.dir, 'store');
  mkdirSync(join(store, 'team'), { recursive: true });
  mkdirSync(join(store, 'admin'));
  writeFileSync(join(store, 'team', 'token'), `${TEAM}\n`);
  writeFileSync(join(store, 'admin', 'root'), `${ADMIN}\n`);
  mkdirSync(join(tmp.dir, 'bin'));
  // A file-store client: prints the file the name points to, and logs every argv it was given.
  reader = join(tmp.dir, 'bin', 'store-read');
  writeFileSync(reader, `#!/bin/bash\necho "$*" >> "$0.argv"\nexec cat -- "$1"\n`);
  chmodSync(reader, 0o755);
});
afterEach(() => tmp.cleanup());

function argvLog(): string {
  return existsSync(`${reader}.argv`) ? readFileSync(`${reader}.argv`, 'utf8') : '';
}

describe('a source program never gets a name that leaves its patterns by a path segment', () => {
  test.each([
    'team/../admin/root',
    'team/x/../../admin/root',
    'team/./token',
    'team//token',
    'team/token/',
    'team/token/..',
  ])('`%s` fails closed and is not run', async (name) => {
    const source = createProcessSources({
      specs: () => [{ name: 'files', command: [reader, `${store}/{name}`], refs: ['secret:team/*'], format: 'text', timeoutMs: 5_000, maxAgeMs: 0 }],
      env: baseEnv(), cwd: tmp.dir,
    });
    await expect(source.lookup('secret', 'team/token')).resolves.toEqual({ found: true, value: TEAM, source: 'files' });
    const answer = await Promise.resolve(source.lookup('secret', name)).then((value) => value as unknown, (error: { code?: string; message: string }) => error);
    expect(JSON.stringify(answer)).not.toContain(ADMIN);
    expect(answer).toMatchObject({ code: 'EXECGATE_ERR_REF_SOURCE_FAILED', message: expect.stringMatching(/path segment/) });
    expect(argvLog()).toBe(`${store}/team/token\n`);
  });

  test('a sandboxed run allowed `secret:team/*` only cannot read the admin secret through `..`', async () => {
    const policy = join(tmp.dir, 'policy.yaml');
    writeFileSync(policy, [
      'version: 1',
      'secrets:',
      '  allow: ["secret:team/*"]',
      '  sources:',
      `    - { name: files, command: [${reader}, "${store}/{name}"], refs: ["secret:team/*"] }`,
    ].join('\n'));
    const work = join(tmp.dir, 'work');
    mkdirSync(work);
    const gateway = createGateway({ home: join(tmp.dir, 'home'), env: baseEnv(), cwd: work, policyFile: policy });
    try {
      const sha = (text: string): string => createHash('sha256').update(text).digest('hex');
      const allowed = await gateway.exec({ command: "printf %s '<<secret:team/token>>' | sha256sum" });
      expect(allowed.stdout).toContain(sha(TEAM));
      const outcome = await gateway.exec({ command: "printf %s '<<secret:team/../admin/root>>' | sha256sum" })
        .then((result) => ({ stdout: result.stdout, code: undefined }), (error: { code?: string }) => ({ stdout: '', code: error.code }));
      expect(outcome.stdout).not.toContain(sha(ADMIN));
      expect(outcome.code).toBe('EXECGATE_ERR_REF_SOURCE_FAILED');
      expect(argvLog()).toBe(`${store}/team/token\n`);
    } finally {
      await gateway.close();
    }
  });
});
