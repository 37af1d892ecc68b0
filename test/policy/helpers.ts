import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { loadPolicyFile } from '../../src/policy/load';
import type { EffectivePolicy } from '../../src/policy/effective';
import { makeTempDir } from '../helpers/tmp';

export const REPO = join(__dirname, '..', '..');
export const POLICIES = join(REPO, 'policies');

/** Write `files` (name -> content) under `dir`. */
export function writeFiles(dir: string, files: Readonly<Record<string, string | Buffer>>): void {
  for (const [name, content] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, name)), { recursive: true });
    writeFileSync(join(dir, name), content);
  }
}

/** Compile a policy from YAML text through the real loader. */
export function policyFrom(text: string, homeDir = '/home/test'): EffectivePolicy {
  const tmp = makeTempDir('execgate-policy-');
  try {
    writeFileSync(join(tmp.dir, 'policy.yaml'), text);
    return loadPolicyFile(join(tmp.dir, 'policy.yaml'), { homeDir }).policy;
  } finally {
    tmp.cleanup();
  }
}

/** Fenced ```yaml / ```json blocks of a markdown text that hold a policy. */
export function getPolicyBlocks(markdown: string): Array<{ lang: 'yaml' | 'json'; text: string; name?: string }> {
  const blocks: Array<{ lang: 'yaml' | 'json'; text: string; name?: string }> = [];
  for (const match of markdown.matchAll(/^```(yaml|json)\n([\s\S]*?)^```$/gm)) {
    const lang = match[1] as 'yaml' | 'json';
    const text = match[2] as string;
    const isPolicy = lang === 'yaml' ? /^version:/m.test(text) : text.includes('"version"');
    if (!isPolicy) continue;
    const name = /^# file: (\S+)/.exec(text)?.[1];
    blocks.push({ lang, text, ...(name ? { name } : {}) });
  }
  return blocks;
}
