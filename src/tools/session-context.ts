/*
 * save_session_context writes what the agent knows of the conversation to a file under the state
 * directory (`<home>/sessions/`), so a session can be reviewed or resumed. The files hold the
 * conversation, so they are written 0600 in a 0700 directory. The agent supplies its context
 * through a provider; a model calling the tool only gives the reason.
 */
import { randomBytes } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { ensureDir } from '../home';
import { defineSchema, type ChatTool, type ExecutableTool } from './types';

/** Returns the context to save (JSON-serializable); called each time the tool runs. */
export type SessionContextProvider = () => unknown;

const SCHEMA = defineSchema('save_session_context', 'Save the current session context (the conversation so far) with the reason for saving it, so the session can be reviewed or resumed later.', {
  type: 'object',
  properties: {
    reason: { type: 'string', description: 'Why the context is being saved, for example `before a risky refactor`.' },
  },
  required: ['reason'],
  additionalProperties: false,
});

/**
 * Options of {@link SaveSessionContextTool}: the state directory it writes under (`sessions/`) and what provides the context.
 */
export interface SaveSessionContextOptions {
  /** The state directory; files go to `<stateDir>/sessions/`. */
  stateDir: string | (() => string);
  contextProvider?: SessionContextProvider;
}

/**
 * The `save_session_context` tool: writes the conversation so far (model, tools, messages) to a
 * file.
 */
export class SaveSessionContextTool implements ExecutableTool {
  readonly name = 'save_session_context';
  readonly #stateDir: string | (() => string);
  #provider: SessionContextProvider | undefined;

  constructor(options: SaveSessionContextOptions) {
    this.#stateDir = options.stateDir;
    this.#provider = options.contextProvider;
  }

  getSchema(): ChatTool {
    return SCHEMA;
  }

  /** The Agent attaches itself here; the last provider set wins. */
  setContextProvider(provider: SessionContextProvider | undefined): void {
    this.#provider = provider;
  }

  async execute(args: Record<string, unknown>): Promise<string> {
    const reason = args.reason as string;
    const stateDir = typeof this.#stateDir === 'function' ? this.#stateDir() : this.#stateDir;
    const dir = ensureDir(join(stateDir, 'sessions'));
    const context = this.#provider ? await this.#provider() : null;
    const savedAt = new Date();
    const record = { savedAt: savedAt.toISOString(), reason, context: context ?? null };
    const stamp = savedAt.toISOString().replace(/[:.]/g, '-');
    const file = join(dir, `${stamp}-${randomBytes(4).toString('hex')}.json`);
    // `wx`: never replace an existing file (or follow a link planted at that name).
    await writeFile(file, `${JSON.stringify(record, null, 2)}\n`, { mode: 0o600, flag: 'wx' });
    return `Session context saved to ${file}`;
  }
}

export function isContextAware(tool: unknown): tool is { setContextProvider(provider: SessionContextProvider | undefined): void } {
  return typeof (tool as { setContextProvider?: unknown } | undefined)?.setContextProvider === 'function';
}
