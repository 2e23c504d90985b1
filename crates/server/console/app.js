// The console's shell: navigation, and the page the address names. Every page is a deep link (`#/...`), so the
// browser's history, bookmarks and shared links work.
import { render } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { html, currentRoute } from './ui.js';
import { BrowsePage, ConceptPage } from './browse.js';
import { CodePage } from './codes.js';
import { EclPage } from './ecl.js';
import { FhirPage } from './fhir.js';
import { MessagesPage, MessagePage, PastePage } from './messages.js';
import { token, setToken } from './api.js';

const SECTIONS = [
  ['browse', 'Browse'],
  ['ecl', 'ECL'],
  ['fhir', 'FHIR'],
  ['messages', 'Messages'],
];

/** Which navigation section a route belongs to. */
function section(path) {
  const first = path[0] || 'browse';
  if (first === 'concept' || first === 'code') return 'browse';
  if (first === 'hl7') return 'messages';
  return first;
}

function Page({ route }) {
  const [first, second] = route.path;
  switch (first || 'browse') {
    case 'browse': return html`<${BrowsePage} params=${route.params} />`;
    case 'concept': return html`<${ConceptPage} id=${second} />`;
    case 'code': return html`<${CodePage} params=${route.params} />`;
    case 'ecl': return html`<${EclPage} params=${route.params} />`;
    case 'fhir': return html`<${FhirPage} params=${route.params} />`;
    case 'messages':
      return second
        ? html`<${MessagePage} id=${second} />`
        : html`<${MessagesPage} params=${route.params} />`;
    case 'hl7': return html`<${PastePage} />`;
    default:
      return html`<p class="error" role="alert">There is no page “${first}” in the console. Choose one above.</p>`;
  }
}

/**
 * The token of a server started with `--auth`: a button in the header that opens a small form. Entering or
 * forgetting it reloads the page shown, which then asks with (or without) it.
 */
function TokenControl() {
  const [open, setOpen] = useState(false);
  const [saved, setSaved] = useState(token() !== '');
  useEffect(() => {
    const ask = () => setOpen(true);
    window.addEventListener('thoth-auth-needed', ask);
    return () => window.removeEventListener('thoth-auth-needed', ask);
  }, []);
  const submit = (e) => {
    e.preventDefault();
    const value = new FormData(e.target).get('token').trim();
    setToken(value);
    setSaved(value !== '');
    setOpen(false);
  };
  const forget = () => { setToken(''); setSaved(false); };
  return html`
    <div class="token">
      <button type="button" aria-expanded=${open} onClick=${() => setOpen(!open)}>
        ${saved ? 'Token ✓' : 'Token'}
      </button>
      ${saved && html`<button type="button" onClick=${forget}>Forget token</button>`}
      ${open && html`
        <form class="token-form" onSubmit=${submit} aria-label="Access token">
          <label>Bearer token or JWT for this server (kept in this tab only)
            <input name="token" type="password" autocomplete="off" spellcheck="false" required />
          </label>
          <button type="submit">Use token</button>
        </form>`}
    </div>`;
}

function App() {
  const [route, setRoute] = useState(currentRoute());
  // A new token (or none) asks the page shown again.
  const [tokenVersion, setTokenVersion] = useState(0);
  useEffect(() => {
    const onToken = () => setTokenVersion((v) => v + 1);
    window.addEventListener('thoth-token', onToken);
    return () => window.removeEventListener('thoth-token', onToken);
  }, []);
  useEffect(() => {
    // Only a new location (a link, back/forward) changes the page; replaceState from typing does not fire this.
    const onHash = () => setRoute(currentRoute());
    window.addEventListener('hashchange', onHash);
    return () => window.removeEventListener('hashchange', onHash);
  }, []);
  useEffect(() => {
    // After navigation, move focus to the page heading so keyboard and screen-reader users start there.
    const h1 = document.querySelector('main h1');
    if (h1 && document.activeElement === document.body) h1.focus({ preventScroll: true });
  }, [route.path.join('/')]);
  const current = section(route.path);
  return html`
    <header class="top">
      <a class="brand" href="#/browse" aria-label="Thoth console home">Thoth</a>
      <nav aria-label="Sections">
        <ul>
          ${SECTIONS.map(([id, label]) => html`
            <li><a href=${`#/${id}`} aria-current=${current === id ? 'page' : undefined}>${label}</a></li>`)}
        </ul>
      </nav>
      <${TokenControl} />
    </header>
    <main id="main"><${Page} key=${`${route.raw}#${tokenVersion}`} route=${route} /></main>`;
}

render(html`<${App} />`, document.getElementById('app'));
// Tests and the performance measurement read this mark: the first render is done.
document.documentElement.dataset.ready = 'true';
performance.mark('thoth-console-interactive');
