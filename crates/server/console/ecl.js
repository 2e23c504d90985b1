// The ECL workbench: an editor with the syntax highlighted and the parser's error marked where it is, the
// expression pretty-printed, its result count and pages of results.
import { useEffect, useRef, useState } from 'preact/hooks';
import { api, query, aborted } from './api.js';
import { html, href, replaceParams, ErrorMessage } from './ui.js';
import { conceptsOf } from './browse.js';

const PAGE = 20;

const EXAMPLES = [
  ['Descendants of a concept, and itself', '<< 404684003 |Clinical finding|'],
  ['Children only', '<! 138875005 |SNOMED CT Concept|'],
  ['Findings by finding site', '< 404684003 |Clinical finding| : 363698007 |Finding site| = << 123037004 |Body structure|'],
  ['Members of a reference set', '^ 900000000000497000 |CTV3 simple map|'],
  ['Two hierarchies', '<< 71388002 |Procedure| OR << 404684003 |Clinical finding|'],
];

// Tokens of the brief and long syntax, for colouring only: the server's parser decides what is valid.
const TOKEN = new RegExp([
  '(\\/\\*[\\s\\S]*?(?:\\*\\/|$))', // 1 comment
  '(\\|[^|]*\\|?)', // 2 term
  '("(?:[^"\\\\]|\\\\.)*"?)', // 3 string
  '(\\b\\d{6,18}\\b)', // 4 concept id
  '(\\b(?:AND|OR|MINUS|NOT|R|reverseOf|ANY|descendantOf|descendantOrSelfOf|childOf|childOrSelfOf|ancestorOf|ancestorOrSelfOf|parentOf|parentOrSelfOf|memberOf|top|bottom|to|many)\\b)', // 5 word
  '(<<|<!|<|>>|>!|>|\\^|!!>|!!<|\\*|:|!=|=|\\{\\{|\\}\\}|[{}()\\[\\],.]|#-?\\d+(?:\\.\\d+)?)', // 6 operator
].join('|'), 'gi');
const CLASSES = [null, 'c-comment', 'c-term', 'c-string', 'c-id', 'c-word', 'c-op'];

/** The expression as coloured spans, with the characters from `errorAt` on marked as the error. */
function highlight(text, errorAt) {
  const out = [];
  let last = 0;
  const plain = (s, at) => {
    if (errorAt === null || errorAt < at || errorAt >= at + s.length) return s;
    const k = errorAt - at;
    return [s.slice(0, k), html`<span class="err-mark">${s.slice(k) || ' '}</span>`];
  };
  for (const m of text.matchAll(TOKEN)) {
    if (m.index > last) out.push(plain(text.slice(last, m.index), last));
    const kind = m.slice(1).findIndex((g) => g !== undefined) + 1;
    const inError = errorAt !== null && errorAt >= m.index && errorAt < m.index + m[0].length;
    out.push(html`<span class=${`${CLASSES[kind]}${inError ? ' err-mark' : ''}`}>${m[0]}</span>`);
    last = m.index + m[0].length;
  }
  if (last < text.length) out.push(plain(text.slice(last), last));
  if (errorAt !== null && errorAt >= text.length) out.push(html`<span class="err-mark"> </span>`);
  // A final newline needs a character after it to show in a <pre>.
  out.push('\n');
  return out;
}

export function EclPage({ params }) {
  const [text, setText] = useState(params.q || '');
  const [offset, setOffset] = useState(Number(params.offset) || 0);
  const [check, setCheck] = useState(null);
  const [result, setResult] = useState(null);
  const [error, setError] = useState(null);
  const area = useRef(null);
  const pre = useRef(null);
  useEffect(() => { area.current && area.current.focus(); }, []);
  // Parse as you type (the server's parser, so the editor and the server never disagree).
  useEffect(() => {
    replaceParams('ecl', { q: text, offset: offset || '' });
    if (!text.trim()) { setCheck(null); setResult(null); setError(null); return undefined; }
    const ctl = new AbortController();
    const timer = setTimeout(() => {
      api(query('/v1/snomed/ecl/parse', { ecl: text }), { signal: ctl.signal }).then(
        (c) => {
          setCheck(c);
          setError(null);
          if (!c.valid) { setResult(null); return; }
          conceptsOf(text, PAGE, ctl.signal, offset).then(setResult, (e) => {
            if (!aborted(e)) { setResult(null); setError(e); }
          });
        },
        (e) => { if (!aborted(e)) { setCheck(null); setResult(null); setError(e); } },
      );
    }, 120);
    return () => { clearTimeout(timer); ctl.abort(); };
  }, [text, offset]);
  const errorAt = check && !check.valid ? check.error.utf16Offset : null;
  const sync = () => { if (pre.current && area.current) { pre.current.scrollTop = area.current.scrollTop; pre.current.scrollLeft = area.current.scrollLeft; } };
  const total = result ? result.total : null;
  return html`
    <h1 tabindex="-1">ECL workbench</h1>
    <div class="ecl-editor">
      <pre ref=${pre} class="hl" aria-hidden="true">${highlight(text, errorAt)}</pre>
      <textarea ref=${area} aria-label="ECL" spellcheck="false" autocomplete="off" rows="4" value=${text}
        aria-invalid=${errorAt !== null ? 'true' : undefined} aria-describedby="ecl-status"
        onInput=${(e) => { setText(e.currentTarget.value); setOffset(0); }} onScroll=${sync}></textarea>
    </div>
    <div id="ecl-status">
      ${check && !check.valid && html`<p class="error" role="alert">Syntax error at line ${check.error.line}, column ${check.error.column}: ${check.error.message}</p>`}
      <${ErrorMessage} error=${error} />
    </div>
    <details class="examples"><summary>Examples</summary>
      <ul class="plain">${EXAMPLES.map(([label, e]) => html`<li><a href=${href('ecl', { q: e })}>${label}</a>: <code>${e}</code></li>`)}</ul>
    </details>
    ${check && check.valid && html`
      <h2>Pretty-printed</h2>
      <pre class="pretty">${check.brief}</pre>
      <details><summary>Long syntax</summary><pre class="pretty">${check.long}</pre></details>`}
    ${result && html`
      <h2 aria-live="polite" class="count">${total} ${total === 1 ? 'concept' : 'concepts'}</h2>
      <ol class="results" start=${offset + 1}>
        ${result.items.map((c) => html`<li><a href=${`#/concept/${c.id}`}>${c.term}</a> <span class="code">${c.id}</span></li>`)}
      </ol>
      <nav class="pager" aria-label="Pages">
        <button type="button" disabled=${offset === 0} onClick=${() => setOffset(Math.max(0, offset - PAGE))}>Previous page</button>
        <span>${total ? `${offset + 1}–${Math.min(offset + PAGE, total)} of ${total}` : ''}</span>
        <button type="button" disabled=${offset + PAGE >= total} onClick=${() => setOffset(offset + PAGE)}>Next page</button>
      </nav>`}`;
}
