'use strict';
/*
 * Figure 4: redaction throughput with 10, 100, 1,000 and 10,000 registered secrets (with all their
 * encoded forms), over 256 MiB of mixed text (smaller with --quick) in 64 KiB chunks, streamed:
 * log text, random bytes, base64 text, base64 wrapped at 76 columns and log text with a secret in
 * every chunk, one chunk of each in turn. The goal, at least 500 MB/s with 1,000 secrets, is
 * printed beside that row; the notes give the cost per byte at each count against 10 secrets
 * (sublinear growth is the goal). Then what adding one more secret costs at each size (add it and
 * redact a line: the matcher is built for it), alone and averaged over adding 256 in a row (the
 * top layer merged into the base when it fills, see src/redact/layers.ts). With 100 secrets the
 * redactor is also set against a single RegExp alternation of the same escaped literals
 * (latin1), the naive baseline. With --baseline=DIST, the redactor of another build (say, the
 * commit before a change) is measured too, interleaved. Samples of the variants alternate.
 * Last, what setting up a run's redactor costs a gateway that remembers 4,096 values from earlier
 * runs (src/redact/memory.ts): each run resolves one new value (remembered after it, the oldest
 * forgotten) and its redactor masks every remembered value too, registered one by one in the
 * run's own redactor (as every run did before the shared base) against the memory's shared
 * redactor taken as the run's base; one run of the first kind after every 16 of the second.
 *
 *   npm run build && node bench/redact.js [--quick] [--baseline=../other/dist]
 *   (EXECGATE_BENCH_SECRETS=10,1000 for those counts alone)
 */
const { cpus } = require('node:os');
const { join } = require('node:path');
const { DIST, row, runFigure, summarize } = require('./lib');

const CHUNK = 64 * 1024;
const GOAL_MBS = 500;
const GOAL_COUNT = 1000;

// Deterministic data, so runs are comparable.
let seed = 0x2545f491;
function random() {
  seed ^= seed << 13;
  seed ^= seed >>> 17;
  seed ^= seed << 5;
  return (seed >>> 0) / 0x100000000;
}
function pick(alphabet, length) {
  let text = '';
  for (let index = 0; index < length; index++) text += alphabet[Math.floor(random() * alphabet.length)];
  return text;
}

const ALNUM = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
// A mix like a real run's: API tokens, passwords with punctuation (these expand to the most
// spellings), JWTs, UUIDs and multi-line keys.
const KINDS = [
  () => `ghp_${pick(ALNUM, 36)}`,
  () => pick(`${ALNUM}/+`, 40),
  () => pick(`${ALNUM}!@#$%^&*()'" -_=:;,.?~<>`, 12 + Math.floor(random() * 20)),
  () => pick(`${ALNUM}!@#$%^&*()'" -_=:;,.?~<>`, 12 + Math.floor(random() * 20)),
  () => `eyJ${pick(`${ALNUM}-_`, 60)}.${pick(`${ALNUM}-_`, 40)}`,
  () => `${pick('0123456789abcdef', 8)}-${pick('0123456789abcdef', 4)}-4${pick('0123456789abcdef', 3)}-a${pick('0123456789abcdef', 3)}-${pick('0123456789abcdef', 12)}`,
  () => `-----BEGIN PRIVATE KEY-----\n${pick(`${ALNUM}/+`, 64)}\n${pick(`${ALNUM}/+`, 40)}=\n-----END PRIVATE KEY-----\n`,
];
// EXECGATE_BENCH_SECRETS=10,100 measures only those counts (the default is all four).
const COUNTS = (process.env.EXECGATE_BENCH_SECRETS || '10,100,1000,10000').split(',').map(Number);
const ADDED = 256;
const secrets = Array.from({ length: Math.max(...COUNTS) + 2 * ADDED + 16 }, (_, index) => KINDS[index % KINDS.length]());

const WORDS = 'the of and to in is that for it as was with be by on not he this are or his from at which but have an they you were her she there one all we their has been if more when will would who so no time info debug warn error GET POST 200 404 /usr/lib/node_modules request response build step npm install compiling done'.split(' ');
function logText(size) {
  const lines = [];
  let length = 0;
  while (length < size) {
    const words = Array.from({ length: 4 + Math.floor(random() * 12) }, () => WORDS[Math.floor(random() * WORDS.length)]);
    const line = `2024-05-0${1 + Math.floor(random() * 9)}T12:${pick('012345', 1)}${pick('0123456789', 1)}:07.${pick('0123456789', 3)}Z [${pick('0123456789abcdef', 8)}] ${words.join(' ')} id=${pick(ALNUM, 10)}\n`;
    lines.push(line);
    length += line.length;
  }
  return Buffer.from(lines.join('')).subarray(0, size);
}

let Redactor;
let MaskMemory;
let getEncodedForms;
const corpora = {};

function buildCorpora(size) {
  const randomBytes = (length) => Buffer.from(Array.from({ length }, () => Math.floor(random() * 256)));
  const randomBase64 = () => randomBytes((3 * size) / 4).toString('base64');
  Object.assign(corpora, {
    'log text': logText(size),
    'random bytes': randomBytes(size),
    'base64 text': Buffer.from(randomBase64()).subarray(0, size),
    'base64 wrapped at 76': Buffer.from(randomBase64().replace(/.{76}/g, '$&\n')).subarray(0, size),
  });
  // Same log text with one secret (in a random registered spelling) every ~64 KiB.
  const withHits = Buffer.from(corpora['log text']);
  for (let offset = 1000; offset + 400 < withHits.length; offset += CHUNK) {
    const forms = getEncodedForms(secrets[Math.floor(random() * 10)], { minLength: 8, encodings: true });
    withHits.write(forms[Math.floor(random() * forms.length)].text, offset, 'utf8');
  }
  corpora['log text, 1 secret per chunk'] = withHits;
}

/** One 64 KiB chunk of each corpus in turn. */
function mixedChunks() {
  const lists = Object.values(corpora).map(chunksOf);
  const chunks = [];
  for (let index = 0; index < lists[0].length; index++) for (const list of lists) if (index < list.length) chunks.push(list[index]);
  return chunks;
}

function chunksOf(corpus) {
  const chunks = [];
  for (let offset = 0; offset + CHUNK <= corpus.length; offset += CHUNK) chunks.push(corpus.subarray(offset, offset + CHUNK));
  return chunks;
}

/**
 * MB/s (10^6 bytes) of one sample of about `mib` MiB. Rates use the process's CPU time, so that
 * other load on the machine does not count against the code measured (GC helper threads do
 * count, which only lowers the figure).
 */
function sample(chunks, fn, mib) {
  const rounds = Math.max(1, Math.round((mib * 1024 * 1024) / (chunks.length * CHUNK)));
  const started = process.cpuUsage();
  for (let round = 0; round < rounds; round++) fn(chunks);
  const { user, system } = process.cpuUsage(started);
  return (rounds * chunks.length * CHUNK) / ((user + system) / 1e6) / 1e6;
}

/** A stream as a run's output goes through one (src/run/lifecycle.ts): pushTo where the build has it. */
function streamWith(redactor) {
  return (chunks) => {
    const stream = redactor.createStream();
    let bytes = 0;
    const sink = (piece) => { bytes += piece.length; };
    if (typeof stream.pushTo === 'function') for (const chunk of chunks) stream.pushTo(chunk, sink);
    else for (const chunk of chunks) bytes += stream.push(chunk).length;
    bytes += stream.flush().length;
    return bytes;
  };
}

function redactorOf(RedactorClass, count) {
  const redactor = new RedactorClass();
  secrets.slice(0, count).forEach((secret, index) => redactor.add(secret, `secret:s${index}`));
  redactor.redactString('compile');
  return redactor;
}

/**
 * ms of CPU to add `added` more secrets to a redactor of `count`, one at a time, each followed by a
 * redacted line (which builds what the added secret needs), per secret. A fresh redactor each
 * sample (built outside the timing), so every sample starts from the same state.
 */
function addCost(RedactorClass, count, added) {
  const redactor = redactorOf(RedactorClass, count);
  const extra = secrets.slice(count, count + added);
  const started = process.cpuUsage();
  extra.forEach((secret, index) => {
    redactor.add(secret, `secret:added${index}`);
    redactor.redactString('a line of output');
  });
  const { user, system } = process.cpuUsage(started);
  return (user + system) / 1000 / added;
}

function alternationsOf(count) {
  const literals = [];
  for (const secret of secrets.slice(0, count)) {
    for (const { text } of getEncodedForms(secret, { minLength: 8, encodings: true })) literals.push(Buffer.from(text, 'utf8').toString('latin1'));
  }
  const unique = [...new Set(literals)];
  const escape = (text) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  const alternationOf = (texts) => {
    const pattern = new RegExp(texts.map(escape).join('|'), 'g');
    return (chunks) => {
      let found = 0;
      for (const chunk of chunks) {
        const text = chunk.toString('latin1');
        pattern.lastIndex = 0;
        while (pattern.exec(text) !== null) found++;
      }
      return found;
    };
  };
  // V8 runs an alternation of up to roughly 12,000 characters of literals as fast native code and
  // falls off a cliff above that; a subset that fits shows the RegExp at its best (with far fewer
  // patterns than the redactor handles).
  const fitting = [];
  for (let index = 0, size = 0; index < unique.length && size + unique[index].length <= 12000; index++) {
    fitting.push(unique[index]);
    size += unique[index].length + 1;
  }
  return { all: alternationOf(unique), small: alternationOf(fitting), literals: unique.length, fitting: fitting.length };
}

const REMEMBERED = 4096;

/**
 * ms of CPU to set up a run's redactor (its own value registered, every remembered one masked too,
 * compiled by a first line of output), at a full memory of `size` values: `registered` runs
 * register each remembered value in the run's redactor; the others take the memory's shared
 * redactor as their base. After each run its value is remembered (and the oldest forgotten).
 */
function rememberedSetup(size, { runs, registered }) {
  const memory = new MaskMemory(size);
  const value = () => KINDS[Math.floor(random() * KINDS.length)]();
  for (let index = 0; index < size; index++) memory.remember(value(), `secret:r${index}`);
  let started = process.cpuUsage();
  memory.getShared(8);
  const first = process.cpuUsage(started);
  const shared = [];
  const each = [];
  for (let index = 0; index < runs; index++) {
    const register = index % 17 === 16 && each.length < registered;
    const own = value();
    started = process.cpuUsage();
    const redactor = new Redactor({ minLength: 8 });
    redactor.add(own, 'secret:own');
    if (register) {
      for (const [remembered, label] of memory.entries()) if (remembered.length >= 8) redactor.add(remembered, label);
    } else redactor.setBase(memory.getShared(8));
    redactor.redactString('a line of output');
    const { user, system } = process.cpuUsage(started);
    (register ? each : shared).push((user + system) / 1000);
    memory.remember(own, `secret:run${index}`);
  }
  return { first: (first.user + first.system) / 1000, shared, each };
}

async function run({ quick, baseline, log }) {
  ({ Redactor, MaskMemory, getEncodedForms } = require(join(DIST, 'redact', 'index.js')));
  const Baseline = baseline ? require(join(baseline, 'redact', 'index.js')).Redactor : undefined;
  buildCorpora(quick ? 1024 * 1024 : 4 * 1024 * 1024);
  const chunks = mixedChunks();
  log(`node ${process.version}, ${cpus().length} CPUs, ${CHUNK / 1024} KiB chunks, mixed text of ${Object.keys(corpora).length} kinds${baseline ? `, baseline ${baseline}` : ''}`);
  const samples = quick ? 3 : 8;
  // 256 MiB of mixed text per variant and count in the full run.
  const mib = quick ? { ours: 8, baseline: 8, all: 1 } : { ours: 32, baseline: 32, all: 2 };
  const rows = [];
  const medians = new Map();
  for (const count of COUNTS) {
    const ours = redactorOf(Redactor, count);
    const base = Baseline ? redactorOf(Baseline, count) : undefined;
    // The RegExp alternation takes minutes with 1,000 secrets: it is measured at 100.
    const regexps = count === 100 ? alternationsOf(count) : undefined;
    log(`${count} secrets: ${ours.patternCount} patterns${base ? ` (baseline: ${base.patternCount})` : ''}`);
    const variants = { ours: streamWith(ours), ...(base ? { baseline: streamWith(base) } : {}), ...(regexps ? { all: regexps.all } : {}) };
    for (const fn of Object.values(variants)) fn(chunks.slice(0, 16)); // warm-up
    const rates = Object.fromEntries(Object.keys(variants).map((key) => [key, []]));
    for (let i = 0; i < samples; i++) {
      const keys = Object.keys(variants);
      for (let k = 0; k < keys.length; k++) {
        const key = keys[(i + k) % keys.length];
        rates[key].push(sample(chunks, variants[key], mib[key]));
      }
    }
    // The row's median (lib.js summarize), so that the notes' verdict and growth read the same figure as the row.
    medians.set(count, summarize(rates.ours).median);
    if (regexps) rows.push(row(4, `mixed text: RegExp alternation of all ${regexps.literals} literals (${count} secrets)`, rates.all, { unit: 'MB/s' }));
    if (base) rows.push(row(4, `mixed text: baseline build, ${count} secrets, ${base.patternCount} patterns`, rates.baseline, { unit: 'MB/s' }));
    // The goal (bench/goals.js, redact-1000) is an absolute rate: the row names it, and the notes
    // say met or missed. A ratio beside it would be held against the rate's target (a ratio of
    // 0.96x "missing" 500), so the goal's row has none and the ratio to the baseline is a row of its own.
    const against = base ? { of: { name: 'baseline', samples: rates.baseline } } : regexps ? { of: { name: 'RegExp of all', samples: rates.all } } : {};
    const goalRow = count === GOAL_COUNT;
    rows.push(row(4, `mixed text: redactor, ${count} secrets, ${ours.patternCount} patterns`, rates.ours, {
      unit: 'MB/s',
      ...(goalRow ? { goal: 'redact-1000' } : against),
    }));
    if (goalRow && against.of) rows.push(row(4, `mixed text at ${count} secrets: this build against ${against.of.name === 'baseline' ? 'the baseline build' : 'the RegExp'}`, rates.ours, { unit: 'MB/s', ...against }));
  }
  // What one more secret costs, and 256 more one at a time (merges included), at each size.
  for (const count of COUNTS) {
    const addSamples = quick ? 3 : 5;
    const one = { ours: [], baseline: [] };
    const many = [];
    for (let i = 0; i < addSamples; i++) {
      one.ours.push(addCost(Redactor, count, 1));
      if (Baseline) one.baseline.push(addCost(Baseline, count, 1));
      many.push(addCost(Redactor, count, quick ? 64 : ADDED));
    }
    if (Baseline) rows.push(row(4, `adding one secret to ${count}: baseline build`, one.baseline, { unit: 'ms CPU' }));
    rows.push(row(4, `adding one secret to ${count}`, one.ours, { unit: 'ms CPU', ...(Baseline ? { of: { name: 'baseline', samples: one.baseline } } : {}) }));
    rows.push(row(4, `adding ${quick ? 64 : ADDED} secrets to ${count} one at a time, per secret`, many, { unit: 'ms CPU' }));
  }
  // A run's redactor at a full memory of remembered values, registered in it or shared (see the header).
  const size = quick ? 512 : REMEMBERED;
  const setup = rememberedSetup(size, quick ? { runs: 40, registered: 2 } : { runs: 300, registered: 6 });
  const mean = (samples) => samples.reduce((sum, each) => sum + each, 0) / samples.length;
  rows.push(row(4, `a run's redactor with ${size} remembered values registered in it (each run before the shared base)`, setup.each, { unit: 'ms CPU' }));
  rows.push(row(4, `a run's redactor with the ${size} remembered values as its base (memory.getShared), a new value each run`, setup.shared, {
    unit: 'ms CPU',
    of: { name: 'registered in it', samples: setup.each },
  }));
  const first = medians.get(COUNTS[0]);
  const growth = COUNTS.map((count) => `${count}: ${(first / medians.get(count)).toFixed(2)}x`).join(', ');
  return {
    rows,
    notes: [
      'Rates use the process CPU time of each sample (MB = 10^6 bytes); adding costs are ms of process CPU per secret.',
      `Cost per byte against ${COUNTS[0]} secrets (median rates): ${growth}.`,
      ...(medians.has(GOAL_COUNT) ? [`Goal: ${GOAL_COUNT} secrets at >= ${GOAL_MBS} MB/s: ${medians.get(GOAL_COUNT).toFixed(0)} MB/s, ${medians.get(GOAL_COUNT) >= GOAL_MBS ? 'met' : 'MISSED'}.`] : []),
      `A run's redactor at ${size} remembered values, with the shared base: median ${[...setup.shared].sort((a, b) => a - b)[Math.floor(setup.shared.length / 2)].toFixed(2)} ms, mean ${mean(setup.shared).toFixed(2)} ms of CPU over ${setup.shared.length} runs (the shared redactor's merges included); the shared redactor's first build ${setup.first.toFixed(0)} ms, once per gateway.`,
      ...(baseline ? ['With --baseline, the ratios are against the baseline build, measured interleaved in the same process.'] : []),
    ],
  };
}

const figure = { id: 4, title: 'Redaction throughput and the cost of adding a secret, 10 to 10,000 secrets', run };
module.exports = figure;
if (require.main === module) runFigure(figure);
