/*
 * Seed 002's output budget: past 128 KB, the middle of the output is cut and the first and last
 * 4 KB are kept, with a notice saying how much was cut and where the full output is. Cuts are
 * made on UTF-8 character boundaries.
 */
import { formatCutNotice } from '../exec/result';

/** Output longer than this (in bytes) is cut. */
export const MCP_OUTPUT_LIMIT = 128 * 1024;
/** Bytes kept from the start and from the end of output that is cut. */
export const MCP_OUTPUT_KEEP = 4 * 1024;

/**
 * Cut `text` when `totalBytes` (the size of the whole output, which may be larger than `text`
 * when the gateway already cut its middle) is over the limit. Returns undefined when nothing
 * needs cutting.
 */
export function cutMiddle(text: string, totalBytes: number, fullOutputPath: string | undefined): string | undefined {
  if (totalBytes <= MCP_OUTPUT_LIMIT) return undefined;
  const bytes = Buffer.from(text, 'utf8');
  let headEnd = Math.min(MCP_OUTPUT_KEEP, bytes.length);
  while (headEnd > 0 && headEnd < bytes.length && isContinuation(bytes[headEnd]!)) headEnd -= 1;
  let tailStart = Math.max(headEnd, bytes.length - MCP_OUTPUT_KEEP);
  while (tailStart < bytes.length && isContinuation(bytes[tailStart]!)) tailStart += 1;
  const kept = headEnd + (bytes.length - tailStart);
  const head = bytes.subarray(0, headEnd).toString('utf8');
  const tail = bytes.subarray(tailStart).toString('utf8');
  return head + formatCutNotice(Math.max(0, totalBytes - kept), fullOutputPath) + tail;
}

function isContinuation(byte: number): boolean {
  return (byte & 0xc0) === 0x80;
}
