/*
 * Output as it happened: a command that writes to stdout and then to stderr gets its combined
 * output in that order, warm sandbox or cold, every time. Two things had put stderr first:
 *   - the sandbox gate's start mark on stderr left stderr readable ahead of the program's first
 *     write (now the program starts only once the gateway has read the mark);
 *   - the gateway's epoll is level-triggered, so stderr, just read for that mark, stayed on the
 *     kernel's ready list ahead of stdout until the next poll (now the program starts after it).
 *
 * Not promised: two pipes read by one event loop cannot order writes that come faster than it
 * reads. `echo one; echo two >&2; echo three` in one burst of builtins often comes back
 * `one three two`: both of stdout's lines are in its pipe before the gateway reads either.
 */
import { useTempGateway } from '../helpers/gateway';

const gw = useTempGateway();
const RUNS = 20;

test.each([
  ['warm', 1],
  ['cold', 0],
])('%s sandboxes: stdout written before stderr comes first in the combined output, in every run', async (_name, warmSandboxes) => {
  const gateway = await gw.reopen({ warmSandboxes });
  const outputs: string[] = [];
  for (let index = 0; index < RUNS; index++) outputs.push((await gateway.exec({ command: 'echo one; echo two >&2' })).output);
  expect(outputs.filter((output) => output !== 'one\ntwo\n')).toEqual([]);
});
