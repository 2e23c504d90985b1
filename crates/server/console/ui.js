// Shared pieces of the console: the htm binding, hash routing, and the components every page uses.
import { h } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import htm from 'htm';
import { aborted } from './api.js';

export const html = htm.bind(h);

/** The current route: `#/concept/123?x=1` is `{path: ['concept', '123'], params: {x: '1'}}`. */
export function currentRoute() {
  const raw = location.hash.replace(/^#\/?/, '');
  const [p, q] = raw.split('?');
  const path = p ? p.split('/').map(decodeURIComponent) : [];
  return { raw, path, params: Object.fromEntries(new URLSearchParams(q || '')) };
}

/** The hash of `path` with `params` (empty values left out). */
export function href(path, params = {}) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) {
    if (v !== undefined && v !== null && v !== '' && v !== false) q.set(k, String(v));
  }
  const s = q.toString();
  return `#/${path}${s ? `?${s}` : ''}`;
}

/**
 * Puts `params` in the address without a new history entry (typing in a field should not make one entry per
 * letter), so that the page can be bookmarked or shared as it is.
 */
export function replaceParams(path, params) {
  const target = href(path, params);
  if (location.hash !== target) history.replaceState(null, '', target);
}

/** An API error, said in words, in a live region so that screen readers announce it. */
export function ErrorMessage({ error }) {
  if (!error || aborted(error)) return null;
  return html`<p class="error" role="alert">${error.message || String(error)}</p>`;
}

/**
 * Runs `load(signal)` whenever `deps` change: `{data, error, loading}`. A newer run cancels the older one, so a
 * slow answer never overwrites a newer one.
 */
export function useLoad(load, deps) {
  const [state, setState] = useState({ data: null, error: null, loading: true });
  useEffect(() => {
    const ctl = new AbortController();
    setState((s) => ({ ...s, loading: true, error: null }));
    Promise.resolve()
      .then(() => load(ctl.signal))
      .then(
        (data) => { if (!ctl.signal.aborted) setState({ data, error: null, loading: false }); },
        (error) => { if (!ctl.signal.aborted && !aborted(error)) setState({ data: null, error, loading: false }); },
      );
    return () => ctl.abort();
  }, deps);
  return state;
}

/** JSON, indented, in a block that can be selected and copied. */
export function JsonView({ value, label }) {
  const text = typeof value === 'string' ? value : JSON.stringify(value, null, 2);
  return html`<pre class="json" tabindex="0" aria-label=${label || 'JSON'}>${text}</pre>`;
}

/** `text` with every occurrence of the words of `q` (as word prefixes) wrapped in <mark>. */
export function Marked({ text, q }) {
  const words = (q || '').toLowerCase().split(/[^\p{L}\p{N}]+/u).filter(Boolean);
  if (!words.length || !text) return text || '';
  const lower = text.toLowerCase();
  const marks = new Array(text.length).fill(false);
  for (const w of words) {
    let i = lower.indexOf(w);
    while (i >= 0) {
      const start = i === 0 || !/[\p{L}\p{N}]/u.test(lower[i - 1]);
      if (start) for (let j = i; j < i + w.length; j++) marks[j] = true;
      i = lower.indexOf(w, i + 1);
    }
  }
  const out = [];
  let i = 0;
  while (i < text.length) {
    let j = i;
    while (j < text.length && marks[j] === marks[i]) j++;
    const part = text.slice(i, j);
    out.push(marks[i] ? html`<mark>${part}</mark>` : part);
    i = j;
  }
  return out;
}

/** An id shown selectable, with a button that copies it (`label`: the button's text). */
export function CopyId({ id, label = 'Copy concept id' }) {
  const [said, setSaid] = useState('');
  const copy = () => {
    const done = () => setSaid('Copied');
    if (navigator.clipboard && window.isSecureContext) {
      navigator.clipboard.writeText(id).then(done, () => setSaid('Select the id and copy it'));
    } else {
      setSaid('Select the id and copy it');
    }
  };
  return html`<span class="copy"><code class="sctid">${id}</code>
    <button type="button" onClick=${copy}>${label}</button> <span aria-live="polite">${said}</span></span>`;
}
