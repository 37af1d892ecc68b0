'use strict';
/*
 * Figure 10: the shell reader. Reading (readShell: commands, token contexts, uncertain, sinks) a
 * 1 MB script with 10,000 reference tokens (10,000 statements of the kinds that carry credentials:
 * requests, cloud and database clients, heredocs, loops, case, pipelines; no padding), and commands of 1k/2k/4k/8k tokens, heredocs and
 * nesting levels (blocks of 200 nested `$(...)`), interleaved, so the per-token, per-heredoc and
 * per-level cost shows whether reading is linear (the ratio of each size to the smallest should
 * track the size ratio: 2, 4, 8). Also the policy regex rule of strict.yaml on a 130 KB hostile
 * command (RE2).
 *
 * Reading is synchronous and single-threaded, so the size rows give the process's CPU time
 * (process.cpuUsage) per read: on a loaded machine wall-clock time also counts the time other
 * processes held the CPU, which hides the growth being measured. The 1 MB row is given both ways.
 *
 *   npm run build && node bench/shell-reader.js [--quick]
 */
const { join } = require('node:path');
const { DIST, row, runFigure } = require('./lib');

function tokensCommand(count) {
  const parts = [];
  for (let index = 0; index < count; index++) parts.push(`echo "<<secret:s${index % 97}>>" x${index};`);
  return parts.join(' ');
}

/*
 * What an agent's long command looks like: a script of the statements that carry credentials
 * (requests with headers, cloud and database clients, registries, config files written from
 * heredocs, loops, conditionals, case, pipelines, command substitution, quoting of every kind),
 * one reference token in each, no padding. Statement i uses secret i % 97 and its own paths.
 */
const STATEMENTS = [
  (i, t) => `curl -sS --fail -H "Authorization: Bearer ${t}" "https://api.example.com/v1/items?page=${i}" | jq -r '.items[].id' >> ids-${i % 7}.txt`,
  (i, t) => `AWS_SECRET_ACCESS_KEY='${t}' aws s3 cp "build/artifact-${i}.tar.gz" "s3://releases/app/${i}/" --only-show-errors`,
  (i, t) => `if [ -f "config/site-${i}.env" ]; then sed -i "s/^TOKEN=.*/TOKEN=${t}/" "config/site-${i}.env"; else echo "skip ${i}" >&2; fi`,
  (i, t) => `for f in logs/run-${i}/*.log; do grep -c -- "${t}" "$f" || true; done`,
  (i, t) => `git -c http.extraHeader="Authorization: token ${t}" fetch origin "refs/heads/feature-${i}" --depth=1 --quiet`,
  (i, t) => `psql "postgres://app:${t}@db.internal:5432/app" -c "SELECT count(*) FROM events WHERE batch = ${i}" --no-psqlrc -At`,
  (i, t) => `cat > "deploy/env-${i}.json" <<EOF${i}\n{"token": "${t}", "build": "$(git rev-parse --short HEAD)", "n": ${i}}\nEOF${i}`,
  (i, t) => `docker login -u ci --password-stdin registry.example.com <<< "${t}" && docker push "registry.example.com/app:build-${i}"`,
  (i, t) => `digest=$(printf '%s' "${t}" | sha256sum | cut -c1-12); echo "key ${i}: \${digest}" >> digests.log`,
  (i, t) => `case "$STAGE" in prod) key='${t}' ;; staging-${i}) key="\${STAGING_KEY:-none}" ;; *) key=dev ;; esac`,
];

function scriptCommand(count) {
  const lines = [];
  for (let index = 0; index < count; index++) lines.push(STATEMENTS[index % STATEMENTS.length](index, `<<secret:s${index % 97}>>`));
  return `set -euo pipefail\n${lines.join('\n')}\n`;
}

function heredocsCommand(count) {
  const parts = [];
  for (let index = 0; index < count; index++) parts.push(`cat <<EOF${index}\nline <<secret:s${index % 97}>> $(date)\nEOF${index}\n`);
  return parts.join('');
}

function nestingCommand(levels, depth = 200) {
  const block = `${'echo $('.repeat(depth)}printf "<<secret:s1>>"${')'.repeat(depth)}`;
  return Array.from({ length: Math.ceil(levels / depth) }, () => block).join('; ');
}

/** Wall-clock milliseconds of each call. */
function time(fn, iterations) {
  const samples = [];
  for (let index = 0; index < iterations; index++) {
    const started = process.hrtime.bigint();
    fn();
    samples.push(Number(process.hrtime.bigint() - started) / 1e6);
  }
  return samples;
}

/** CPU milliseconds (user + system) of each call. */
function cpuTime(fn, iterations) {
  const samples = [];
  for (let index = 0; index < iterations; index++) {
    const started = process.cpuUsage();
    fn();
    const used = process.cpuUsage(started);
    samples.push((used.user + used.system) / 1000);
  }
  return samples;
}

async function run({ quick, log }) {
  const { readShell } = require(join(DIST, 'shell', 'index.js'));
  const { scanTokens } = require(join(DIST, 'refs', 'tokens.js'));
  const { loadPolicyFile } = require(join(DIST, 'policy', 'load.js'));
  const iterations = quick ? 3 : 25;
  const rows = [];
  const read = (text) => {
    const tokens = scanTokens(text);
    return () => readShell(text, tokens);
  };

  const big = scriptCommand(10_000);
  const bigTokens = scanTokens(big).length;
  if (bigTokens !== 10_000) throw new Error(`the 1 MB script has ${bigTokens} reference tokens, not 10,000`);
  log(`1 MB command: a ${big.split('\n').length}-line script, ${big.length} characters, ${bigTokens} tokens, no comment`);
  const readBig = read(big);
  readBig();
  rows.push(row(10, `read a ${(big.length / 1048576).toFixed(2)} MB script with 10,000 tokens (wall clock)`, time(readBig, iterations), { note: 'target < 100 ms' }));
  rows.push(row(10, `read a ${(big.length / 1048576).toFixed(2)} MB script with 10,000 tokens (CPU)`, cpuTime(readBig, iterations), { note: 'target < 100 ms' }));

  for (const [kind, build] of [['tokens', tokensCommand], ['heredocs', heredocsCommand], ['nesting levels', nestingCommand]]) {
    const sizes = [1000, 2000, 4000, 8000];
    const readers = sizes.map((size) => read(build(size)));
    readers.forEach((reader) => reader());
    const samples = sizes.map(() => []);
    for (let round = 0; round < iterations; round++) {
      readers.forEach((reader, index) => samples[index].push(...cpuTime(reader, 1)));
    }
    sizes.forEach((size, index) => {
      rows.push(row(10, `${size} ${kind} (CPU)`, samples[index], index === 0 ? {} : { of: { name: `${sizes[0]} ${kind} (size ratio ${size / sizes[0]})`, samples: samples[0] } }));
    });
  }

  // A 1 MB word of `[` (and of `{,`): the glob and brace test once took time quadratic in the word.
  for (const [label, word] of [['[', '['.repeat(1 << 20)], ['{,', '{,'.repeat(1 << 19)]]) {
    rows.push(row(10, `read a 1 MB word of \`${label}\` (CPU)`, cpuTime(() => readShell(`echo ${word}`), Math.min(iterations, 5))));
  }

  const strict = loadPolicyFile(join(__dirname, '..', 'policies', 'strict.yaml')).policy;
  const rule = strict.rules.list.find((each) => each.id === 'no-recursive-delete-of-root-or-home');
  const hostile = `rm ${'-r '.repeat(45_000)}x`;
  rows.push(row(10, `strict.yaml rm regex (RE2) on a ${Math.round(hostile.length / 1024)} KB hostile command`, time(() => rule.match.regex.matcher(hostile).find(), iterations)));
  return {
    sandbox: 'no run (reading only)',
    rows,
    notes: [
      'Reading is linear when each ratio stays near its size ratio (2, 4, 8).',
      'What the largest sizes add beyond that is the garbage collector promoting the growing analysis (run with node --max-semi-space-size=128 to see it shrink).',
    ],
  };
}

const figure = { id: 10, title: 'Shell reader: 1 MB / 10,000 tokens, and linear growth in tokens, heredocs and nesting', run, scriptCommand };
module.exports = figure;
if (require.main === module) runFigure(figure);
