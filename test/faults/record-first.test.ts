/*
 * Record first, or both or neither: a change to what commands can resolve (`secret set`, `secret
 * rm`, `encrypt`, `vault rotate-key`) or to the policy in force leaves the store and the audit log
 * consistent with what the user was told, whichever of the two fails. The audit log is made
 * read-only by a bind mount over it (EROFS); the vault by one over vault.json (renaming over it
 * fails with EBUSY).
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { AuditLog } from '../../src/audit/log';
import { ExecgateError } from '../../src/errors';
import { createGateway } from '../../src/gateway';
import { baseEnv, makeTempDir } from '../helpers/tmp';
import { execgate, freezePath, readAudit, testWithMounts, verifyAudit } from './helpers';

let work: ReturnType<typeof makeTempDir>;
let home: string;
let thaw: (() => void) | undefined;

beforeEach(() => {
  work = makeTempDir();
  home = join(work.dir, 'home');
});

afterEach(() => {
  thaw?.();
  thaw = undefined;
  work.cleanup();
});

const cli = (args: string[], input?: string) => execgate(args, { home, cwd: work.dir, ...(input !== undefined ? { input } : {}) });

testWithMounts('`secret set` whose audit record cannot be written stores nothing and says so', async () => {
  expect(cli(['secret', 'set', '--store', 'vault', 'kept'], 'kept-value-123').status).toBe(0);
  const before = readFileSync(join(home, 'vault.json'), 'utf8');
  thaw = freezePath(join(home, 'audit.log'));
  const result = cli(['secret', 'set', '--store', 'vault', 'added'], 'added-value-123');
  expect(result.status).toBe(125);
  expect(result.stderr).toMatch(/^execgate: EXECGATE_ERR_AUDIT_IO: .*EROFS.* Nothing was changed: a change is made only once the audit log has recorded it\./m);
  expect(readFileSync(join(home, 'vault.json'), 'utf8')).toBe(before);
  thaw();
  thaw = undefined;
  expect(cli(['secret', 'test', 'added']).stdout).toMatch(/not found/);
  expect(readAudit(home).filter((record) => record.event === 'secret.set').map((record) => record.name)).toEqual(['kept']);
  expect(verifyAudit(home, work.dir).ok).toBe(true);
});

testWithMounts('`secret rm`, `encrypt` and `vault rotate-key` whose record cannot be written change nothing', async () => {
  expect(cli(['secret', 'set', '--store', 'vault', 'kept'], 'kept-value-123').status).toBe(0);
  const before = readFileSync(join(home, 'vault.json'), 'utf8');
  thaw = freezePath(join(home, 'audit.log'));
  for (const [args, input] of [[['secret', 'rm', 'kept']], [['encrypt'], 'blob-value-123'], [['vault', 'rotate-key']]] as Array<[string[], string?]>) {
    const result = cli(args, input);
    expect(result.status).toBe(125);
    expect(result.stderr).toMatch(/EXECGATE_ERR_AUDIT_IO: .* Nothing was changed/);
    expect(readFileSync(join(home, 'vault.json'), 'utf8')).toBe(before);
  }
  thaw();
  thaw = undefined;
  expect(cli(['secret', 'test', 'kept']).stdout).toMatch(/resolves from vault/);
  expect(verifyAudit(home, work.dir).ok).toBe(true);
});

testWithMounts('`secret set` whose store then fails: the record of the attempt is followed by change.failed', async () => {
  expect(cli(['secret', 'set', '--store', 'vault', 'kept'], 'kept-value-123').status).toBe(0);
  thaw = freezePath(join(home, 'vault.json'));
  const result = cli(['secret', 'set', '--store', 'vault', 'added'], 'added-value-123');
  expect(result.status).toBe(125);
  expect(result.stderr).toMatch(/^execgate: EXECGATE_ERR_VAULT_IO: Cannot write the vault .*: EBUSY\. The previous vault is unchanged\./m);
  thaw();
  thaw = undefined;
  expect(cli(['secret', 'test', 'added']).stdout).toMatch(/not found/);
  const changes = readAudit(home).filter((record) => record.event === 'secret.set' || record.event === 'change.failed');
  expect(changes.map((record) => [record.event, record.name])).toEqual([['secret.set', 'kept'], ['secret.set', 'added'], ['change.failed', 'added']]);
  expect(changes[2]).toMatchObject({ failed: 'secret.set', code: 'EXECGATE_ERR_VAULT_IO' });
  expect(verifyAudit(home, work.dir).ok).toBe(true);
});

test('a policy reload the audit log cannot record does not take over, and the host lives', async () => {
  const policy = join(work.dir, 'policy.yaml');
  writeFileSync(policy, 'version: 1\nrules:\n  list:\n    - id: no-curl\n      action: deny\n      command: [curl]\n');
  // The host's own sink over the real log: it fails the way a full disk makes the log fail.
  const log = new AuditLog({ home, env: baseEnv() });
  let broken = false;
  const sink = {
    write(event: string, fields: Record<string, unknown>) {
      if (broken) throw new ExecgateError('EXECGATE_ERR_AUDIT_IO', 'Cannot write the audit log: ENOSPC.');
      log.write(event, fields);
    },
    close: () => log.close(),
  };
  const gateway = createGateway({ home, cwd: work.dir, env: baseEnv(), policyFile: policy, audit: sink });
  try {
    const first = gateway.policy;
    writeFileSync(policy, 'version: 1\n');
    broken = true;
    expect(await gateway.reloadPolicy()).toBe(false);
    expect(gateway.policy).toBe(first);
    broken = false;
    expect(await gateway.reloadPolicy()).toBe(true);
    expect(gateway.policy).not.toBe(first);
  } finally {
    await gateway.close();
  }
  expect(readAudit(home).filter((record) => record.event === 'policy.loaded' && record.reload === true)).toHaveLength(1);
  expect(verifyAudit(home, work.dir).ok).toBe(true);
});
