'use strict';
/*
 * Figure 4: redaction throughput with 1, 100 and 1,000 registered secrets (with all their encoded
 * forms), over 64 KiB chunks of mostly non-matching data: log text, random bytes, base64 text,
 * base64 wrapped at 76 columns, and log text with a secret in every chunk. With 100 secrets the
 * redactor is also set against a single RegExp alternation of the same escaped literals (latin1),
 * the naive baseline, and against the largest alternation V8 still runs as fast native code.
 * With --baseline=DIST, the redactor of another build (say, the commit before a change) is
 * measured too, interleaved, for every count and corpus. Samples of the variants alternate.
 *
 *   npm run build && node bench/redact.js [--quick] [--baseline=../other/dist]
 *   (EXECGATE_BENCH_SECRETS=1 for the 1-secret rows alone)
 */
const { cpus } = require('node:os');
const { join } = require('node:path');
const { DIST, row, runFigure } = require('./lib');

const CHUNK = 64 * 1024;

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
// EXECGATE_BENCH_SECRETS=1,100 measures only those counts (the default is all three).
const COUNTS = (process.env.EXECGATE_BENCH_SECRETS || '1,100,1000').split(',').map(Number);
const secrets = Array.from({ length: 1000 }, (_, index) => KINDS[index % KINDS.length]());

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
let getEncodedForms;
const corpora = {};

function buildCorpora() {
  const randomBase64 = () => Buffer.from(Array.from({ length: 3 * 1024 * 1024 }, () => Math.floor(random() * 256))).toString('base64');
  Object.assign(corpora, {
    'log text': logText(4 * 1024 * 1024),
    'random bytes': Buffer.from(Array.from({ length: 4 * 1024 * 1024 }, () => Math.floor(random() * 256))),
    'base64 text': Buffer.from(randomBase64()).subarray(0, 4 * 1024 * 1024),
    'base64 wrapped at 76': Buffer.from(randomBase64().replace(/.{76}/g, '$&\n')).subarray(0, 4 * 1024 * 1024),
  });
  // Same log text with one secret (in a random registered spelling) every ~64 KiB.
  const withHits = Buffer.from(corpora['log text']);
  for (let offset = 1000; offset + 400 < withHits.length; offset += CHUNK) {
    const forms = getEncodedForms(secrets[Math.floor(random() * 100)], { minLength: 8, encodings: true });
    withHits.write(forms[Math.floor(random() * forms.length)].text, offset, 'utf8');
  }
  corpora['log text, 1 secret per chunk'] = withHits;
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

function streamWith(redactor) {
  return (chunks) => {
    const stream = redactor.createStream();
    let bytes = 0;
    for (const chunk of chunks) bytes += stream.push(chunk).length;
    bytes += stream.flush().length;
    return bytes;
  };
}

function redactorOf(RedactorClass, count) {
  const redactor = new RedactorClass();
  secrets.slice(0, count).forEach((secret, index) => redactor.add(secret, `secret:s${index}`));
  return redactor;
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

async function run({ quick, baseline, log }) {
  ({ Redactor, getEncodedForms } = require(join(DIST, 'redact', 'index.js')));
  const Baseline = baseline ? require(join(baseline, 'redact', 'index.js')).Redactor : undefined;
  buildCorpora();
  log(`node ${process.version}, ${cpus().length} CPUs, ${CHUNK / 1024} KiB chunks${baseline ? `, baseline ${baseline}` : ''}`);
  const samples = quick ? 3 : 7;
  const mib = quick ? { ours: 8, baseline: 8, all: 1, small: 2 } : { ours: 48, baseline: 48, all: 4, small: 16 };
  const rows = [];
  // The quick (smoke) run takes one corpus and 1 MiB of it.
  const names = quick ? ['log text, 1 secret per chunk'] : Object.keys(corpora);
  for (const count of COUNTS) {
    const ours = redactorOf(Redactor, count);
    const base = Baseline ? redactorOf(Baseline, count) : undefined;
    // The RegExp alternations take minutes with 1,000 secrets: they are measured at 100.
    const regexps = count === 100 ? alternationsOf(count) : undefined;
    log(`${count} secrets: ${ours.patternCount} patterns${base ? ` (baseline: ${base.patternCount})` : ''}`);
    for (const name of names) {
      const chunks = chunksOf(corpora[name]).slice(0, quick ? 16 : undefined);
      const variants = { ours: streamWith(ours), ...(base ? { baseline: streamWith(base) } : {}), ...(regexps ? { all: regexps.all, small: regexps.small } : {}) };
      for (const fn of Object.values(variants)) fn(chunks); // warm-up
      const rates = Object.fromEntries(Object.keys(variants).map((key) => [key, []]));
      for (let i = 0; i < samples; i++) {
        const keys = Object.keys(variants);
        for (let k = 0; k < keys.length; k++) {
          const key = keys[(i + k) % keys.length];
          rates[key].push(sample(chunks, variants[key], mib[key]));
        }
      }
      if (regexps) {
        rows.push(row(4, `${name}: RegExp alternation of all ${regexps.literals} literals (${count} secrets)`, rates.all, { unit: 'MB/s' }));
        rows.push(row(4, `${name}: RegExp alternation of ${regexps.fitting} (V8's fast path)`, rates.small, { unit: 'MB/s' }));
      }
      if (base) rows.push(row(4, `${name}: baseline redactor, ${count} secrets, ${base.patternCount} patterns`, rates.baseline, { unit: 'MB/s' }));
      rows.push(row(4, `${name}: redactor, ${count} secrets, ${ours.patternCount} patterns`, rates.ours, {
        unit: 'MB/s',
        ...(base
          ? { of: { name: 'baseline', samples: rates.baseline }, target: 0.9, higherIsBetter: true }
          : regexps ? { of: { name: 'RegExp of all', samples: rates.all } } : {}),
      }));
    }
  }
  return { rows, notes: ['Rates use the process CPU time of each sample (MB = 10^6 bytes).', ...(baseline ? ['With --baseline, the target is at most 10 % slower than the baseline build (ratio >= 0.9).'] : [])] };
}

const figure = { id: 4, title: 'Redaction throughput, 1, 100 and 1,000 secrets', run };
module.exports = figure;
if (require.main === module) runFigure(figure);
