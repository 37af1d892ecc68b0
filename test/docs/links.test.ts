/*
 * Every link in the project's Markdown resolves: relative links name a file that exists, and a
 * `#fragment` names a heading of the file it points to (GitHub's slugs). External links are not
 * fetched (no network in CI); they are only required to be https.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

const ROOT = join(__dirname, '..', '..');
const SKIP = new Set(['node_modules', 'dist', '.git', 'coverage', 'results']);

function markdownFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    if (SKIP.has(entry.name)) return [];
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return markdownFiles(path);
    return entry.name.endsWith('.md') ? [path] : [];
  });
}

/** The text outside fenced code blocks. */
function unfenced(text: string): string {
  return text.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, '');
}

/** The text outside fenced code blocks and inline code spans. */
function prose(text: string): string {
  return unfenced(text).replace(/`[^`\n]*`/g, '');
}

/** GitHub's heading anchors: lower case, punctuation but `-` and `_` dropped, spaces to `-`, repeats numbered. */
function anchors(file: string): Set<string> {
  const seen = new Map<string, number>();
  const result = new Set<string>();
  for (const match of unfenced(readFileSync(file, 'utf8')).matchAll(/^#{1,6}\s+(.+?)\s*#*\s*$/gm)) {
    const base = match[1].replace(/<[^>]+>/g, '').replace(/\[([^\]]*)\]\([^)]*\)/g, '$1').toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, '').replace(/\s/g, '-');
    const count = seen.get(base) ?? 0;
    seen.set(base, count + 1);
    result.add(count === 0 ? base : `${base}-${count}`);
  }
  return result;
}

const files = markdownFiles(ROOT);

describe('Markdown links', () => {
  it('finds the documents', () => {
    const names = files.map((file) => relative(ROOT, file));
    expect(names).toEqual(expect.arrayContaining(['README.md', 'SECURITY.md', 'docs/errors.md', 'docs/mcp.md', 'policies/README.md', 'docs/api/README.md']));
  });

  it.each(files.map((file) => [relative(ROOT, file), file]))('%s: every link resolves', (_name, file) => {
    const broken: string[] = [];
    for (const match of prose(readFileSync(file, 'utf8')).matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)) {
      const target = match[1];
      if (/^[a-z]+:/i.test(target)) {
        if (!/^(https|mailto):/i.test(target)) broken.push(`${target} (not https)`);
        continue;
      }
      const [path, fragment] = target.split('#', 2);
      const resolved = path === '' ? file : resolve(dirname(file), decodeURIComponent(path));
      if (!existsSync(resolved)) {
        broken.push(`${target} (no such file)`);
        continue;
      }
      if (fragment !== undefined && fragment !== '') {
        if (!statSync(resolved).isFile() || !resolved.endsWith('.md')) continue;
        if (!anchors(resolved).has(fragment.toLowerCase())) broken.push(`${target} (no heading #${fragment})`);
      }
    }
    expect(broken).toEqual([]);
  });
});
