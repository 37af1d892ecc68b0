#!/usr/bin/env bash
# Packs execgate as `npm publish` would, installs the tarball into a scratch project and checks
# what a user gets: the files, `require` and `import`, the `execgate` bin, and a PTY run through
# the installed copy (the prebuilt PTY module must load with no compiler).
set -euo pipefail
cd "$(dirname "$0")/.."

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

npm pack --silent --pack-destination "$work" > "$work/name"
tarball="$work/$(tail -n 1 "$work/name")"
tar -tzf "$tarball" > "$work/files"
for required in package/dist/index.js package/dist/index.mjs package/dist/index.d.ts \
  package/dist/mcp/index.mjs package/dist/tools/index.mjs package/dist/agent/index.mjs \
  package/dist/parts.js package/dist/parts.mjs package/dist/parts.d.ts \
  package/dist/cli/main.js package/dist/programs/gate.sh package/dist/programs/warm-stub.bash \
  package/dist/programs/pty-gate.bash package/dist/programs/pty-launch.bash \
  package/dist/programs/seccomp/x86_64.bpf package/dist/tools/files/server.js package/policies/default.yaml package/policies/schema.json \
  package/dist/policy/schema-validator.js \
  package/policies/README.md package/docs/errors.md package/README.md package/SECURITY.md \
  package/LICENSE; do
  if ! grep -qx "$required" "$work/files"; then
    echo "check-pack: $required is missing from the tarball" >&2
    exit 1
  fi
done
# The policy schema's TypeBox definition is build input: TypeBox is a devDependency.
if grep -q '^package/dist/policy/schema-def' "$work/files"; then
  echo "check-pack: the tarball holds the policy schema's definition, which needs TypeBox (a devDependency)" >&2
  exit 1
fi
echo "check-pack: tarball holds $(wc -l < "$work/files") files"

mkdir "$work/app"
cd "$work/app"
npm init -y > /dev/null
npm install --silent --no-audit --no-fund "$tarball"
echo "check-pack: installed $(find node_modules -name package.json -not -path '*/node_modules/*/node_modules/*/node_modules/*' | wc -l) package.json files, $(du -sh node_modules | cut -f1)"

export EXECGATE_HOME="$work/state"
node -e "
const { createGateway } = require('execgate');
(async () => {
  const gateway = createGateway();
  // Inside the sandbox the terminal is the run's /dev/console (bubblewrap binds it there), so
  // check that stdin and stdout are a terminal rather than a /dev/pts name.
  const result = await gateway.exec({ command: '[ -t 0 ] && [ -t 1 ] && echo is-a-terminal; stty size', mode: 'pty' });
  await gateway.close();
  if (!/^is-a-terminal\r?\n\d+ \d+/.test(result.stdout)) throw new Error('PTY run printed ' + JSON.stringify(result.stdout));
  console.log('check-pack: require + PTY run ok (' + result.stdout.trim().replace(/\s+/g, ' ') + ')');
})().catch((error) => { console.error(error); process.exit(1); });
"
node --input-type=module -e "
import { createGateway } from 'execgate';
const gateway = createGateway();
const result = await gateway.exec({ command: 'printf %s ok' });
await gateway.close();
if (result.stdout !== 'ok') throw new Error('import run printed ' + JSON.stringify(result.stdout));
console.log('check-pack: import ok');
"
./node_modules/.bin/execgate --version

# What the MCP client configurations start: `execgate mcp` on stdio (stdin at its end closes the
# session, and the server stops cleanly).
./node_modules/.bin/execgate mcp --workdir . < /dev/null 2> "$work/mcp.err"
grep -q 'serving on stdio' "$work/mcp.err"
echo "check-pack: execgate mcp starts and stops"

# Embedders reach the server as `execgate/mcp` (require and import).
node -e "
const { createGateway } = require('execgate');
const { createMcpServer, serveHttp } = require('execgate/mcp');
(async () => {
  const gateway = createGateway();
  const http = await serveHttp(createMcpServer({ gateway }), { port: 0, token: 'check-pack-token-0123456789' });
  const response = await fetch(http.url, { method: 'POST', body: '{}' });
  await http.close();
  await gateway.close();
  if (response.status !== 401) throw new Error('execgate/mcp answered ' + response.status + ' without a token');
  console.log('check-pack: require(\"execgate/mcp\") serves HTTP');
})().catch((error) => { console.error(error); process.exit(1); });
"
node --input-type=module -e "
import { createMcpServer, serveStdio } from 'execgate/mcp';
if (typeof createMcpServer !== 'function' || typeof serveStdio !== 'function') throw new Error('execgate/mcp has no named exports under import');
console.log('check-pack: import from execgate/mcp ok');
"

# A policy started from the installed package points its editor at a schema that exists.
./node_modules/.bin/execgate policy init --from strict team.yaml > /dev/null
# shellcheck disable=SC2016 # the `$schema` is sed's text, not the shell's
schema="$(sed -n 's/^# yaml-language-server: \$schema=//p' team.yaml)"
if [ ! -f "$schema" ]; then
  echo "check-pack: policy init wrote a schema reference that does not exist: $schema" >&2
  exit 1
fi
./node_modules/.bin/execgate policy check team.yaml > /dev/null
echo "check-pack: policy init -> $schema"

# The add-ons have entry points of their own (require and import), and `openai` is an optional
# peer of `execgate/agent`: without it installed, the agent says what to install instead of
# failing on a missing module.
if [ -d node_modules/openai ]; then
  echo "check-pack: openai was installed although it is an optional peer dependency" >&2
  exit 1
fi
node -e "
const { createDefaultToolRegistry } = require('execgate/tools');
const { RefStore, Redactor } = require('execgate/parts');
const { Agent } = require('execgate/agent');
if (typeof createDefaultToolRegistry !== 'function' || typeof RefStore !== 'function' || typeof Redactor !== 'function') throw new Error('execgate/tools or execgate/parts lacks its names');
try {
  new Agent({ model: 'm', baseURL: 'http://127.0.0.1:9/v1', apiKey: 'k' });
  throw new Error('an agent was made without openai installed');
} catch (error) {
  if (error.code !== 'EXECGATE_ERR_AGENT_CLIENT_MISSING') throw error;
  console.log('check-pack: execgate/agent without openai: ' + error.code);
}
"
node --input-type=module -e "
import { ToolRegistry } from 'execgate/tools';
import { Agent } from 'execgate/agent';
import { scanTokens } from 'execgate/parts';
if ([ToolRegistry, Agent, scanTokens].some((value) => typeof value !== 'function')) throw new Error('an add-on lacks its named exports under import');
console.log('check-pack: import from execgate/tools, execgate/agent, execgate/parts ok');
"
