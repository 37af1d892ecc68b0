/*
 * The folders of src/ import downwards only. Each top-level folder of src/ (or file: gateway.ts
 * is the unit `gateway`) sits in one layer below; a file may import its own folder, any folder
 * in a lower layer, and a folder in its own layer as long as no two folders end up importing
 * each other (directly or round a longer loop). Type-only imports count: a type is a dependency
 * as much as a value, and it is what drags a module into another's graph once it grows a value.
 *
 * The layering, top first, and why each sits where it does:
 *   index, parts          the front doors (execgate, execgate/parts): re-exports only
 *   cli                   the command line; starts the MCP server among other things
 *   mcp                   the MCP server; serves the tools
 *   agent                 the model loop; calls the tools
 *   tools                 the file and bash tools; run through a gateway
 *   gateway               wiring only: a policy, a plan, a run, the audit log
 *   gateway-options       what a gateway is created with (spawner kinds, sync runner)
 *   run                   once a plan exists: lifecycle, sync and background runs, output, result
 *   plan                  a request becomes a plan: options, decision, secrets, env, egress, sandbox
 *   sandbox               policy -> what bubblewrap is told (file-system view, namespaces)
 *   policy                loading, deciding, steering; reads egress host rules and audit settings
 *   egress                the proxy, bridges, host rules, injection
 *   process               how a process starts and stops, no policy: spawners, bubblewrap's
 *                         gate/launch/mount check/warm pool/shared network, kill, watchdog,
 *                         inherited descriptors, where the helper programs are
 *   audit, refs           the audit log; reference tokens, the RefStore and its sources
 *   shell, stores, redact, env
 *                         the shell reader; vault and keyring; masking; environment hygiene
 *   home                  the state directory
 *   fs                    file-system primitives
 *   errors                the error catalog
 * src/programs/ holds no TypeScript (programs as files, loaded by path by process/programs.ts).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';

const SRC = resolve(__dirname, '..', '..', 'src');

const LAYERS: readonly (readonly string[])[] = [
  ['index', 'parts'],
  ['cli'],
  ['mcp'],
  ['agent'],
  ['tools'],
  ['gateway'],
  ['gateway-options'],
  ['run'],
  ['plan'],
  ['sandbox'],
  ['policy'],
  ['egress'],
  ['process'],
  ['audit', 'refs'],
  ['shell', 'stores', 'redact', 'env'],
  ['home'],
  ['fs'],
  ['errors'],
];

const RANK = new Map<string, number>(LAYERS.flatMap((layer, rank) => layer.map((unit) => [unit, rank] as [string, number])));

interface Edge { readonly from: string; readonly to: string; readonly file: string; readonly specifier: string }

function listSources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return listSources(path);
    return entry.name.endsWith('.ts') ? [path] : [];
  });
}

/** The unit a path under src/ belongs to: its top-level folder, or a top-level file's name. */
function unitOf(path: string): string {
  const [first, ...rest] = relative(SRC, path).split(sep);
  return rest.length > 0 ? (first as string) : (first as string).replace(/\.(ts|js)$/, '');
}

/** Relative specifiers of static imports and re-exports, `require('./...')` and `import('./...')`. */
function readSpecifiers(text: string): string[] {
  const found: string[] = [];
  const patterns = [
    /\b(?:import|export)\s+(?:type\s+)?(?:[\w*{}\s,$]+?\s+from\s+)?['"](\.{1,2}\/[^'"]*|\.{1,2})['"]/g,
    /\brequire\(\s*['"](\.{1,2}\/[^'"]*|\.{1,2})['"]\s*\)/g,
    /\bimport\(\s*['"](\.{1,2}\/[^'"]*|\.{1,2})['"]\s*\)/g,
  ];
  for (const pattern of patterns) for (const match of text.matchAll(pattern)) found.push(match[1] as string);
  return found;
}

function readEdges(): Edge[] {
  const edges: Edge[] = [];
  for (const file of listSources(SRC)) {
    const from = unitOf(file);
    for (const specifier of readSpecifiers(readFileSync(file, 'utf8'))) {
      const target = resolve(dirname(file), specifier);
      if (relative(SRC, target).startsWith('..')) continue; // package.json and the like, outside src/
      const to = unitOf(target);
      if (to !== from) edges.push({ from, to, file: relative(SRC, file).split(sep).join('/'), specifier });
    }
  }
  return edges;
}

/** Loops between units, each as the units in order (Tarjan's strongly connected components). */
function findCycles(edges: readonly Edge[]): string[][] {
  const next = new Map<string, Set<string>>();
  for (const { from, to } of edges) {
    if (!next.has(from)) next.set(from, new Set());
    (next.get(from) as Set<string>).add(to);
  }
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const components: string[][] = [];
  let counter = 0;
  const visit = (unit: string): void => {
    index.set(unit, counter);
    low.set(unit, counter);
    counter++;
    stack.push(unit);
    onStack.add(unit);
    for (const to of next.get(unit) ?? []) {
      if (!index.has(to)) {
        visit(to);
        low.set(unit, Math.min(low.get(unit) as number, low.get(to) as number));
      } else if (onStack.has(to)) {
        low.set(unit, Math.min(low.get(unit) as number, index.get(to) as number));
      }
    }
    if (low.get(unit) === index.get(unit)) {
      const component: string[] = [];
      let member: string;
      do {
        member = stack.pop() as string;
        onStack.delete(member);
        component.push(member);
      } while (member !== unit);
      if (component.length > 1) components.push(component.sort());
    }
  };
  for (const unit of next.keys()) if (!index.has(unit)) visit(unit);
  return components;
}

const describeEdge = (edge: Edge): string => `src/${edge.file} imports '${edge.specifier}' (${edge.from} -> ${edge.to})`;

describe('the import graph of src/', () => {
  const edges = readEdges();

  test('reads imports at all (the parser has not gone blind)', () => {
    expect(edges.some((edge) => edge.from === 'gateway' && edge.to === 'run')).toBe(true);
    expect(edges.some((edge) => edge.from === 'run' && edge.to === 'process')).toBe(true);
  });

  test('every folder of src/ has a place in the layering', () => {
    const units = new Set(listSources(SRC).map(unitOf));
    expect([...units].filter((unit) => !RANK.has(unit)).sort()).toEqual([]);
  });

  test('no folder imports a folder above it', () => {
    const upward = edges.filter((edge) => (RANK.get(edge.to) as number) < (RANK.get(edge.from) as number));
    expect(upward.map(describeEdge)).toEqual([]);
  });

  test('no two folders import each other, directly or round a loop', () => {
    const cycles = findCycles(edges).map((units) => {
      const inside = new Set(units);
      const through = edges.filter((edge) => inside.has(edge.from) && inside.has(edge.to)).map(describeEdge);
      return `${units.join(', ')}: ${through.join('; ')}`;
    });
    expect(cycles).toEqual([]);
  });
});
