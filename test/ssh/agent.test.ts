/*
 * The run's SSH agent against the real OpenSSH client and server, outside any sandbox: ssh signs
 * in with the agent's key for a server whose host key the binding names, and is refused for a
 * second server with another host key; ssh2's own client, which does not send session-bind, gets
 * no signature. Every signature and refusal is recorded.
 */
import { execFile } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from 'ssh2';
import { SshAgent, type SshSignRecord } from '../../src/egress/ssh/agent';
import { parseHostKeyLine, parsePrivateSshKey } from '../../src/egress/ssh/keys';
import { makeTempDir } from '../helpers/tmp';
import { makeKey, startSshd, type Sshd } from './sshd';

let tmp: ReturnType<typeof makeTempDir>;
let bound: Sshd;
let other: Sshd;
let agent: SshAgent;
let clientKey: ReturnType<typeof makeKey>;
let rsaKey: ReturnType<typeof makeKey>;
let ecdsaKey: ReturnType<typeof makeKey>;
const records: SshSignRecord[] = [];

function ssh(port: number, knownHosts: string, extra: string[] = [], socket = agent.socketPath): Promise<{ code: number; stderr: string; stdout: string }> {
  return new Promise((resolve) => {
    execFile('ssh', [
      '-F', 'none', '-o', `IdentityAgent=${socket}`, '-o', 'IdentitiesOnly=no', '-o', `UserKnownHostsFile=${knownHosts}`,
      '-o', 'GlobalKnownHostsFile=/dev/null', '-o', 'StrictHostKeyChecking=yes', '-o', 'BatchMode=yes', '-o', 'PasswordAuthentication=no',
      '-o', 'IdentityFile=/dev/null', '-p', String(port), ...extra, `${bound.user}@127.0.0.1`, 'echo signed-in',
    ], { env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: tmp.dir } }, (error, stdout, stderr) => {
      resolve({ code: error ? (typeof error.code === 'number' ? error.code : 1) : 0, stdout, stderr });
    });
  });
}

beforeAll(async () => {
  tmp = makeTempDir('execgate-ssh-agent-');
  clientKey = makeKey(tmp.dir, 'client');
  const boundDir = join(tmp.dir, 'bound');
  const otherDir = join(tmp.dir, 'other');
  require('node:fs').mkdirSync(boundDir);
  require('node:fs').mkdirSync(otherDir);
  rsaKey = makeKey(tmp.dir, 'client-rsa', 'rsa');
  ecdsaKey = makeKey(tmp.dir, 'client-ecdsa', 'ecdsa');
  bound = await startSshd(boundDir, [clientKey.pub, rsaKey.pub, ecdsaKey.pub]);
  other = await startSshd(otherDir, [clientKey.pub]);
  agent = await SshAgent.listen({
    runId: 'run_test',
    socketPath: join(tmp.dir, 'agent.sock'),
    keys: [{ ref: 'secret:deploy', key: parsePrivateSshKey(clientKey.text, 'test key'), hosts: ['git.example.test:22'], hostKeys: [parseHostKeyLine(bound.hostKey)] }],
    onSign: (record) => records.push(record),
  });
});

afterAll(async () => {
  await agent?.close();
  await bound?.close();
  await other?.close();
  tmp?.cleanup();
});

beforeEach(() => { records.length = 0; });

test('ssh signs in to the server whose host key the binding names, and the signature is recorded', async () => {
  const known = join(tmp.dir, 'known-bound');
  writeFileSync(known, `[127.0.0.1]:${bound.port} ${bound.hostKey}\n`);
  const result = await ssh(bound.port, known);
  expect(result.stderr).not.toMatch(/Permission denied/);
  expect(result.stdout).toBe('signed-in\n');
  expect(result.code).toBe(0);
  const fingerprint = parsePrivateSshKey(clientKey.text, 'k').fingerprint;
  expect(records).toContainEqual(expect.objectContaining({
    runId: 'run_test', key: fingerprint, hostKey: parseHostKeyLine(bound.hostKey).fingerprint, hosts: ['git.example.test:22'], allowed: true,
  }));
  expect(JSON.stringify(records)).not.toContain(clientKey.text.split('\n')[1]);
});

test('a second server with another host key gets no signature (the same client key is authorized there)', async () => {
  const known = join(tmp.dir, 'known-other');
  writeFileSync(known, `[127.0.0.1]:${other.port} ${other.hostKey}\n`);
  const result = await ssh(other.port, known);
  expect(result.code).not.toBe(0);
  expect(result.stderr).toMatch(/Permission denied/);
  expect(records.length).toBeGreaterThan(0);
  expect(records.every((record) => !record.allowed)).toBe(true);
  expect(records).toContainEqual(expect.objectContaining({ hostKey: parseHostKeyLine(other.hostKey).fingerprint, reason: expect.stringMatching(/host key is not one/) }));
});

test('a client that does not bind the session (ssh2) gets no signature, even from the bound server', async () => {
  const outcome = await new Promise<string>((resolve) => {
    const client = new Client();
    client.on('ready', () => { client.end(); resolve('ready'); });
    client.on('error', (error: Error) => resolve(`error: ${error.message}`));
    client.connect({ host: '127.0.0.1', port: bound.port, username: bound.user, agent: agent.socketPath, hostVerifier: () => true, readyTimeout: 60000 });
  });
  expect(outcome).toMatch(/^error: (Agent responded with failure|All configured authentication methods failed)/);
  expect(records).toContainEqual(expect.objectContaining({ allowed: false, reason: expect.stringMatching(/not bound to an SSH session/) }));
  expect(records.some((record) => record.allowed)).toBe(false);
});

test.each([['an RSA key (SHA-2 signatures)', () => rsaKey], ['an ECDSA key (signatures converted to SSH\'s encoding)', () => ecdsaKey]])('%s: the key signs in as well', async (_what, which) => {
  const other = await SshAgent.listen({
    runId: 'run_types',
    socketPath: join(tmp.dir, `agent-${Math.random().toString(36).slice(2)}.sock`),
    keys: [{ ref: 'secret:typed', key: parsePrivateSshKey(which().text, 'test key'), hosts: ['git.example.test:22'], hostKeys: [parseHostKeyLine(bound.hostKey)] }],
    onSign: (record) => records.push(record),
  });
  try {
    const known = join(tmp.dir, 'known-types');
    writeFileSync(known, `[127.0.0.1]:${bound.port} ${bound.hostKey}\n`);
    const result = await ssh(bound.port, known, [], other.socketPath);
    expect(result.stdout).toBe('signed-in\n');
    expect(records).toContainEqual(expect.objectContaining({ runId: 'run_types', allowed: true, key: parsePrivateSshKey(which().text, 'k').fingerprint }));
  } finally {
    await other.close();
  }
});
