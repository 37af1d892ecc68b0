/*
 * Text escapings a value picks up on its way through tools: URL encodings (several libraries
 * disagree on which punctuation to escape and on `+` for spaces), JSON strings (with and without
 * ASCII-only output, Python's default), XML/HTML entities, and trivial quoting changes.
 */
import type { EncodedForm } from './types';

export function getUriForms(value: string): EncodedForm[] {
  let component: string;
  try {
    component = encodeURIComponent(value);
  } catch {
    // A lone surrogate cannot be percent-encoded; the UTF-8 based forms below still cover it.
    return getSearchParamsForms(value);
  }
  const strict = component.replace(/[!'()*]/g, (char) => `%${char.charCodeAt(0).toString(16).toUpperCase()}`);
  return [
    { form: 'uri-component', text: component },
    { form: 'uri-component-plus', text: component.replace(/%20/g, '+') },
    { form: 'uri-rfc3986', text: strict },
    { form: 'uri-rfc3986-plus', text: strict.replace(/%20/g, '+') },
    // Python's urllib.parse.quote keeps `/` by default.
    { form: 'uri-path', text: strict.replace(/%2F/g, '/') },
    ...getSearchParamsForms(value),
  ];
}

function getSearchParamsForms(value: string): EncodedForm[] {
  return [{ form: 'uri-form', text: new URLSearchParams([['', value]]).toString().slice(1) }];
}

export function getJsonForms(value: string): EncodedForm[] {
  const body = JSON.stringify(value).slice(1, -1);
  return [
    { form: 'json', text: body },
    {
      form: 'json-ascii',
      text: body.replace(/[\u0080-\uffff]/g, (char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, '0')}`),
    },
  ];
}

export function getMarkupForms(value: string): EncodedForm[] {
  const text = value.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
  const attribute = text.replace(/"/g, '&quot;');
  return [
    { form: 'xml-text', text },
    { form: 'xml', text: attribute.replace(/'/g, '&apos;') },
    { form: 'html', text: attribute.replace(/'/g, '&#39;') },
  ];
}

export function getQuoteForms(value: string): EncodedForm[] {
  const forms: EncodedForm[] = [];
  const first = value[0];
  if (value.length >= 2 && (first === '"' || first === "'") && value[value.length - 1] === first) {
    forms.push({ form: 'quotes-trimmed', text: value.slice(1, -1) });
  }
  // How the GitHub runner spells a value passed on a Windows-style command line.
  forms.push({ form: 'cmdline-dquote', text: value.replace(/"/g, '\\"') });
  return forms;
}

/** A PTY turns each "\n" into "\r\n" (onlcr), so a multi-line value arrives spelled that way. */
export function getTerminalForms(value: string): EncodedForm[] {
  return [{ form: 'pty-crlf', text: value.replace(/\n/g, '\r\n') }];
}
