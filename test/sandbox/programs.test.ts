/*
 * The programs execgate starts are real files (src/programs/): shellcheck reads the shell ones,
 * node parses the others, and the seccomp filters are exactly what scripts/generate-seccomp.py makes from its
 * list with libseccomp (so the list in that script is the one place the filter is written).
 * A gate hands its program the environment it was started with: the variables the gate itself
 * uses are a run's to have as well.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { getBashGateScript, getGateScript, getPtyGateScript } from '../../src/process/programs';
import { CLOSE_FDS } from '../../src/process/inherited-fds';
import { makeTempDir } from '../helpers/tmp';

const PROGRAMS = join(__dirname, '..', '..', 'src', 'programs');
const GENERATOR = join(__dirname, '..', '..', 'scripts', 'generate-seccomp.py');

const shellcheck = ['/usr/bin/shellcheck', '/bin/shellcheck'].find((path) => existsSync(path));
const python = '/usr/bin/python3';
const hasSeccompBindings = existsSync(python) && spawnSync(python, ['-c', 'import seccomp'], { stdio: 'ignore' }).status === 0;

describe('the programs of a sandboxed run', () => {
  const scripts = readdirSync(PROGRAMS).filter((name) => name.endsWith('.sh') || name.endsWith('.bash'));

  test('there are the gates, the warm stub, the terminal launcher, the watchdog; the node programs parse', () => {
    expect(scripts.sort()).toEqual(['gate.sh', 'pty-gate.bash', 'pty-launch.bash', 'warm-stub.bash', 'watchdog.bash']);
    const scriptsJs = readdirSync(PROGRAMS).filter((name) => name.endsWith('.js')).sort();
    expect(scriptsJs).toEqual(['egress-listener.js', 'egress-run-bridge.js', 'spawn-helper.js']);
    for (const name of scriptsJs) {
      const result = spawnSync(process.execPath, ['--check', join(PROGRAMS, name)], { encoding: 'utf8' });
      expect({ name, status: result.status, stderr: result.stderr }).toEqual({ name, status: 0, stderr: '' });
    }
    // The connect hand-off's two Python programs (egress/tcp-notify.ts) compile.
    const scriptsPy = readdirSync(PROGRAMS).filter((name) => name.endsWith('.py')).sort();
    expect(scriptsPy).toEqual(['tcp-install.py', 'tcp-supervisor.py']);
    if (existsSync(python)) {
      for (const name of scriptsPy) {
        const source = readFileSync(join(PROGRAMS, name), 'utf8');
        const result = spawnSync(python, ['-I', '-S', '-c', 'import sys; compile(sys.stdin.read(), sys.argv[1], "exec")', name], { input: source, encoding: 'utf8' });
        expect({ name, status: result.status, stderr: result.stderr }).toEqual({ name, status: 0, stderr: '' });
      }
    }
  });

  (shellcheck ? test : test.skip)('shellcheck finds nothing in any of them', () => {
    for (const name of scripts) {
      const result = spawnSync(shellcheck!, ['--shell', name.endsWith('.sh') ? 'sh' : 'bash', '--severity', 'style', join(PROGRAMS, name)], { encoding: 'utf8' });
      expect({ name, output: result.stdout, status: result.status }).toEqual({ name, output: '', status: 0 });
    }
  });

  (hasSeccompBindings ? test : test.skip)('the committed seccomp filters are what the generator makes (libseccomp)', () => {
    const tmp = makeTempDir('execgate-seccomp-');
    try {
      const result = spawnSync(python, [GENERATOR, tmp.dir], { encoding: 'utf8' });
      expect(result.status).toBe(0);
      for (const name of ['x86_64.bpf', 'aarch64.bpf', 'connect-notify-x86_64.bpf', 'connect-notify-aarch64.bpf']) {
        const made = readFileSync(join(tmp.dir, name));
        expect(made.length % 8).toBe(0);
        expect(made.equals(readFileSync(join(PROGRAMS, 'seccomp', name)))).toBe(true);
      }
    } finally {
      tmp.cleanup();
    }
  });

  /*
   * Every name a script assigns (NAME=, read [-opts] NAME, for NAME in), with values the shell could
   * trim or split, beside the names a shell sets itself; the program (env -0) must see them all as
   * given. sh adds PWD (the directory it is in, as bubblewrap sets it); dash resets IFS, OPTIND and
   * PPID, which the run's bash resets anyway.
   */
  const gates: Array<{ name: string; argv: string[]; input: string }> = [
    { name: 'gate.sh as sh', argv: ['/bin/sh', '-c', getGateScript(), 'execgate-gate', getBashGateScript(CLOSE_FDS), 'null'], input: 'go\n' },
    { name: 'gate.sh as bash (closing descriptors)', argv: ['/bin/bash', '--norc', '--noprofile', '-c', getBashGateScript(CLOSE_FDS), 'execgate-gate', getBashGateScript(CLOSE_FDS), 'null'], input: 'go\n' },
    { name: 'pty-gate.bash', argv: ['/bin/bash', '--norc', '--noprofile', '-c', getPtyGateScript(CLOSE_FDS), 'execgate-gate'], input: 'g' },
  ];
  const used = (text: string): string[] => {
    const names = new Set<string>();
    for (const m of text.matchAll(/(?:^|[\s;(])([A-Za-z_][A-Za-z0-9_]*)=/g)) names.add(m[1]);
    for (const m of text.matchAll(/\bread\s+(?:-\S+\s+(?:\d+\s+)?)*([A-Za-z_][A-Za-z0-9_]*)/g)) names.add(m[1]);
    for (const m of text.matchAll(/\bfor\s+([A-Za-z_][A-Za-z0-9_]*)\s+in\b/g)) names.add(m[1]);
    names.delete('IFS'); // (only ever a prefix of `read`)
    return [...names];
  };
  test.each(gates)('$name hands its program the environment it was given, its own variables included', ({ argv, input }) => {
    const names = used(argv[argv.indexOf('-c') + 1]);
    expect(names).toContain('g');
    const dir = makeTempDir('execgate-gate-env-');
    try {
      for (const value of ['', ' ', ' v  w ', 'go', 'g', 'a\nb', '*']) {
        const env: Record<string, string> = { PATH: '/usr/bin:/bin', REPLY: value, SHLVL: '4', _: '/x' };
        for (const name of names) env[name] = value;
        const result = spawnSync(argv[0], [...argv.slice(1), '/usr/bin/env', '-0'], { env, cwd: dir.dir, input, encoding: 'utf8' });
        expect(result.status).toBe(0);
        // (the terminal gate's marks, NUL and SOH, come first on its stdout)
        const out = result.stdout.startsWith('\0\x01') ? result.stdout.slice(2) : result.stdout;
        const seen = Object.fromEntries(out.split('\0').slice(0, -1).map((entry) => [entry.slice(0, entry.indexOf('=')), entry.slice(entry.indexOf('=') + 1)]));
        for (const name of ['IFS', 'OPTIND', 'PPID']) delete seen[name];
        if (seen.PWD !== undefined) expect(seen.PWD).toBe(dir.dir);
        delete seen.PWD;
        expect(seen).toEqual(env);
      }
      // Unset stays unset.
      const bare = spawnSync(argv[0], [...argv.slice(1), '/usr/bin/env', '-0'], { env: { PATH: '/usr/bin:/bin' }, cwd: dir.dir, input, encoding: 'utf8' });
      expect(bare.stdout.split('\0').filter((entry) => names.some((name) => entry.startsWith(`${name}=`)))).toEqual([]);
    } finally {
      dir.cleanup();
    }
  });
});

/*
 * The cold gate's one round trip: NUL on stderr once waiting, then the program only on the exact
 * line `go`. Whatever else its stdin says (nothing, a partial word, another word, a longer line,
 * the word without its newline) ends the gate with 125 and nothing of the program runs; after
 * `go` the gate writes nothing more (its stderr is the program's from the NUL on).
 */
describe('the cold gate lets its program go only on `go`', () => {
  const gates = [
    { name: 'gate.sh as sh', argv: ['/bin/sh', '-c', getGateScript(), 'execgate-gate', getBashGateScript(CLOSE_FDS), 'null'] },
    { name: 'gate.sh as bash (closing descriptors)', argv: ['/bin/bash', '--norc', '--noprofile', '-c', getBashGateScript(CLOSE_FDS), 'execgate-gate', getBashGateScript(CLOSE_FDS), 'null'] },
  ];
  const program = (marker: string): string[] => ['/bin/sh', '-c', 'touch "$1"; echo out; echo err >&2', 'program', marker];
  test.each(gates)('$name', ({ argv }) => {
    const dir = makeTempDir('execgate-gate-go-');
    try {
      const marker = join(dir.dir, 'ran');
      for (const input of ['', 'g', 'go', 'gox\n', 'no\n', '\n', ' go\n', 'go \n']) {
        const result = spawnSync(argv[0], [...argv.slice(1), ...program(marker)], { input, cwd: dir.dir, encoding: 'utf8' });
        expect({ input, status: result.status, stdout: result.stdout, stderr: result.stderr, ran: existsSync(marker) }).toEqual({ input, status: 125, stdout: '', stderr: '\0', ran: false });
      }
      const go = spawnSync(argv[0], [...argv.slice(1), ...program(marker)], { input: 'go\nmore input for nobody\n', cwd: dir.dir, encoding: 'utf8' });
      expect({ status: go.status, stdout: go.stdout, stderr: go.stderr, ran: existsSync(marker) }).toEqual({ status: 0, stdout: 'out\n', stderr: '\0err\n', ran: true });
    } finally {
      dir.cleanup();
    }
  });
});

/*
 * Inherited descriptors are the gate's to find (gate.sh): started holding only 0-2 it stays sh; holding
 * any other (low or above 9, as a user's `200<file` or a terminal master is) it hands over to its
 * closing form before it says anything, and the program sees none of them. The starter is a
 * python3 that closes everything above 2, then opens /dev/null at the numbers asked for.
 */
describe('the cold gate closes descriptors it inherited before its program starts', () => {
  const START = 'import os, sys\nos.closerange(3, 65536)\nfor n in filter(None, sys.argv[1].split(",")):\n    os.dup2(os.open("/dev/null", os.O_RDONLY), int(n))\nos.execv(sys.argv[2], sys.argv[2:])';
  const gate = (closing: string, holding: string, program: string[]) =>
    spawnSync(python, ['-c', START, holding, '/bin/sh', '-c', getGateScript(), 'execgate-gate', closing, 'null', ...program], { input: 'go\n', encoding: 'utf8' });
  const listing = ['/bin/sh', '-c', 'ls /proc/self/fd | tr "\\n" " "'];
  const sentinel = "printf 'closing form' >&2; exit 7";

  test.each(['', '5', '12', '200', '3,9,250'])('holding [%s]', (holding) => {
    const took = gate(sentinel, holding, listing);
    if (holding === '') expect({ status: took.status, stderr: took.stderr }).toEqual({ status: 0, stderr: '\0' });
    else expect({ status: took.status, stderr: took.stderr, stdout: took.stdout }).toEqual({ status: 7, stderr: 'closing form', stdout: '' });
    // With the real closing form: the program's own listing holds 0-2 and ls's directory only.
    const run = gate(getBashGateScript(CLOSE_FDS), holding, listing);
    expect({ status: run.status, stderr: run.stderr, stdout: run.stdout }).toEqual({ status: 0, stderr: '\0', stdout: '0 1 2 3 ' });
  });
});
