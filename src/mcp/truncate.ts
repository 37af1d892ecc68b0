/*
 * Seed 002's output budget, applied by run/output/present.ts (the one place that cuts output).
 */
export { MIDDLE_CUT_LIMIT as MCP_OUTPUT_LIMIT, MIDDLE_CUT_KEEP as MCP_OUTPUT_KEEP, cutMiddle } from '../run/output/present';
