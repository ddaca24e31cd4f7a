// "Where I've been" on the history page: the stays of the chosen period grouped country → region → district →
// town (GET /v1/history/places?level=locality: each town with its ancestors, the country first), names in the
// page's language, drawn on the map (each town a circle where its stays were, sized by the time spent there), and
// the travel statistics of the period (GET /v1/history/stats): distance, countries, towns and days away, in all and
// per year and month, with a chart of the distance per month drawn as SVG. Both are asked again when the page's
// language changes.
import * as L from '/vendor/leaflet/leaflet.esm.js';
import { request } from './api.js';
import { $, element, mutedRow, textElement } from './dom.js';
import { currentLanguage, plural, t } from './i18n.js';

const SVG = 'http://www.w3.org/2000/svg';

let generation = 0; // the last load started; an older answer is dropped
let map = null;
let layer = null; // the towns on the map
let shown = false;

/** Draws on `theMap` from now on. */
export function setUpWhere(theMap) {
  map = theMap;
  layer = L.layerGroup();
}

/** Shows the towns on the map (the history page is shown) or takes them off. */
export function showWhere(visible) {
  shown = visible;
  if (!layer) return;
  if (visible) layer.addTo(map); else layer.remove();
}

/** Loads and shows the section for the history filter `query` (`preset=…&timeZone=…` or `from=…&to=…&…`). */
export async function loadWhere(query, onError) {
  const mine = ++generation;
  const language = currentLanguage();
  const lang = `lang=${encodeURIComponent(language)}`;
  let places;
  let stats;
  try {
    [places, stats] = await Promise.all([
      request('GET', `/v1/history/places?level=locality&${query}&${lang}`),
      request('GET', `/v1/history/stats?${query}&${lang}`),
    ]);
  } catch (error) {
    if (mine === generation) onError(error);
    return;
  }
  if (mine !== generation) return;
  renderPlaces(places);
  renderStats(stats);
  const section = $('where');
  section.dataset.language = language;
  section.dataset.query = query;
}

/** Empties the section (signed out). */
export function resetWhere() {
  generation++;
  $('where-places').replaceChildren();
  $('where-stats').replaceChildren();
  if (layer) layer.clearLayers();
  delete $('where').dataset.language;
  delete $('where').dataset.query;
}

/** The towns as a tree of their ancestors; every node counts the stays below it. */
function tree(places) {
  const root = { children: new Map() };
  for (const place of places) {
    let node = root;
    for (const area of [...place.ancestors, place.area]) {
      if (!node.children.has(area.code)) node.children.set(area.code, { area, visits: 0, children: new Map() });
      node = node.children.get(area.code);
      node.visits += place.visits;
    }
  }
  return root;
}

/** Each town as a circle where its stays were: 5 px for a short stay, growing with the square root of the hours. */
function drawPlaces(answer) {
  if (!layer) return;
  layer.clearLayers();
  for (const place of answer.places) {
    if (place.latitude == null || place.longitude == null) continue;
    const hours = place.timeSpent / 3600000;
    const marker = L.circleMarker([place.latitude, place.longitude], {
      radius: Math.min(30, 5 + 3 * Math.sqrt(hours)), color: '#e0572b', weight: 2, fillOpacity: 0.35,
      className: 'where-marker',
    });
    marker.bindTooltip(textElement(`${place.area.name} · ${plural('history.stays', place.visits)} · ${
      plural('history.hoursSpent', Math.max(1, Math.round(hours)))}`));
    marker.addTo(layer);
  }
}

function renderPlaces(answer) {
  drawPlaces(answer);
  const list = $('where-places');
  const root = tree(answer.places);
  list.dataset.visits = String(answer.visits);
  list.dataset.unplaced = String(answer.unplaced);
  if (root.children.size === 0) {
    list.replaceChildren(mutedRow(t('history.whereEmpty')));
    return;
  }
  list.replaceChildren(...rows(root));
}

function rows(node) {
  const byVisits = (a, b) => b.visits - a.visits || a.area.name.localeCompare(b.area.name);
  const children = [...node.children.values()].sort(byVisits);
  return children.map((child) => {
    const nested = child.children.size > 0 ? element('ul', { className: 'where-tree' }, ...rows(child)) : null;
    return element('li', { className: 'where-place', data: { level: child.area.level, code: child.area.code } },
      element('span', { className: 'name' }, child.area.name), ' ',
      element('span', { className: 'muted' }, plural('history.stays', child.visits)), nested);
  });
}

function renderStats(stats) {
  const box = $('where-stats');
  const total = stats.total;
  box.dataset.countries = String(total.countries);
  box.dataset.towns = String(total.cities);
  box.dataset.distance = String(Math.round(total.distance));
  const periods = [...stats.years, ...(stats.months.length > 1 ? stats.months : [])];
  box.replaceChildren(
    element('p', { className: 'where-total' }, figures(total)),
    ...(stats.months.length ? [monthChart(stats.months)] : []),
    ...(periods.length > 1 ? [element('ul', { className: 'list where-periods' }, ...periods.map(periodRow))] : []));
}

/** The distance per month as bars (drawn by the page: no chart library), each with its figures as a tooltip. */
function monthChart(months) {
  const width = 296;
  const height = 80;
  const gap = 2;
  const longest = Math.max(...months.map((month) => month.distance), 1);
  const barWidth = Math.min(24, Math.max(2, (width - gap * (months.length - 1)) / months.length));
  const svg = document.createElementNS(SVG, 'svg');
  svg.setAttribute('class', 'where-chart');
  svg.setAttribute('viewBox', `0 0 ${width} ${height + 14}`);
  svg.setAttribute('role', 'img');
  svg.setAttribute('aria-label', t('history.perMonth'));
  months.forEach((month, index) => {
    const barHeight = Math.max(1, (month.distance / longest) * height);
    const bar = document.createElementNS(SVG, 'rect');
    bar.setAttribute('x', String(index * (barWidth + gap)));
    bar.setAttribute('y', String(height - barHeight));
    bar.setAttribute('width', String(barWidth));
    bar.setAttribute('height', String(barHeight));
    bar.dataset.period = month.period;
    const title = document.createElementNS(SVG, 'title');
    title.textContent = `${month.period}: ${figures(month)}`;
    bar.append(title);
    svg.append(bar);
  });
  for (const [index, anchor] of [[0, 'start'], [months.length - 1, 'end']]) {
    const label = document.createElementNS(SVG, 'text');
    label.setAttribute('x', String(anchor === 'start' ? 0 : width));
    label.setAttribute('y', String(height + 12));
    label.setAttribute('text-anchor', anchor);
    label.textContent = months[index].period;
    svg.append(label);
    if (months.length === 1) break;
  }
  return element('figure', { className: 'where-months' }, element('figcaption', {}, t('history.perMonth')), svg);
}

function periodRow(period) {
  return element('li', { data: { period: period.period } }, element('strong', {}, period.period), ' ', figures(period));
}

/** "12.3 km travelled · 1 country · 2 towns · 0 days away". */
function figures(period) {
  const format = new Intl.NumberFormat(currentLanguage(), { maximumFractionDigits: 1 });
  const kilometres = format.format(period.distance / 1000);
  return [t('history.distance', kilometres), plural('history.countries', period.countries),
    plural('history.towns', period.cities), plural('history.daysAway', period.daysAway)].join(' · ');
}
