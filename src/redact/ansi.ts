/*
 * Streaming removal of terminal escape sequences from PTY output, for callers that asked for
 * plain text. It is a byte state machine, so a sequence split across chunks is still removed
 * whole. Handled (ECMA-48 / xterm):
 *   CSI  ESC [ params intermediates final          (colours, cursor movement, erase, modes)
 *   OSC  ESC ] ... BEL | ESC \                      (titles, hyperlinks, clipboard)
 *   DCS / SOS / PM / APC  ESC P|X|^|_ ... ESC \     (device control, application strings)
 *   ESC + intermediates + final                     (charset selection `ESC ( B`, `ESC =`, `ESC 7`)
 * C1 bytes (0x80-0x9f) are not treated as controls: in UTF-8 output they are continuation bytes.
 * `\r\n` becomes `\n`; other bare `\r` and backspaces are left for the caller.
 */

const ESC = 0x1b;
const BEL = 0x07;
const CR = 0x0d;
const LF = 0x0a;

const enum State {
  Text,
  Escape,
  EscapeIntermediate,
  Csi,
  String, // OSC, DCS, SOS, PM, APC body
  StringEscape, // saw ESC inside a string: `\` ends it
  CarriageReturn,
}

export class AnsiStripper {
  #state: State = State.Text;

  push(chunk: Buffer): Buffer {
    const out = Buffer.allocUnsafe(chunk.length + 1);
    let n = 0;
    for (let i = 0; i < chunk.length; i++) {
      const byte = chunk[i];
      switch (this.#state) {
        case State.Text:
          if (byte === ESC) this.#state = State.Escape;
          else if (byte === CR) this.#state = State.CarriageReturn;
          else out[n++] = byte;
          break;
        case State.CarriageReturn:
          if (byte === LF) {
            out[n++] = LF;
            this.#state = State.Text;
          } else {
            out[n++] = CR;
            this.#state = State.Text;
            i--; // reprocess this byte as text
          }
          break;
        case State.Escape:
          if (byte === 0x5b) this.#state = State.Csi; // [
          else if (byte === 0x5d || byte === 0x50 || byte === 0x58 || byte === 0x5e || byte === 0x5f) this.#state = State.String; // ] P X ^ _
          else if (byte >= 0x20 && byte <= 0x2f) this.#state = State.EscapeIntermediate;
          else this.#state = State.Text; // two-byte sequence (ESC 7, ESC =, ESC c ...) or a stray ESC
          break;
        case State.EscapeIntermediate:
          if (byte < 0x20 || byte > 0x2f) this.#state = State.Text; // the final byte ends it
          break;
        case State.Csi:
          if (byte >= 0x40 && byte <= 0x7e) this.#state = State.Text;
          else if (byte === ESC) this.#state = State.Escape; // malformed: restart
          break;
        case State.String:
          if (byte === BEL) this.#state = State.Text;
          else if (byte === ESC) this.#state = State.StringEscape;
          break;
        case State.StringEscape:
          this.#state = byte === 0x5c ? State.Text : State.String;
          break;
      }
    }
    return out.subarray(0, n);
  }

  /** End of stream: a pending lone `\r` is emitted; an unfinished sequence is dropped. */
  flush(): Buffer {
    const pending = this.#state === State.CarriageReturn ? Buffer.from([CR]) : Buffer.alloc(0);
    this.#state = State.Text;
    return pending;
  }
}

/**
 * Removes ANSI escape sequences (colours, cursor movement, OSC titles) from terminal output.
 */
export function stripAnsi(text: string): string {
  const stripper = new AnsiStripper();
  return Buffer.concat([stripper.push(Buffer.from(text, 'utf8')), stripper.flush()]).toString('utf8');
}
