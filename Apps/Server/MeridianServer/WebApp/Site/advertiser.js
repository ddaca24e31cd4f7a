// The advertiser page: claiming a venue (found by name, or near the map's centre) and the claims' answers; the
// promotions of a venue one advertises for — created and edited with their audience rule, paused, resumed, ended,
// their code as a QR image and, for a special one, how many people qualify now; and a promotion's statistics per day
// or week as charts drawn by the page (SVG, no library), every count as the API gives it: a number, "< 5" (fewer than
// five people: drawn as the outline of 0 to 4, never as 0 or 5) or "withheld", with the API's CSV to download.
// API: /v1/advertiser/… (claims, venues, promotions, stats), /v1/promotions/{id}/qr (docs/api/openapi.yaml).
import { download, request, upload } from './api.js';
import { $, button, element, mutedRow } from './dom.js';
import { currentLanguage, plural, t } from './i18n.js';
import { localized } from './directory.js';
import { money, showQR } from './places.js';

const SVG = 'http://www.w3.org/2000/svg';
const FEWER = '< 5'; // the API's count of fewer than five people
const FEWEST_SHOWN = 5; // … and the smallest number it shows
const WITHHELD = 'withheld';
const CLAIM_STATES = {
  pending: 'advertiser.claim.pending', approved: 'advertiser.claim.approved', rejected: 'advertiser.claim.rejected',
};
const PROMOTION_STATES = {
  running: 'advertiser.state.running', paused: 'advertiser.state.paused', ended: 'advertiser.state.ended',
};
const SERIES = { offered: 'advertiser.offered', people: 'advertiser.people', redeemed: 'advertiser.redeemed' };
const BUCKETS = { day: 'advertiser.perDay', week: 'advertiser.perWeek' };
const CHART = { width: 500, height: 64, gap: 2 };

let map = null;
let report = () => {};
let shown = false;
let generation = 0; // the last load started; an older answer is dropped
let venues = []; // GET /v1/advertiser/venues
let claims = []; // GET /v1/advertiser/claims, each with `venueName`
let found = []; // the venues of the last search: {id, name}
let venueId = null; // the venue whose promotions are shown
let promotions = []; // its AdvertisedPromotions
let editing = null; // the AdvertisedPromotion in the form, null for a new one
let stats = null; // {promotion, bucket, report}

/** Wires the page to `theMap` (whose centre a search without words looks around); `onError` shows a failure. */
export function setUpAdvertiser(theMap, onError) {
  map = theMap;
  report = onError;
  $('claim-search').addEventListener('submit', (event) => {
    event.preventDefault();
    searchVenues();
  });
  $('advertiser-venue').addEventListener('change', () => choose($('advertiser-venue').value));
  $('promotion-audience').addEventListener('change', showRuleFields);
  $('promotion-form').addEventListener('submit', (event) => {
    event.preventDefault();
    savePromotion();
  });
  $('promotion-cancel').addEventListener('click', () => edit(null));
  for (const node of document.querySelectorAll('#stats-buckets [data-bucket]')) {
    node.addEventListener('click', () => { if (stats) loadStats(stats.promotion, node.dataset.bucket); });
  }
  $('stats-csv').addEventListener('click', downloadCSV);
  $('stats-close').addEventListener('click', () => {
    stats = null;
    renderStats();
  });
  edit(null);
}

/** Shows the page (everything loaded again: a claim may have been answered meanwhile). */
export function showAdvertiser(visible) {
  shown = visible;
  if (visible) load();
}

/** Forgets everything (sign-out). */
export function resetAdvertiser() {
  generation += 1;
  shown = false;
  venues = [];
  claims = [];
  found = [];
  venueId = null;
  promotions = [];
  stats = null;
  edit(null);
  for (const id of ['claims', 'claim-results', 'advertiser-promotions']) $(id).replaceChildren();
  $('claim-query').value = '';
  $('claim-note').value = '';
  delete $('claim-results').dataset.query;
  $('advertiser-error').hidden = true;
  renderStats();
}

/** Writes the page's texts again (the language changed). */
export function renderAdvertiser() {
  formTexts();
  if (shown) load();
}

async function load() {
  const mine = ++generation;
  let venueAnswer;
  let claimAnswer;
  try {
    [venueAnswer, claimAnswer] = await Promise.all([
      request('GET', '/v1/advertiser/venues'), request('GET', '/v1/advertiser/claims'),
    ]);
  } catch (error) {
    if (mine === generation) report(error);
    return;
  }
  const names = await Promise.all(claimAnswer.claims.map((claim) => venueName(claim.venueId)));
  if (mine !== generation) return;
  venues = venueAnswer.venues;
  claims = claimAnswer.claims.map((claim, index) => ({ ...claim, venueName: names[index] }));
  if (!venues.some((venue) => venue.id === venueId)) venueId = venues[0]?.id ?? null;
  renderClaims();
  renderFound();
  renderVenues();
  await loadPromotions();
  if (stats) await loadStats(stats.promotion, stats.bucket);
}

/** A venue's name in the page's language (its id when it can't be read). */
async function venueName(id) {
  try {
    const venue = await request('GET', `/v1/venues/${encodeURIComponent(id)}?lang=${currentLanguage()}`);
    return venue.name;
  } catch { return id; }
}

function nameOf(venue) {
  return venue.names?.[currentLanguage()] ?? venue.name;
}

// ------------------------------------------------------------------ claiming a venue

/** Venues whose name starts with the words typed, or (no words) those near the map's centre. */
async function searchVenues() {
  const query = $('claim-query').value.trim();
  let answer;
  try {
    if (query) {
      answer = await request('GET', `/v1/places?q=${encodeURIComponent(query)}&kind=venue&limit=20`);
      found = answer.items.map((item) => ({ id: item.place.id, name: localized(item.place.name) }));
    } else {
      const centre = map.getCenter();
      const radius = Math.min(50000, Math.max(100, Math.round(map.distance(centre, map.getBounds().getNorthEast()))));
      answer = await request('GET', `/v1/venues?lat=${centre.lat.toFixed(6)}&lon=${centre.lng.toFixed(6)}` +
        `&radius=${radius}&pageSize=20&lang=${currentLanguage()}`);
      found = answer.items.map((venue) => ({ id: venue.id, name: venue.name }));
    }
  } catch (error) {
    report(error);
    return;
  }
  $('claim-results').dataset.query = query;
  renderFound();
}

function renderFound() {
  const list = $('claim-results');
  if (list.dataset.query === undefined) return; // nothing searched yet
  const rows = found.map((venue) => {
    const mine = venues.some((candidate) => candidate.id === venue.id);
    const waiting = claims.some((claim) => claim.venueId === venue.id && claim.state === 'pending');
    const action = mine ? element('span', { className: 'muted' }, t('advertiser.yours'))
      : waiting ? element('span', { className: 'muted' }, t('advertiser.claim.pending'))
        : button(t('advertiser.claim'), () => claim(venue.id), { className: 'claim' });
    return element('li', { className: 'found-venue', data: { venueId: venue.id } }, `${venue.name} `, action);
  });
  list.replaceChildren(...(rows.length ? rows : [mutedRow(t('advertiser.noneFound'))]));
}

async function claim(id) {
  const note = $('claim-note').value.trim();
  try {
    await request('POST', '/v1/advertiser/claims', { venueId: id, ...(note ? { note } : {}) });
  } catch (error) {
    say(error);
    return;
  }
  $('claim-note').value = '';
  await load();
}

function renderClaims() {
  const format = new Intl.DateTimeFormat(currentLanguage(), { dateStyle: 'medium', timeStyle: 'short' });
  const rows = claims.map((claim) => element('li', { className: 'claim', data: { claimId: claim.id, state: claim.state } },
    element('strong', {}, claim.venueName), ' · ',
    element('span', { className: `badge state-${claim.state}` }, t(CLAIM_STATES[claim.state])), ' ',
    element('span', { className: 'muted' }, format.format(new Date(claim.decidedAt ?? claim.claimedAt))),
    claim.reason ? element('div', { className: 'muted reason' }, claim.reason) : null));
  $('claims').replaceChildren(...(rows.length ? rows : [mutedRow(t('advertiser.noClaims'))]));
}

// ------------------------------------------------------------------ the venue's promotions

function renderVenues() {
  const select = $('advertiser-venue');
  select.replaceChildren(...venues.map((venue) => element('option', { value: venue.id }, nameOf(venue))));
  select.value = venueId ?? '';
  $('advertiser-venue-part').hidden = venues.length === 0;
  $('advertiser-no-venue').hidden = venues.length > 0;
}

async function choose(id) {
  venueId = id;
  stats = null;
  edit(null);
  renderStats();
  await loadPromotions();
}

async function loadPromotions() {
  if (!venueId) {
    promotions = [];
    $('advertiser-promotions').replaceChildren();
    return;
  }
  const mine = generation;
  const asked = venueId;
  let answer;
  try {
    answer = await request('GET', `/v1/advertiser/venues/${encodeURIComponent(asked)}/promotions`);
  } catch (error) {
    report(error);
    return;
  }
  if (mine !== generation || asked !== venueId) return;
  promotions = answer.promotions;
  renderPromotions();
}

function renderPromotions() {
  const order = { running: 0, paused: 1, ended: 2 };
  const sorted = [...promotions].sort((a, b) => order[a.state] - order[b.state]
    || a.promotion.name.localeCompare(b.promotion.name));
  const rows = sorted.map(promotionRow);
  $('advertiser-promotions').replaceChildren(...(rows.length ? rows : [mutedRow(t('advertiser.noPromotions'))]));
}

function promotionRow(advertised) {
  const { promotion, state } = advertised;
  const qr = element('img', { className: 'qr', alt: t('places.qr', promotion.promoCode), hidden: true });
  showQR(qr, promotion.id);
  const price = promotion.newPrice ? ` — ${money(promotion.newPrice)}` : '';
  const old = promotion.oldPrice ? ` (${money(promotion.oldPrice)})` : '';
  const actions = [];
  if (state !== 'ended') actions.push(button(t('advertiser.edit'), () => edit(advertised), { className: 'edit' }));
  if (state === 'running') actions.push(button(t('advertiser.pause'), () => setState(advertised, 'paused'), { className: 'pause' }));
  if (state === 'paused') actions.push(button(t('advertiser.resume'), () => setState(advertised, 'running'), { className: 'resume' }));
  if (state !== 'ended') actions.push(button(t('advertiser.end'), () => end(advertised), { className: 'end' }));
  actions.push(button(t('advertiser.stats'), () => loadStats(promotion, stats?.bucket ?? 'day'), { className: 'stats' }));
  const audience = element('div', { className: 'muted audience' }, audienceText(advertised));
  if (promotion.audience === 'special' && state !== 'ended') showAudienceSize(audience, promotion.id);
  return element('li', { className: 'advertised', data: { promotionId: promotion.id, state } },
    promotion.imageUrl ? element('img', { src: promotion.imageUrl, alt: promotion.name, className: 'promotion-image' })
      : null,
    element('strong', { className: 'name' }, promotion.name), ' ',
    element('span', { className: `badge state-${state}` }, t(PROMOTION_STATES[state])),
    element('div', {}, `${t('places.code', promotion.promoCode)}${price}${old}`),
    audience,
    promotion.window ? element('div', { className: 'muted' }, t('advertiser.window',
      `${clock(promotion.window.start)}–${clock(promotion.window.end)}`)) : null,
    validity(promotion),
    qr,
    element('div', { className: 'actions' }, ...actions));
}

/** "Everyone", or "Passed within 150 m on 3 days of the last 14, without coming in". */
function audienceText({ promotion, eligibility }) {
  if (promotion.audience !== 'special') return t('advertiser.general');
  return [t('advertiser.passedWithin', Math.round(eligibility.radius)), plural('advertiser.onDays', eligibility.minimumDays),
    plural('advertiser.ofLastDays', eligibility.lookbackDays)].join(' ');
}

async function showAudienceSize(node, id) {
  let answer;
  try { answer = await request('GET', `/v1/advertiser/promotions/${encodeURIComponent(id)}/audience`); } catch {
    return; // the rule is written; the count is a bonus
  }
  const text = typeof answer.eligible === 'number' ? plural('advertiser.qualifyNow', answer.eligible)
    : t('advertiser.fewQualifyNow');
  node.append(element('span', { className: 'audience-size', data: { eligible: String(answer.eligible) } }, ` · ${text}`));
}

function validity(promotion) {
  if (promotion.validFrom == null && promotion.validUntil == null) return null;
  const format = new Intl.DateTimeFormat(currentLanguage(), { dateStyle: 'medium', timeStyle: 'short' });
  const from = promotion.validFrom != null ? format.format(new Date(promotion.validFrom)) : '…';
  const until = promotion.validUntil != null ? format.format(new Date(promotion.validUntil)) : '…';
  return element('div', { className: 'muted' }, t('advertiser.valid', `${from} – ${until}`));
}

/** Minutes after midnight as "08:30". */
function clock(minutes) {
  return `${String(Math.floor(minutes / 60)).padStart(2, '0')}:${String(minutes % 60).padStart(2, '0')}`;
}

async function setState(advertised, state) {
  try {
    await request('PUT', `/v1/advertiser/promotions/${encodeURIComponent(advertised.promotion.id)}/state`, { state });
  } catch (error) {
    say(error);
    return;
  }
  await loadPromotions();
}

async function end(advertised) {
  if (!window.confirm(t('advertiser.endConfirm', advertised.promotion.name))) return;
  if (editing?.promotion.id === advertised.promotion.id) edit(null);
  await setState(advertised, 'ended');
}

// ------------------------------------------------------------------ the form

/** Fills the form with `advertised` to edit it, or empties it for a new promotion (null). */
function edit(advertised) {
  editing = advertised;
  const promotion = advertised?.promotion;
  const rule = advertised?.eligibility ?? { radius: 150, minimumDays: 3, lookbackDays: 14 };
  formTexts();
  $('promotion-cancel').hidden = !advertised;
  $('promotion-form').dataset.editing = promotion?.id ?? '';
  $('promotion-name').value = promotion?.name ?? '';
  $('promotion-code').value = promotion?.promoCode ?? '';
  $('promotion-old-price').value = promotion?.oldPrice ? String(promotion.oldPrice.amount / 100) : '';
  $('promotion-new-price').value = promotion?.newPrice ? String(promotion.newPrice.amount / 100) : '';
  $('promotion-currency').value = (promotion?.newPrice ?? promotion?.oldPrice)?.currency ?? 'UAH';
  $('promotion-audience').value = promotion?.audience ?? 'general';
  $('promotion-radius').value = String(rule.radius);
  $('promotion-minimum-days').value = String(rule.minimumDays);
  $('promotion-lookback-days').value = String(rule.lookbackDays);
  $('promotion-window-start').value = promotion?.window ? clock(promotion.window.start) : '';
  $('promotion-window-end').value = promotion?.window ? clock(promotion.window.end) : '';
  $('promotion-valid-from').value = localInput(promotion?.validFrom);
  $('promotion-valid-until').value = localInput(promotion?.validUntil);
  $('promotion-image').value = '';
  $('advertiser-error').hidden = true;
  showRuleFields();
}

/** The form's heading and button: a new promotion's, or the one edited's. */
function formTexts() {
  $('promotion-form-title').textContent = editing ? t('advertiser.editing', editing.promotion.name) : t('advertiser.new');
  $('promotion-save').textContent = editing ? t('advertiser.save') : t('advertiser.create');
}

function showRuleFields() {
  $('promotion-rule').hidden = $('promotion-audience').value !== 'special';
}

/** UTC milliseconds as a datetime-local field's value (the browser's time), '' for none. */
function localInput(milliseconds) {
  if (milliseconds == null) return '';
  const date = new Date(milliseconds);
  return new Date(date.getTime() - date.getTimezoneOffset() * 60000).toISOString().slice(0, 16);
}

/** The form as a PromotionDraft (the image uploaded first when one was chosen). */
async function draft() {
  const currency = $('promotion-currency').value.trim().toUpperCase();
  const price = (id) => {
    const text = $(id).value.trim();
    return text === '' ? undefined : { amount: Math.round(Number(text) * 100), currency };
  };
  const minutes = (id) => {
    const text = $(id).value;
    if (!text) return null;
    const [hours, rest] = text.split(':').map(Number);
    return hours * 60 + rest;
  };
  const time = (id) => ($(id).value ? new Date($(id).value).getTime() : undefined);
  const start = minutes('promotion-window-start');
  const end = minutes('promotion-window-end');
  const audience = $('promotion-audience').value;
  let imageUrl = editing?.promotion.imageUrl;
  const file = $('promotion-image').files[0];
  if (file) imageUrl = (await upload('/v1/blobs', file)).url;
  return {
    name: $('promotion-name').value.trim(),
    promoCode: $('promotion-code').value.trim(),
    imageUrl,
    oldPrice: price('promotion-old-price'),
    newPrice: price('promotion-new-price'),
    audience,
    validFrom: time('promotion-valid-from'),
    validUntil: time('promotion-valid-until'),
    window: start !== null && end !== null ? { start, end } : undefined,
    eligibility: audience === 'special' ? {
      radius: Number($('promotion-radius').value),
      minimumDays: Number($('promotion-minimum-days').value),
      lookbackDays: Number($('promotion-lookback-days').value),
    } : editing?.eligibility,
  };
}

async function savePromotion() {
  if (!venueId) return;
  try {
    const body = await draft();
    if (editing) {
      await request('PUT', `/v1/advertiser/promotions/${encodeURIComponent(editing.promotion.id)}`, body);
    } else {
      await request('POST', `/v1/advertiser/venues/${encodeURIComponent(venueId)}/promotions`, body);
    }
  } catch (error) {
    say(error);
    return;
  }
  edit(null);
  await loadPromotions();
}

/** A refusal under the form, with its code (a failure to reach the server goes to the page's error line). */
function say(error) {
  if (error.code === 'network') {
    report(error);
    return;
  }
  const node = $('advertiser-error');
  node.textContent = error.message;
  node.dataset.code = error.code ?? '';
  node.hidden = false;
}

// ------------------------------------------------------------------ statistics

async function loadStats(promotion, bucket) {
  let answer;
  try {
    answer = await request('GET', `/v1/advertiser/promotions/${encodeURIComponent(promotion.id)}/stats?bucket=${bucket}`);
  } catch (error) {
    report(error);
    return;
  }
  stats = { promotion, bucket, report: answer };
  renderStats();
}

function renderStats() {
  const part = $('stats');
  part.hidden = !stats;
  if (!stats) {
    $('stats-charts').replaceChildren();
    $('stats-table').replaceChildren();
    return;
  }
  const { promotion, bucket, report: answer } = stats;
  part.dataset.promotionId = promotion.id;
  part.dataset.bucket = bucket;
  $('stats-title').textContent = t('advertiser.statsOf', promotion.name);
  $('stats-zone').textContent = t('advertiser.timeZone', answer.timeZone);
  for (const node of document.querySelectorAll('#stats-buckets [data-bucket]')) {
    node.textContent = t(BUCKETS[node.dataset.bucket]);
    node.classList.toggle('active', node.dataset.bucket === bucket);
  }
  const rows = answer.rows;
  $('stats-charts').replaceChildren(
    ...Object.keys(SERIES).map((field) => countChart(rows, field, t(SERIES[field]))),
    conversionChart(rows),
    legend());
  renderTable(rows);
}

/** The label of a row: its day, or its week's first and last day. */
function period(row) {
  return row.start === row.end ? row.start : `${row.start} – ${row.end}`;
}

/** A count as written: the number in the page's language, "< 5", or the page's word for withheld. */
function countText(value) {
  if (typeof value === 'number') return new Intl.NumberFormat(currentLanguage()).format(value);
  if (value === WITHHELD) return t('advertiser.withheld');
  return value;
}

function svgNode(tag, attributes = {}) {
  const node = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attributes)) node.setAttribute(name, String(value));
  return node;
}

/** An SVG chart of one bar per row: `bar(row)` gives each bar's {kind, value, fraction, text}. */
function barChart(rows, caption, field, bar) {
  const { width, height, gap } = CHART;
  const step = rows.length ? width / rows.length : width;
  const barWidth = Math.max(1, Math.min(40, step - gap));
  const svg = svgNode('svg', {
    class: 'stats-chart', viewBox: `0 0 ${width} ${height + 14}`, role: 'img', 'aria-label': caption,
  });
  svg.append(svgNode('line', { class: 'axis', x1: 0, y1: height + 0.5, x2: width, y2: height + 0.5 }));
  rows.forEach((row, index) => {
    const { kind, value, fraction, text } = bar(row);
    const barHeight = kind === 'none' ? 0 : Math.max(1, fraction * height);
    const rect = svgNode('rect', {
      class: `bar ${kind}`, x: (index * step + (step - barWidth) / 2).toFixed(2), y: (height - barHeight).toFixed(2),
      width: barWidth.toFixed(2), height: barHeight.toFixed(2),
    });
    rect.dataset.start = row.start;
    rect.dataset.value = String(value ?? '');
    const title = svgNode('title');
    title.textContent = `${period(row)}: ${text}`;
    rect.append(title);
    svg.append(rect);
    if (kind === 'few' && barWidth >= 24) { // room to write "< 5" over a week's outline
      const label = svgNode('text', { class: 'few-label', x: (index * step + step / 2).toFixed(2),
        y: (height - barHeight - 2).toFixed(2), 'text-anchor': 'middle' });
      label.textContent = FEWER;
      svg.append(label);
    }
  });
  if (rows.length) {
    for (const [row, anchor, x] of [[rows[0], 'start', 0], [rows[rows.length - 1], 'end', width]]) {
      const label = svgNode('text', { class: 'tick', x, y: height + 12, 'text-anchor': anchor });
      label.textContent = row.start;
      svg.append(label);
      if (rows.length === 1) break;
    }
  }
  return element('figure', { className: 'stats-figure', data: { series: field } },
    element('figcaption', {}, caption), svg);
}

/**
 * Offers, people or redemptions: a number as a bar to scale, "< 5" as the dashed outline of 0 to 4 (what it may be),
 * "withheld" as a dotted column over the whole height (at least five, not told).
 */
function countChart(rows, field, caption) {
  const numbers = rows.map((row) => row[field]).filter((value) => typeof value === 'number');
  const top = Math.max(FEWEST_SHOWN, ...numbers);
  return barChart(rows, caption, field, (row) => {
    const value = row[field];
    if (typeof value === 'number') return { kind: 'exact', value, fraction: value / top, text: countText(value) };
    if (value === WITHHELD) return { kind: 'withheld', value, fraction: 1, text: countText(value) };
    return { kind: 'few', value, fraction: (FEWEST_SHOWN - 1) / top, text: t('advertiser.fewer') };
  });
}

/** Redeemed ÷ people, to the best day's scale; a day without it (a count hidden) has no bar. */
function conversionChart(rows) {
  const top = Math.max(0.01, ...rows.map((row) => row.conversion ?? 0));
  const percent = new Intl.NumberFormat(currentLanguage(), { style: 'percent', maximumFractionDigits: 1 });
  return barChart(rows, t('advertiser.conversion'), 'conversion', (row) => (row.conversion == null
    ? { kind: 'none', value: null, fraction: 0, text: t('advertiser.noConversion') }
    : { kind: 'exact', value: row.conversion, fraction: row.conversion / top, text: percent.format(row.conversion) }));
}

function legend() {
  return element('p', { className: 'stats-legend muted' },
    element('span', { className: 'key few' }), ` ${FEWER}: ${t('advertiser.fewer')} `,
    element('span', { className: 'key withheld' }), ` ${t('advertiser.withheld')}: ${t('advertiser.withheldHint')}`);
}

function renderTable(rows) {
  const percent = new Intl.NumberFormat(currentLanguage(), { style: 'percent', maximumFractionDigits: 1 });
  const special = stats.promotion.audience === 'special';
  const headings = [t('advertiser.period'), t('advertiser.offered'), t('advertiser.people'), t('advertiser.redeemed'),
    t('advertiser.conversion'), ...(special ? [t('advertiser.eligible')] : [])];
  const cell = (value, field) => element('td', { data: { field, value: String(value ?? '') } },
    value == null ? '—' : countText(value));
  $('stats-table').replaceChildren(
    element('thead', {}, element('tr', {}, ...headings.map((heading) => element('th', {}, heading)))),
    element('tbody', {}, ...[...rows].reverse().map((row) => element('tr', { data: { start: row.start } },
      element('td', {}, period(row)), cell(row.offered, 'offered'), cell(row.people, 'people'),
      cell(row.redeemed, 'redeemed'),
      element('td', { data: { field: 'conversion' } }, row.conversion == null ? '—' : percent.format(row.conversion)),
      ...(special ? [cell(row.eligible, 'eligible')] : [])))));
}

/** The API's CSV of the figures shown, saved as the file the server names. */
async function downloadCSV() {
  if (!stats) return;
  const { promotion, bucket } = stats;
  try {
    const blob = await download(
      `/v1/advertiser/promotions/${encodeURIComponent(promotion.id)}/stats?bucket=${bucket}&format=csv`);
    const link = element('a', { href: URL.createObjectURL(blob), download: `promotion-${promotion.id}-${bucket}.csv` });
    document.body.append(link);
    link.click();
    link.remove();
    setTimeout(() => URL.revokeObjectURL(link.href), 10000);
  } catch (error) { report(error); }
}
