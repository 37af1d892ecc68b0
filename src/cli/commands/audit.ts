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

function printVerify(io: CliIo, result: VerifyResult): void {
  const out = (text: string) => io.stdout.write(`${text}\n`);
  out(`${result.files.length} file(s), ${result.records} record(s)${result.firstSeq !== undefined ? `, seq ${result.firstSeq} to ${result.lastSeq}` : ''}, audit key id ${result.keyId}`);
  for (const file of result.files) {
    out(`  ${file.file}: ${file.records} record(s)${file.firstSeq !== undefined ? `, seq ${file.firstSeq} to ${file.lastSeq}` : ''}`);
  }
  for (const note of result.notes) out(`note: ${note.file} line ${note.line}${note.seq !== undefined ? ` (seq ${note.seq})` : ''}: ${note.reason}`);
  if (result.ok) {
    out(`OK: the chain is intact${result.lastHash ? ` (last hash ${result.lastHash})` : ''}.`);
    return;
  }
  if (result.records === 0 && result.breakCount === 0) {
    out('BROKEN: no audit records in the files read.');
    return;
  }
  const [first, ...rest] = result.breaks;
  out(`BROKEN: ${first!.file} line ${first!.line}${first!.seq !== undefined ? ` (seq ${first!.seq})` : ''}: ${first!.reason}`);
  if (result.breakCount > 1) out(`${result.breakCount - 1} more break(s) after it${rest.length < result.breakCount - 1 ? `, the next ${rest.length} listed` : ''}:`);
  for (const problem of rest) out(`  ${problem.file} line ${problem.line}${problem.seq !== undefined ? ` (seq ${problem.seq})` : ''}: ${problem.reason}`);
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
    out(`  ${String(use.runs).padStart(8)}  ${escapeTerminal(use.ref)}  found ${use.found}, not found ${use.notFound}${sources ? `, from ${escapeTerminal(sources)}` : ''}, ${use.fingerprints} distinct value(s)`);
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
    .option('--ref <name>', 'a run that used this reference: NAME, secret:NAME or <<secret:NAME>>')
    .option('--command <regex>', 'a run whose unresolved command matches this JavaScript regular expression')
    .option('--denied', 'runs the policy denied')
    .option('--failed', 'runs that failed: refused as invalid, failed to start, non-zero exit, killed or timed out')
    .option('--actor <text>', 'runs whose actor contains this text')
    .option('--json', 'print the matching records as stored, one JSON object per line');
  fileOption(search).action(async (flags: SearchFlags) => {
    const filter = getPeriod(flags);
    if (flags.event !== undefined) filter.events = flags.event;
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
    .description('Check the hash chain: name the first broken record (file, line, seq) and why; exit 1 on any break')
    .argument('[files...]', 'audit files (default: $EXECGATE_HOME/audit.log and its rotated files); order does not matter for one log')
    .option('--key-file <path>', 'the audit key file (default: EXECGATE_AUDIT_KEY, else $EXECGATE_HOME/audit.key)')
    .option('--partial', 'accept files that start mid-chain (older files archived on purpose)')
    .option('--json', 'print one JSON object')
    .addHelpText('after', '\nExit status: 0 when the chain is intact, 1 on any break, 125 when execgate cannot verify (no key, no files).')
    .action(async (named: string[], flags: { keyFile?: string; partial?: boolean; json?: boolean }) => {
      const files = getFiles(io, named);
      const keys = getKeys(io, flags.keyFile, true)!;
      const result = await verifyAuditFiles(files, keys, { partial: flags.partial === true });
      if (flags.json) io.stdout.write(`${JSON.stringify(result)}\n`);
      else printVerify(io, result);
      if (!result.ok) throw new CliExit(1);
    });

  const report = audit
    .command('report')
    .description('Write a self-contained HTML page for reviewers: chain status, timeline, denied requests, failures, secret usage')
    .requiredOption('--html <file>', 'where to write the page')
    .option('--limit <n>', 'runs listed in the table (the latest)', '500')
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
    io.stdout.write(`${flags.html}: ${result.stats.runs} run(s), ${result.stats.decisions.denied ?? 0} denied; ${status}\n`);
  });
}
