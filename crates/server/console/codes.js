// The pages of code systems other than SNOMED CT (LOINC, ICD-10-CM, package code systems), from the FHIR API
// alone, so that what the console shows a client can ask the same way:
// - `CodeSystem/$lookup` gives a code's display, designations and properties, its `parent` and `child` codes
//   with their displays (the property's `description`), which is all a tree or a path to the root needs;
// - `ValueSet/$expand` of an inline value set gives the top of a hierarchy (`parent exists false` and
//   `child exists true`: ICD-10-CM's 22 chapters, LOINC's component hierarchy root) and the codes that have a
//   LOINC part (one include per Coding property of the code system, `property = part`: their union).
import { useState } from 'preact/hooks';
import { api, query } from './api.js';
import { html, href, ErrorMessage, useLoad, CopyId } from './ui.js';

/**
 * How many children a node shows (ICD-10-CM's largest chapter has 34 blocks, its largest block 27 categories; a
 * LOINC hierarchy node may have hundreds).
 */
const CHILDREN_SHOWN = 200;
/** Codes with a part, per page. */
const PAGE = 50;

/** `{url, version}` of the picker's value `url|version`. */
export function splitSystem(value) {
  const [url, version] = (value || '').split('|');
  return { url, version: version || undefined };
}

/** The value of a `value[x]` part, as text. */
const valueOf = (x) => x.valueCode ?? x.valueString ?? x.valueCoding?.code ?? x.valueBoolean ?? x.valueInteger
  ?? x.valueDecimal ?? x.valueDateTime ?? '';

/**
 * `$lookup` of `code`, read into `{display, name, version, properties, designations}`; each property is
 * `{code, value, coding, description}` (`coding` when the value is a Coding, `description` the display of a
 * `parent`/`child` code). `properties` limits the properties asked for (`*`: all).
 */
export async function lookup(system, code, properties, signal) {
  const { url, version } = splitSystem(system);
  const p = await api(query('/fhir/CodeSystem/$lookup', { system: url, version, code, property: properties }), { signal });
  const ps = p.parameter || [];
  const part = (x, n) => (x.part || []).find((y) => y.name === n) || {};
  const str = (n) => (ps.find((x) => x.name === n) || {}).valueString;
  return {
    display: str('display'),
    name: str('name'),
    version: str('version'),
    properties: ps.filter((x) => x.name === 'property').map((x) => ({
      code: part(x, 'code').valueCode,
      value: String(valueOf(part(x, 'value'))),
      coding: part(x, 'value').valueCoding,
      description: part(x, 'description').valueString,
    })),
    designations: ps.filter((x) => x.name === 'designation').map((d) => ({
      value: part(d, 'value').valueString,
      language: part(d, 'language').valueCode || '',
      use: part(d, 'use').valueCoding?.display || part(d, 'use').valueCoding?.code || '',
    })),
  };
}

/** The codes a `parent`/`child` property names, with their displays. */
const related = (info, kind) => info.properties.filter((p) => p.code === kind)
  .map((p) => ({ code: p.value, display: p.description || '' }));

/** `$expand` of an inline value set of `system` with `includes` (each a list of filters): `{total, items}`. */
async function expandFilters(system, filterSets, { count, offset = 0 }, signal) {
  const { url, version } = splitSystem(system);
  const include = filterSets.map((filter) => ({ system: url, ...(version ? { version } : {}), filter }));
  const vs = await api('/fhir/ValueSet/$expand', {
    signal,
    body: {
      resourceType: 'Parameters',
      parameter: [
        { name: 'valueSet', resource: { resourceType: 'ValueSet', status: 'active', compose: { include } } },
        { name: 'count', valueInteger: count },
        { name: 'offset', valueInteger: offset },
      ],
    },
    contentType: 'application/fhir+json',
  });
  const e = vs.expansion || {};
  const items = (e.contains || []).map((c) => ({ code: c.code, display: c.display || '' }));
  return { total: e.total ?? items.length, items };
}

/** The top of a code system's hierarchy: codes with children and no parent. */
const roots = (system, signal) => expandFilters(system, [[
  { property: 'parent', op: 'exists', value: 'false' },
  { property: 'child', op: 'exists', value: 'true' },
]], { count: CHILDREN_SHOWN }, signal);

const codeLink = (system, code) => href('code', { system, code });

/** A code of the hierarchy: its children (from `$lookup`) load when it is opened. */
function CodeNode({ system, item }) {
  const [open, setOpen] = useState(false);
  const [kids, setKids] = useState(null);
  const [error, setError] = useState(null);
  const label = item.display || item.code;
  const toggle = () => {
    setOpen(!open);
    if (!kids) lookup(system, item.code, 'child').then((info) => setKids(related(info, 'child')), setError);
  };
  return html`<li>
    <button type="button" class="twist" aria-expanded=${open} aria-label=${`${open ? 'Collapse' : 'Expand'} ${label}`} onClick=${toggle}>${open ? '▾' : '▸'}</button>
    <a href=${codeLink(system, item.code)}>${label}</a> <span class="code">${item.code}</span>
    ${open && html`<${ErrorMessage} error=${error} />`}
    ${open && kids && (kids.length ? html`<${CodeTree} system=${system} items=${kids} />` : html`<p class="muted">No children.</p>`)}
  </li>`;
}

/** A list of codes as an expandable tree (the first CHILDREN_SHOWN; the rest counted). */
function CodeTree({ system, items, label }) {
  const shown = items.slice(0, CHILDREN_SHOWN);
  return html`<ul class="tree" aria-label=${label}>${shown.map((k) => html`<${CodeNode} key=${k.code} system=${system} item=${k} />`)}</ul>
    ${items.length > shown.length && html`<p class="muted">and ${items.length - shown.length} more</p>`}`;
}

/** The browse page's view of a code system before anything is typed: the top of its hierarchy, expandable. */
export function Hierarchy({ system, title }) {
  const { data, error, loading } = useLoad(async (signal) => {
    // Only a code system with a definition holding its concepts has a hierarchy to ask for: the others answer
    // the filters with an error ("not supported"), which is not one for the person browsing.
    if (!(await definition(splitSystem(system).url, signal)).browsable) return { total: 0, items: [] };
    return roots(system, signal);
  }, [system]);
  const heading = splitSystem(system).url === 'http://hl7.org/fhir/sid/icd-10-cm' ? 'Chapters' : 'Hierarchy';
  return html`<section aria-labelledby="h-roots">
    <h2 id="h-roots">${heading}</h2>
    <${ErrorMessage} error=${error} />
    ${loading && html`<p class="muted">Loading…</p>`}
    ${data && (data.items.length
      ? html`<${CodeTree} system=${system} items=${data.items} label=${`${title} ${heading.toLowerCase()}`} />`
      : html`<p class="muted">${title} has no hierarchy to browse here; search for its codes above.</p>`)}
    ${data && data.total > data.items.length && html`<p class="muted">The first ${data.items.length} of ${data.total}; search for the others.</p>`}
  </section>`;
}

/** Every path from `code` up to a root, from the `parent` properties of each ancestor (at most 20 paths). */
async function pathsToRoot(system, code) {
  const parents = new Map();
  const names = new Map();
  const todo = [code];
  while (todo.length && parents.size < 200) {
    const batch = todo.splice(0, 10).filter((x) => !parents.has(x));
    const got = await Promise.all(batch.map((x) => lookup(system, x, 'parent')));
    batch.forEach((x, i) => {
      names.set(x, got[i].display || x);
      const ps = related(got[i], 'parent').map((p) => p.code);
      parents.set(x, ps);
      for (const p of ps) if (!parents.has(p)) todo.push(p);
    });
  }
  const paths = [];
  const walk = (x, path) => {
    if (paths.length >= 20 || path.includes(x)) return;
    const ps = parents.get(x) || [];
    if (!ps.length) { paths.push([...path, x].reverse()); return; }
    for (const p of ps) walk(p, [...path, x]);
  };
  walk(code, []);
  return { paths, names };
}

function Paths({ system, code }) {
  const [state, setState] = useState(null);
  if (!state) {
    return html`<button type="button" onClick=${() => { setState({ loading: true }); pathsToRoot(system, code).then(setState, (error) => setState({ error })); }}>Show paths to root</button>`;
  }
  if (state.loading) return html`<p class="muted">Finding the paths…</p>`;
  if (state.error) return html`<${ErrorMessage} error=${state.error} />`;
  return html`<ol class="paths" aria-label="Paths to root">${state.paths.map((p) => html`<li>${p.map((x, i) => html`${i ? ' › ' : ''}<a href=${codeLink(system, x)}>${state.names.get(x) || x}</a>`)}</li>`)}</ol>`;
}

// What each code system's CodeSystem resource says (without its concepts): whether there is one with concepts to
// browse (the built-in code systems, UCUM or BCP-47, have none and no hierarchy), and its Coding properties.
const DEFINITIONS = new Map();

async function definition(url, signal) {
  if (!DEFINITIONS.has(url)) {
    const b = await api(query('/fhir/CodeSystem', { url, _elements: 'content,property' }), { signal });
    const cs = (b.entry || []).map((e) => e.resource).find(Boolean);
    DEFINITIONS.set(url, {
      browsable: Boolean(cs) && !['not-present', 'example'].includes(cs.content),
      codingProperties: ((cs && cs.property) || []).filter((p) => p.type === 'Coding').map((p) => p.code),
    });
  }
  return DEFINITIONS.get(url);
}

/**
 * The codes that have `code` as the value of a Coding property (LOINC: the terms with this part on any axis),
 * a page at a time; nothing when the code system has no Coding property or no code has it.
 */
function HavingPart({ system, code, isPart }) {
  const [offset, setOffset] = useState(0);
  const { data, error } = useLoad(async (signal) => {
    const props = (await definition(splitSystem(system).url, signal)).codingProperties;
    if (!props.length) return { total: 0, items: [] };
    const sets = props.map((property) => [{ property, op: '=', value: code }]);
    return expandFilters(system, sets, { count: PAGE, offset }, signal);
  }, [system, code, offset]);
  if (error) return html`<h2>Codes with this part</h2><${ErrorMessage} error=${error} />`;
  if (!data || (!data.total && !isPart)) return null;
  const last = Math.min(offset + PAGE, data.total);
  return html`<section aria-labelledby="h-having">
    <h2 id="h-having">Codes with this part (${data.total})</h2>
    ${data.total ? html`
      <div class="pager">
        <button type="button" disabled=${offset === 0} onClick=${() => setOffset(Math.max(0, offset - PAGE))}>Previous page</button>
        <span>${offset + 1}–${last} of ${data.total}</span>
        <button type="button" disabled=${last >= data.total} onClick=${() => setOffset(offset + PAGE)}>Next page</button>
      </div>
      <ul class="plain" aria-label="Codes with this part">${data.items.map((c) => html`<li><a href=${codeLink(system, c.code)}>${c.display || c.code}</a> <span class="code">${c.code}</span></li>`)}</ul>`
      : html`<p class="muted">No code has it.</p>`}
  </section>`;
}

/**
 * A code of a code system other than SNOMED CT: display, parents and children as a tree with the paths to the
 * root, its parts (LOINC: a term's axes, each a link to the part's page), the codes that have it (a part's
 * page), its other properties and designations.
 */
export function CodePage({ params }) {
  const system = params.system || '';
  const code = params.code || '';
  const { data, error, loading } = useLoad((signal) => {
    if (!system || !code) throw new Error('a code page needs a code system and a code (#/code?system=...&code=...)');
    return lookup(system, code, '*', signal);
  }, [system, code]);
  if (error) return html`<h1 tabindex="-1">${code}</h1><${ErrorMessage} error=${error} />`;
  if (loading || !data) return html`<h1 tabindex="-1">${code}</h1><p class="muted">Loading…</p>`;
  const { url } = splitSystem(system);
  const parents = related(data, 'parent');
  const children = related(data, 'child');
  // A term's axes: Codings into the same code system (LOINC's COMPONENT, PROPERTY, ... parts).
  const parts = data.properties.filter((p) => p.coding && p.coding.system === url);
  const others = data.properties.filter((p) => !['parent', 'child'].includes(p.code) && !parts.includes(p));
  const prop = (c) => (data.properties.find((p) => p.code === c) || {}).value;
  const partType = prop('PartTypeName');
  const inactive = prop('inactive') === 'true';
  return html`
    <h1 tabindex="-1">${data.display || code}</h1>
    <p><${CopyId} id=${code} label="Copy code" /> <span class="muted">${data.name || url} ${data.version || ''}</span>
      ${inactive ? html` <span class="badge bad">inactive</span>` : html` <span class="badge ok">active</span>`}
      ${prop('notSelectable') === 'true' && html` <span class="badge info">not selectable</span>`}
      ${partType && html` <span class="badge info">part: ${partType}</span>`}</p>
    <div class="cols">
      <section aria-labelledby="h-parents">
        <h2 id="h-parents">Parents</h2>
        ${parents.length ? html`<ul class="plain" aria-label="Parents">${parents.map((p) => html`<li><a href=${codeLink(system, p.code)}>${p.display || p.code}</a> <span class="code">${p.code}</span></li>`)}</ul>`
          : html`<p class="muted">None: the top of the hierarchy, or a code outside it.</p>`}
        ${parents.length > 0 && html`<${Paths} key=${code} system=${system} code=${code} />`}
        <h2 id="h-children">Children (${children.length})</h2>
        ${children.length ? html`<${CodeTree} system=${system} items=${children} label="Children" />` : html`<p class="muted">No children.</p>`}
      </section>
      <section aria-labelledby="h-props">
        ${parts.length > 0 && html`
          <h2 id="h-parts">Parts</h2>
          <table class="grid" aria-labelledby="h-parts"><thead><tr><th>Axis</th><th>Part</th><th>Code</th></tr></thead><tbody>
            ${parts.map((p) => html`<tr><td>${p.code}</td><td><a href=${codeLink(system, p.value)}>${p.coding.display || p.value}</a></td><td class="code">${p.value}</td></tr>`)}
          </tbody></table>`}
        <${HavingPart} key=${code} system=${system} code=${code} isPart=${Boolean(partType)} />
        <h2 id="h-props">Properties</h2>
        ${others.length ? html`<table class="grid"><thead><tr><th>Property</th><th>Value</th></tr></thead><tbody>
          ${others.map((p) => html`<tr><td>${p.code}</td><td>${p.coding ? `${p.coding.display || ''} ${p.value}` : p.value}</td></tr>`)}</tbody></table>`
          : html`<p class="muted">No properties.</p>`}
        <h2>Designations</h2>
        ${data.designations.length ? html`<ul class="plain">${data.designations.map((d) => html`<li>${d.value} <span class="muted">${d.language} ${d.use}</span></li>`)}</ul>`
          : html`<p class="muted">None.</p>`}
      </section>
    </div>`;
}
