// The alerts page: the geofences the viewer has and those shared with them, drawn on the map; a new one drawn on the
// map (a circle around the point clicked, or a polygon of the points clicked) and shared with nobody, one group or
// everyone who sees the viewer; deleting one's own; the arrivals, departures and stays (live on `geofence:<me>`);
// and the webhooks that hear of them. API: /v1/geofences…, /v1/webhooks… (docs/api/openapi.yaml).
import * as L from '/vendor/leaflet/leaflet.esm.js';
import { ApiError, request } from './api.js';
import { $, button, element, mutedRow, textElement } from './dom.js';
import { currentLanguage, plural, t } from './i18n.js';
import { personName, watchChannel } from './map.js';
import { Pager } from './pager.js';
import { groupName, session } from './session.js';

const EVENT_TEXTS = { enter: 'alerts.event.enter', exit: 'alerts.event.exit', dwell: 'alerts.event.dwell' };
const OWN_STYLE = { color: '#2f6fde', weight: 2, fillOpacity: 0.12 };
const SHARED_STYLE = { color: '#7a5cc2', weight: 2, fillOpacity: 0.08, dashArray: '4 4' };
const DRAFT_STYLE = { color: '#e0572b', weight: 2, fillOpacity: 0.1, dashArray: '6 4' };

let map = null;
let report = () => {};
let shown = false;
let fences = []; // GET /v1/geofences's items
let webhooks = [];
let layer = null; // the fences on the map
let draft = { shape: 'circle', centre: null, vertices: [], layer: null }; // what the viewer is drawing
let events = null; // the Pager of the events
let generation = 0;

/** Wires the page to `theMap`; `onError` shows a failed request. */
export function setUpAlerts(theMap, onError) {
  map = theMap;
  report = onError;
  layer = L.layerGroup();
  events = new Pager({ button: $('fence-events-more'), onMore: renderEvents, onError: (error) => report(error) });
  map.on('click', (event) => { if (shown) addPoint(event.latlng); });
  for (const input of document.querySelectorAll('input[name="fence-shape"]')) {
    input.addEventListener('change', () => startDraft(input.value));
  }
  $('fence-clear').addEventListener('click', () => startDraft(draft.shape));
  $('fence-form').addEventListener('submit', (event) => {
    event.preventDefault();
    createFence();
  });
  $('webhook-form').addEventListener('submit', (event) => {
    event.preventDefault();
    createWebhook();
  });
}

/** Shows the page (its fences drawn, everything loaded again) or hides its drawings. */
export function showAlerts(visible) {
  shown = visible;
  if (!visible) {
    layer.remove();
    if (draft.layer) draft.layer.remove();
    return;
  }
  layer.addTo(map);
  if (draft.layer) draft.layer.addTo(map);
  if (session.me) {
    watchChannel(`geofence:${session.me.account.id}`, () => { if (shown) loadEvents(); });
  }
  fillSharing();
  load();
}

/** Forgets everything (sign-out). */
export function resetAlerts() {
  generation += 1;
  shown = false;
  fences = [];
  webhooks = [];
  if (layer) layer.clearLayers();
  startDraft('circle');
  events?.open(null);
  for (const id of ['fences', 'fence-events', 'webhooks']) $(id).replaceChildren();
  $('webhook-secret').hidden = true;
  $('fence-error').hidden = true;
}

/** Writes the page's texts again (the language changed). */
export function renderAlerts() {
  if (!shown) return;
  fillSharing();
  renderFences();
  renderEvents();
  renderWebhooks();
  renderDraft();
}

async function load() {
  const current = ++generation;
  try {
    const [fenceList, webhookList] = await Promise.all([request('GET', '/v1/geofences'), request('GET', '/v1/webhooks')]);
    if (current !== generation) return;
    fences = fenceList.items || [];
    webhooks = webhookList.items || [];
    renderFences();
    renderWebhooks();
    await loadEvents();
  } catch (error) { report(error); }
}

async function loadEvents() {
  try {
    if (await events.open('/v1/geofences/events?limit=20')) renderEvents();
  } catch (error) { report(error); }
}

// MARK: Fences

function isMine(fence) { return session.me && fence.ownerId === session.me.account.id; }

function renderFences() {
  layer.clearLayers();
  for (const fence of fences) {
    const drawn = shapeLayer(fence.shape, isMine(fence) ? OWN_STYLE : SHARED_STYLE);
    if (!drawn) continue;
    drawn.bindTooltip(textElement(fence.name));
    drawn.addTo(layer);
  }
  $('fences').replaceChildren(...(fences.length ? fences.map((fence) => element('li', {
    className: 'fence', data: { fenceId: fence.id, shape: fence.shape.type, sharing: fence.sharing },
  }, element('strong', { className: 'name' }, fence.name), ' ',
  element('span', { className: 'muted' }, describe(fence)), ' ',
  button(t('alerts.show'), () => showOnMap(fence), { className: 'link show' }),
  isMine(fence) ? ' · ' : null,
  isMine(fence) ? button(t('alerts.delete'), () => deleteFence(fence), { className: 'link delete' }) : null))
    : [mutedRow(t('alerts.noFences'))]));
}

/** "circle, 150 m · only me" */
function describe(fence) {
  const shape = fence.shape.type === 'circle'
    ? t('alerts.circle', new Intl.NumberFormat(currentLanguage()).format(Math.round(fence.shape.radius)))
    : plural('alerts.polygon', fence.shape.vertices.length);
  const owner = isMine(fence) ? sharingText(fence) : (personName(fence.ownerId) || t('alerts.someone'));
  return `${shape} · ${owner}`;
}

function sharingText(fence) {
  if (fence.sharing === 'group') {
    const group = session.groups.find((candidate) => candidate.id === fence.groupId);
    return group ? groupName(group) : t('alerts.sharing.group');
  }
  return t(fence.sharing === 'everyone' ? 'alerts.sharing.everyone' : 'alerts.sharing.nobody');
}

/** A Leaflet circle or polygon for a geofence shape (nothing for one it can't draw). */
function shapeLayer(shape, style) {
  if (shape.type === 'circle' && shape.center) {
    return L.circle([shape.center.lat, shape.center.lon], { ...style, radius: shape.radius });
  }
  if (shape.type === 'polygon' && shape.vertices?.length >= 3) {
    return L.polygon(shape.vertices.map((vertex) => [vertex.lat, vertex.lon]), style);
  }
  return null;
}

function showOnMap(fence) {
  const drawn = shapeLayer(fence.shape, OWN_STYLE);
  if (drawn) map.fitBounds(drawn.getBounds(), { maxZoom: 17 });
}

async function deleteFence(fence) {
  try {
    await request('DELETE', `/v1/geofences/${encodeURIComponent(fence.id)}`);
  } catch (error) { report(error); }
  await load();
}

// MARK: Drawing

function startDraft(shape) {
  if (draft.layer) draft.layer.remove();
  draft = { shape, centre: null, vertices: [], layer: null };
  renderDraft();
}

/** A click on the map while the page is shown: the circle's centre, or the polygon's next vertex. */
function addPoint(latlng) {
  if (draft.shape === 'circle') draft.centre = latlng;
  else draft.vertices.push(latlng);
  renderDraft();
}

function radius() { return Number($('fence-radius').value) || 0; }

function renderDraft() {
  if (draft.layer) draft.layer.remove();
  draft.layer = null;
  const circle = draft.shape === 'circle';
  $('fence-radius-label').hidden = !circle;
  if (circle && draft.centre) {
    draft.layer = L.circle(draft.centre, { ...DRAFT_STYLE, radius: Math.max(radius(), 1) });
  } else if (!circle && draft.vertices.length) {
    draft.layer = draft.vertices.length >= 3
      ? L.polygon(draft.vertices, DRAFT_STYLE)
      : L.polyline(draft.vertices, DRAFT_STYLE);
  }
  if (draft.layer && shown) draft.layer.addTo(map);
  const hint = $('fence-hint');
  hint.dataset.points = String(circle ? (draft.centre ? 1 : 0) : draft.vertices.length);
  hint.textContent = circle
    ? t(draft.centre ? 'alerts.hint.circleSet' : 'alerts.hint.circle')
    : plural('alerts.hint.polygon', draft.vertices.length);
}

function fillSharing() {
  const select = $('fence-sharing');
  const chosen = select.value;
  const options = [['nobody', t('alerts.sharing.nobody')]];
  for (const group of session.groups) {
    if (group.kind !== 'blacklist') options.push([`group:${group.id}`, groupName(group)]);
  }
  options.push(['everyone', t('alerts.sharing.everyone')]);
  select.replaceChildren(...options.map(([value, text]) => element('option', { value }, text)));
  if (options.some(([value]) => value === chosen)) select.value = chosen;
}

async function createFence() {
  const message = $('fence-error');
  message.hidden = true;
  let shape;
  if (draft.shape === 'circle') {
    const centre = draft.centre || map.getCenter();
    shape = { type: 'circle', center: { lat: centre.lat, lon: centre.lng }, radius: radius() };
  } else {
    if (draft.vertices.length < 3) return say(message, t('alerts.needThree'), 'too_few_vertices');
    shape = { type: 'polygon', vertices: draft.vertices.map((point) => ({ lat: point.lat, lon: point.lng })) };
  }
  const sharing = $('fence-sharing').value;
  const body = { name: $('fence-name').value.trim(), shape, sharing: sharing.startsWith('group:') ? 'group' : sharing };
  if (sharing.startsWith('group:')) body.groupId = sharing.slice('group:'.length);
  try {
    await request('POST', '/v1/geofences', body);
  } catch (error) {
    if (!(error instanceof ApiError) || error.status >= 500 || error.code === 'network') return report(error);
    return say(message, error.message, error.code);
  }
  $('fence-name').value = '';
  startDraft(draft.shape);
  await load();
}

function say(node, text, code) {
  node.dataset.code = code;
  node.textContent = text;
  node.hidden = false;
}

// MARK: Events

function renderEvents() {
  const date = new Intl.DateTimeFormat(currentLanguage(), { dateStyle: 'medium', timeStyle: 'short' });
  const items = events.items;
  $('fence-events').replaceChildren(...(items.length ? items.map((event) => element('li', {
    className: 'fence-event', data: { kind: event.kind, userId: event.userId, geofenceId: event.geofenceId },
  }, element('strong', {}, eventPerson(event.userId)), ' ', t(EVENT_TEXTS[event.kind], event.geofenceName),
  element('div', { className: 'muted' }, date.format(new Date(event.timestamp))
    + (event.reportedBy === 'device' ? ` · ${t('alerts.byDevice')}` : ''))))
    : [mutedRow(t('alerts.noEvents'))]));
}

function eventPerson(userId) {
  if (session.me && userId === session.me.account.id) return t('me');
  return personName(userId) || t('alerts.someone');
}

// MARK: Webhooks

function renderWebhooks() {
  $('webhooks').replaceChildren(...(webhooks.length ? webhooks.map((webhook) => element('li', {
    className: 'webhook', data: { webhookId: webhook.id },
  }, element('span', { className: 'url' }, webhook.url), ' ',
  element('span', { className: 'muted' }, t(webhook.enabled ? 'alerts.webhook.on' : 'alerts.webhook.off')), ' ',
  button(t('alerts.delete'), () => deleteWebhook(webhook), { className: 'link delete' })))
    : [mutedRow(t('alerts.noWebhooks'))]));
}

async function createWebhook() {
  const secret = $('webhook-secret');
  secret.hidden = true;
  const message = $('fence-error');
  message.hidden = true;
  try {
    const created = await request('POST', '/v1/webhooks', { url: $('webhook-url').value.trim() });
    $('webhook-url').value = '';
    secret.dataset.secret = created.secret;
    secret.textContent = t('alerts.webhook.secret', created.secret);
    secret.hidden = false;
  } catch (error) {
    if (!(error instanceof ApiError) || error.status >= 500 || error.code === 'network') return report(error);
    return say(message, error.message, error.code);
  }
  await load();
}

async function deleteWebhook(webhook) {
  try {
    await request('DELETE', `/v1/webhooks/${encodeURIComponent(webhook.id)}`);
  } catch (error) { report(error); }
  await load();
}
