// The HL7 v2 desk: the messages the engine received (/messages) with filters and live updates, one message with
// its segments and fields named, validation issues at their field, deliveries and replay, its FHIR Bundle; and a
// paste box that parses, validates and converts a message on the spot (/hl7/...).
import { useEffect, useState } from 'preact/hooks';
import { api, query, aborted } from './api.js';
import { html, replaceParams, ErrorMessage, JsonView, useLoad } from './ui.js';

const FILTERS = [['type', 'Type'], ['sender', 'Sender'], ['control_id', 'Control id'], ['since', 'Since'], ['until', 'Until']];
const STATUSES = ['', 'stored', 'pending', 'delivered', 'dead', 'duplicate', 'rejected'];
const POLL_MS = 2000;

export function MessagesPage({ params }) {
  const [f, setF] = useState(() => Object.fromEntries([...FILTERS.map(([k]) => k), 'status', 'offset'].map((k) => [k, params[k] || ''])));
  const [page, setPage] = useState({ data: null, error: null });
  const [live, setLive] = useState(true);
  useEffect(() => {
    replaceParams('messages', f);
    const ctl = new AbortController();
    let timer = null;
    const load = () => api(query('/messages', { ...f, limit: 50 }), { signal: ctl.signal }).then(
      (data) => setPage({ data, error: null }),
      (error) => { if (!aborted(error)) setPage((p) => ({ data: p.data, error })); },
    ).finally(() => {
      // Live updates: poll while the page is open (a paused or hidden tab does not ask).
      if (!ctl.signal.aborted && live) timer = setTimeout(() => { if (document.visibilityState === 'visible') load(); else timer = setTimeout(load, POLL_MS); }, POLL_MS);
    });
    const delay = setTimeout(load, 150);
    return () => { clearTimeout(delay); clearTimeout(timer); ctl.abort(); };
  }, [...Object.values(f), live]);
  const set = (k) => (e) => setF({ ...f, [k]: e.currentTarget.value, offset: k === 'offset' ? e.currentTarget.value : '' });
  const data = page.data;
  const offset = Number(f.offset) || 0;
  return html`
    <h1 tabindex="-1">Messages</h1>
    <p><a href="#/hl7">Parse, validate or convert a pasted message</a></p>
    <form class="filters" onSubmit=${(e) => e.preventDefault()} aria-label="Filters">
      ${FILTERS.map(([k, label]) => html`<label class="field">${label}<input value=${f[k]} onInput=${set(k)} placeholder=${k === 'since' || k === 'until' ? '2024-03-15' : ''} /></label>`)}
      <label class="field">Status<select value=${f.status} onChange=${set('status')}>${STATUSES.map((s) => html`<option value=${s}>${s || 'any'}</option>`)}</select></label>
      <label class="check"><input type="checkbox" checked=${live} onChange=${(e) => setLive(e.currentTarget.checked)} /> Live</label>
    </form>
    <${ErrorMessage} error=${page.error} />
    ${data && html`
      <p class="count" aria-live="polite">${data.total} ${data.total === 1 ? 'message' : 'messages'}</p>
      <table class="grid" aria-label="Messages">
        <thead><tr><th>Id</th><th>Received</th><th>Type</th><th>Sender</th><th>Control id</th><th>Status</th><th>Size</th></tr></thead>
        <tbody>${data.items.map((m) => html`<tr class=${`st-${m.status}`}>
          <td><a href=${`#/messages/${m.id}`}>${m.id}</a></td><td>${m.received}</td>
          <td>${m.type}${m.trigger ? `^${m.trigger}` : ''}</td><td>${m.sender}</td><td>${m.control_id}</td><td>${m.status}</td><td>${m.size}</td></tr>`)}
        </tbody>
      </table>
      ${data.items.length === 0 && html`<p class="muted">No message matches. Messages sent to the MLLP port appear here as they arrive.</p>`}
      <nav class="pager" aria-label="Pages">
        <button type="button" disabled=${offset === 0} onClick=${() => setF({ ...f, offset: String(Math.max(0, offset - 50)) })}>Newer</button>
        <button type="button" disabled=${offset + 50 >= data.total} onClick=${() => setF({ ...f, offset: String(offset + 50) })}>Older</button>
      </nav>`}`;
}

/** A field's JSON value (see hl7v2::to_json) as ER7 text. */
function er7(v, d = ['~', '^', '&']) {
  if (v && typeof v === 'object' && !Array.isArray(v)) return (v.repetitions || []).map((r) => er7(r, d)).join(d[0]);
  if (Array.isArray(v)) return v.map((c) => (Array.isArray(c) ? c.join(d[2]) : c)).join(d[1]);
  return v ?? '';
}

/** Issue paths (`/PATIENT_RESULT/PATIENT/PID-5`) keyed as segment path without `(0)` and field number. */
function issuesByField(validation) {
  const map = new Map();
  for (const i of (validation && validation.issues) || []) {
    const m = /^(.*?)(?:-(\d+))?(?:\.\d+)*$/.exec(i.path || '');
    const key = `${m[1]}#${m[2] || 0}`;
    if (!map.has(key)) map.set(key, []);
    map.get(key).push(i);
  }
  return map;
}

/** Segments as tables of named fields, issues marked at their field. */
export function Segments({ message, validation }) {
  const issues = issuesByField(validation);
  return html`<div class="segments">${(message.segments || []).map((s, si) => {
    const path = (s.path || '').replace(/\(0\)/g, '');
    const segIssues = issues.get(`${path}#0`) || [];
    return html`<section class="segment" aria-label=${`Segment ${si + 1} ${s.id}`}>
      <h3><code>${s.id}</code> ${s.name || ''} <span class="muted">${path}</span></h3>
      ${segIssues.map((i) => html`<p class=${`issue ${i.severity}`}>${i.severity}: ${i.message}</p>`)}
      <table class="grid fields"><thead><tr><th>Field</th><th>Name</th><th>Value</th></tr></thead><tbody>
        ${s.fields.map((v, fi) => {
          const n = fi + 1;
          const text = er7(v);
          const here = issues.get(`${path}#${n}`) || [];
          if (!text && !here.length) return null;
          return html`<tr class=${here.length ? `has-issue ${here[0].severity}` : ''}>
            <td><code>${s.id}-${n}</code></td><td>${(s.names || [])[fi] || ''}</td>
            <td>${text}${here.map((i) => html`<div class=${`issue ${i.severity}`}>${i.severity}: ${i.message}</div>`)}</td></tr>`;
        })}
      </tbody></table>
    </section>`;
  })}</div>`;
}

export function MessagePage({ id }) {
  const [version, setVersion] = useState(0);
  const { data, error, loading } = useLoad((signal) => api(query(`/messages/${encodeURIComponent(id)}`, { names: true }), { signal }), [id, version]);
  const [replay, setReplay] = useState(null);
  const [bundle, setBundle] = useState(null);
  if (error) return html`<h1 tabindex="-1">Message ${id}</h1><${ErrorMessage} error=${error} />`;
  if (!data) return html`<h1 tabindex="-1">Message ${id}</h1><p class="muted">${loading ? 'Loading…' : ''}</p>`;
  const doReplay = () => api(`/messages/${data.id}/replay`, { method: 'POST' }).then(
    (r) => { setReplay({ ok: r.routes.length ? `Replayed on ${r.routes.join(', ')}` : 'Replayed: no route matches this message, so nothing was queued' }); setVersion(version + 1); },
    (e) => setReplay({ error: e }),
  );
  // Through the API (not a plain link), so that a token entered for a server with `--auth` goes with it.
  const downloadRaw = () => api(`/messages/${data.id}/raw`, { blob: true, accept: '*/*' }).then(
    (bytes) => {
      const link = document.createElement('a');
      link.href = URL.createObjectURL(bytes);
      link.download = `message-${data.id}.hl7`;
      link.click();
      setTimeout(() => URL.revokeObjectURL(link.href), 1000);
    },
    (e) => setReplay({ error: e }),
  );
  const showBundle = () => api(`/messages/${data.id}/fhir`, { accept: 'application/fhir+json' }).then((b) => setBundle({ b }), (e) => setBundle({ error: e }));
  const v = data.validation || {};
  return html`
    <h1 tabindex="-1">Message ${data.id}: ${data.type}${data.trigger ? `^${data.trigger}` : ''}</h1>
    <p><a href="#/messages">All messages</a></p>
    <dl class="facts">
      <dt>Received</dt><dd>${data.received}</dd><dt>Sender</dt><dd>${data.sender}</dd><dt>Peer</dt><dd>${data.peer}</dd>
      <dt>Control id</dt><dd>${data.control_id}</dd><dt>Status</dt><dd>${data.status}</dd>
      <dt>Structure</dt><dd>${data.message ? `${data.message.structure || '?'} (v${data.message.version || '?'})` : '?'}</dd>
      <dt>Validation</dt><dd>${v.valid ? 'valid' : `${(v.issues || []).length} issue(s)`} ${v.mode ? `(mode ${v.mode})` : ''}</dd>
    </dl>
    <p class="actions">
      <button type="button" onClick=${doReplay}>Replay</button>
      <button type="button" onClick=${showBundle}>Show FHIR Bundle</button>
      <button type="button" onClick=${downloadRaw}>Download raw bytes</button>
    </p>
    ${replay && (replay.error ? html`<${ErrorMessage} error=${replay.error} />` : html`<p class="ok" role="status">${replay.ok}</p>`)}
    ${bundle && (bundle.error ? html`<${ErrorMessage} error=${bundle.error} />` : html`<h2>FHIR Bundle</h2><${JsonView} value=${bundle.b} label="FHIR Bundle" />`)}
    <h2>Segments</h2>
    ${data.message ? html`<${Segments} message=${data.message} validation=${v} />` : html`<p class="muted" role="status">${data.omitted}</p>`}
    <h2>Deliveries</h2>
    ${data.deliveries.length ? html`<table class="grid" aria-label="Deliveries"><thead><tr><th>Route</th><th>Status</th><th>Attempts</th><th>History</th></tr></thead><tbody>
      ${data.deliveries.map((d) => html`<tr><td>${d.route}</td><td>${d.status}</td><td>${d.attempts}</td><td>${d.history.map((a) => html`<div>${a.at} ${a.ok ? 'ok' : 'failed'} ${a.detail || ''}</div>`)}</td></tr>`)}
    </tbody></table>` : html`<p class="muted">No delivery: no route of the engine matches this message.</p>`}
    <h2>Raw</h2>
    ${data.raw !== null ? html`<pre class="raw">${data.raw.replace(/\r/g, '\n')}</pre>` : html`<p class="muted">${data.omitted}</p>`}`;
}

const SAMPLE = 'MSH|^~\\&|HIS|HOSP|LAB|HOSP|20240315143000||ADT^A01^ADT_A01|MSG0001|P|2.5.1\rEVN|A01|20240315143000\rPID|1||12345^^^HOSP^MR||DOE^JOHN||19700101|M\rPV1|1|I|WARD1^101^A';

export function PastePage() {
  const [text, setText] = useState('');
  const [out, setOut] = useState(null);
  const body = () => text.replace(/\r?\n/g, '\r');
  const run = (kind) => {
    if (!text.trim()) { setOut({ kind, error: new Error('Paste an HL7 v2 message first (a line starting with MSH).') }); return; }
    const path = kind === 'parse' ? '/hl7/parse' : kind === 'validate' ? '/hl7/validate' : '/hl7/to-fhir';
    setOut({ kind, loading: true });
    api(path, { body: body(), contentType: 'x-application/hl7-v2+er7', accept: 'application/json, application/fhir+json' })
      .then((r) => setOut({ kind, r }), (error) => setOut({ kind, error }));
  };
  return html`
    <h1 tabindex="-1">Parse, validate, convert</h1>
    <p><a href="#/messages">Back to the messages</a></p>
    <label class="field block">HL7 v2 message
      <textarea rows="8" class="mono" value=${text} onInput=${(e) => setText(e.currentTarget.value)} spellcheck="false"></textarea>
    </label>
    <p class="actions">
      <button type="button" onClick=${() => run('parse')}>Parse</button>
      <button type="button" onClick=${() => run('validate')}>Validate</button>
      <button type="button" onClick=${() => run('fhir')}>Convert to FHIR</button>
      <button type="button" onClick=${() => setText(SAMPLE.replace(/\r/g, '\n'))}>Use a sample</button>
    </p>
    ${out && out.loading && html`<p class="muted">Working…</p>`}
    ${out && html`<${ErrorMessage} error=${out.error} />`}
    ${out && out.r && out.kind === 'parse' && html`<${Segments} message=${out.r.message} validation=${out.r.validation} />`}
    ${out && out.r && out.kind === 'validate' && out.r.messages.map((m) => html`
      <p class=${m.valid ? 'ok' : 'error'}>${m.structure || 'unknown structure'} v${m.version}: ${m.valid ? 'valid' : `${m.issues.length} issue(s)`}</p>
      <ul>${m.issues.map((i) => html`<li class=${`issue ${i.severity}`}><code>${i.path}</code> ${i.severity}: ${i.message}</li>`)}</ul>`)}
    ${out && out.r && out.kind === 'fhir' && html`<${JsonView} value=${out.r} label="FHIR Bundle" />`}`;
}
