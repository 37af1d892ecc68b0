/*
 * A run can name a path after a resolved value (`mkdir "d-<<secret:FOO>>"`), and the gateway
 * reports paths: a refusal's message names the directory a session's cwd leads to, the audit
 * records name the run's working directory and the places the sandbox hid. Those must not carry
 * the value: every MCP result and every audit record is masked with the values the gateway knows.
 * Over the real MCP server (stdio, default policy: sandboxed where the platform allows).
 */
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createGateway } from '../../src/gateway';
import { DEFAULT_POLICY } from '../../src/policy/effective';
import { makeTempDir } from '../helpers/tmp';
import { serverEnv, startStdio, type StdioServer } from './helpers';

const SECRET = 'S3cretValue-Zq9XwLmN4pRt';

describe('paths named after a value', () => {
  const { dir, cleanup } = makeTempDir('execgate-pathnames-');
  const work = join(dir, 'work');
  const home = join(dir, 'state');
  let server: StdioServer;

  beforeAll(async () => {
    require('node:fs').mkdirSync(work);
    // A path the policy hides inside the workspace (the home directory's credential paths are
    // never where a run writes): a run can point it at a directory named after the value.
    const policy = join(dir, 'policy.yaml');
    writeFileSync(policy, `version: 1\nsandbox:\n  filesystem:\n    hidden: ['~/.ssh', '${join(work, '.secrets')}']\n`);
    server = await startStdio({ args: ['--workdir', work, '--policy', policy], cwd: work, env: serverEnv(home, { EXECGATE_SECRET_FOO: SECRET }) });
  });
  afterAll(async () => {
    await server?.close();
    cleanup();
  });

  it('reach neither the MCP results nor the audit log', async () => {
    // A directory named after the value, a session cwd through a link into it, then a credential
    // path pointed at it (so the sandbox plan names it among the places it hides or skips).
    await server.bash('mkdir "d-$(printf %s <<secret:FOO>>)" && ln -s "d-$(printf %s <<secret:FOO>>)" link && cd link && pwd');
    await server.bash(`ln -s "${work}/d-$(printf %s <<secret:FOO>>)" "${work}/.secrets"; echo planted`);
    await server.bash('echo hello; pwd');
    await server.bash(`cd "${work}/link" && pwd; ls "${work}"`);
    await server.call('process_list');
    const seen = server.seen.join('\n');
    expect(seen).toContain('d-[REDACTED:');
    expect(seen).not.toContain(SECRET);
    let audit = '';
    for (const name of readdirSync(home)) if (name.startsWith('audit.log') && !name.includes('.lock')) audit += readFileSync(join(home, name), 'utf8');
    expect(audit).toContain('"event":"exec.started"');
    expect(audit).not.toContain(SECRET);
  }, 120_000);

  it('reach neither a library result nor a library error', async () => {
    const libWork = join(dir, 'lib');
    require('node:fs').mkdirSync(libWork);
    const policy = { ...DEFAULT_POLICY, sandbox: { ...DEFAULT_POLICY.sandbox, filesystem: { ...DEFAULT_POLICY.sandbox.filesystem, hidden: [...DEFAULT_POLICY.sandbox.filesystem.hidden, join(libWork, '.secrets')] } } };
    const gateway = createGateway({ policy, cwd: libWork, home: join(dir, 'lib-state'), env: { ...serverEnv(join(dir, 'lib-state'), { EXECGATE_SECRET_FOO: SECRET }) } });
    try {
      await gateway.exec({ command: 'mkdir "d-$(printf %s <<secret:FOO>>)" && ln -s "d-$(printf %s <<secret:FOO>>)" link && ln -s "$PWD/d-$(printf %s <<secret:FOO>>)" .secrets' });
      const result = await gateway.exec({ command: 'ls -A' });
      expect(result.stdout).toContain('.secrets');
      expect(JSON.stringify(result)).not.toContain(SECRET);
      const refused = await gateway.exec({ command: 'pwd', cwd: join(libWork, 'link') }).then((ran) => JSON.stringify(ran), (error: Error) => `${error.message} ${JSON.stringify(error)}`);
      expect(refused).not.toContain(SECRET);
    } finally {
      await gateway.close();
    }
    let audit = '';
    for (const name of readdirSync(join(dir, 'lib-state'))) if (name.startsWith('audit.log') && !name.includes('.lock')) audit += readFileSync(join(dir, 'lib-state', name), 'utf8');
    expect(audit).not.toContain(SECRET);
  }, 120_000);
});
