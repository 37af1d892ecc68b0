/** One registered spelling of a secret: `form` names the transformation (safe to log), `text` is the spelling. */
export interface EncodedForm {
  readonly form: string;
  readonly text: string;
  /** Encoders write this spelling wrapped into lines (base64): it is also matched across line breaks. */
  readonly wraps?: boolean;
}
