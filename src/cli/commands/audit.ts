/*
 * `execgate audit search|show|stats|verify|report`: review the audit log. Every subcommand
 * streams the files (bounded memory over millions of records and rotated files); by default it
 * reads `$EXECGATE_HOME/audit.log` and the files rotated out of it, oldest first.
 */
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Command } from 'commander';
import { ExecgateError, isExecgateError } from '../../errors';
import { getHome } from '../../home';
import { listAuditFiles, orderAuditFiles } from '../../audit/files';
import type * as Format from '../../audit/format';
import { getAuditKeyPath, loadAuditKeys, type AuditKeys } from '../../audit/key';
import type * as Query from '../../audit/query';
import type { SearchFilter } from '../../audit/query';
import type * as Report from '../../audit/report';
import type * as Stats from '../../audit/stats';
import type { AuditStats } from '../../audit/stats';
import type * as Compare from '../../audit/compare';
import type { CompareResult } from '../../audit/compare';
import type * as Verify from '../../audit/verify';
import type { VerifyResult } from '../../audit/verify';
import { CliExit, type CliIo, usageError } from '../io';

/*
 * The review code (search, stats, verify, report) is loaded when an audit command runs, not
 * when the CLI starts: `execgate run` never needs it and starts faster without it.
 */
const format = (): typeof Format => require('../../audit/format') as typeof Format;
const query = (): typeof Query => require('../../audit/query') as typeof Query;
const escapeTerminal: typeof Format.escapeTerminal = (...args) => format().escapeTerminal(...args);
const formatTableHeader: typeof Format.formatTableHeader = (...args) => format().formatTableHeader(...args);
const formatTableRow: typeof Format.formatTableRow = (...args) => format().formatTableRow(...args);
const formatRunStory: typeof Format.formatRunStory = (...args) => format().formatRunStory(...args);
const parseTimeSpec: typeof Query.parseTimeSpec = (...args) => query().parseTimeSpec(...args);
const searchAudit: typeof Query.searchAudit = (...args) => query().searchAudit(...args);
const buildHtmlReport: typeof Report.buildHtmlReport = (...args) => (require('../../audit/report') as typeof Report).buildHtmlReport(...args);
const collectStats: typeof Stats.collectStats = (...args) => (require('../../audit/stats') as typeof Stats).collectStats(...args);
const verifyAuditFiles: typeof Verify.verifyAuditFiles = (...args) => (require('../../audit/verify') as typeof Verify).verifyAuditFiles(...args);
const compareAuditCopies: typeof Compare.compareAuditCopies = (...args) => (require('../../audit/compare') as typeof Compare).compareAuditCopies(...args);

interface FileFlags {
  file?: string[];
}

interface PeriodFlags extends FileFlags {
  since?: string;
  until?: string;
}

interface SearchFlags extends PeriodFlags {
  event?: string[];
  ref?: string;
  command?: string;
  denied?: boolean;
  failed?: boolean;
  actor?: string;
  all?: boolean;
  json?: boolean;
}

function collect(value: string, previous: string[] | undefined): string[] {
  return [...(previous ?? []), ...value.split(',').filter((item) => item !== '')];
}

/** The files to read: the ones named, in chain order, or the default log set. */
function getFiles(io: CliIo, named: readonly string[] | undefined): string[] {
  if (named !== undefined && named.length > 0) {
    for (const file of named) {
      if (!existsSync(file)) throw new ExecgateError('EXECGATE_ERR_AUDIT_NOT_FOUND', `The audit file \`${file}\` does not exist.`, { path: file });
    }
    return orderAuditFiles(named);
  }
  const active = join(getHome(io.env), 'audit.log');
  const files = listAuditFiles(active, existsSync);
  if (files.length === 0) {
    throw new ExecgateError('EXECGATE_ERR_AUDIT_NOT_FOUND', `No audit log at \`${active}\` (nor files rotated from it). Set EXECGATE_HOME, or name files with --file.`, { path: active });
  }
  return files;
}

function getPeriod(flags: PeriodFlags): SearchFilter {
  const filter: SearchFilter = {};
  if (flags.since !== undefined) filter.since = parseTimeSpec(flags.since, '--since');
  if (flags.until !== undefined) filter.until = parseTimeSpec(flags.until, '--until');
  return filter;
}

function getKeys(io: CliIo, keyFile: string | undefined, required: boolean): AuditKeys | undefined {
  try {
    if (keyFile !== undefined) return loadAuditKeys({ keyPath: keyFile, env: {} });
    return loadAuditKeys({ env: io.env, keyPath: getAuditKeyPath(getHome(io.env)) });
  } catch (error) {
    if (!required && isExecgateError(error) && error.code === 'EXECGATE_ERR_AUDIT_KEY_MISSING') return undefined;
    throw error;
  }
}

function fileOption(command: Command): Command {
  return command.option('--file <files...>', 'read these audit files instead of $EXECGATE_HOME/audit.log and its rotated files');
}

function periodOptions(command: Command): Command {
  return command
    .option('--since <time>', 'from this time: ISO date/time, or a duration back from now (30m, 24h, 7d)')
    .option('--until <time>', 'before this time (same forms)');
}

function where(problem: { file: string; line: number; seq?: number }): string {
  return `${problem.file} line ${problem.line}${problem.seq !== undefined ? ` (seq ${problem.seq})` : ''}`;
}

/** The verdict lines; `vouched` when something outside the local files speaks for the newest record. */
function printVerify(io: CliIo, result: VerifyResult, vouched: boolean): void {
  const out = (text: string) => io.stdout.write(`${text}\n`);
  out(`${result.files.length} file(s), ${result.records} record(s)${result.firstSeq !== undefined ? `, seq ${result.firstSeq} to ${result.lastSeq}` : ''}, audit key id ${result.keyId}`);
  for (const file of result.files) {
    out(`  ${file.file}: ${file.records} record(s)${file.firstSeq !== undefined ? `, seq ${file.firstSeq} to ${file.lastSeq}` : ''}`);
  }
  for (const note of result.notes) out(`note: ${where(note)}: ${note.reason}`);
  if (result.wrongKey.length > 0) {
    const ids = [...new Set(result.wrongKey.map((file) => file.keyId ?? 'not named'))].join(', ');
    const records = result.wrongKey.reduce((sum, file) => sum + file.records, 0);
    out(`WRONG KEY: ${records} record(s) in ${result.wrongKey.map((file) => file.file).join(', ')} were sealed under audit key id ${ids}, but the key at hand has id ${result.keyId}; nothing in them could be checked. Verify with the key the log was written under (--key-file, or EXECGATE_AUDIT_KEY).`);
  }
  if (result.ok) {
    out(`OK: the chain is intact${result.lastHash ? ` (last hash ${result.lastHash})` : ''}.`);
    if (!vouched) {
      out(`Not visible to verify: records cut off after seq ${result.lastSeq} at a record boundary, or a whole log set replaced by someone holding the audit key. Compare with a copy the host cannot rewrite (\`execgate audit verify --against COLLECTOR-FILE\`) or with a last hash recorded elsewhere.`);
    }
    return;
  }
  if (result.records === 0 && result.breakCount === 0) {
    out('BROKEN: no audit records in the files read.');
    return;
  }
  if (result.breakCount === 0) return;
  const [first, ...rest] = result.breaks;
  out(`BROKEN: ${where(first)}: ${first.reason}`);
  if (result.breakCount > 1) out(`${result.breakCount - 1} more break(s) after it${rest.length < result.breakCount - 1 ? `, the next ${rest.length} listed` : ''}:`);
  for (const problem of rest) out(`  ${where(problem)}: ${problem.reason}`);
}

function printCompare(io: CliIo, result: CompareResult, copyFiles: readonly string[]): void {
  const out = (text: string) => io.stdout.write(`${text}\n`);
  const copyName = copyFiles.join(', ');
  out(`against ${copyName}: ${result.copy} record(s) there${result.copyLastSeq !== undefined ? ` (up to seq ${result.copyLastSeq})` : ''}, ${result.local} here${result.localLastSeq !== undefined ? ` (up to seq ${result.localLastSeq})` : ''}${result.copyNotRecords ? `; ${result.copyNotRecords} line(s) there are not records` : ''}`);
  if (result.firstMissing !== undefined) {
    const tail = result.localLastSeq === undefined || result.firstMissing.seq > result.localLastSeq;
    out(`MISSING: seq ${result.firstMissing.seq} (${result.firstMissing.file} line ${result.firstMissing.line}) is in the copy but not in the local log${tail ? ': the newest local records were cut off, or the local log set was removed' : ': records were deleted locally'} (${result.missing} record(s) missing in all).`);
  }
  if (result.firstDiffering !== undefined) {
    const d = result.firstDiffering;
    out(`DIFFERS: seq ${d.seq} is not the same record here (${d.localFile} line ${d.localLine}) as in the copy (${d.file} line ${d.line}): edited locally, or the local chain was restarted (${result.differing} record(s) differ in all).`);
  }
  if (result.firstExtra !== undefined) {
    out(`note: seq ${result.firstExtra.seq} (${result.firstExtra.file} line ${result.firstExtra.line}) is only in the local log: the copy lags or missed it while the collector was unreachable (${result.extra} record(s) only here).`);
  }
  if (result.ok) out(`OK: every record the copy holds is in the local log, byte for byte.`);
}

function printStats(io: CliIo, stats: AuditStats): void {
  const out = (text: string) => io.stdout.write(`${text}\n`);
  out(`period    ${stats.firstTime ?? '-'} to ${stats.lastTime ?? '-'}`);
  out(`records   ${stats.records}`);
  out(`runs      ${stats.runs}`);
  const section = (title: string, counts: Record<string, number>) => {
    out(`\n${title}:`);
    const entries = Object.entries(counts);
    if (entries.length === 0) out('  (none)');
    for (const [key, count] of entries) out(`  ${String(count).padStart(8)}  ${escapeTerminal(key)}`);
  };
  section('by event', stats.events);
  section('by decision', stats.decisions);
  section('by exit status', stats.exits);
  out(`\ntop commands${stats.topCommandsApproximate ? ' (approximate)' : ''}:`);
  if (stats.topCommands.length === 0) out('  (none)');
  for (const entry of stats.topCommands) out(`  ${String(entry.runs).padStart(8)}  ${escapeTerminal(entry.command.length > 150 ? `${entry.command.slice(0, 149)}…` : entry.command)}`);
  out('\nsecrets used (by name):');
  if (stats.secrets.length === 0) out('  (none)');
  for (const use of stats.secrets) {
    const sources = Object.entries(use.sources).map(([source, n]) => `${source} ${n}`).join(', ');
    out(`  ${String(use.runs).padStart(8)}  ${escapeTerminal(use.ref)}  found ${use.found}, not found ${use.notFound}, denied ${use.denied}, rejected ${use.rejected}${sources ? `, from ${escapeTerminal(sources)}` : ''}, ${use.fingerprints} distinct value(s)`);
  }
  if (stats.actors.length > 0) {
    out('\nactors:');
    for (const actor of stats.actors) out(`  ${String(actor.runs).padStart(8)}  ${escapeTerminal(actor.actor)}`);
  }
}

export function registerAuditCommands(program: Command, io: CliIo): void {
  const audit = program
    .command('audit')
    .description('Review the tamper-evident audit log: search, show a run, stats, verify the hash chain, HTML report');

  const search = audit
    .command('search')
    .description('List runs (and other events) that match every filter given: a table, or the matching records as JSON lines with --json');
  periodOptions(search)
    .option('--event <name>', 'a run that includes this event (repeatable or comma-separated; `exec.*` matches a prefix)', collect)
    .option('--ref <name>', 'a request that named this reference, allowed, denied or rejected: NAME, secret:NAME or <<secret:NAME>>')
    .option('--command <regex>', 'a run whose unresolved command matches this JavaScript regular expression')
    .option('--denied', 'runs the policy denied')
    .option('--failed', 'runs that failed: refused as invalid, failed to start, non-zero exit, killed or timed out')
    .option('--actor <text>', 'runs whose actor contains this text')
    .option('--all', 'include gateway start/stop records (left out unless --all or --event asks for them)')
    .option('--json', 'print the matching records as stored, one JSON object per line');
  fileOption(search).action(async (flags: SearchFlags) => {
    const filter = getPeriod(flags);
    if (flags.event !== undefined) filter.events = flags.event;
    if (!flags.all && flags.event === undefined) filter.hideLifecycle = true;
    if (flags.ref !== undefined) filter.ref = flags.ref;
    if (flags.actor !== undefined) filter.actor = flags.actor;
    if (flags.denied) filter.denied = true;
    if (flags.failed) filter.failed = true;
    if (flags.command !== undefined) {
      try {
        filter.command = new RegExp(flags.command);
      } catch (error) {
        throw usageError(`Expected \`--command\` to be a regular expression: ${(error as Error).message}.`);
      }
    }
    const files = getFiles(io, flags.file);
    if (!flags.json) io.stdout.write(`${formatTableHeader()}\n`);
    const result = await searchAudit(
      files,
      filter,
      (summary) => {
        if (flags.json) io.stdout.write(`${(summary.lines ?? []).join('\n')}\n`);
        else io.stdout.write(`${formatTableRow(summary)}\n`);
      },
      { keepLines: flags.json === true },
    );
    io.stderr.write(`execgate: ${result.matched} of ${result.runs} run(s) and event(s) matched in ${files.length} file(s)${result.skipped ? `; ${result.skipped} line(s) were not records (see \`execgate audit verify\`)` : ''}\n`);
  });

  const show = audit
    .command('show')
    .description('The whole story of one run: request, decision, references (names, sources, fingerprints), environment names, end')
    .argument('<run-id>')
    .option('--json', 'print the run\'s records as stored, one JSON object per line');
  fileOption(show).action(async (runId: string, flags: FileFlags & { json?: boolean }) => {
    const files = getFiles(io, flags.file);
    let found = 0;
    await searchAudit(
      files,
      { runId },
      (summary) => {
        found++;
        const lines = summary.lines ?? [];
        if (flags.json) io.stdout.write(`${lines.join('\n')}\n`);
        else io.stdout.write(formatRunStory(summary, lines.map((line) => JSON.parse(line) as Record<string, unknown>)));
      },
      { keepLines: true },
    );
    if (found === 0) {
      throw new ExecgateError('EXECGATE_ERR_AUDIT_NOT_FOUND', `No audit record names the run \`${escapeTerminal(runId)}\` in ${files.length} file(s).`, { runId });
    }
  });

  const stats = audit
    .command('stats')
    .description('Counts over a period: by event, decision and exit status, top commands, secrets used (by name), actors')
    .option('--json', 'print one JSON object');
  fileOption(periodOptions(stats)).action(async (flags: PeriodFlags & { json?: boolean }) => {
    const result = await collectStats(getFiles(io, flags.file), getPeriod(flags));
    if (flags.json) io.stdout.write(`${JSON.stringify(result)}\n`);
    else printStats(io, result);
  });

  audit
    .command('verify')
    .description('Check the hash chain: name the first broken record (file, line, seq) and why; exit 1 on any break; with --against, compare with a collector\'s copy')
    .argument('[files...]', 'audit files (default: $EXECGATE_HOME/audit.log and its rotated files); order does not matter for one log')
    .option('--file <files...>', 'the same as naming the files as arguments')
    .option('--key-file <path>', 'the audit key file (default: EXECGATE_AUDIT_KEY, else $EXECGATE_HOME/audit.key)')
    .option('--partial', 'accept files that start mid-chain (older files archived on purpose)')
    .option('--against <files...>', 'a copy of the log kept elsewhere (a syslog collector\'s file): name the first record missing here, differing, or only here')
    .option('--json', 'print one JSON object')
    .addHelpText('after', '\nExit status: 0 when the chain is intact (and matches the copy), 1 on any break, wrong key, or record missing or differing from the copy, 125 when execgate cannot verify (no key, no files).')
    .action(async (named: string[], flags: { file?: string[]; keyFile?: string; partial?: boolean; against?: string[]; json?: boolean }) => {
      const keys = getKeys(io, flags.keyFile, true)!;
      const against = flags.against === undefined ? undefined : getFiles(io, flags.against);
      const wanted = [...named, ...(flags.file ?? [])];
      // With a copy to compare with, a local log set that is gone entirely is a finding, not a usage error.
      let files: string[];
      try {
        files = getFiles(io, wanted);
      } catch (error) {
        if (against === undefined || wanted.length > 0 || !isExecgateError(error) || error.code !== 'EXECGATE_ERR_AUDIT_NOT_FOUND') throw error;
        files = [];
      }
      const result = files.length > 0 ? await verifyAuditFiles(files, keys, { partial: flags.partial === true }) : undefined;
      const compared = against !== undefined ? await compareAuditCopies(files, against) : undefined;
      if (flags.json) {
        io.stdout.write(`${JSON.stringify({ ...(result ?? { ok: false, records: 0 }), ...(compared ? { against: compared } : {}) })}\n`);
      } else {
        if (result !== undefined) printVerify(io, result, compared !== undefined);
        else io.stdout.write(`BROKEN: no local audit log at all (${join(getHome(io.env), 'audit.log')} and its rotated files are gone).\n`);
        if (compared !== undefined) printCompare(io, compared, against!);
      }
      if (result === undefined || !result.ok || (compared !== undefined && !compared.ok)) throw new CliExit(1);
    });

  const report = audit
    .command('report')
    .description('Write a self-contained HTML page for reviewers: chain status, filters, a timeline, per-secret and per-actor views, a panel per run')
    .requiredOption('--html <file>', 'where to write the page')
    .option('--limit <n>', 'runs embedded in the page for filtering and detail (past it: the latest, the latest denied and failed, and a sample; counts stay exact)', '10000')
    .option('--key-file <path>', 'verify the chain with this key file (default: EXECGATE_AUDIT_KEY, else $EXECGATE_HOME/audit.key, when present)')
    .option('--partial', 'accept files that start mid-chain');
  fileOption(periodOptions(report)).action(async (flags: PeriodFlags & { html: string; limit: string; keyFile?: string; partial?: boolean }) => {
    const limit = Number(flags.limit);
    if (!Number.isSafeInteger(limit) || limit < 1) throw usageError(`Expected \`--limit\` to be a positive integer, got ${JSON.stringify(flags.limit)}.`);
    const files = getFiles(io, flags.file);
    const keys = getKeys(io, flags.keyFile, flags.keyFile !== undefined);
    const result = await buildHtmlReport({ files, filter: getPeriod(flags), limit, ...(keys ? { keys } : {}), partial: flags.partial === true });
    writeFileSync(flags.html, result.html, { mode: 0o600 });
    const status = result.verify === undefined ? 'chain not verified (no audit key)' : result.verify.ok ? 'chain intact' : `CHAIN BROKEN (${result.verify.breakCount} break(s))`;
    const status2 = result.verify?.wrongKey.length ? 'WRONG KEY' : status;
    io.stdout.write(`${flags.html}: ${result.stats.runs} run(s), ${result.stats.decisions.denied ?? 0} denied; ${status2}${result.embeddedRuns < result.stats.runs ? `; ${result.embeddedRuns} run(s) embedded for filtering` : ''}\n`);
  });
}
