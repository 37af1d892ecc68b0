'use strict';
/*
 * Figure 14: the peer. execgate against @anthropic-ai/sandbox-runtime (a dev dependency), both
 * with their defaults, side by side, interleaved:
 *
 *   - a sandboxed `true` as a library: execgate's `gateway.exec({ command: 'true' })` on the
 *     default path (embedded default policy: sandboxed, no network, audit on, warm sandboxes),
 *     against sandbox-runtime's `SandboxManager.wrapWithSandbox('true')` spawned with
 *     `{ shell: true }` as its README and CLI do (initialized once, its default configuration:
 *     what its CLI uses with no settings file), and raw `bash -c true` and raw `bwrap` + `bash -c
 *     true` (pid, net, ipc, uts namespaces) as the floor. Each library runs in a process of its
 *     own (its own heap, its own proxy servers), asked over a pipe; the time is taken in that
 *     process, from the request to the exit of the sandboxed `true`. CPU per run is the library
 *     process's and everything under it, read before the run and again after a pause (so work a
 *     library does after a run for the next one, such as execgate's warm sandbox, is counted).
 *   - a sandboxed `true` as a CLI: `execgate run -- true` against `srt -c true`, and `node -e 0`,
 *     each a fresh process in a clean environment (PATH, an empty HOME, nothing else).
 *   - proxy throughput: curl inside each one's sandbox fetching 100 MiB from a local server
 *     through that one's egress proxy, plain HTTP and HTTPS (a CONNECT tunnel), against the same
 *     curl run directly. execgate: a
 *     gateway whose policy allows the host; sandbox-runtime: `allowedDomains` naming the server's
 *     address and port. CPU per MiB: the library process (where each one's proxy runs) and,
 *     separately, that process and everything under it (bubblewrap, the in-sandbox relay: socat
 *     for sandbox-runtime, execgate's bridge; and curl), the server excluded.
 *
 * sandbox-runtime needs bubblewrap, socat and ripgrep on Linux; where it (or execgate's sandbox)
 * cannot run, the figure says so and measures what it can.
 *
 * With `--baseline=DIR` (another built checkout), that build's library runs `true` in the same
 * interleaving as this tree's (wall and CPU per run), and its gateway fetches in the same
 * interleaving of the proxy rows, each row beside this tree's.
 *
 *   npm run build && node bench/peer.js [--quick] [--proxy-only] [--baseline=DIR] [--no-peer]
 */
const { spawn, spawnSync } = require('node:child_process');
const { mkdirSync, mkdtempSync, readFileSync, rmSync } = require('node:fs');
const http = require('node:http');
const https = require('node:https');
const { tmpdir } = require('node:os');
const { join } = require('node:path');
const { pathToFileURL } = require('node:url');
const { performance } = require('node:perf_hooks');
const { DIST, cleanEnv, interleave, readDescendantsCpu, readOwnCpu, row, runFigure, summarize, waitChild } = require('./lib');

const PEER = '@anthropic-ai/sandbox-runtime';
/** The peer's entry point, found from this file (helpers run in another working directory). */
const peerUrl = () => pathToFileURL(require.resolve(PEER)).href;
const MiB = 1048576;
const BWRAP_TRUE = ['--ro-bind', '/', '/', '--dev', '/dev', '--proc', '/proc', '--tmpfs', '/tmp', '--unshare-pid', '--unshare-net', '--unshare-ipc', '--unshare-uts', '--die-with-parent', '--new-session', '--', '/bin/bash', '--norc', '--noprofile', '-c', 'true'];
/** sandbox-runtime's default configuration (its CLI's, with no settings file). */
const PEER_DEFAULTS = { network: { allowedDomains: [], deniedDomains: [] }, filesystem: { denyRead: [], allowRead: [], allowWrite: [], denyWrite: [] } };

/* ------------------------------------------------------------------------------------------ */
/* The helper processes: `node bench/peer.js --helper KIND ARG`; one JSON line per request.   */

function cpuBefore() {
  const descendants = readDescendantsCpu() ?? 0;
  return { descendants, own: readOwnCpu() };
}

function cpuSince(start) {
  const own = readOwnCpu();
  const descendants = readDescendantsCpu() ?? 0;
  return { own: own - start.own, all: own - start.own + descendants - start.descendants };
}

function curlArgs(url, cacert) {
  return ['-sS', '--fail', '-o', '/dev/null', '-w', '%{size_download} %{time_total}', ...(cacert ? ['--cacert', cacert] : []), url];
}

function spawnText(file, args, options) {
  return new Promise((resolve, reject) => {
    const child = spawn(file, args, { ...options, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (chunk) => { out += chunk; });
    child.stderr.on('data', (chunk) => { err += chunk; });
    child.once('error', reject);
    child.once('close', (code) => (code === 0 ? resolve(out) : reject(new Error(`${file} exited ${code}: ${err.slice(-500)}`))));
  });
}

async function makeRunner(kind, arg, work, dist = DIST) {
  if (kind === 'raw') {
    return {
      bash: () => waitChild(spawn('/bin/bash', ['--norc', '--noprofile', '-c', 'true'], { detached: true, stdio: ['ignore', 'pipe', 'pipe'], cwd: work })),
      bwrap: () => waitChild(spawn('bwrap', BWRAP_TRUE, { detached: true, stdio: ['ignore', 'pipe', 'pipe'], cwd: work })),
      fetch: (url, cacert) => spawnText('curl', curlArgs(url, cacert), { cwd: work }),
    };
  }
  if (kind === 'execgate' || kind === 'execgate-fetch') {
    const { createGateway } = require(join(dist, 'gateway.js'));
    // Each gateway's state apart (this tree's and a baseline's may run side by side).
    const options = { home: join(work, '..', `${kind}-state${dist === DIST ? '' : '-baseline'}`), env: process.env, cwd: work };
    if (kind === 'execgate-fetch') {
      // The default policy, its network an allowlist of the one host, that host's name dialled
      // at the local server (a resolver and dialler of the gateway's egress options).
      const { DEFAULT_POLICY } = require(join(dist, 'policy', 'effective.js'));
      const { normalizeNetworkPolicy } = require(join(dist, 'policy', 'egress-settings.js'));
      const [port, tlsPort] = arg.split(',').map(Number);
      options.policy = { ...DEFAULT_POLICY, network: normalizeNetworkPolicy({ mode: 'allowlist', allow: ['bench.test'] }), sandbox: { ...DEFAULT_POLICY.sandbox, mode: 'required' } };
      // Plain HTTP goes to bench.test:80, HTTPS to bench.test:<the TLS server's port>.
      options.egress = { resolver: async () => ['203.0.113.10'], dial: (_address, asked) => ({ host: '127.0.0.1', port: asked === tlsPort ? tlsPort : port }) };
    }
    const gateway = createGateway(options);
    let retried = 0;
    const exec = async (command) => {
      let result;
      for (let attempt = 0; ; attempt++) {
        try {
          result = await gateway.exec({ command, timeout: 300_000 });
          break;
        } catch (error) {
          // A path of the sandbox's view changed while it was set up (another program renaming
          // entries of the home, say): nothing ran, and the error says to run again. The retry is
          // in the sample's time, as it is in a user's; the figure says how many there were.
          if (error.code !== 'EXECGATE_ERR_SANDBOX_PATH' || attempt >= 5) throw error;
          retried += 1;
        }
      }
      if (result.exitCode !== 0) throw new Error(`execgate: \`${command}\` exited ${result.exitCode}: ${result.output}`);
      if (!result.sandbox.sandboxed) throw new Error(`execgate: the run was not sandboxed: ${result.sandbox.reason}`);
      return result.stdout;
    };
    return {
      true: () => exec('true'),
      fetch: (url, cacert) => exec(`curl ${curlArgs(url.replace(/127\.0\.0\.1:([0-9]+)/, (_, port) => (url.startsWith('https:') ? `bench.test:${port}` : 'bench.test')), cacert).map((a) => `'${a}'`).join(' ')}`),
      stats: () => ({ ...gateway.warmSandboxes, retried }),
      close: () => gateway.close(),
    };
  }
  if (kind === 'peer' || kind === 'peer-fetch') {
    const { SandboxManager } = await import(peerUrl());
    const config = kind === 'peer' ? PEER_DEFAULTS : { ...PEER_DEFAULTS, network: { allowedDomains: arg.split(',').map((port) => `127.0.0.1:${port}`), deniedDomains: [] } };
    await SandboxManager.initialize(config);
    // As its README and CLI run a command: the wrapped string through a shell.
    const exec = async (command) => {
      const wrapped = await SandboxManager.wrapWithSandbox(command);
      return spawnText(wrapped, [], { shell: true, cwd: work });
    };
    return {
      true: () => exec('true'),
      // Its sandbox sets NO_PROXY for loopback names; a local server is reached through the proxy
      // only with that cleared (the proxy's allowlist names the address and port).
      fetch: (url, cacert) => exec(`NO_PROXY= no_proxy= curl ${curlArgs(url, cacert).map((a) => `'${a}'`).join(' ')}`),
      close: () => SandboxManager.reset(),
    };
  }
  throw new Error(`unknown helper ${kind}`);
}

async function helperMain(kind, arg, dist) {
  const work = process.cwd();
  const runner = await makeRunner(kind, arg, work, dist || DIST);
  let started;
  const reply = (value) => process.stdout.write(`${JSON.stringify(value)}\n`);
  reply({ ready: true, pid: process.pid });
  let text = '';
  let queue = Promise.resolve();
  process.stdin.on('data', (chunk) => {
    text += chunk;
    for (let end = text.indexOf('\n'); end >= 0; end = text.indexOf('\n')) {
      const request = JSON.parse(text.slice(0, end));
      text = text.slice(end + 1);
      queue = queue.then(async () => {
        try {
          if (request.op === 'run') {
            started = cpuBefore();
            const t0 = performance.now();
            const out = await runner[request.what](request.url, request.cacert);
            reply({ ms: performance.now() - t0, out });
          } else if (request.op === 'cpu') reply(cpuSince(started));
          else if (request.op === 'stats') reply({ stats: runner.stats ? runner.stats() : undefined });
          else if (request.op === 'close') {
            if (runner.close) await runner.close();
            reply({ closed: true });
            process.exit(0);
          }
        } catch (error) {
          reply({ error: error.stack || String(error) });
        }
      });
    }
  });
}

/* ------------------------------------------------------------------------------------------ */
/* The figure.                                                                                 */

/** `dist`: the build the helper loads (this tree's unless a baseline's). */
function startHelper(kind, arg, { env, cwd }, dist = DIST) {
  const child = spawn(process.execPath, [__filename, '--helper', kind, String(arg ?? ''), dist], { stdio: ['pipe', 'pipe', 'inherit'], env, cwd });
  const waiting = [];
  let text = '';
  let exited;
  child.stdout.on('data', (chunk) => {
    text += chunk;
    for (let end = text.indexOf('\n'); end >= 0; end = text.indexOf('\n')) {
      const message = JSON.parse(text.slice(0, end));
      text = text.slice(end + 1);
      const waiter = waiting.shift();
      if (message.error) waiter?.reject(new Error(`${kind}: ${message.error}`));
      else waiter?.resolve(message);
    }
  });
  child.once('exit', (code) => {
    exited = code;
    for (const waiter of waiting.splice(0)) waiter.reject(new Error(`the ${kind} helper exited with ${code}`));
  });
  const next = () => new Promise((resolve, reject) => (exited !== undefined ? reject(new Error(`the ${kind} helper exited with ${exited}`)) : waiting.push({ resolve, reject })));
  const ready = next();
  const ask = (request) => {
    const answer = next();
    child.stdin.write(`${JSON.stringify(request)}\n`);
    return answer;
  };
  return { ready, ask, pid: child.pid, close: () => ask({ op: 'close' }).catch(() => {}) };
}

/** The peer's own check of what it needs here (bubblewrap, socat, ripgrep), in a process of its own. */
function checkPeer(env, cwd) {
  let url;
  try {
    url = peerUrl();
  } catch (error) {
    return { ok: false, reason: `not installed (${error.message.split('\n')[0]})` };
  }
  const probe = `import(${JSON.stringify(url)}).then(({ SandboxManager: s }) => { if (!s.isSupportedPlatform()) { console.log('unsupported platform'); return; } const d = s.checkDependencies(); console.log(d.errors && d.errors.length ? d.errors.join('; ') : 'ok'); }, (e) => console.log('cannot load: ' + e.message));`;
  const result = spawnSync(process.execPath, ['-e', probe], { env, cwd, encoding: 'utf8', timeout: 60_000 });
  const said = (result.stdout || '').trim();
  return said === 'ok' ? { ok: true } : { ok: false, reason: said || (result.stderr || '').trim().split('\n').pop() || `status ${result.status}` };
}

/** A self-signed certificate for bench.test and 127.0.0.1 (openssl), in `dir`; undefined without openssl. */
function makeCertificate(dir) {
  const key = join(dir, 'server-key.pem');
  const cert = join(dir, 'server-cert.pem');
  const made = spawnSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', key, '-out', cert, '-days', '1', '-subj', '/CN=bench.test', '-addext', 'subjectAltName=DNS:bench.test,IP:127.0.0.1'], { encoding: 'utf8' });
  return made.status === 0 ? { key, cert } : undefined;
}

function startServer(size, tls) {
  const block = Buffer.alloc(MiB, 'x');
  const serve = (request, response) => {
    response.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': size });
    let left = size;
    const write = () => {
      while (left > 0) {
        const n = Math.min(left, block.length);
        left -= n;
        if (!response.write(n === block.length ? block : block.subarray(0, n))) {
          response.once('drain', write);
          return;
        }
      }
      response.end();
    };
    write();
  };
  const server = tls ? https.createServer({ key: readFileSync(tls.key), cert: readFileSync(tls.cert) }, serve) : http.createServer(serve);
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)));
}

let cliRetries = 0;

/** One CLI run, timed by the caller; an execgate run refused with EXECGATE_ERR_SANDBOX_PATH is run again (counted). */
async function timeCli(file, args, options) {
  for (let attempt = 0; ; attempt++) {
    try {
      return await timeCliOnce(file, args, options);
    } catch (error) {
      if (!/EXECGATE_ERR_SANDBOX_PATH/.test(error.message) || attempt >= 5) throw error;
      cliRetries += 1;
    }
  }
}

function timeCliOnce(file, args, options) {
  return new Promise((resolve, reject) => {
    const child = spawn(file, args, { ...options, stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (chunk) => { stderr += chunk; });
    child.once('error', reject);
    child.once('close', (code) => (code === 0 ? resolve() : reject(new Error(`${file} ${args.join(' ')} exited ${code}: ${stderr.slice(-500)}`))));
  });
}

const pause = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** The peer's helper once it is up, or undefined (and a note) when it could not start here. */
async function peerReady(helper, what, notes) {
  try {
    await helper.ready;
    return helper;
  } catch (error) {
    notes.push(`sandbox-runtime could not start here (${what} rows skipped): ${error.message.split('\n')[0]}`);
    return undefined;
  }
}

async function run({ quick, baseline, log }) {
  const scratch = mkdtempSync(join(tmpdir(), 'execgate-bench-peer-'));
  const home = join(scratch, 'home');
  const work = join(scratch, 'work');
  mkdirSync(home);
  mkdirSync(work);
  // Every process of this figure: a clean environment, the working directory an empty one.
  const env = cleanEnv(home);
  const spawnOptions = { env, cwd: work };
  const rows = [];
  const notes = [];
  const { checkPlatform } = require(join(DIST, 'sandbox', 'index.js'));
  const platform = checkPlatform();
  const peer = checkPeer(env, work);
  if (!platform.ok) notes.push(`execgate's sandbox cannot run here (${platform.reason}): its rows are skipped.`);
  if (!peer.ok) notes.push(`sandbox-runtime cannot run here (${peer.reason}): its rows are skipped.`);
  if (!platform.ok && !peer.ok) {
    rmSync(scratch, { recursive: true, force: true });
    return { rows, notes, sandbox: 'on' };
  }
  const helpers = [];
  const start = (kind, arg, dist) => {
    const helper = startHelper(kind, arg, spawnOptions, dist);
    helpers.push(helper);
    return helper;
  };
  const servers = [];
  try {
    const raw = start('raw');
    // `--proxy-only`: the proxy's rows alone (section 3).
    if (!process.argv.includes('--proxy-only')) {
      /* 1. A sandboxed `true` as a library. */
      const ours = platform.ok ? start('execgate') : undefined;
      // `--baseline=DIR`: that build's library in the same interleaving.
      const base = platform.ok && baseline ? start('execgate', undefined, baseline) : undefined;
      let theirs = peer.ok ? start('peer') : undefined;
      await Promise.all([raw.ready, ...(ours ? [ours.ready] : []), ...(base ? [base.ready] : [])]);
      // The peer failing to start here is reported, not a failure of the bench.
      if (theirs) theirs = await peerReady(theirs, 'library', notes);
      const libraryVariants = {
        rawBash: raw,
        rawBwrap: raw,
        ...(ours ? { execgate: ours } : {}),
        ...(base ? { baseline: base } : {}),
        ...(theirs ? { peer: theirs } : {}),
      };
      const what = { rawBash: 'bash', rawBwrap: 'bwrap', execgate: 'true', baseline: 'true', peer: 'true' };
      const cpu = Object.fromEntries(Object.keys(libraryVariants).map((name) => [name, []]));
      const inner = Object.fromEntries(Object.keys(libraryVariants).map((name) => [name, []]));
      const iterations = quick ? 5 : 100;
      log(`library: ${iterations} interleaved iterations of ${Object.keys(libraryVariants).join(', ')}`);
      await interleave(Object.fromEntries(Object.entries(libraryVariants).map(([name, helper]) => [name, async () => {
        const answer = await helper.ask({ op: 'run', what: what[name] });
        inner[name].push(answer.ms);
      }])), {
        iterations,
        warmup: quick ? 1 : 10,
        // A pause after each run, as between an agent's commands: what a library does after a run
        // (execgate prepares the next sandbox) happens there and is counted in that run's CPU.
        after: async (name, kept) => {
          await pause(quick ? 20 : 60);
          const used = await libraryVariants[name].ask({ op: 'cpu' });
          if (kept) cpu[name].push(used.all);
          else inner[name].pop();
        },
      });
      const rawBash = { name: 'raw bash -c true', samples: inner.rawBash };
      const rawBwrap = { name: 'raw bwrap + bash -c true', samples: inner.rawBwrap };
      rows.push(row(14, 'library: raw spawn of bash -c true (no sandbox)', inner.rawBash));
      rows.push(row(14, 'library: raw spawn of bwrap (pid, net, ipc, uts namespaces) + bash -c true', inner.rawBwrap, { of: rawBash }));
      if (ours) {
        const warm = (await ours.ask({ op: 'stats' })).stats;
        const share = warm.warm !== undefined ? ` ${Math.round((100 * warm.warm) / Math.max(1, warm.warm + warm.cold))}% of runs warm` : '';
        if (warm.retried > 0) notes.push(`execgate library runs retried after EXECGATE_ERR_SANDBOX_PATH (a path of the sandbox's view changed during set-up): ${warm.retried}.`);
        rows.push(row(14, `library: execgate gateway.exec('true'), defaults (sandboxed, network none, audit on;${share})`, inner.execgate, { of: rawBash }));
        rows.push(row(14, '  same, against raw bwrap', inner.execgate, { of: rawBwrap }));
      }
      if (theirs) {
        rows.push(row(14, 'library: sandbox-runtime wrapWithSandbox(\'true\') + spawn (shell: true), defaults', inner.peer, { of: rawBash, peerOf: 'sandbox-warm' }));
        rows.push(row(14, '  same, against raw bwrap', inner.peer, { of: rawBwrap }));
      }
      if (ours && theirs) rows.push(row(14, 'library: execgate against sandbox-runtime (wall)', inner.execgate, { of: { name: 'sandbox-runtime', samples: inner.peer } }));
      if (ours && base) {
        rows.push(row(14, 'library: baseline tree gateway.exec(\'true\'), defaults', inner.baseline, { of: rawBash }));
        rows.push(row(14, '  this tree against the baseline (wall)', inner.execgate, { of: { name: 'baseline tree', samples: inner.baseline } }));
      }
      if (readDescendantsCpu() !== undefined) {
        /*
         * Mean, not median: the CPU of other processes comes from /proc in clock ticks (10 ms),
         * and a run of a few ms is counted 0 or 10 ms at a time; the mean of many runs is right on
         * average, their median is not. Min and max are of single runs.
         */
        const mean = (samples) => ({ ...summarize(samples), median: samples.reduce((a, b) => a + b, 0) / samples.length });
        rows.push(row(14, 'library CPU per run, mean: raw bash -c true (ms)', mean(cpu.rawBash)));
        rows.push(row(14, 'library CPU per run, mean: raw bwrap + bash -c true (ms)', mean(cpu.rawBwrap)));
        if (ours) rows.push(row(14, 'library CPU per run, mean: execgate, process + everything under it (ms)', mean(cpu.execgate), { of: { name: 'raw bwrap', samples: mean(cpu.rawBwrap) }, goal: 'sandbox-warm-cpu' }));
        if (theirs) rows.push(row(14, 'library CPU per run, mean: sandbox-runtime, process + everything under it (ms)', mean(cpu.peer), { of: { name: 'raw bwrap', samples: mean(cpu.rawBwrap) }, peerOf: 'sandbox-warm-cpu' }));
        if (ours && theirs) rows.push(row(14, 'library CPU per run, mean: execgate against sandbox-runtime', mean(cpu.execgate), { of: { name: 'sandbox-runtime', samples: mean(cpu.peer) } }));
        if (ours && base) {
          rows.push(row(14, 'library CPU per run, mean: baseline tree, process + everything under it (ms)', mean(cpu.baseline), { of: { name: 'raw bwrap', samples: mean(cpu.rawBwrap) } }));
          rows.push(row(14, '  this tree against the baseline (CPU)', mean(cpu.execgate), { of: { name: 'baseline tree', samples: mean(cpu.baseline) } }));
        }
      }

      /* 2. A sandboxed `true` as a CLI. */
      const execgateCli = join(DIST, 'cli', 'main.js');
      const peerCli = peer.ok ? join(require.resolve(PEER), '..', 'cli.js') : undefined;
      const cliVariants = {
        node: () => timeCli(process.execPath, ['-e', '0'], spawnOptions),
        ...(platform.ok ? { execgate: () => timeCli(process.execPath, [execgateCli, 'run', '--', 'true'], spawnOptions) } : {}),
        ...(peer.ok ? { peer: () => timeCli(process.execPath, [peerCli, '-c', 'true'], spawnOptions) } : {}),
      };
      if (cliVariants.peer) {
        try {
          await cliVariants.peer();
        } catch (error) {
          notes.push(`sandbox-runtime's CLI failed here, its CLI rows are skipped: ${error.message.split('\n')[0]}`);
          delete cliVariants.peer;
        }
      }
      const helperPids = helpers.map((h) => h.pid);
      const cliCpu = Object.fromEntries(Object.keys(cliVariants).map((name) => [name, []]));
      let cliStart;
      const cliIterations = quick ? 3 : 40;
      log(`CLI: ${cliIterations} interleaved iterations of ${Object.keys(cliVariants).join(', ')}`);
      const cli = await interleave(cliVariants, {
        iterations: cliIterations,
        warmup: quick ? 1 : 3,
        before: () => { cliStart = readDescendantsCpu(helperPids); },
        after: (name, kept) => { if (kept && cliStart !== undefined) cliCpu[name].push(readDescendantsCpu(helperPids) - cliStart); },
      });
      if (cliRetries > 0) notes.push(`execgate CLI runs retried after EXECGATE_ERR_SANDBOX_PATH: ${cliRetries}.`);
      const nodeStart = { name: 'node -e 0', samples: cli.node };
      rows.push(row(14, 'CLI: node -e 0', cli.node));
      if (cli.execgate) rows.push(row(14, 'CLI: execgate run -- true (default policy: sandboxed)', cli.execgate, { of: nodeStart }));
      if (cli.peer) rows.push(row(14, 'CLI: srt -c true (no settings file: its defaults)', cli.peer, { of: nodeStart, peerOf: 'cli-start' }));
      if (cli.execgate && cli.peer) rows.push(row(14, 'CLI: execgate against srt (wall)', cli.execgate, { of: { name: 'srt', samples: cli.peer } }));
      if (cliCpu.node.length > 0) {
        rows.push(row(14, 'CLI CPU of the process tree: node -e 0 (ms)', cliCpu.node));
        if (cli.execgate) rows.push(row(14, 'CLI CPU of the process tree: execgate run -- true (ms)', cliCpu.execgate, { of: { name: 'node -e 0', samples: cliCpu.node } }));
        if (cli.peer) rows.push(row(14, 'CLI CPU of the process tree: srt -c true (ms)', cliCpu.peer, { of: { name: 'node -e 0', samples: cliCpu.node } }));
        if (cli.execgate && cli.peer) rows.push(row(14, 'CLI CPU of the process tree: execgate against srt', cliCpu.execgate, { of: { name: 'srt', samples: cliCpu.peer } }));
      }

    }

    /*
     * 3. Proxy throughput: 100 MiB fetched by curl from inside each sandbox, plain HTTP (the proxy
     * forwards the request) and HTTPS (a CONNECT tunnel: neither proxy terminates TLS for a host
     * no credential is bound to).
     */
    const curl = spawnSync('curl', ['--version'], { encoding: 'utf8' });
    if (curl.status !== 0) notes.push('proxy throughput skipped: no curl');
    else {
      const size = quick ? 16 * MiB : 100 * MiB;
      const tls = makeCertificate(work);
      if (!tls) notes.push('HTTPS rows skipped: openssl could not make a certificate');
      servers.push(await startServer(size));
      if (tls) servers.push(await startServer(size, tls));
      const [port, tlsPort] = servers.map((server) => server.address().port);
      const ports = tls ? `${port},${tlsPort}` : `${port}`;
      const fetchers = {
        direct: raw,
        ...(platform.ok ? { execgate: start('execgate-fetch', ports) } : {}),
        // `--baseline=DIR`: that build's gateway too, in the same interleaving (proxy rows only).
        ...(platform.ok && baseline ? { baseline: start('execgate-fetch', ports, baseline) } : {}),
      };
      await Promise.all(Object.values(fetchers).map((h) => h.ready));
      // `--no-peer`: execgate's rows alone (a shorter run while a change is measured).
      const peerFetch = peer.ok && !process.argv.includes('--no-peer') ? await peerReady(start('peer-fetch', ports), 'proxy', notes) : undefined;
      if (peerFetch) fetchers.peer = peerFetch;
      const rounds = quick ? 1 : 8;
      const sizeName = `${size / MiB} MiB`;
      const protocols = [
        { key: 'plain', label: 'plain HTTP', url: `http://127.0.0.1:${port}/body`, goals: { execgate: 'proxy-plain', cpu: 'proxy-cpu-vs-peer' } },
        ...(tls ? [{ key: 'tls', label: 'HTTPS, CONNECT tunnel', url: `https://127.0.0.1:${tlsPort}/body`, cacert: tls.cert, goals: { execgate: 'proxy-tunnel' } }] : []),
      ];
      for (const protocol of protocols) {
        const rates = Object.fromEntries(Object.keys(fetchers).map((name) => [name, []]));
        // curl's own transfer time (connect to last byte), beside the whole run's.
        const transfers = Object.fromEntries(Object.keys(fetchers).map((name) => [name, []]));
        const perMiB = Object.fromEntries(Object.keys(fetchers).map((name) => [name, { own: [], all: [] }]));
        log(`proxy, ${protocol.label}: ${rounds} interleaved ${sizeName} downloads of ${Object.keys(fetchers).join(', ')}`);
        await interleave(Object.fromEntries(Object.entries(fetchers).map(([name, helper]) => [name, async () => {
          const answer = await helper.ask({ op: 'run', what: 'fetch', url: protocol.url, cacert: protocol.cacert });
          const [bytes, seconds] = String(answer.out).trim().split(' ');
          if (Number(bytes) !== size) throw new Error(`${name}: curl got ${bytes} bytes of ${size}`);
          rates[name].push(size / 1e6 / (answer.ms / 1000));
          transfers[name].push(size / 1e6 / Number(seconds));
        }])), {
          iterations: rounds,
          warmup: 1,
          after: async (name, kept) => {
            await pause(100);
            const used = await fetchers[name].ask({ op: 'cpu' });
            if (kept) {
              perMiB[name].own.push(used.own / (size / MiB));
              perMiB[name].all.push(used.all / (size / MiB));
            } else {
              rates[name].pop();
              transfers[name].pop();
            }
          },
        });
        const what = `${sizeName} ${protocol.label}`;
        const direct = { name: 'curl direct', samples: rates.direct };
        rows.push(row(14, `proxy: ${what}, curl direct (MB/s)`, rates.direct, { unit: 'MB/s' }));
        if (rates.execgate) rows.push(row(14, `proxy: ${what}, curl in an execgate sandbox through its proxy (MB/s)`, rates.execgate, { unit: 'MB/s', of: direct, higherIsBetter: true, goal: protocol.goals.execgate }));
        if (rates.peer) rows.push(row(14, `proxy: ${what}, curl in a sandbox-runtime sandbox through its proxy (MB/s)`, rates.peer, { unit: 'MB/s', of: direct, higherIsBetter: true, peerOf: protocol.goals.execgate }));
        if (rates.baseline) {
          rows.push(row(14, `proxy: ${what}, curl in an execgate sandbox through its proxy [baseline] (MB/s)`, rates.baseline, { unit: 'MB/s', of: direct, higherIsBetter: true }));
          rows.push(row(14, `proxy: ${what}: this tree against the baseline (MB/s)`, rates.execgate, { unit: 'MB/s', of: { name: 'baseline', samples: rates.baseline }, higherIsBetter: true }));
        }
        // The rows above time the whole run (a sandboxed run's start and curl's own start in it);
        // these take curl's transfer time alone (connect to last byte), as figure 8's end-to-end rows do.
        const directTransfer = { name: 'curl direct', samples: transfers.direct };
        rows.push(row(14, `proxy: ${what}, curl's transfer time: curl direct (MB/s)`, transfers.direct, { unit: 'MB/s' }));
        for (const [name, label] of [['execgate', 'execgate'], ['baseline', 'execgate [baseline]'], ['peer', 'sandbox-runtime']]) {
          if (transfers[name]) rows.push(row(14, `proxy: ${what}, curl's transfer time: ${label} (MB/s)`, transfers[name], { unit: 'MB/s', of: directTransfer, higherIsBetter: true }));
        }
        rows.push(row(14, `proxy CPU per MiB, ${protocol.label}: curl direct (ms/MiB)`, perMiB.direct.all, { unit: 'ms/MiB' }));
        for (const [name, label] of [['execgate', 'execgate'], ['baseline', 'execgate [baseline]'], ['peer', 'sandbox-runtime']]) {
          if (!rates[name]) continue;
          rows.push(row(14, `proxy CPU per MiB, ${protocol.label}: ${label}, the proxy's process (ms/MiB)`, perMiB[name].own, { unit: 'ms/MiB' }));
          rows.push(row(14, `proxy CPU per MiB, ${protocol.label}: ${label}, the proxy's process + sandbox + relay + curl (ms/MiB)`, perMiB[name].all, { unit: 'ms/MiB', of: { name: 'curl direct', samples: perMiB.direct.all } }));
        }
        if (rates.baseline) {
          rows.push(row(14, `proxy CPU per MiB, ${protocol.label}, the proxy's process: this tree against the baseline`, perMiB.execgate.own, { unit: 'ms/MiB', of: { name: 'baseline', samples: perMiB.baseline.own } }));
          rows.push(row(14, `proxy CPU per MiB, ${protocol.label}, everything but the server: this tree against the baseline`, perMiB.execgate.all, { unit: 'ms/MiB', of: { name: 'baseline', samples: perMiB.baseline.all } }));
        }
        if (rates.execgate && rates.peer) {
          rows.push(row(14, `proxy, ${protocol.label}: execgate against sandbox-runtime (throughput)`, rates.execgate, { unit: 'MB/s', of: { name: 'sandbox-runtime', samples: rates.peer }, higherIsBetter: true }));
          rows.push(row(14, `proxy CPU per MiB, ${protocol.label}, everything but the server: execgate against sandbox-runtime`, perMiB.execgate.all, { unit: 'ms/MiB', of: { name: 'sandbox-runtime', samples: perMiB.peer.all }, goal: protocol.goals.cpu }));
          rows.push(row(14, `proxy CPU per MiB, ${protocol.label}, the proxy's process alone: execgate against sandbox-runtime`, perMiB.execgate.own, { unit: 'ms/MiB', of: { name: 'sandbox-runtime', samples: perMiB.peer.own } }));
        }
      }
    }
  } finally {
    await Promise.all(helpers.map((h) => h.close()));
    for (const server of servers) server.close();
    rmSync(scratch, { recursive: true, force: true });
  }
  notes.push(
    'Peer figure: both sandboxed, both with their defaults. Library rows: each library in a process of its own, warm where it is warm (execgate\'s gateway and warm sandbox, sandbox-runtime initialized once with its proxies up); a pause follows every run, and the CPU of a run is read after it. CLI rows: a fresh process per run, nothing warm for either.',
    'What each one\'s sandbox is: execgate\'s default policy (bubblewrap: pid, net, ipc, uts namespaces, a seccomp filter, a file-system view with credential paths hidden, audit records of the run); sandbox-runtime\'s defaults (bubblewrap: pid, net namespaces, its seccomp filter, writes denied, its deny-path scan of the working directory, two socat relays started in every sandbox). The working directory is an empty directory for both.',
    'Proxy rows: execgate dials its allowed host name at the local server; sandbox-runtime\'s allowlist names the server\'s address and port (it refuses loopback by name). Plain HTTP through each one\'s HTTP proxy, from curl inside the sandbox.',
  );
  return { rows, notes, sandbox: 'on' };
}

const figure = { id: 14, title: 'The peer: execgate against @anthropic-ai/sandbox-runtime (library, CLI, proxy)', run };
module.exports = figure;
if (require.main === module) {
  const at = process.argv.indexOf('--helper');
  if (at >= 0) {
    helperMain(process.argv[at + 1], process.argv[at + 2], process.argv[at + 3]).catch((error) => {
      process.stdout.write(`${JSON.stringify({ error: error.stack || String(error) })}\n`);
      process.exit(1);
    });
  } else runFigure(figure);
}
