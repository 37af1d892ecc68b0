/*
 * The resolution step shared by commands (preparePlan) and stdin data (input.ts): each found
 * reference's value is revealed once and checked before anything uses it. Too short to mask
 * reliably, or holding a NUL byte (no process can receive it), is a coded error naming the
 * reference, never its value; nothing is run or written.
 */
import { ExecgateError } from '../errors';
import type { ResolvedRef } from '../refs/store';

export interface RevealedRef {
  readonly ref: ResolvedRef;
  /** Position in the resolution's list (stable names such as EXECGATE_REF_<index>). */
  readonly index: number;
  readonly value: string;
}

export function revealValues(refs: readonly ResolvedRef[], minLength: number, outcome: 'run' | 'written'): RevealedRef[] {
  const nothing = outcome === 'run' ? 'Nothing was run.' : 'Nothing was written.';
  const revealed: RevealedRef[] = [];
  refs.forEach((ref, index) => {
    if (!ref.found || !ref.value) return;
    const value = ref.value.reveal();
    if (value.length < minLength) {
      throw new ExecgateError(
        'EXECGATE_ERR_REF_TOO_SHORT',
        `${ref.ref} resolved (from ${ref.source}) to a value shorter than ${minLength} characters. ` +
          'Values that short cannot be masked reliably in output and masking them would reveal them; ' +
          `store a longer secret or lower \`secrets.minLength\` in the policy. ${nothing}`,
        { reference: ref.ref, minLength },
      );
    }
    if (value.includes('\0')) {
      throw new ExecgateError(
        'EXECGATE_ERR_REF_SOURCE_FAILED',
        `${ref.ref} resolved (from ${ref.source}) to a value holding a NUL byte, which cannot be passed to a process. ${nothing}`,
        { reference: ref.ref },
      );
    }
    revealed.push({ ref, index, value });
  });
  return revealed;
}
