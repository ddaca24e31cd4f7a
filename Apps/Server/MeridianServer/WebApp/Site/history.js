// The history page: the signed-in person's track of a preset period or of the days chosen, drawn on the map (a line,
// or the fixes' geohash clusters below zoom 12) with the stays, "where I've been" (where.js) and the exports.
// Its switch "keep only my last position" is the account's live only setting (PATCH /v1/me/settings), which offers
// to delete the history stored so far.
// API: /v1/history, /v1/history/visits, /v1/history/clusters, /v1/history/export (docs/api/openapi.yaml).
import * as L from '/vendor/leaflet/leaflet.esm.js';
import { download, request } from './api.js';
import { $, element, mutedRow, syncButtons, textElement } from './dom.js';
import { currentLanguage, plural, t } from './i18n.js';
import { Pager } from './pager.js';
import { session } from './session.js';
import { loadWhere, resetWhere, setUpWhere, showWhere } from './where.js';

const PRESETS = ['today', 'yesterday', 'thisMonth', 'lastMonth', 'thisYear', 'lastYear', 'allTime'];
const CLUSTER_BELOW_ZOOM = 12;
const MAX_FIXES = 100000;

let map = null;
let report = () => {};
let shown = false;
let selection = 'today'; // a preset's name, or `custom:<from day>:<to day>` (both days included)
let loaded = null; // {selection, fixes, visits} of the last load
let loads = 0; // loads started; an older one's answer is dropped
const track = new Pager({ field: 'fixes' }); // the selection's fixes, a page at a time
let layer = null;
let drawings = 0; // drawings started; an older one's clusters are dropped

/** Wires the page to `theMap`; `onError` shows a failed request. */
export function setUpHistory(theMap, onError) {
  map = theMap;
  report = onError;
  setUpWhere(map);
  map.on('zoomend', () => { if (shown) draw(); });
  for (const button of document.querySelectorAll('[data-export]')) {
    button.addEventListener('click', () => exportHistory(button.dataset.export));
  }
  $('range-form').addEventListener('submit', (event) => { event.preventDefault(); showRange(); });
  $('live-only').addEventListener('change', switchLiveOnly);
}

/** Turns live only on (asking whether to delete the history stored so far) or off. */
async function switchLiveOnly() {
  const box = $('live-only');
  const liveOnly = box.checked;
  const deleteHistory = liveOnly && window.confirm(t('history.liveOnlyDelete'));
  box.disabled = true;
  try {
    const answer = await request('PATCH', '/v1/me/settings', { liveOnly, deleteHistory });
    session.me.settings = answer.settings;
    $('live-only-state').textContent = answer.deletedFixes > 0
      ? plural('history.liveOnlyDeleted', answer.deletedFixes)
      : t(liveOnly ? 'history.liveOnlyOn' : 'history.liveOnlyOff');
    if (answer.deletedFixes > 0 && shown) load();
  } catch (error) {
    box.checked = !liveOnly;
    report(error);
  } finally {
    box.disabled = false;
  }
}

/** Shows the page (its track loaded again) or hides its layer. */
export function showHistory(visible) {
  shown = visible;
  if (layer) {
    if (visible) layer.addTo(map); else layer.remove();
  }
  showWhere(visible);
  if (visible) load();
}

/** Writes the page's texts again (the language changed); "where I've been" is asked again in the new language. */
export function renderHistoryTexts() {
  render();
  if (shown) loadWhere(historyQuery(selection), report);
}

/** Forgets everything (sign-out). */
export function resetHistory() {
  loads += 1;
  track.reset();
  drawings += 1;
  if (layer) layer.remove();
  layer = null;
  loaded = null;
  resetWhere();
}

function historyQuery(chosen) {
  const zone = Intl.DateTimeFormat().resolvedOptions().timeZone || 'UTC';
  const range = customRange(chosen);
  const filter = range ? `from=${range.from}&to=${range.to}` : `preset=${chosen}`;
  return `${filter}&timeZone=${encodeURIComponent(zone)}`;
}

/** A custom selection's instants: from the first day's local midnight to the midnight after the last day. */
function customRange(chosen) {
  const match = /^custom:(\d{4}-\d{2}-\d{2}):(\d{4}-\d{2}-\d{2})$/.exec(chosen);
  if (!match) return null;
  const end = new Date(`${match[2]}T00:00`);
  end.setDate(end.getDate() + 1);
  return { from: new Date(`${match[1]}T00:00`).getTime(), to: end.getTime(), days: [match[1], match[2]] };
}

/** The days typed in the range form, when they make a range (the first not after the last). */
function showRange() {
  const from = $('range-from').value;
  const to = $('range-to').value;
  const error = $('range-error');
  error.hidden = !(from && to && from > to);
  if (!error.hidden) {
    error.textContent = t('history.rangeInvalid');
    return;
  }
  if (!from || !to) return;
  selection = `custom:${from}:${to}`;
  render();
  load();
}

/** The track (every page, up to MAX_FIXES fixes) and the stays of the selection, then the map and the lists. */
async function load() {
  const mine = ++loads;
  const chosen = selection;
  const query = historyQuery(chosen);
  let visits = [];
  loadWhere(query, report);
  try {
    const stays = request('GET', `/v1/history/visits?${query}`);
    let current = await track.open(`/v1/history?${query}&limit=1000`);
    while (current && track.hasMore && track.items.length < MAX_FIXES) current = await track.more();
    visits = (await stays).visits;
  } catch (error) { report(error); return; }
  if (mine !== loads) return;
  const fixes = [...track.items].sort((a, b) => a.timestamp - b.timestamp);
  loaded = { selection: chosen, fixes, visits };
  const summary = $('history-summary');
  const range = customRange(chosen);
  summary.dataset.count = String(fixes.length);
  summary.dataset.preset = range ? 'custom' : chosen;
  summary.dataset.range = range ? range.days.join('/') : '';
  if (shown && fixes.length > 0) {
    map.fitBounds(L.latLngBounds(fixes.map((fix) => [fix.latitude, fix.longitude])), { padding: [30, 30], maxZoom: 17 });
  }
  draw();
  render();
}

/** The geohash precision of the clusters shown at `zoom` (2 for the world … 6 for a town). */
function clusterPrecision(zoom) { return Math.max(2, Math.min(6, Math.floor(zoom / 2))); }

/** The history on the map: the track as a line, or, below CLUSTER_BELOW_ZOOM, the fixes' geohash clusters; stays. */
async function draw() {
  if (!loaded) return;
  const { fixes, visits } = loaded;
  const mine = ++drawings;
  const drawing = L.layerGroup();
  if (fixes.length > 0 && map.getZoom() < CLUSTER_BELOW_ZOOM) {
    const precision = clusterPrecision(map.getZoom());
    let answer;
    try {
      answer = await request('GET', `/v1/history/clusters?precision=${precision}&${historyQuery(loaded.selection)}`);
    } catch (error) { report(error); return; }
    if (mine !== drawings) return;
    const largest = Math.max(1, ...answer.clusters.map((cluster) => cluster.count));
    for (const cluster of answer.clusters) {
      L.circleMarker([cluster.latitude, cluster.longitude], {
        className: 'history-cluster', radius: 6 + 14 * Math.sqrt(cluster.count / largest), color: '#e0572b',
      }).bindTooltip(textElement(plural('history.clusterFixes', cluster.count))).addTo(drawing);
    }
  } else if (fixes.length > 0) {
    const line = fixes.map((fix) => [fix.latitude, fix.longitude]);
    L.polyline(line, { className: 'history-track', color: '#e0572b', weight: 4 }).addTo(drawing);
    for (const end of [line[0], line[line.length - 1]]) {
      L.circleMarker(end, { className: 'history-end', radius: 6, color: '#e0572b' }).addTo(drawing);
    }
  }
  for (const visit of visits) {
    L.circleMarker(visitPosition(visit), {
      className: 'history-visit', radius: 9, color: '#2f6fde', fillOpacity: 0.4,
    }).bindTooltip(textElement(visitText(visit))).addTo(drawing);
  }
  if (layer) layer.remove();
  layer = drawing;
  if (shown) layer.addTo(map);
}

/** A stay's centre (GeoKit's coordinate: `lat`, `lon`). */
function visitPosition(visit) {
  const location = visit.location;
  return [location.lat ?? location.latitude, location.lon ?? location.longitude];
}

function visitText(visit) {
  const format = new Intl.DateTimeFormat(currentLanguage(), { dateStyle: 'short', timeStyle: 'short' });
  return `${format.format(new Date(visit.arrival))} – ${format.format(new Date(visit.departure))}`;
}

function render() {
  const items = PRESETS.map((preset) => [preset, t(`history.${preset}`)]);
  syncButtons($('presets'), 'preset', items, selection, (preset) => {
    selection = preset;
    render();
    load();
  });
  $('live-only').checked = Boolean(session.me && session.me.settings && session.me.settings.liveOnly);
  $('history-summary').textContent = loaded ? plural('history.fixes', loaded.fixes.length) : '';
  const visits = loaded ? loaded.visits : [];
  $('visits').replaceChildren(...(visits.length === 0 && loaded ? [mutedRow(t('history.noVisits'))] : []),
    ...visits.map((visit) => {
      const row = element('li', { className: 'visit' }, visitText(visit));
      row.addEventListener('click', () => map.setView(visitPosition(visit), 17));
      return row;
    }));
}

async function exportHistory(format) {
  try {
    const blob = await download(`/v1/history/export?format=${format}&${historyQuery(selection)}`);
    const range = customRange(selection);
    const link = element('a', {
      href: URL.createObjectURL(blob), download: `meridian-history-${range ? range.days.join('_') : selection}.${format}`,
    });
    document.body.append(link);
    link.click();
    link.remove();
    setTimeout(() => URL.revokeObjectURL(link.href), 10000);
  } catch (error) { report(error); }
}
