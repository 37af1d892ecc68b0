/*
 * The set-up most gateway tests repeat: a fresh temporary directory and a gateway whose state
 * lives in it, with the suite's predictable environment, closed and removed after each test.
 */
import { join } from 'node:path';
import { createGateway, type Gateway, type GatewayOptions } from '../../src/gateway';
import { baseEnv, makeTempDir } from './tmp';

export interface TempGateway {
  /** The current test's gateway (replace it with `reopen`). */
  readonly gateway: Gateway;
  /** The current test's temporary directory (the gateway's cwd; its home is `<dir>/home`). */
  readonly dir: string;
  /** Close the current gateway and open another in the same directory with more options. */
  reopen(options: GatewayOptions): Promise<Gateway>;
}

export function useTempGateway(options: { env?: Record<string, string> } & GatewayOptions = {}): TempGateway {
  let tmp: ReturnType<typeof makeTempDir> | undefined;
  let gateway: Gateway | undefined;
  const { env, ...rest } = options;
  const open = (more: GatewayOptions = {}): Gateway =>
    createGateway({ home: join(tmp!.dir, 'home'), env: baseEnv(env), cwd: tmp!.dir, ...rest, ...more });
  beforeEach(() => {
    tmp = makeTempDir();
    gateway = open();
  });
  afterEach(async () => {
    await gateway?.close();
    tmp?.cleanup();
  });
  return {
    get gateway() { return gateway!; },
    get dir() { return tmp!.dir; },
    async reopen(more) {
      await gateway?.close();
      gateway = open({ home: join(tmp!.dir, 'home2'), ...more });
      return gateway;
    },
  };
}
