// The history page's stays: the list of the period's stays, each named, marked as home or work, split at a time or
// merged with the next; the person's home and work (set, or proposed from their nights and weekdays) with a way to
// clear a place they set; and their corrections, each undone with a click. A change asks the stays again, and
// `onChange` redraws what depends on them (the stays on the map, "where I've been").
// API: /v1/history/visits, /v1/history/visits/corrections, /v1/me/home-work (docs/api/openapi.yaml).
import { request } from './api.js';
import { $, button, element, mutedRow } from './dom.js';
import { currentLanguage, plural, t } from './i18n.js';

// Within this distance of home or work a stay is marked as it (the server's rename radius).
const SAME_PLACE_METRES = 100;
// The texts of home and work: a stay's mark, the place set by the person, proposed, or neither.
const MARK = { home: 'stays.home', work: 'stays.work' };
const SET = { home: 'stays.homeSet', work: 'stays.workSet' };
const PROPOSED = { home: 'stays.homeProposed', work: 'stays.workProposed' };
const UNKNOWN = { home: 'stays.homeUnknown', work: 'stays.workUnknown' };

let report = () => {};
let changed = () => {};
let centre = () => {};
let query = null; // the period's query string of the stays shown
let answer = null; // GET /v1/history/visits of `query`: {visits, home?, work?}
let corrections = [];
let loads = 0; // loads started; an older one's answer is dropped

/** Wires the stays: `onError` shows a failed request, `onChange` follows a new answer, `onPick(location)` shows one. */
export function setUpStays(onError, onChange, onPick) {
  report = onError;
  changed = onChange;
  centre = onPick;
}

/** The stays shown ([] before the first answer). */
export function currentStays() { return answer ? answer.visits : []; }

/** A stay's centre as `[lat, lon]`. */
export function stayPosition(visit) { return [visit.location.lat, visit.location.lon]; }

/**
 * Asks the stays of the period `periodQuery`, the corrections and home and work; shows them and calls `onChange`
 * (`corrected`: after the person changed them).
 */
export async function loadStays(periodQuery, corrected = false) {
  const mine = ++loads;
  query = periodQuery;
  let visits;
  let stored;
  try {
    [visits, stored] = await Promise.all([
      request('GET', `/v1/history/visits?${periodQuery}`),
      request('GET', '/v1/history/visits/corrections'),
    ]);
  } catch (error) { if (mine === loads) report(error); return; }
  if (mine !== loads) return;
  answer = visits;
  corrections = stored.items;
  renderStays();
  changed(corrected);
}

/** Forgets everything (sign-out, another period). */
export function resetStays() {
  loads += 1;
  query = null;
  answer = null;
  corrections = [];
  renderStays();
}

/** A stay's times, in the page's language. */
export function stayText(visit) {
  return `${dateTime(visit.arrival)} – ${dateTime(visit.departure)}`;
}

function dateTime(milliseconds) {
  const format = new Intl.DateTimeFormat(currentLanguage(), { dateStyle: 'short', timeStyle: 'short' });
  return format.format(new Date(milliseconds));
}

/** Writes the list, home and work and the corrections again (new answer, new language). */
export function renderStays() {
  const visits = currentStays();
  $('visits').replaceChildren(
    ...(visits.length === 0 && answer ? [mutedRow(t('history.noVisits'))] : []),
    ...visits.map((visit, index) => stayRow(visit, visits[index + 1])));
  renderHomeWork();
  $('stay-corrections').replaceChildren(
    ...(corrections.length === 0 && answer ? [mutedRow(t('stays.noCorrections'))] : []),
    ...corrections.map(correctionRow));
}

function stayRow(visit, next) {
  const marks = ['home', 'work'].filter((kind) => answer[kind] && near(answer[kind].location, visit.location));
  const title = element('span', { className: 'stay-title' }, stayText(visit),
    visit.name ? element('strong', { className: 'stay-name' }, ` ${visit.name}`) : null,
    ...marks.map((kind) => element('span', { className: `stay-mark stay-${kind}`, data: { mark: kind } }, t(MARK[kind]))));
  title.addEventListener('click', () => centre(stayPosition(visit)));

  const name = element('input', { className: 'stay-name-input', maxLength: 100, value: visit.name ?? '' });
  name.setAttribute('aria-label', t('stays.name'));
  const rename = element('form', { className: 'stay-rename' }, name,
    element('button', { type: 'submit', className: 'stay-rename-button' }, t('stays.rename')));
  rename.addEventListener('submit', (event) => {
    event.preventDefault();
    const text = name.value.trim();
    if (text) correct({ kind: 'rename', location: visit.location, name: text });
  });

  const at = element('input', {
    type: 'datetime-local', className: 'stay-split-at', step: 60,
    min: localInput(visit.arrival), max: localInput(visit.departure),
    value: localInput((visit.arrival + visit.departure) / 2),
  });
  at.setAttribute('aria-label', t('stays.splitAt'));
  const split = element('form', { className: 'stay-split' }, element('span', {}, `${t('stays.splitAt')} `), at,
    element('button', { type: 'submit', className: 'stay-split-button' }, t('stays.split')));
  split.addEventListener('submit', (event) => {
    event.preventDefault();
    const instant = new Date(at.value).getTime();
    if (Number.isFinite(instant)) correct({ kind: 'split', at: instant });
  });

  const actions = element('div', { className: 'actions' },
    button(t('stays.setHome'), () => setHomeWork('home', visit.location), { className: 'stay-set-home' }),
    button(t('stays.setWork'), () => setHomeWork('work', visit.location), { className: 'stay-set-work' }),
    next ? button(t('stays.mergeNext'), () => correct({ kind: 'merge', from: visit.arrival, to: next.departure }),
      { className: 'stay-merge-next' }) : null);
  const edit = element('details', { className: 'stay-edit' },
    element('summary', {}, t('stays.edit')), rename, split, actions);
  return element('li', { className: 'visit' }, title, edit);
}

/** Home and work: where they are, whether set or proposed (and from how many days), a set one with "Clear". */
function renderHomeWork() {
  const parts = answer ? ['home', 'work'].map((kind) => {
    const place = answer[kind];
    if (!place) return element('span', { className: `home-work-${kind}`, data: { source: 'none' } }, t(UNKNOWN[kind]));
    const text = place.source === 'set' ? t(SET[kind]) : plural(PROPOSED[kind], place.days ?? 0);
    const label = button(text, () => centre(stayPosition(place)), { className: 'link' });
    return element('span', { className: `home-work-${kind}`, data: { source: place.source } }, label,
      place.source === 'set' ? button(t('stays.clear'), () => setHomeWork(kind, null), { className: `clear-${kind}` }) : null);
  }) : [];
  $('home-work').replaceChildren(...parts.flatMap((part, index) => (index === 0 ? [part] : [' · ', part])));
}

/** PUT /v1/me/home-work with `kind` at `location` (null: left to the proposal), the other place as set now. */
async function setHomeWork(kind, location) {
  const kept = (other) => (answer[other] && answer[other].source === 'set' ? answer[other].location : null);
  const choice = { home: kept('home'), work: kept('work') };
  choice[kind] = location;
  try {
    await request('PUT', '/v1/me/home-work', choice);
  } catch (error) { report(error); return; }
  if (query) await loadStays(query, true);
}

async function correct(correction) {
  try {
    await request('POST', '/v1/history/visits/corrections', correction);
  } catch (error) { report(error); return; }
  if (query) await loadStays(query, true);
}

async function undo(id) {
  try {
    await request('DELETE', `/v1/history/visits/corrections/${encodeURIComponent(id)}`);
  } catch (error) { report(error); return; }
  if (query) await loadStays(query, true);
}

function correctionRow(stored) {
  const correction = stored.correction;
  const text = {
    merge: () => t('stays.merged', `${dateTime(correction.from)} – ${dateTime(correction.to)}`),
    split: () => t('stays.wasSplit', dateTime(correction.at)),
    rename: () => t('stays.renamed', correction.name),
  }[correction.kind];
  return element('li', { className: 'stay-correction', data: { kind: correction.kind } },
    element('span', {}, text ? text() : correction.kind), ' ',
    button(t('stays.undo'), () => undo(stored.id), { className: 'undo-correction' }));
}

/** `milliseconds` as a `datetime-local` input's value, in the browser's time zone. */
function localInput(milliseconds) {
  const date = new Date(Math.round(milliseconds / 60000) * 60000);
  const pad = (value) => String(value).padStart(2, '0');
  return `${date.getFullYear()}-${pad(date.getMonth() + 1)}-${pad(date.getDate())}T${pad(date.getHours())}:${pad(date.getMinutes())}`;
}

/** Whether two `{lat, lon}` are within ``SAME_PLACE_METRES`` (an equirectangular distance: they are close). */
function near(a, b) {
  const radians = Math.PI / 180;
  const x = (b.lon - a.lon) * radians * Math.cos(((a.lat + b.lat) / 2) * radians);
  const y = (b.lat - a.lat) * radians;
  return Math.hypot(x, y) * 6371008.8 <= SAME_PLACE_METRES;
}
