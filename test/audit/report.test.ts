/*
 * The HTML report in a real browser: headless Chromium (Debian's `chromium` package) renders
 * the page written from gateway runs, takes a screenshot, and dumps the DOM after load, so we
 * check the rows it actually rendered and that an injected <script> stayed text and never ran.
 * Without Chromium the test is reported as skipped, with the reason, never passed silently.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { makeTempDir } from '../helpers/tmp';
import { execgate, runScenario, type Scenario } from './helpers';

const CHROMIUM = '/usr/bin/chromium';
const skipReason = existsSync(CHROMIUM) ? undefined : `${CHROMIUM} not found (install the Debian package chromium)`;

let tmp: ReturnType<typeof makeTempDir>;
let scenario: Scenario;
let page: string;

function chromium(args: string[]): { status: number | null; stdout: string; stderr: string } {
  const profile = join(tmp.dir, `profile-${Math.random().toString(36).slice(2)}`);
  mkdirSync(profile);
  const result = spawnSync(
    CHROMIUM,
    [
      '--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
      '--disable-component-update', '--disable-sync', `--user-data-dir=${profile}`, ...args, pathToFileURL(page).href,
    ],
    { encoding: 'utf8', timeout: 60_000, maxBuffer: 64 * 1024 * 1024, env: { PATH: process.env.PATH, HOME: tmp.dir } },
  );
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}

if (skipReason !== undefined) {
  console.warn(`SKIPPED report rendering test: ${skipReason}`);
  test.skip(`the report renders in headless Chromium [SKIPPED: ${skipReason}]`, () => undefined);
} else {
  beforeAll(async () => {
    tmp = makeTempDir('execgate-report-');
    const home = join(tmp.dir, 'home');
    mkdirSync(home);
    scenario = await runScenario(home);
    page = join(tmp.dir, 'report.html');
    const result = execgate(['audit', 'report', '--html', page], home);
    expect(result.status).toBe(0);
  }, 30_000);
  afterAll(() => tmp.cleanup());

  test('the report renders in headless Chromium: a screenshot, the expected rows, the denial highlighted', () => {
    const png = join(tmp.dir, 'report.png');
    const shot = chromium([`--screenshot=${png}`, '--window-size=1280,1600']);
    expect(existsSync(png)).toBe(true);
    expect(readFileSync(png).subarray(1, 4).toString('latin1')).toBe('PNG');
    expect(statSync(png).size).toBeGreaterThan(20_000);
    void shot;

    const dom = chromium(['--dump-dom']).stdout;
    expect(dom).toContain('<title>execgate audit report</title>');
    const runRows = [...dom.matchAll(/<tr class="(run[^"]*)" data-run-id="([^"]+)">/g)];
    // The runs table lists all seven runs; the denied and failures tables list theirs again.
    const runsSection = dom.slice(dom.indexOf('<section id="runs">'));
    expect([...runsSection.matchAll(/<tr class="run[^"]*" data-run-id="/g)]).toHaveLength(7);
    expect(runRows.filter(([, cls, id]) => cls === 'run denied' && id === scenario.denied).length).toBe(2);
    expect(runRows.some(([, cls, id]) => cls === 'run failed' && id === scenario.timedOut)).toBe(true);
    expect(dom).toContain('Chain verified:');
    expect(dom).toMatch(/<tr class="secret"><td><code>&lt;&lt;secret:x&gt;&gt;<\/code><\/td><td class="num">2<\/td>/);
  }, 120_000);

  test('an injected <script> and onerror handler stay text: nothing ran, no element was created', () => {
    const dom = chromium(['--dump-dom']).stdout;
    expect(dom).not.toContain('PWNED</title>');
    expect(dom).not.toContain('data-pwned="1"');
    expect(dom).not.toMatch(/<script/i);
    expect(dom).not.toMatch(/<img/i);
    expect(dom).toContain('&lt;script&gt;document.title="PWNED";');
    expect(dom).toContain(`<tr class="run" data-run-id="${scenario.injected}">`);
    expect(dom).toContain('tool:&lt;b&gt;evil&lt;/b&gt;');
  }, 120_000);
}
