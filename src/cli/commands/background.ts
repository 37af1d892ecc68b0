/*
 * `execgate ps`, `execgate logs ID [--follow]`, `execgate kill ID`: background runs across CLI
 * invocations, read from their records and output files under $EXECGATE_HOME/bg/.
 */
import { constants as osConstants } from 'node:os';
import type { Command } from 'commander';
import { createGateway } from '../../gateway';
import { getCurrentUser } from '../user';
import { readOutputSlice } from '../../run/background/output-file';
import { settleRecord } from '../../run/background/lost';
import { listRecords, readRecord, refreshRecord } from '../../run/background/records';
import { recordCliEvent } from '../../audit/cli-events';
import { getHome } from '../../home';
import { ExecgateError } from '../../errors';
import { usageError, type CliIo } from '../io';

function formatDuration(ms: number): string {
  if (ms < 1000) return `${ms}ms`;
  const seconds = Math.floor(ms / 1000);
  if (seconds < 60) return `${seconds}s`;
  const minutes = Math.floor(seconds / 60);
  if (minutes < 60) return `${minutes}m${seconds % 60}s`;
  return `${Math.floor(minutes / 60)}h${minutes % 60}m`;
}

function notFound(id: string): ExecgateError {
  return new ExecgateError('EXECGATE_ERR_BACKGROUND_NOT_FOUND', `No background process has the id \`${id}\`; \`execgate ps\` lists them.`, { id });
}

export function registerBackgroundCommands(program: Command, io: CliIo): void {
  program
    .command('ps')
    .description('List background processes started through execgate (running and ended)')
    .option('--json', 'one JSON array')
    .option('--running', 'only running processes')
    .action((flags: { json?: boolean; running?: boolean }) => {
      const home = getHome(io.env);
      // A run whose supervisor died unrecorded is recorded as lost here, if nobody did yet.
      let records = listRecords(home).map((record) => settleRecord(home, record, (event, fields) => recordCliEvent(io.env, event, fields)));
      if (flags.running) records = records.filter((record) => record.state === 'running');
      if (flags.json) {
        io.stdout.write(`${JSON.stringify(records.map(({ supervisorPid: _s, ...shown }) => shown), null, 2)}\n`);
        return;
      }
      const rows = records.map((record) => {
        const end = record.endedAt ? Date.parse(record.endedAt) : Date.now();
        const status = record.state === 'exited' && record.exitCode !== null ? `exited ${record.exitCode}` : record.state;
        return [record.id, status, String(record.pid), record.startedAt.replace('T', ' ').slice(0, 19), formatDuration(end - Date.parse(record.startedAt)), record.command.replace(/\s+/g, ' ').slice(0, 80)];
      });
      const header = ['ID', 'STATE', 'PID', 'STARTED', 'RUNTIME', 'COMMAND'];
      const widths = header.map((title, i) => Math.max(title.length, ...rows.map((row) => (row[i]).length)));
      for (const row of [header, ...rows]) io.stdout.write(`${row.map((cell, i) => (i === row.length - 1 ? cell : cell.padEnd(widths[i]))).join('  ')}\n`);
    });

  program
    .command('logs')
    .description('Print the (redacted) output of a background process')
    .argument('<id>', 'the id printed by `execgate run --mode background`')
    .option('-f, --follow', 'keep printing new output until the process ends')
    .option('--offset <bytes>', 'start at this byte offset', '0')
    .action(async (id: string, flags: { follow?: boolean; offset: string }) => {
      const home = getHome(io.env);
      let offset = Number(flags.offset);
      if (!Number.isInteger(offset) || offset < 0) throw usageError(`Expected --offset to be a non-negative integer, got \`${flags.offset}\`.`);
      for (;;) {
        const record = readRecord(home, id);
        if (!record) throw notFound(id);
        const ended = refreshRecord(record).state !== 'running';
        const slice = readOutputSlice(record.outputPath, { offset, length: 1024 * 1024, ended });
        if (slice.text) io.stdout.write(slice.text);
        offset = slice.nextOffset;
        if (slice.nextOffset < slice.totalBytes) continue;
        if (!flags.follow || ended) return;
        await new Promise((r) => setTimeout(r, 200));
      }
    });

  program
    .command('kill')
    .description('Stop a background process and everything it started (SIGTERM, grace period, SIGKILL, sweep)')
    .argument('<id>', 'the background process id')
    .option('--signal <name>', 'first signal (default SIGTERM)')
    .option('--grace <seconds>', 'seconds before SIGKILL (default 5)')
    .action(async (id: string, flags: { signal?: string; grace?: string }) => {
      const signal = flags.signal === undefined ? undefined : (flags.signal.startsWith('SIG') ? flags.signal : `SIG${flags.signal}`).toUpperCase();
      if (signal !== undefined && !(signal in osConstants.signals)) throw usageError(`Unknown signal \`${flags.signal}\`.`);
      const grace = flags.grace === undefined ? undefined : Number(flags.grace) * 1000;
      if (grace !== undefined && (!Number.isFinite(grace) || grace < 0)) throw usageError(`Expected --grace to be a non-negative number of seconds, got \`${flags.grace}\`.`);
      const gateway = createGateway({ env: io.env, cwd: io.cwd, backgroundOnClose: 'keep' });
      try {
        const ended = await gateway.background.kill(id, {
          ...(signal ? { signal: signal as NodeJS.Signals } : {}),
          ...(grace !== undefined ? { grace } : {}),
          actor: `cli:${getCurrentUser()}`,
        });
        io.stdout.write(`${ended.id}: ${ended.state}${ended.reason ? ` (${ended.reason})` : ''}\n`);
      } finally {
        await gateway.close();
      }
    });
}
