/** One registered spelling of a secret: `form` names the transformation (safe to log), `text` is the spelling. */
export interface EncodedForm {
  readonly form: string;
  readonly text: string;
}
