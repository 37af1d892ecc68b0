export { readShell, MAX_FRAMES, MAX_NESTING } from './read';
export type { ExpansionContext, Finding, Placement, RefusedContext, ShellAnalysis, SimpleCommand, TokenReading, TokenSpan, VariableSet, Word } from './types';
