// The terminology browser: a code system picker, type-ahead search and the SNOMED CT concept page (from
// /v1/snomed); the pages of other code systems' codes and their hierarchies are in codes.js.
import { useEffect, useLayoutEffect, useMemo, useRef, useState } from 'preact/hooks';
import { api, query, aborted } from './api.js';
import { html, href, replaceParams, ErrorMessage, useLoad, Marked, CopyId } from './ui.js';
import { Hierarchy, splitSystem } from './codes.js';

export const SCT = 'http://snomed.info/sct';
const IS_A = '116680003';
const FSN = '900000000000003001';
const DEFINITION = '900000000000550004';
const PREFERRED_TERMS = new Map();

/**
 * Preferred terms of SNOMED CT concepts, by id (cached): one ECL expansion for all of them, or, when that fails
 * (an id the release lacks), one request each.
 */
export async function names(ids, signal) {
  const want = [...new Set(ids.map(String))].filter((id) => /^\d{6,18}$/.test(id) && !PREFERRED_TERMS.has(id));
  if (want.length) {
    try {
      for (let i = 0; i < want.length; i += 200) {
        const ecl = want.slice(i, i + 200).join(' OR ');
        const rows = await api(query('/v1/snomed/expand', { ecl, preferred: true }), { signal });
        for (const r of rows) PREFERRED_TERMS.set(String(r.conceptId), r.term);
      }
    } catch (e) {
      if (aborted(e)) throw e;
      await Promise.all(want.filter((id) => !PREFERRED_TERMS.has(id)).map((id) =>
        api(`/v1/snomed/concepts/${id}/preferred`, { signal })
          .then((d) => PREFERRED_TERMS.set(id, d.term), () => {})));
    }
  }
  return (id) => PREFERRED_TERMS.get(String(id)) || '';
}

/** The concepts an ECL expression selects, with their preferred terms, at most `limit`, and how many there are. */
export async function conceptsOf(ecl, limit, signal, offset = 0) {
  // Encoded once, by query(): the server reads the ECL after `ecl/` as it is.
  const url = `${SCT}?fhir_vs=ecl/${ecl}`;
  const vs = await api(query('/fhir/ValueSet/$expand', { url, count: limit, offset }), { signal });
  const e = vs.expansion || {};
  return { total: e.total ?? (e.contains || []).length, items: (e.contains || []).map((c) => ({ id: c.code, term: c.display })) };
}

const KNOWN = { 'http://snomed.info/sct': 'SNOMED CT', 'http://loinc.org': 'LOINC', 'http://hl7.org/fhir/sid/icd-10-cm': 'ICD-10-CM' };

/** The code systems and versions loaded, from the server's TerminologyCapabilities: the main ones first. */
async function catalogue(signal) {
  const caps = await api('/fhir/metadata?mode=terminology', { signal });
  const out = [];
  for (const cs of caps.codeSystem || []) {
    if (!cs.uri || cs.uri === SCT) continue;
    const versions = (cs.version || []).map((v) => v.code).filter(Boolean);
    for (const version of versions.length ? versions : ['']) {
      out.push({ url: cs.uri, version, title: KNOWN[cs.uri] || cs.uri.replace(/^https?:\/\//, '') });
    }
  }
  out.sort((a, b) => rank(a.url) - rank(b.url) || a.title.localeCompare(b.title));
  return out;
}

const rank = (url) => (url.startsWith('http://snomed.info/') ? 0 : url === 'http://loinc.org' ? 1
  : url.includes('icd-10') ? 2 : 3);

function SystemPicker({ value, onChange }) {
  const { data, error } = useLoad(catalogue, []);
  const systems = data || [];
  return html`
    <label class="field">Code system
      <select value=${value} onChange=${(e) => onChange(e.currentTarget.value)}>
        <option value=${SCT}>SNOMED CT (native search)</option>
        ${systems.filter((s) => s.url !== SCT).map((s) => html`
          <option value=${s.url + (s.version ? `|${s.version}` : '')}>${s.title}${s.version ? ` ${s.version}` : ''}</option>`)}
      </select>
    </label>
    ${error && html`<${ErrorMessage} error=${error} />`}`;
}

// The semantic tags of the International Edition's hierarchies, most searched first.
const SEMANTIC_TAGS = ['disorder', 'finding', 'procedure', 'body structure', 'substance', 'product',
  'observable entity', 'organism', 'qualifier value', 'situation', 'event', 'morphologic abnormality',
  'regime/therapy', 'specimen', 'physical object', 'medicinal product', 'clinical drug', 'occupation',
  'person', 'environment', 'record artifact', 'assessment scale', 'attribute'];

async function searchSnomed(p, signal) {
  const rows = await api(query('/v1/snomed/search', {
    s: p.q, maxHits: 25, constraint: p.within, inactiveConcepts: p.inactive === 'true', removeDuplicates: true,
    semanticTag: p.tag,
  }), { signal });
  return rows.map((r) => ({ id: String(r.conceptId), term: r.term, preferred: r.preferredTerm, link: `#/concept/${r.conceptId}` }));
}

async function searchOther(p, signal) {
  const [url, version] = p.system.split('|');
  const include = { system: url };
  if (version) include.version = version;
  const vs = await api('/fhir/ValueSet/$expand', {
    signal,
    body: {
      resourceType: 'Parameters',
      parameter: [
        { name: 'valueSet', resource: { resourceType: 'ValueSet', status: 'active', compose: { include: [include] } } },
        { name: 'filter', valueString: p.q },
        { name: 'count', valueInteger: 25 },
      ],
    },
    contentType: 'application/fhir+json',
  });
  return (vs.expansion?.contains || []).map((c) => ({
    id: c.code, term: c.display || '', preferred: c.display || '',
    link: href('code', { system: p.system, code: c.code }),
  }));
}

export function BrowsePage({ params }) {
  const [p, setP] = useState({
    q: params.q || '', system: params.system || SCT, within: params.within || '', inactive: params.inactive || '',
    tag: params.tag || '',
  });
  const [result, setResult] = useState({ rows: null, error: null, ms: null });
  const input = useRef(null);
  const list = useRef(null);
  useEffect(() => { input.current && input.current.focus(); }, []);
  // A layout effect, not useEffect: Preact runs effects after the next frame is painted (requestAnimationFrame),
  // which would hold every keystroke's request back by up to a frame (16 ms); this one starts it at once.
  useLayoutEffect(() => {
    if (!p.q.trim() && (p.system !== SCT || (!p.within.trim() && !p.tag))) {
      setResult({ rows: null, error: null, ms: null });
      return undefined;
    }
    const ctl = new AbortController();
    const started = performance.now();
    const run = p.system === SCT ? searchSnomed : searchOther;
    run(p, ctl.signal).then(
      (rows) => setResult({ rows, q: p.q, error: null, ms: performance.now() - started }),
      (error) => { if (!aborted(error)) setResult({ rows: null, error, ms: null }); },
    );
    return () => ctl.abort();
  }, [p.q, p.system, p.within, p.inactive, p.tag]);
  // The address follows the fields once typing pauses: history.replaceState costs milliseconds on the
  // keystroke's path (measured: a keystroke's results 7 ms later on a loaded machine when it ran beside the request).
  const remember = () => replaceParams('browse', { ...p, system: p.system === SCT ? '' : p.system });
  useEffect(() => {
    const t = setTimeout(remember, 250);
    return () => clearTimeout(t);
  }, [p.q, p.system, p.within, p.inactive, p.tag]);
  // The picker lists every code system loaded (about 2,000 options with the HL7 terminology package): the same
  // element while the system is unchanged, so that Preact skips it instead of comparing them all per keystroke.
  const picker = useMemo(() => html`<${SystemPicker} value=${p.system} onChange=${(system) => setP((old) => ({ ...old, system }))} />`, [p.system]);
  const set = (k) => (e) => setP({ ...p, [k]: e.currentTarget.type === 'checkbox' ? String(e.currentTarget.checked) : e.currentTarget.value });
  // Down arrow from the search field goes to the first result; arrows move between results.
  const onKey = (e) => {
    if (e.key === 'ArrowDown' && list.current) {
      const first = list.current.querySelector('a');
      if (first) { e.preventDefault(); first.focus(); }
    }
  };
  const onListKey = (e) => {
    const links = [...list.current.querySelectorAll('a')];
    const i = links.indexOf(document.activeElement);
    if (e.key === 'ArrowDown' && i < links.length - 1) { e.preventDefault(); links[i + 1].focus(); }
    if (e.key === 'ArrowUp') { e.preventDefault(); (i > 0 ? links[i - 1] : input.current).focus(); }
  };
  const rows = result.rows;
  return html`
    <h1 tabindex="-1">Browse</h1>
    <form class="search" role="search" onSubmit=${(e) => e.preventDefault()}>
      ${picker}
      <label class="field grow">Search
        <input ref=${input} type="search" aria-label="Search" value=${p.q} onInput=${set('q')} onKeyDown=${onKey}
          placeholder="Words or word starts: 'myoc inf'" autocomplete="off" />
      </label>
      ${p.system === SCT && html`
        <label class="field">Within (ECL)
          <input value=${p.within} onInput=${set('within')} placeholder="<< 404684003" aria-label="Within (ECL constraint)" />
        </label>
        <label class="field">Semantic tag
          <select value=${p.tag} onChange=${set('tag')}>
            <option value="">any</option>
            ${SEMANTIC_TAGS.map((t) => html`<option value=${t}>${t}</option>`)}
          </select>
        </label>
        <label class="check"><input type="checkbox" checked=${p.inactive === 'true'} onChange=${set('inactive')} /> Inactive concepts too</label>`}
    </form>
    <${ErrorMessage} error=${result.error} />
    ${p.system !== SCT && !p.q.trim() && html`<${Hierarchy} system=${p.system} title=${KNOWN[splitSystem(p.system).url] || splitSystem(p.system).url} />`}
    ${rows && html`
      <p class="count" aria-live="polite">${rows.length === 25 ? 'First 25 matches' : `${rows.length} matches`}${result.ms !== null ? ` (${Math.round(result.ms)} ms)` : ''}</p>
      <ul class="results" ref=${list} onKeyDown=${onListKey} onClick=${remember} aria-label="Search results" data-q=${result.q}>
        ${rows.map((r) => html`
          <li><a href=${r.link}><span class="term"><${Marked} text=${r.term} q=${result.q} /></span>
            ${r.preferred && r.preferred !== r.term ? html` <span class="pt">${r.preferred}</span>` : ''}
            <span class="code">${r.id}</span></a></li>`)}
      </ul>`}`;
}

async function loadConcept(id, signal) {
  if (!/^\d{6,18}$/.test(id || '')) throw new Error(`“${id}” is not a SNOMED CT concept id (6 to 18 digits)`);
  const base = `/v1/snomed/concepts/${id}`;
  // The concept first: when it is unknown, one request fails and says so, not five.
  const ext = await api(`${base}/extended`, { signal });
  const [props, members, history, children] = await Promise.all([
    api(`${base}/properties`, { signal }),
    api(`${base}/refsets`, { signal }),
    api(`${base}/historical`, { signal }),
    conceptsOf(`<! ${id}`, 200, signal).catch((e) => { if (aborted(e)) throw e; return { error: e, items: [], total: 0 }; }),
  ]);
  const ids = [id, ext.concept.moduleId, ext.concept.definitionStatusId];
  for (const d of ext.descriptions) ids.push(d.typeId, ...d.refsets);
  for (const vs of Object.values(ext.directParentRelationships)) ids.push(...vs);
  ids.push(...Object.keys(ext.directParentRelationships));
  for (const g of Object.values(props)) for (const [t, vs] of Object.entries(g)) ids.push(t, ...vs.filter(isId));
  for (const m of members) ids.push(m.refsetId);
  for (const [r, ms] of Object.entries(history)) { ids.push(r); for (const m of ms) if (m.targetComponentId) ids.push(m.targetComponentId); }
  const name = await names(ids, signal);
  return { ext, props, members, history, children, name };
}

/** Whether an attribute's value is a concept id (else a concrete value). */
const isId = (v) => /^\d{6,18}$/.test(String(v));

const Concept = ({ id, name }) => html`<a href=${`#/concept/${id}`}>${name(id) || id}</a> <span class="code">${id}</span>`;

/** A node of the hierarchy: its children load when it is opened. */
function TreeNode({ item }) {
  const [open, setOpen] = useState(false);
  const [kids, setKids] = useState(null);
  const [error, setError] = useState(null);
  const toggle = () => {
    setOpen(!open);
    if (!kids) conceptsOf(`<! ${item.id}`, 200).then(setKids, setError);
  };
  return html`<li>
    <button type="button" class="twist" aria-expanded=${open} aria-label=${`${open ? 'Collapse' : 'Expand'} ${item.term}`} onClick=${toggle}>${open ? '▾' : '▸'}</button>
    <a href=${`#/concept/${item.id}`}>${item.term}</a> <span class="code">${item.id}</span>
    ${open && html`<${ErrorMessage} error=${error} />`}
    ${open && kids && (kids.items.length ? html`<ul class="tree">${kids.items.map((k) => html`<${TreeNode} key=${k.id} item=${k} />`)}</ul>`
      : html`<p class="muted">No children.</p>`)}
  </li>`;
}

/** Every path from the concept up to the root, from the IS-A parents of each ancestor (at most 20 paths). */
async function pathsToRoot(id) {
  const parents = new Map();
  const todo = [id];
  while (todo.length && parents.size < 400) {
    const batch = todo.splice(0, 20).filter((x) => !parents.has(x));
    const got = await Promise.all(batch.map((x) => api(`/v1/snomed/concepts/${x}/properties`)));
    batch.forEach((x, i) => {
      const ps = ((got[i]['0'] || {})[IS_A] || []).map(String);
      parents.set(x, ps);
      for (const p of ps) if (!parents.has(p)) todo.push(p);
    });
  }
  const paths = [];
  const walk = (x, path) => {
    if (paths.length >= 20) return;
    const ps = parents.get(x) || [];
    if (!ps.length) { paths.push([...path, x].reverse()); return; }
    for (const p of ps) walk(p, [...path, x]);
  };
  walk(id, []);
  const name = await names([...parents.keys()]);
  return { paths, name };
}

function Paths({ id }) {
  const [state, setState] = useState(null);
  if (!state) return html`<button type="button" onClick=${() => { setState({ loading: true }); pathsToRoot(id).then((r) => setState(r), (error) => setState({ error })); }}>Show paths to root</button>`;
  if (state.loading) return html`<p class="muted">Finding the paths…</p>`;
  if (state.error) return html`<${ErrorMessage} error=${state.error} />`;
  return html`<ol class="paths">${state.paths.map((p) => html`<li>${p.map((x, i) => html`${i ? ' › ' : ''}<a href=${`#/concept/${x}`}>${state.name(x) || x}</a>`)}</li>`)}</ol>`;
}

export function ConceptPage({ id }) {
  const { data, error, loading } = useLoad((signal) => loadConcept(id, signal), [id]);
  if (error) return html`<h1 tabindex="-1">Concept ${id}</h1><${ErrorMessage} error=${error} />`;
  if (loading || !data) return html`<h1 tabindex="-1">Concept ${id}</h1><p class="muted">Loading…</p>`;
  const { ext, props, members, history, children, name } = data;
  const fsn = ext.descriptions.find((d) => String(d.typeId) === FSN && d.active) || ext.descriptions.find((d) => String(d.typeId) === FSN);
  const parents = (ext.directParentRelationships[IS_A] || []).map(String);
  const pt = ext.preferredDescription ? ext.preferredDescription.term : name(id);
  const kind = (t) => (String(t) === FSN ? 'FSN' : String(t) === DEFINITION ? 'Definition' : 'Synonym');
  const acceptability = (d) => [
    ...d.preferredIn.map((r) => `Preferred in ${name(r) || r}`),
    ...d.acceptableIn.map((r) => `Acceptable in ${name(r) || r}`),
  ].join('; ');
  const maps = members.filter((m) => m.mapTarget !== undefined);
  const others = members.filter((m) => m.mapTarget === undefined);
  const groups = Object.entries(props).map(([g, types]) => [g, Object.entries(types).filter(([t]) => !(g === '0' && t === IS_A))])
    .filter(([, types]) => types.length);
  return html`
    <h1 tabindex="-1">${pt}</h1>
    <p class="fsn">${fsn ? fsn.term : ''}</p>
    <p><${CopyId} id=${id} /> ${ext.concept.active ? html`<span class="badge ok">active</span>` : html`<span class="badge bad">inactive</span>`}
      <span class="muted"> ${name(ext.concept.definitionStatusId) || ''} · module ${name(ext.concept.moduleId) || ext.concept.moduleId} · ${ext.concept.effectiveTime}</span></p>
    <div class="cols">
      <section aria-labelledby="h-parents">
        <h2 id="h-parents">Parents</h2>
        ${parents.length ? html`<ul class="plain">${parents.map((p) => html`<li><${Concept} id=${p} name=${name} /></li>`)}</ul>` : html`<p class="muted">None: this is the root.</p>`}
        <${Paths} id=${id} />
        <h2 id="h-children">Children (${children.total})</h2>
        <${ErrorMessage} error=${children.error} />
        ${children.items.length ? html`<ul class="tree" aria-labelledby="h-children">${children.items.map((c) => html`<${TreeNode} key=${c.id} item=${c} />`)}</ul>` : html`<p class="muted">No children.</p>`}
        ${children.total > children.items.length && html`<p><a href=${href('ecl', { q: `<! ${id}` })}>All ${children.total} children in the ECL workbench</a></p>`}
      </section>
      <section aria-labelledby="h-desc">
        <h2 id="h-desc">Descriptions</h2>
        <table class="grid"><thead><tr><th>Term</th><th>Type</th><th>Lang</th><th>Acceptability</th><th>Status</th></tr></thead>
          <tbody>${ext.descriptions.map((d) => html`<tr class=${d.active ? '' : 'inactive'}><td>${d.term}</td><td>${kind(d.typeId)}</td><td>${d.languageCode}</td><td>${acceptability(d)}</td><td>${d.active ? 'active' : 'inactive'}</td></tr>`)}</tbody>
        </table>
        <h2>Attributes</h2>
        ${groups.length ? groups.map(([g, types]) => html`
          <div class="group"><h3>${g === '0' ? 'Ungrouped' : `Group ${g}`}</h3>
            <dl>${types.map(([t, vs]) => html`<dt><${Concept} id=${t} name=${name} /></dt>${vs.map((v) => html`<dd>${isId(v) ? html`<${Concept} id=${v} name=${name} />` : String(v)}</dd>`)}`)}</dl>
          </div>`) : html`<p class="muted">No attributes besides IS-A.</p>`}
        <h2>Reference sets</h2>
        ${others.length ? html`<ul class="plain">${others.map((m) => html`<li><${Concept} id=${m.refsetId} name=${name} /></li>`)}</ul>` : html`<p class="muted">Member of no reference set.</p>`}
        <h2>Maps</h2>
        ${maps.length ? html`<table class="grid"><thead><tr><th>Map</th><th>Target</th><th>Group/priority</th><th>Rule / advice</th></tr></thead><tbody>
          ${maps.map((m) => html`<tr><td>${name(m.refsetId) || m.refsetId}</td><td><code>${m.mapTarget}</code></td><td>${m.mapGroup !== undefined ? `${m.mapGroup}/${m.mapPriority}` : ''}</td><td>${[m.mapRule, m.mapAdvice].filter(Boolean).join(' — ')}</td></tr>`)}</tbody></table>`
          : html`<p class="muted">No maps.</p>`}
        <h2>History</h2>
        ${Object.keys(history).length ? html`<ul class="plain">${Object.entries(history).map(([r, ms]) => ms.map((m) => html`<li>${name(r) || r}: <${Concept} id=${m.targetComponentId} name=${name} /></li>`))}</ul>`
          : html`<p class="muted">No historical associations${ext.concept.active ? '' : ' recorded for this inactive concept'}.</p>`}
      </section>
    </div>`;
}
