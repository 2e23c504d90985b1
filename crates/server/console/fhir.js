// FHIR terminology operations, each showing the request it made and the server's answer, so that people learn
// the API by using it.
import { useState } from 'preact/hooks';
import { api, query } from './api.js';
import { html, href, replaceParams, ErrorMessage, JsonView, useLoad } from './ui.js';

const OPS = {
  expand: { label: '$expand', fields: [['url', 'Value set URL'], ['filter', 'Filter'], ['count', 'Count']], path: '/fhir/ValueSet/$expand' },
  'validate-code': { label: '$validate-code', fields: [['url', 'Value set URL'], ['system', 'System'], ['code', 'Code'], ['display', 'Display']], path: '/fhir/ValueSet/$validate-code' },
  lookup: { label: '$lookup', fields: [['system', 'System'], ['code', 'Code'], ['version', 'Version']], path: '/fhir/CodeSystem/$lookup' },
  translate: { label: '$translate', fields: [['url', 'Concept map URL'], ['system', 'System'], ['code', 'Code'], ['targetsystem', 'Target system']], path: '/fhir/ConceptMap/$translate' },
};

/** The URLs of the loaded resources of `type`, for the field's suggestions. */
function useUrls(type) {
  const { data } = useLoad((signal) => api(query(`/fhir/${type}`, { _elements: 'url,version,title,name', _count: 1000 }), { signal })
    .then((b) => (b.entry || []).map((e) => e.resource).filter((r) => r && r.url)), [type]);
  return data || [];
}

export function FhirPage({ params }) {
  const op = OPS[params.op] ? params.op : 'expand';
  const def = OPS[op];
  const [values, setValues] = useState(() => Object.fromEntries(def.fields.map(([k]) => [k, params[k] || (k === 'count' ? '20' : '')])));
  const [run, setRun] = useState(null);
  const valueSets = useUrls('ValueSet');
  const maps = useUrls('ConceptMap');
  const submit = async (e) => {
    e.preventDefault();
    replaceParams('fhir', { op, ...values });
    const path = query(def.path, values);
    setRun({ path, loading: true });
    try {
      const body = await api(path, { accept: 'application/fhir+json' });
      setRun({ path, body });
    } catch (error) {
      setRun({ path, error });
    }
  };
  const suggestions = op === 'translate' ? maps : valueSets;
  const contains = run && run.body && run.body.expansion ? run.body.expansion.contains || [] : null;
  return html`
    <h1 tabindex="-1">FHIR operations</h1>
    <nav class="tabs" aria-label="Operations">
      ${Object.entries(OPS).map(([k, d]) => html`<a href=${href('fhir', { op: k })} aria-current=${k === op ? 'page' : undefined}>${d.label}</a>`)}
    </nav>
    <form class="op" onSubmit=${submit}>
      ${def.fields.map(([k, label]) => html`
        <label class="field">${label}
          <input name=${k} value=${values[k]} list=${k === 'url' ? 'fhir-urls' : undefined}
            onInput=${(e) => setValues({ ...values, [k]: e.currentTarget.value })} />
        </label>`)}
      <datalist id="fhir-urls">${suggestions.map((r) => html`<option value=${r.url}>${r.title || r.name || ''}</option>`)}</datalist>
      <button type="submit">Run ${def.label}</button>
    </form>
    ${run && html`
      <section aria-label="Request and response">
        <h2>Request</h2>
        <pre class="request">GET ${run.path}</pre>
        <p class="muted">The same with curl: <code>curl -H 'Accept: application/fhir+json' '${location.origin}${run.path}'</code></p>
        ${run.loading && html`<p class="muted">Waiting for the server…</p>`}
        <${ErrorMessage} error=${run.error} />
        ${contains && html`
          <h2 class="count">${run.body.expansion.total ?? contains.length} concepts</h2>
          <table class="grid" aria-label="Expansion"><thead><tr><th>Code</th><th>Display</th><th>System</th></tr></thead><tbody>
            ${contains.map((c) => html`<tr><td><code>${c.code}</code></td><td>${c.display || ''}</td><td class="muted">${c.system}</td></tr>`)}
          </tbody></table>`}
        ${run.body && html`<h2>Response</h2><${JsonView} value=${run.body} label="Response" />`}
      </section>`}`;
}
