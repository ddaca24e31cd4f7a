// The history page: the signed-in person's history of a preset period or of the days chosen, drawn on the map from
// GET /v1/history/map for the map's view and zoom (simplified tracks, or counted cells where the view holds more
// fixes than a screen shows: bounded in size whatever the history's), with the stays and their corrections (stays.js),
// "where I've been" (where.js), the imports (imports.js) and the exports. Its switch "keep only my last position" is the account's live only
// setting (PATCH /v1/me/settings), which offers to delete the history stored so far.
// API: /v1/history/map, /v1/history/visits, /v1/history/export (docs/api/openapi.yaml).
import * as L from '/vendor/leaflet/leaflet.esm.js';
import { download, request } from './api.js';
import { $, element, syncButtons, textElement } from './dom.js';
import { plural, t } from './i18n.js';
import { renderImports, resetImports, setUpImports, showImports } from './imports.js';
import { session } from './session.js';
import { currentStays, loadStays, renderStays, resetStays, setUpStays, stayPosition, stayText } from './stays.js';
import { loadWhere, resetWhere, setUpWhere, showWhere } from './where.js';

const PRESETS = ['today', 'yesterday', 'thisMonth', 'lastMonth', 'thisYear', 'lastYear', 'allTime'];
// The whole world at a low zoom: the view asked for first, to frame the period's history.
const WORLD = 'south=-90&west=-180&north=90&east=180&zoom=2';

let map = null;
let report = () => {};
let shown = false;
let selection = 'today'; // a preset's name, or `custom:<from day>:<to day>` (both days included)
let loaded = null; // {selection, answer} of the last load; `answer` is the map of the view drawn last
let loads = 0; // loads started; an older one's answer is dropped
let layer = null;
let drawn = null; // the map request of the view drawn or being drawn
let drawings = 0; // drawings started; an older one's answer is dropped
let drawing = Promise.resolve(); // the drawing under way

/** Wires the page to `theMap`; `onError` shows a failed request. */
export function setUpHistory(theMap, onError) {
  map = theMap;
  report = onError;
  setUpWhere(map);
  setUpImports(onError, () => { if (shown) load(); });
  // A correction changes the stays and what is counted from them ("where I've been").
  setUpStays(onError, (corrected) => {
    drawVisits();
    if (corrected && shown && loaded) loadWhere(historyQuery(loaded.selection), report);
  }, (position) => map.setView(position, 17));
  map.on('moveend', () => { if (shown) draw(); });
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
  showImports(visible);
  if (visible) load();
}

/** Writes the page's texts again (the language changed); "where I've been" is asked again in the new language. */
export function renderHistoryTexts() {
  render();
  renderStays();
  renderImports();
  if (shown) loadWhere(historyQuery(selection), report);
}

/** Forgets everything (sign-out). */
export function resetHistory() {
  loads += 1;
  drawings += 1;
  drawn = null;
  if (layer) layer.remove();
  layer = null;
  loaded = null;
  resetWhere();
  resetStays();
  resetImports();
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

/**
 * The selection's history framed (the map fitted to it, asked for the whole world) and drawn for the view, then its
 * stays and "where I've been", which read the whole period and come later: they never hold the map back.
 */
async function load() {
  const mine = ++loads;
  const chosen = selection;
  const query = historyQuery(chosen);
  let overview;
  try {
    overview = await request('GET', `/v1/history/map?${query}&${WORLD}`);
  } catch (error) { report(error); return; }
  if (mine !== loads) return;
  loaded = { selection: chosen, answer: null };
  resetStays();
  const summary = $('history-summary');
  const range = customRange(chosen);
  summary.dataset.preset = range ? 'custom' : chosen;
  summary.dataset.range = range ? range.days.join('/') : '';
  const positions = [
    ...overview.tracks.flatMap((line) => line.points.map((point) => [point.latitude, point.longitude])),
    ...overview.cells.flatMap(cellFrame),
  ];
  drawn = null;
  if (shown && positions.length > 0) {
    map.fitBounds(L.latLngBounds(positions), { padding: [30, 30], maxZoom: 17, animate: false });
  }
  render();
  await draw();
  if (mine !== loads) return;
  loadWhere(query, report);
  await loadStays(query);
}

/**
 * The corners of the part of a cell that frames it: around its fixes' mean position, a quarter of the cell's size
 * each way (a cell's own corners would frame mostly the land around a history, its centre only a point).
 */
function cellFrame(cell) {
  const bits = 5 * cell.geohash.length;
  const width = 360 / 2 ** Math.ceil(bits / 2);
  const height = 180 / 2 ** Math.floor(bits / 2);
  return [[cell.latitude - height / 4, cell.longitude - width / 4], [cell.latitude + height / 4, cell.longitude + width / 4]];
}

/** The map's view as the map endpoint takes it: longitudes within ±180 (`west > east` across the antimeridian). */
function viewQuery() {
  const bounds = map.getBounds();
  const south = Math.max(-90, bounds.getSouth()).toFixed(5);
  const north = Math.min(90, bounds.getNorth()).toFixed(5);
  const wrap = (longitude) => ((((longitude + 180) % 360) + 360) % 360) - 180;
  const [west, east] = bounds.getEast() - bounds.getWest() >= 360
    ? [-180, 180] : [wrap(bounds.getWest()), wrap(bounds.getEast())];
  return `south=${south}&west=${west.toFixed(5)}&north=${north}&east=${east.toFixed(5)}&zoom=${viewZoom()}`;
}

/** The map's zoom as the map endpoint takes it: a whole number, 0…22. */
function viewZoom() { return Math.max(0, Math.min(22, Math.round(map.getZoom()))); }

/**
 * The selection's history in the map's view (a promise of the drawing, the one under way when the view is the same):
 * tracks as lines, or cells as circles sized by their fixes; an answer for a view the map has left meanwhile is
 * dropped.
 */
function draw() {
  if (!loaded || !shown) return drawing;
  const path = `/v1/history/map?${historyQuery(loaded.selection)}&${viewQuery()}`;
  if (path === drawn) return drawing;
  drawn = path;
  drawing = drawView(path, viewZoom());
  return drawing;
}

async function drawView(path, zoom) {
  const mine = ++drawings;
  let answer;
  try {
    answer = await request('GET', path);
  } catch (error) {
    if (mine === drawings) drawn = null;
    report(error);
    return;
  }
  if (mine !== drawings || !loaded) return;
  loaded.answer = answer;
  const group = L.layerGroup();
  const largest = Math.max(1, ...answer.cells.map((cell) => cell.count));
  for (const cell of answer.cells) {
    L.circleMarker([cell.latitude, cell.longitude], {
      className: 'history-cluster', radius: 4 + 14 * Math.sqrt(cell.count / largest), color: '#e0572b',
    }).bindTooltip(textElement(plural('history.clusterFixes', cell.count))).addTo(group);
  }
  for (const line of answer.tracks) {
    const points = line.points.map((point) => [point.latitude, point.longitude]);
    L.polyline(points, { className: 'history-track', color: '#e0572b', weight: 4 }).addTo(group);
  }
  const ends = answer.tracks.length > 0
    ? [answer.tracks[0].points[0], answer.tracks[answer.tracks.length - 1].points.at(-1)] : [];
  for (const end of ends) {
    L.circleMarker([end.latitude, end.longitude], { className: 'history-end', radius: 6, color: '#e0572b' })
      .addTo(group);
  }
  if (layer) layer.remove();
  layer = group;
  if (shown) layer.addTo(map);
  drawVisits();
  const summary = $('history-summary');
  summary.dataset.count = String(answer.fixes);
  summary.dataset.shown = answer.cells.length > 0 ? 'cells' : 'tracks';
  summary.dataset.zoom = String(zoom);
  render();
}

/** The stays on the map, over the history drawn. */
function drawVisits() {
  if (!layer || !loaded) return;
  if (layer.visits) layer.removeLayer(layer.visits);
  layer.visits = L.layerGroup();
  for (const visit of currentStays()) {
    L.circleMarker(stayPosition(visit), {
      className: 'history-visit', radius: 9, color: '#2f6fde', fillOpacity: 0.4,
    }).bindTooltip(textElement(visit.name ? `${visit.name}: ${stayText(visit)}` : stayText(visit))).addTo(layer.visits);
  }
  layer.visits.addTo(layer);
}

function render() {
  const items = PRESETS.map((preset) => [preset, t(`history.${preset}`)]);
  syncButtons($('presets'), 'preset', items, selection, (preset) => {
    selection = preset;
    render();
    load();
  });
  $('live-only').checked = Boolean(session.me && session.me.settings && session.me.settings.liveOnly);
  $('history-summary').textContent = loaded && loaded.answer ? plural('history.fixes', loaded.answer.fixes) : '';
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
