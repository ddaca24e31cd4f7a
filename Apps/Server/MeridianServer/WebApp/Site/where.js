// "Where I've been" on the history page: the stays of the chosen period grouped country → region → district →
// town (GET /v1/history/places?level=locality: each town with its ancestors, the country first), names in the
// page's language, and the travel statistics of the period (GET /v1/history/stats): distance, countries, towns
// and days away, in all and per year and month. Both are asked again when the page's language changes.
import { request } from './api.js';
import { $, element, mutedRow } from './dom.js';
import { currentLanguage, plural, t } from './i18n.js';

let generation = 0; // the last load started; an older answer is dropped

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

function renderPlaces(answer) {
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
    ...(periods.length > 1 ? [element('ul', { className: 'list where-periods' }, ...periods.map(periodRow))] : []));
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
