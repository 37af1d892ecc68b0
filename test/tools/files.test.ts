import { existsSync, lstatSync, mkdirSync, readFileSync, readlinkSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createDefaultToolRegistry } from '../../src/tools/defaults';
import type { ToolRegistry } from '../../src/tools/registry';
import { makeTempDir } from '../helpers/tmp';

let tmp: ReturnType<typeof makeTempDir>;
let root: string;
let outside: string;
let registry: ToolRegistry;

const OUTSIDE = /^Error executing \w+: EXECGATE_ERR_PATH_OUTSIDE_ROOT: /;

beforeEach(() => {
  tmp = makeTempDir('execgate-files-');
  root = join(tmp.dir, 'root');
  outside = join(tmp.dir, 'outside');
  mkdirSync(root);
  mkdirSync(outside);
  writeFileSync(join(outside, 'secret.txt'), 'outside-content\n');
  writeFileSync(join(root, 'hello.txt'), 'hello world\n');
  registry = createDefaultToolRegistry({ workdir: root, stateDir: join(tmp.dir, 'state') });
  registry.enableTool('remove');
});
afterEach(async () => {
  await registry.close();
  tmp.cleanup();
});

const run = (name: string, args: Record<string, unknown>): Promise<string> => registry.execute(name, args);

describe('seed 003: default factory', () => {
  test('Default factory registers all built-in tools', () => {
    const fresh = createDefaultToolRegistry({ workdir: root });
    expect(fresh.getToolNames()).toEqual([
      'read_file', 'write_file', 'save_session_context', 'list_dir', 'mkdir', 'remove', 'move', 'search_text', 'search_files', 'run_bash',
    ]);
  });

  test('Destructive tools are disabled by default', () => {
    const fresh = createDefaultToolRegistry({ workdir: root });
    expect(fresh.isToolEnabled('remove')).toBe(false);
    expect(fresh.isToolEnabled('run_bash')).toBe(false);
    for (const name of fresh.getToolNames().filter((n) => n !== 'remove' && n !== 'run_bash')) {
      expect([name, fresh.isToolEnabled(name)]).toEqual([name, true]);
    }
    expect(fresh.getEnabledSchemas().map((s) => s.function.name)).toEqual([
      'read_file', 'write_file', 'save_session_context', 'list_dir', 'mkdir', 'move', 'search_text', 'search_files',
    ]);
  });

  test('every built-in schema names its tool and is a closed object schema', () => {
    for (const name of registry.getToolNames()) {
      const schema = registry.getTool(name)!.getSchema();
      expect(schema.type).toBe('function');
      expect(schema.function.name).toBe(name);
      expect(schema.function.description.length).toBeGreaterThan(20);
      expect(schema.function.parameters).toMatchObject({ type: 'object', additionalProperties: false });
    }
  });
});

describe('read_file and write_file', () => {
  test('reads a text file; writes and replaces one; creates missing parent directories', async () => {
    await expect(run('read_file', { path: 'hello.txt' })).resolves.toBe('hello world\n');
    await expect(run('write_file', { path: 'a/b/new.txt', content: 'één\n' })).resolves.toBe('Wrote 6 bytes to a/b/new.txt');
    expect(readFileSync(join(root, 'a/b/new.txt'), 'utf8')).toBe('één\n');
    await run('write_file', { path: 'a/b/new.txt', content: 'x' });
    await expect(run('read_file', { path: join(root, 'a/b/new.txt') })).resolves.toBe('x');
  });

  test('a missing file and a directory are coded errors', async () => {
    await expect(run('read_file', { path: 'nope.txt' })).resolves.toBe(
      'Error executing read_file: EXECGATE_ERR_FILE_OP_FAILED: Cannot read `nope.txt`: no such file or directory (ENOENT).',
    );
    mkdirSync(join(root, 'dir'));
    await expect(run('read_file', { path: 'dir' })).resolves.toMatch(/EXECGATE_ERR_FILE_OP_FAILED: Cannot read `dir`: it is a directory/);
    await expect(run('write_file', { path: 'dir', content: 'x' })).resolves.toMatch(/EXECGATE_ERR_FILE_OP_FAILED: Cannot write `dir`: it is a directory/);
  });

  test('a binary file is reported, not dumped', async () => {
    writeFileSync(join(root, 'blob.bin'), Buffer.from([0x7f, 0x45, 0x4c, 0x46, 0, 1, 2, 3, 0xff]));
    await expect(run('read_file', { path: 'blob.bin' })).resolves.toBe('Binary file blob.bin (9 bytes); its content is not shown.');
    writeFileSync(join(root, 'latin1.txt'), Buffer.from([0x63, 0x61, 0x66, 0xe9])); // not UTF-8
    await expect(run('read_file', { path: 'latin1.txt' })).resolves.toMatch(/^Binary file latin1.txt/);
  });

  test('sizes are limited: 1 MiB by default, configurable', async () => {
    writeFileSync(join(root, 'big.txt'), 'x'.repeat(1024 * 1024 + 1));
    await expect(run('read_file', { path: 'big.txt' })).resolves.toBe(
      'Error executing read_file: EXECGATE_ERR_FILE_TOO_LARGE: The file `big.txt` is 1048577 bytes; read_file returns at most 1 MiB.',
    );
    writeFileSync(join(root, 'exact.txt'), 'y'.repeat(1024 * 1024));
    expect((await run('read_file', { path: 'exact.txt' })).length).toBe(1024 * 1024);
    await expect(run('write_file', { path: 'w.txt', content: 'z'.repeat(1024 * 1024 + 1) })).resolves.toMatch(/EXECGATE_ERR_FILE_TOO_LARGE: The content for `w.txt` is 1048577 bytes/);
    expect(existsSync(join(root, 'w.txt'))).toBe(false);

    const small = createDefaultToolRegistry({ workdir: root, limits: { maxReadBytes: 4, maxWriteBytes: 3 } });
    await expect(small.execute('read_file', { path: 'hello.txt' })).resolves.toMatch(/FILE_TOO_LARGE: .* at most 4 bytes/);
    await expect(small.execute('write_file', { path: 'n.txt', content: 'abcd' })).resolves.toMatch(/FILE_TOO_LARGE/);
    expect(() => createDefaultToolRegistry({ limits: { maxReadBytes: -1 } })).toThrow(expect.objectContaining({ code: 'EXECGATE_ERR_INVALID_OPTION' }));
  });
});

describe('confinement to the root', () => {
  test('../ traversal is refused for every file tool', async () => {
    const calls: Array<[string, Record<string, unknown>]> = [
      ['read_file', { path: '../outside/secret.txt' }],
      ['write_file', { path: '../outside/new.txt', content: 'x' }],
      ['list_dir', { path: '..' }],
      ['mkdir', { path: '../outside/made' }],
      ['remove', { path: '../outside/secret.txt' }],
      ['move', { source: '../outside/secret.txt', destination: 'stolen.txt' }],
      ['search_text', { pattern: 'outside', path: '../outside' }],
      ['search_files', { pattern: '*', path: '..' }],
      ['read_file', { path: 'sub/../../outside/secret.txt' }],
    ];
    for (const [name, args] of calls) await expect(run(name, args)).resolves.toMatch(OUTSIDE);
    expect(existsSync(join(outside, 'new.txt'))).toBe(false);
    expect(existsSync(join(outside, 'made'))).toBe(false);
    expect(readFileSync(join(outside, 'secret.txt'), 'utf8')).toBe('outside-content\n');
  });

  test('a `..` that stays inside the root is fine', async () => {
    mkdirSync(join(root, 'sub'));
    await expect(run('read_file', { path: 'sub/../hello.txt' })).resolves.toBe('hello world\n');
  });

  test('absolute paths outside the root are refused; absolute paths inside are accepted', async () => {
    await expect(run('read_file', { path: join(outside, 'secret.txt') })).resolves.toMatch(OUTSIDE);
    await expect(run('read_file', { path: '/etc/passwd' })).resolves.toMatch(OUTSIDE);
    await expect(run('write_file', { path: join(outside, 'x.txt'), content: 'x' })).resolves.toMatch(OUTSIDE);
    await expect(run('list_dir', { path: '/' })).resolves.toMatch(OUTSIDE);
    await expect(run('read_file', { path: join(root, 'hello.txt') })).resolves.toBe('hello world\n');
  });

  test('a symlink inside the root pointing outside: read and write through it are refused', async () => {
    symlinkSync(join(outside, 'secret.txt'), join(root, 'link.txt'));
    await expect(run('read_file', { path: 'link.txt' })).resolves.toMatch(OUTSIDE);
    await expect(run('write_file', { path: 'link.txt', content: 'overwritten' })).resolves.toMatch(OUTSIDE);
    expect(readFileSync(join(outside, 'secret.txt'), 'utf8')).toBe('outside-content\n');
  });

  test('a symlinked directory escape is refused (read, write, list, mkdir, search)', async () => {
    symlinkSync(outside, join(root, 'escape'));
    await expect(run('read_file', { path: 'escape/secret.txt' })).resolves.toMatch(OUTSIDE);
    await expect(run('write_file', { path: 'escape/planted.txt', content: 'x' })).resolves.toMatch(OUTSIDE);
    await expect(run('write_file', { path: 'escape/deep/planted.txt', content: 'x' })).resolves.toMatch(OUTSIDE);
    await expect(run('list_dir', { path: 'escape' })).resolves.toMatch(OUTSIDE);
    await expect(run('mkdir', { path: 'escape/made' })).resolves.toMatch(OUTSIDE);
    await expect(run('search_text', { pattern: 'outside', path: 'escape' })).resolves.toMatch(OUTSIDE);
    await expect(run('move', { source: 'hello.txt', destination: 'escape/hello.txt' })).resolves.toMatch(OUTSIDE);
    expect(existsSync(join(outside, 'planted.txt'))).toBe(false);
    expect(existsSync(join(outside, 'deep'))).toBe(false);
    expect(existsSync(join(outside, 'made'))).toBe(false);
    expect(existsSync(join(outside, 'hello.txt'))).toBe(false);
    // Searching the root does not follow the link either.
    await expect(run('search_text', { pattern: 'outside-content' })).resolves.toMatch(/^No matches/);
    await expect(run('search_files', { pattern: 'secret.txt' })).resolves.toMatch(/^No files match/);
  });

  test('move with a destination outside is refused and the source stays', async () => {
    await expect(run('move', { source: 'hello.txt', destination: '../outside/hello.txt' })).resolves.toMatch(OUTSIDE);
    await expect(run('move', { source: 'hello.txt', destination: join(outside, 'hello.txt') })).resolves.toMatch(OUTSIDE);
    expect(existsSync(join(outside, 'hello.txt'))).toBe(false);
    expect(existsSync(join(root, 'hello.txt'))).toBe(true);
  });

  test('write through a dangling symlink is refused, even when its target would be inside', async () => {
    symlinkSync(join(outside, 'not-yet.txt'), join(root, 'dangling.txt'));
    symlinkSync(join(root, 'later.txt'), join(root, 'dangling-inside.txt'));
    await expect(run('write_file', { path: 'dangling.txt', content: 'x' })).resolves.toMatch(OUTSIDE);
    await expect(run('write_file', { path: 'dangling-inside.txt', content: 'x' })).resolves.toMatch(OUTSIDE);
    await expect(run('mkdir', { path: 'dangling.txt/sub' })).resolves.toMatch(OUTSIDE);
    expect(existsSync(join(outside, 'not-yet.txt'))).toBe(false);
    expect(existsSync(join(root, 'later.txt'))).toBe(false);
  });

  test('a symlink whose target is inside the root is followed', async () => {
    symlinkSync(join(root, 'hello.txt'), join(root, 'alias.txt'));
    await expect(run('read_file', { path: 'alias.txt' })).resolves.toBe('hello world\n');
    await run('write_file', { path: 'alias.txt', content: 'through the alias\n' });
    expect(readFileSync(join(root, 'hello.txt'), 'utf8')).toBe('through the alias\n');
    expect(lstatSync(join(root, 'alias.txt')).isSymbolicLink()).toBe(true);
  });

  test('remove and move act on a link itself, never on its outside target', async () => {
    symlinkSync(join(outside, 'secret.txt'), join(root, 'link.txt'));
    await expect(run('move', { source: 'link.txt', destination: 'renamed-link.txt' })).resolves.toBe('Moved link.txt to renamed-link.txt');
    expect(readlinkSync(join(root, 'renamed-link.txt'))).toBe(join(outside, 'secret.txt'));
    await expect(run('remove', { path: 'renamed-link.txt' })).resolves.toBe('Removed symbolic link renamed-link.txt');
    expect(readFileSync(join(outside, 'secret.txt'), 'utf8')).toBe('outside-content\n');
    symlinkSync(outside, join(root, 'dirlink'));
    await expect(run('remove', { path: 'dirlink' })).resolves.toBe('Removed symbolic link dirlink');
    expect(existsSync(join(outside, 'secret.txt'))).toBe(true);
  });

  test('removing a directory with a link inside removes the link, not its target', async () => {
    mkdirSync(join(root, 'tree'));
    symlinkSync(outside, join(root, 'tree', 'out'));
    await expect(run('remove', { path: 'tree' })).resolves.toBe('Removed directory tree');
    expect(existsSync(join(outside, 'secret.txt'))).toBe(true);
  });

  test('the root itself cannot be removed or moved', async () => {
    await expect(run('remove', { path: '.' })).resolves.toMatch(/EXECGATE_ERR_PATH_INVALID/);
    await expect(run('remove', { path: root })).resolves.toMatch(/EXECGATE_ERR_PATH_INVALID/);
    await expect(run('move', { source: '.', destination: 'x' })).resolves.toMatch(/EXECGATE_ERR_PATH_INVALID/);
    expect(existsSync(root)).toBe(true);
  });

  test('extra roots are allowed; relative paths stay on the workdir', async () => {
    const multi = createDefaultToolRegistry({ workdir: root, roots: [root, outside] });
    await expect(multi.execute('read_file', { path: join(outside, 'secret.txt') })).resolves.toBe('outside-content\n');
    await expect(multi.execute('read_file', { path: 'hello.txt' })).resolves.toBe('hello world\n');
    await expect(multi.execute('read_file', { path: '/etc/hostname' })).resolves.toMatch(OUTSIDE);
  });

  test('paths that are empty or hold NUL are refused', async () => {
    await expect(run('read_file', { path: '' })).resolves.toMatch(/EXECGATE_ERR_PATH_INVALID/);
    await expect(run('read_file', { path: 'a\0b' })).resolves.toMatch(/EXECGATE_ERR_PATH_INVALID: The path contains a NUL byte/);
  });
});

describe('list_dir, mkdir, remove, move', () => {
  test('list_dir shows directories, links and files with sizes, in name order', async () => {
    mkdirSync(join(root, 'src'));
    symlinkSync(outside, join(root, 'zlink'));
    writeFileSync(join(root, '.hidden'), 'abc');
    await expect(run('list_dir', { path: '.' })).resolves.toBe(['.hidden (3 bytes)', 'hello.txt (12 bytes)', 'src/', 'zlink@'].join('\n'));
    await expect(run('list_dir', { path: 'src' })).resolves.toBe('src is empty.');
    await expect(run('list_dir', { path: 'hello.txt' })).resolves.toMatch(/Cannot list `hello.txt`: it is not a directory/);
  });

  test('list_dir is bounded', async () => {
    for (let i = 0; i < 5; i += 1) writeFileSync(join(root, `f${i}`), '');
    const small = createDefaultToolRegistry({ workdir: root, limits: { maxListEntries: 2 } });
    await expect(small.execute('list_dir', { path: '.' })).resolves.toBe('f0 (0 bytes)\nf1 (0 bytes)\n[... 4 more entries not shown; 6 in total ...]');
  });

  test('mkdir creates parents and accepts an existing directory', async () => {
    await expect(run('mkdir', { path: 'x/y/z' })).resolves.toBe('Created directory x/y/z');
    await expect(run('mkdir', { path: 'x/y' })).resolves.toBe('Directory x/y already exists.');
    await expect(run('mkdir', { path: 'hello.txt' })).resolves.toMatch(/a file with that name exists/);
  });

  test('remove deletes files and directory trees; a missing path is an error', async () => {
    mkdirSync(join(root, 'd/e'), { recursive: true });
    writeFileSync(join(root, 'd/e/f.txt'), 'x');
    await expect(run('remove', { path: 'hello.txt' })).resolves.toBe('Removed file hello.txt');
    await expect(run('remove', { path: 'd' })).resolves.toBe('Removed directory d');
    expect(existsSync(join(root, 'd'))).toBe(false);
    await expect(run('remove', { path: 'd' })).resolves.toMatch(/EXECGATE_ERR_FILE_OP_FAILED: Cannot remove `d`: no such file/);
  });

  test('move renames; an existing destination is refused, not overwritten', async () => {
    writeFileSync(join(root, 'other.txt'), 'other');
    await expect(run('move', { source: 'hello.txt', destination: 'other.txt' })).resolves.toMatch(/already exists/);
    expect(readFileSync(join(root, 'other.txt'), 'utf8')).toBe('other');
    mkdirSync(join(root, 'dir'));
    await expect(run('move', { source: 'hello.txt', destination: 'dir/hello.txt' })).resolves.toBe('Moved hello.txt to dir/hello.txt');
    await expect(run('move', { source: 'dir', destination: 'dir/inner' })).resolves.toMatch(/inside the source/);
    await expect(run('move', { source: 'missing', destination: 'x' })).resolves.toMatch(/no such file/);
  });
});

describe('search_text', () => {
  beforeEach(() => {
    mkdirSync(join(root, 'src/deep'), { recursive: true });
    mkdirSync(join(root, 'node_modules/pkg'), { recursive: true });
    mkdirSync(join(root, '.git'));
    writeFileSync(join(root, 'src/a.ts'), 'export function main() {}\nconst x = 1;\nfunction helper() {}\n');
    writeFileSync(join(root, 'src/deep/b.ts'), 'function   deep() {}\n');
    writeFileSync(join(root, 'node_modules/pkg/index.js'), 'function vendored() {}\n');
    writeFileSync(join(root, '.git/config'), 'function git() {}\n');
    writeFileSync(join(root, 'src/bin.dat'), Buffer.from('function binary()\0\n'));
  });

  test('finds matching lines as path:line: text, skipping binaries, .git and node_modules', async () => {
    await expect(run('search_text', { pattern: 'function\\s+\\w+\\(' })).resolves.toBe([
      'src/a.ts:1: export function main() {}',
      'src/a.ts:3: function helper() {}',
      'src/deep/b.ts:1: function   deep() {}',
      '[3 matching lines in 2 files]',
      '[1 binary or larger-than-1048576-byte files skipped]',
    ].join('\n'));
  });

  test('searches one directory or one file; node_modules when asked for explicitly', async () => {
    await expect(run('search_text', { pattern: 'deep', path: 'src/deep' })).resolves.toMatch(/^src\/deep\/b.ts:1: /);
    await expect(run('search_text', { pattern: 'helper', path: 'src/a.ts' })).resolves.toMatch(/^src\/a.ts:3: function helper/);
    await expect(run('search_text', { pattern: 'vendored', path: 'node_modules' })).resolves.toMatch(/^node_modules\/pkg\/index.js:1:/);
  });

  test('no match, and an invalid pattern', async () => {
    await expect(run('search_text', { pattern: 'nothing-like-this' })).resolves.toMatch(/^No matches for nothing-like-this in \d+ files under \./);
    await expect(run('search_text', { pattern: '(unclosed' })).resolves.toMatch(/^Error executing search_text: EXECGATE_ERR_SEARCH_PATTERN_INVALID: The pattern is not a valid regular expression/);
  });

  test('matches are bounded', async () => {
    writeFileSync(join(root, 'many.txt'), 'hit\n'.repeat(50));
    const small = createDefaultToolRegistry({ workdir: root, limits: { maxSearchMatches: 5 } });
    const out = await small.execute('search_text', { pattern: '^hit$', path: 'many.txt' });
    expect(out.split('\n').filter((l) => l.startsWith('many.txt:'))).toHaveLength(5);
    expect(out).toContain('[stopped at 5 matches; narrow the pattern or the path]');
  });

  test('a catastrophic regex is stopped by the time budget', async () => {
    writeFileSync(join(root, 'evil.txt'), `${'a'.repeat(40)}b\n`);
    const quick = createDefaultToolRegistry({ workdir: root, limits: { searchTimeout: 300 } });
    const out = await quick.execute('search_text', { pattern: '(a+)+$', path: 'evil.txt' });
    expect(out).toMatch(/stopped: the search took longer than 300 ms/);
    // The tool still works afterwards.
    await expect(quick.execute('search_text', { pattern: 'b$', path: 'evil.txt' })).resolves.toMatch(/^evil.txt:1: a+b/);
  });

  test('very long lines are shown shortened', async () => {
    writeFileSync(join(root, 'long.txt'), `needle${'x'.repeat(1000)}\n`);
    const out = await run('search_text', { pattern: 'needle', path: 'long.txt' });
    expect(out.split('\n')[0]).toBe(`long.txt:1: needle${'x'.repeat(294)}[... 706 more characters]`);
  });
});

describe('search_files', () => {
  beforeEach(() => {
    mkdirSync(join(root, 'src/lib'), { recursive: true });
    mkdirSync(join(root, 'node_modules/pkg'), { recursive: true });
    for (const file of ['src/a.ts', 'src/a.test.ts', 'src/lib/b.ts', 'src/lib/c.js', 'README.md', 'node_modules/pkg/x.ts']) {
      writeFileSync(join(root, file), '');
    }
  });

  test.each([
    ['*.ts', ['src/a.test.ts', 'src/a.ts', 'src/lib/b.ts']],
    ['src/*.ts', ['src/a.test.ts', 'src/a.ts']],
    ['src/**/*.ts', ['src/a.test.ts', 'src/a.ts', 'src/lib/b.ts']],
    ['**/lib/*', ['src/lib/b.ts', 'src/lib/c.js']],
    ['*.{js,md}', ['README.md', 'src/lib/c.js']],
    ['?.ts', ['src/a.ts', 'src/lib/b.ts']],
    ['[ab].*', ['src/a.test.ts', 'src/a.ts', 'src/lib/b.ts']],
    ['lib', ['src/lib/']],
  ])('%s', async (pattern, expected) => {
    const out = await run('search_files', { pattern });
    expect(out.split('\n').sort()).toEqual(expected);
  });

  test('a path narrows the search; paths are shown relative to the workdir', async () => {
    await expect(run('search_files', { pattern: '*', path: 'src/lib' })).resolves.toBe('src/lib/b.ts\nsrc/lib/c.js');
  });

  test('no match, bounded results, and a file as path', async () => {
    await expect(run('search_files', { pattern: '*.py' })).resolves.toBe('No files match *.py under ..');
    const small = createDefaultToolRegistry({ workdir: root, limits: { maxGlobResults: 2 } });
    await expect(small.execute('search_files', { pattern: '*' })).resolves.toMatch(/\n\[stopped at 2 results; narrow the pattern or the path\]$/);
    await expect(run('search_files', { pattern: '*', path: 'README.md' })).resolves.toMatch(/it is not a directory/);
  });
});
