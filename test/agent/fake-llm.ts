/*
 * A local HTTP server that speaks enough of the chat-completions protocol for the Agent tests:
 * POST /v1/chat/completions, answered from a script, as one JSON object or, when the request
 * asks for `stream: true`, as server-sent events (`data: {...}\n\n`, then `data: [DONE]`).
 * Every request body is recorded.
 */
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface RecordedRequest {
  headers: IncomingHttpHeaders;
  body: {
    model: string;
    stream?: boolean;
    messages: Array<Record<string, unknown>>;
    tools?: Array<{ type: string; function: { name: string } }>;
    [key: string]: unknown;
  };
}

export interface ToolCallSpec {
  id: string;
  name: string;
  arguments: string;
}

/** A scripted answer: final text, or tool calls. For streaming, `chunks` gives the raw deltas. */
export type Reply =
  | { content: string; toolCalls?: undefined; chunks?: undefined }
  | { toolCalls: ToolCallSpec[]; content?: string | null; chunks?: undefined }
  | { chunks: Array<Record<string, unknown>>; content?: undefined; toolCalls?: undefined };

export interface FakeLlm {
  baseURL: string;
  requests: RecordedRequest[];
  close(): Promise<void>;
}

export async function startFakeLlm(script: Array<Reply | ((request: RecordedRequest) => Reply)>): Promise<FakeLlm> {
  const requests: RecordedRequest[] = [];
  let next = 0;
  const server: Server = createServer((req, res) => {
    const parts: Buffer[] = [];
    req.on('data', (chunk: Buffer) => parts.push(chunk));
    req.on('end', () => {
      if (req.method !== 'POST' || req.url !== '/v1/chat/completions') {
        res.writeHead(404, { 'content-type': 'application/json' }).end(JSON.stringify({ error: { message: `no route ${req.url}` } }));
        return;
      }
      const request: RecordedRequest = { headers: req.headers, body: JSON.parse(Buffer.concat(parts).toString('utf8')) };
      requests.push(request);
      const step = script[Math.min(next, script.length - 1)]!;
      next += 1;
      const reply = typeof step === 'function' ? step(request) : step;
      if (request.body.stream) sendStream(res, reply);
      else sendJson(res, reply);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    baseURL: `http://127.0.0.1:${port}/v1`,
    requests,
    close: () => new Promise<void>((resolve) => { server.closeAllConnections(); server.close(() => resolve()); }),
  };
}

const base = { id: 'chatcmpl-test', created: 1_700_000_000, model: 'fake-model' };

function sendJson(res: import('node:http').ServerResponse, reply: Reply): void {
  const message = reply.toolCalls
    ? {
        role: 'assistant',
        content: reply.content ?? null,
        tool_calls: reply.toolCalls.map((call) => ({ id: call.id, type: 'function', function: { name: call.name, arguments: call.arguments } })),
      }
    : { role: 'assistant', content: reply.content ?? '' };
  const body = {
    ...base,
    object: 'chat.completion',
    choices: [{ index: 0, message, finish_reason: reply.toolCalls ? 'tool_calls' : 'stop', logprobs: null }],
    usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
  };
  res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(body));
}

function sendStream(res: import('node:http').ServerResponse, reply: Reply): void {
  let deltas: Array<Record<string, unknown>>;
  if (reply.chunks) deltas = reply.chunks;
  else if (reply.toolCalls) {
    deltas = reply.toolCalls.map((call, index) => ({ tool_calls: [{ index, id: call.id, type: 'function', function: { name: call.name, arguments: call.arguments } }] }));
  } else {
    deltas = [...reply.content!].reduce<string[]>((pieces, char, i) => (i % 3 === 0 ? [...pieces, char] : [...pieces.slice(0, -1), pieces[pieces.length - 1] + char]), []).map((content) => ({ content }));
  }
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' });
  const chunk = (delta: Record<string, unknown>, finish: string | null): string =>
    `data: ${JSON.stringify({ ...base, object: 'chat.completion.chunk', choices: [{ index: 0, delta, finish_reason: finish, logprobs: null }] })}\n\n`;
  res.write(chunk({ role: 'assistant', content: '' }, null));
  for (const delta of deltas) res.write(chunk(delta, null));
  const toolReply = reply.toolCalls || deltas.some((d) => 'tool_calls' in d);
  res.write(chunk({}, toolReply ? 'tool_calls' : 'stop'));
  res.end('data: [DONE]\n\n');
}
