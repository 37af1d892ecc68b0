import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { createDefaultToolRegistry } from '../../src/tools/defaults';
import { SaveSessionContextTool } from '../../src/tools/session-context';
import { makeTempDir } from '../helpers/tmp';

let tmp: ReturnType<typeof makeTempDir>;
beforeEach(() => { tmp = makeTempDir('execgate-session-'); });
afterEach(() => tmp.cleanup());

describe('save_session_context', () => {
  test('writes the reason and the provided context to <stateDir>/sessions/, 0600 in a 0700 directory', async () => {
    const state = join(tmp.dir, 'state');
    const registry = createDefaultToolRegistry({ workdir: tmp.dir, stateDir: state, contextProvider: () => ({ messages: [{ role: 'user', content: 'hi' }] }) });
    const result = await registry.execute('save_session_context', { reason: 'end of day' });
    const files = readdirSync(join(state, 'sessions'));
    expect(files).toHaveLength(1);
    expect(files[0]).toMatch(/^\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d-\d{3}Z-[0-9a-f]{8}\.json$/);
    const file = join(state, 'sessions', files[0]!);
    expect(result).toBe(`Session context saved to ${file}`);
    expect(JSON.parse(readFileSync(file, 'utf8'))).toMatchObject({ reason: 'end of day', context: { messages: [{ role: 'user', content: 'hi' }] } });
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(statSync(join(state, 'sessions')).mode & 0o777).toBe(0o700);
  });

  test('without a provider the context is null; two saves make two files', async () => {
    const tool = new SaveSessionContextTool({ stateDir: tmp.dir });
    await tool.execute({ reason: 'one' });
    await tool.execute({ reason: 'two' });
    const files = readdirSync(join(tmp.dir, 'sessions')).map((f) => JSON.parse(readFileSync(join(tmp.dir, 'sessions', f), 'utf8')));
    expect(files.map((f) => f.reason).sort()).toEqual(['one', 'two']);
    expect(files.every((f) => f.context === null)).toBe(true);
  });

  test('the state directory defaults to the gateway home, and the reason is required', async () => {
    const registry = createDefaultToolRegistry({ workdir: tmp.dir, gatewayOptions: { home: join(tmp.dir, 'gw-home'), env: { EXECGATE_KEYRING: 'off' } } });
    await expect(registry.execute('save_session_context', {})).resolves.toMatch(/`reason` is required/);
    await registry.execute('save_session_context', { reason: 'r' });
    expect(existsSync(join(tmp.dir, 'gw-home', 'sessions'))).toBe(true);
  });
});
