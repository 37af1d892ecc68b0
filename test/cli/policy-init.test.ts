/*
 * Ops set-up: `execgate policy init` writes a policy whose schema line points at a schema that
 * exists; a gateway or MCP server whose working directory is outside the policy's roots does
 * not start.
 */
import { existsSync, mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { createGateway } from '../../src/gateway';
import { baseEnv, makeTempDir } from '../helpers/tmp';
import { execgateSync } from './helpers';

let tmp: ReturnType<typeof makeTempDir>;
beforeEach(() => { tmp = makeTempDir('execgate-cli-init-'); });
afterEach(() => tmp.cleanup());

const POLICIES = join(__dirname, '..', '..', 'policies');
const cli = (args: string[], input?: string) => execgateSync(args, { cwd: tmp.dir }, input);

/** The file the `# yaml-language-server: $schema=...` line of a policy points at. */
function getSchemaTarget(file: string): string {
  const match = /^# yaml-language-server: \$schema=(\S+)$/m.exec(readFileSync(file, 'utf8'));
  if (!match) throw new Error(`${file} has no schema line`);
  return resolve(dirname(file), match[1] as string);
}

describe('execgate policy init', () => {
  test.each(['default', 'strict', 'ci'])('--from %s writes a valid policy whose schema exists and is the schema', (from) => {
    const file = join(tmp.dir, 'ops', 'team.yaml');
    mkdirSync(dirname(file));
    const result = cli(['policy', 'init', '--from', from, 'ops/team.yaml']);
    expect(result.stderr).toBe('');
    expect(result.status).toBe(0);
    expect(result.stdout).toContain(`${file}: written`);
    expect(readFileSync(getSchemaTarget(file), 'utf8')).toBe(cli(['policy', 'schema']).stdout);
    expect(cli(['policy', 'check', file]).status).toBe(0);
    // The same settings as the shipped file it started from.
    expect(cli(['policy', 'show', '--json', '--policy', file]).stdout.replace(/"source": "[^"]*"/, '')).toBe(
      cli(['policy', 'show', '--json', '--policy', join(POLICIES, `${from}.yaml`)]).stdout.replace(/"source": "[^"]*"/, ''),
    );
  });

  test('default is --from default; --schema copy writes schema.json beside the file', () => {
    const result = cli(['policy', 'init', '--schema', 'copy', 'p.yaml']);
    expect(result.status).toBe(0);
    expect(readFileSync(join(tmp.dir, 'p.yaml'), 'utf8')).toMatch(/^# yaml-language-server: \$schema=\.\/schema\.json\n/);
    expect(getSchemaTarget(join(tmp.dir, 'p.yaml'))).toBe(join(tmp.dir, 'schema.json'));
    expect(readFileSync(join(tmp.dir, 'schema.json'), 'utf8')).toBe(cli(['policy', 'schema']).stdout);
    expect(readFileSync(join(tmp.dir, 'p.yaml'), 'utf8')).toContain("Started from execgate's shipped `default` policy");
    // A second policy beside it reuses the same schema copy.
    expect(cli(['policy', 'init', '--schema', 'copy', '--from', 'strict', 'q.yaml']).status).toBe(0);
  });

  test('never overwrites without --force: coded error, file unchanged', () => {
    writeFileSync(join(tmp.dir, 'mine.yaml'), 'version: 1\n');
    const refused = cli(['policy', 'init', 'mine.yaml']);
    expect(refused.status).toBe(125);
    expect(refused.stderr).toMatch(/^execgate: EXECGATE_ERR_POLICY_INIT_EXISTS: .*mine\.yaml` already exists/);
    expect(readFileSync(join(tmp.dir, 'mine.yaml'), 'utf8')).toBe('version: 1\n');
    writeFileSync(join(tmp.dir, 'schema.json'), '{"not": "ours"}');
    expect(cli(['policy', 'init', '--schema', 'copy', 'other.yaml']).status).toBe(125);
    expect(existsSync(join(tmp.dir, 'other.yaml'))).toBe(false);
    expect(cli(['policy', 'init', '--force', 'mine.yaml']).status).toBe(0);
    expect(readFileSync(join(tmp.dir, 'mine.yaml'), 'utf8')).toContain('exec:');
  });

  test('the shipped policies point at a schema that exists beside them', () => {
    for (const name of readdirSync(POLICIES).filter((file) => file.endsWith('.yaml'))) {
      expect(existsSync(getSchemaTarget(join(POLICIES, name)))).toBe(true);
    }
  });
});

describe('a working directory outside the policy roots', () => {
  function setUp(): { root: string; outside: string; policy: string } {
    const root = join(tmp.dir, 'workspace');
    const outside = join(tmp.dir, 'elsewhere');
    mkdirSync(root);
    mkdirSync(outside);
    const policy = join(tmp.dir, 'roots.yaml');
    writeFileSync(policy, `version: 1\ncwd:\n  roots: ["${root}"]\n`);
    return { root, outside, policy };
  }

  test('createGateway refuses to start with a coded error naming the directory and the roots', () => {
    const { root, outside, policy } = setUp();
    let error: unknown;
    try {
      createGateway({ home: join(tmp.dir, 'home'), env: baseEnv(), cwd: outside, policyFile: policy });
    } catch (caught) {
      error = caught;
    }
    expect(error).toMatchObject({ code: 'EXECGATE_ERR_CWD_OUTSIDE_ROOTS', details: { cwd: outside, roots: [root] } });
    expect((error as Error).message).toContain(outside);
  });

  test('execgate mcp refuses to start (nothing on stdout), and starts inside a root', () => {
    const { root, outside, policy } = setUp();
    const refused = execgateSync(['mcp', '--policy', policy, '--workdir', outside], { cwd: tmp.dir }, '');
    expect(refused.status).toBe(125);
    expect(refused.stdout).toBe('');
    expect(refused.stderr).toMatch(/^execgate: EXECGATE_ERR_CWD_OUTSIDE_ROOTS: The working directory `.*elsewhere` is outside/);
    // Inside a root it serves (stdin at EOF ends the session at once).
    const served = execgateSync(['mcp', '--policy', policy, '--workdir', root], { cwd: tmp.dir }, '');
    expect(served.status).toBe(0);
    expect(served.stderr).toContain('serving on stdio');
  });

  test('execgate run --cwd inside a root works from anywhere; without it, outside is refused', () => {
    const { root, policy } = setUp();
    const inside = execgateSync(['run', '--policy', policy, '--cwd', root, '--', 'pwd'], { cwd: tmp.dir });
    expect(inside.stdout).toBe(`${root}\n`);
    const outside = execgateSync(['run', '--policy', policy, '--', 'pwd'], { cwd: tmp.dir });
    expect(outside.status).toBe(125);
    expect(outside.stderr).toMatch(/EXECGATE_ERR_CWD_OUTSIDE_ROOTS/);
  });
});
