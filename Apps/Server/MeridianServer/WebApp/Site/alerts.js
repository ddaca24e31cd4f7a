// The alerts page: the geofences the viewer has and those shared with them, drawn on the map; a new one drawn on the
// map (a circle around the point clicked, or a polygon of the points clicked) and shared with nobody, one group or
// everyone who sees the viewer, with its alert rule (which directions, days and hours in the browser's time zone, and
// which of the people sharing with the viewer alert); deleting one's own; the arrivals, departures and stays (live on
// `geofence:<me>`); the people the viewer wants to hear of when they are near (proximity rules: someone who shares
// with the viewer both ways, within a distance) with their `near`, `apart` and `dwell` events among the others; the
// webhooks that hear of them; and this browser's notifications (Web Push, push.js). API: /v1/geofences…,
// /v1/proximity-rules…, /v1/webhooks…, /v1/push/… (docs/api/openapi.yaml).
import * as L from '/vendor/leaflet/leaflet.esm.js';
import { ApiError, request } from './api.js';
import { $, button, element, mutedRow, textElement } from './dom.js';
import { currentLanguage, plural, t } from './i18n.js';
import { personName, watchChannel } from './map.js';
import { Pager } from './pager.js';
import { PushUnavailable, pushSupported, subscribeThisBrowser, thisBrowsersRegistration, unsubscribeThisBrowser }
  from './push.js';
import { groupName, session } from './session.js';

const EVENT_TEXTS = { enter: 'alerts.event.enter', exit: 'alerts.event.exit', dwell: 'alerts.event.dwell' };
const PROXIMITY_TEXTS = { near: 'alerts.event.near', apart: 'alerts.event.apart', dwell: 'alerts.event.together' };
const OWN_STYLE = { color: '#2f6fde', weight: 2, fillOpacity: 0.12 };
const SHARED_STYLE = { color: '#7a5cc2', weight: 2, fillOpacity: 0.08, dashArray: '4 4' };
const DRAFT_STYLE = { color: '#e0572b', weight: 2, fillOpacity: 0.1, dashArray: '6 4' };
const KINDS = ['enter', 'exit', 'dwell'];
const PUSH_TEXTS = {
  on: 'alerts.push.on', off: 'alerts.push.off', denied: 'alerts.push.denied', unsupported: 'alerts.push.unsupported',
};
const DAYS = ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'];

let map = null;
let report = () => {};
let shown = false;
let fences = []; // GET /v1/geofences's items
let webhooks = []; // GET /v1/webhooks's items but this browser's kind (`webpush`), which have their own part
let pushRegistration = null; // this browser's `webpush` registration, if it is subscribed
let proximityRules = []; // GET /v1/proximity-rules's items
let sharers = []; // GET /v1/sharing/visible's users: the people an alert rule may name
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
  $('push-toggle').addEventListener('click', togglePush);
  $('proximity-form').addEventListener('submit', (event) => {
    event.preventDefault();
    createProximityRule();
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
  fillRule();
  load();
}

/** Forgets everything (sign-out). */
export function resetAlerts() {
  generation += 1;
  shown = false;
  fences = [];
  webhooks = [];
  pushRegistration = null;
  proximityRules = [];
  sharers = [];
  if (layer) layer.clearLayers();
  startDraft('circle');
  events?.open(null);
  for (const id of ['fences', 'fence-events', 'webhooks', 'proximity-rules', 'proximity-person']) {
    $(id).replaceChildren();
  }
  $('webhook-secret').hidden = true;
  $('fence-error').hidden = true;
  $('proximity-error').hidden = true;
}

/** Writes the page's texts again (the language changed). */
export function renderAlerts() {
  if (!shown) return;
  fillSharing();
  fillRule();
  renderFences();
  renderEvents();
  renderWebhooks();
  renderPush();
  renderProximityRules();
  renderDraft();
}

async function load() {
  const current = ++generation;
  try {
    const [fenceList, webhookList, visible, ruleList] = await Promise.all([
      request('GET', '/v1/geofences'), request('GET', '/v1/webhooks'), request('GET', '/v1/sharing/visible'),
      request('GET', '/v1/proximity-rules')]);
    if (current !== generation) return;
    const registrations = webhookList.items || [];
    const browser = await thisBrowsersRegistration(registrations.filter((item) => item.channel === 'webpush'));
    if (current !== generation) return;
    fences = fenceList.items || [];
    webhooks = registrations.filter((item) => item.channel !== 'webpush');
    pushRegistration = browser;
    proximityRules = ruleList.items || [];
    sharers = (visible.users || []).filter((user) => !session.me || user.userId !== session.me.account.id);
    fillRule();
    renderFences();
    renderWebhooks();
    renderPush();
    renderProximityRules();
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
  return `${shape} · ${owner}${fence.alerts ? ` · ${t('alerts.rule.limited')}` : ''}`;
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
  const alerts = ruleFromForm();
  if (alerts) body.alerts = alerts;
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

// MARK: Alert rule

function timeZone() { return Intl.DateTimeFormat().resolvedOptions().timeZone || 'UTC'; }

/** The day boxes (named in the page's language, Monday first), the time zone, and the people who share. */
function fillRule() {
  const names = new Intl.DateTimeFormat(currentLanguage(), { weekday: 'short', timeZone: 'UTC' });
  const days = $('fence-days');
  const ticked = new Set([...days.querySelectorAll('input:checked')].map((input) => input.value));
  const firstFill = !days.children.length;
  days.replaceChildren(...DAYS.map((day, index) => {
    // 2024-01-01 was a Monday.
    const box = element('input', { type: 'checkbox', name: 'fence-day', value: day });
    box.checked = firstFill || ticked.has(day);
    return element('label', {}, box, ' ', names.format(new Date(Date.UTC(2024, 0, 1 + index))));
  }));
  $('fence-zone').textContent = t('alerts.rule.zone', timeZone());
  const people = $('fence-people');
  const chosen = new Set([...people.querySelectorAll('input:checked')].map((input) => input.value));
  people.replaceChildren(...sharers.map((user) => {
    const box = element('input', { type: 'checkbox', name: 'fence-person', value: user.userId });
    box.checked = chosen.has(user.userId);
    return element('label', {}, box, ' ', user.fullName || personName(user.userId) || t('alerts.someone'));
  }));
}

/** The rule the form describes, or null when it allows everything (every kind and day, no hours, nobody chosen). */
function ruleFromForm() {
  const checked = (name) => [...document.querySelectorAll(`input[name="${name}"]:checked`)].map((box) => box.value);
  const rule = {};
  const kinds = checked('fence-kind');
  if (kinds.length !== KINDS.length) rule.kinds = kinds;
  const days = checked('fence-day');
  if (days.length !== DAYS.length) rule.days = days;
  const from = $('fence-from').value;
  const until = $('fence-until').value;
  if (from || until) rule.hours = { from, until };
  if (rule.days || rule.hours) rule.timeZone = timeZone();
  const people = checked('fence-person');
  if (people.length) rule.people = people;
  return Object.keys(rule).length ? rule : null;
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
    className: 'fence-event',
    data: { kind: event.proximity?.kind || event.kind, userId: event.userId, geofenceId: event.geofenceId },
  }, element('strong', {}, eventPerson(event.userId)), ' ', eventText(event),
  element('div', { className: 'muted' }, date.format(new Date(event.timestamp))
    + (event.reportedBy === 'device' ? ` · ${t('alerts.byDevice')}` : ''))))
    : [mutedRow(t('alerts.noEvents'))]));
}

/** "arrived at Home", or for a proximity event "is near you (500 m)". */
function eventText(event) {
  if (!event.proximity) return t(EVENT_TEXTS[event.kind], event.geofenceName);
  return t(PROXIMITY_TEXTS[event.proximity.kind], metres(event.proximity.radius));
}

function metres(value) { return new Intl.NumberFormat(currentLanguage()).format(Math.round(value)); }

function eventPerson(userId) {
  if (session.me && userId === session.me.account.id) return t('me');
  return personName(userId) || t('alerts.someone');
}

// MARK: People near me

/** The viewer's proximity rules, and the people who share with them to choose from. */
function renderProximityRules() {
  $('proximity-rules').replaceChildren(...(proximityRules.length ? proximityRules.map((rule) => element('li', {
    className: 'proximity-rule', data: { ruleId: rule.id, userId: rule.userId },
  }, element('strong', {}, sharerName(rule.userId)), ' ',
  element('span', { className: 'muted' }, t('alerts.nearby.within', metres(rule.radius))), ' ',
  button(t('alerts.delete'), () => deleteProximityRule(rule), { className: 'link delete' })))
    : [mutedRow(t('alerts.nearby.none'))]));
  const select = $('proximity-person');
  const chosen = select.value;
  select.replaceChildren(...sharers.map((user) => element('option', { value: user.userId }, sharerName(user.userId))));
  if (sharers.some((user) => user.userId === chosen)) select.value = chosen;
}

function sharerName(userId) {
  const user = sharers.find((candidate) => candidate.userId === userId);
  return user?.fullName || personName(userId) || t('alerts.someone');
}

async function createProximityRule() {
  const message = $('proximity-error');
  message.hidden = true;
  const body = { userId: $('proximity-person').value, radius: Number($('proximity-radius').value) };
  try {
    await request('POST', '/v1/proximity-rules', body);
  } catch (error) {
    if (!(error instanceof ApiError) || error.status >= 500 || error.code === 'network') return report(error);
    return say(message, error.message, error.code);
  }
  await load();
}

async function deleteProximityRule(rule) {
  try {
    await request('DELETE', `/v1/proximity-rules/${encodeURIComponent(rule.id)}`);
  } catch (error) { report(error); }
  await load();
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

// MARK: This browser

/** Whether this browser shows the alerts (subscribed), could (off), is blocked, or can't; and the button. */
function renderPush() {
  const state = $('push-state');
  const toggle = $('push-toggle');
  const kind = !pushSupported() ? 'unsupported' : pushRegistration ? 'on'
    : Notification.permission === 'denied' ? 'denied' : 'off';
  state.dataset.state = kind;
  state.textContent = t(PUSH_TEXTS[kind]);
  toggle.hidden = kind === 'unsupported' || kind === 'denied';
  toggle.textContent = t(kind === 'on' ? 'alerts.push.stop' : 'alerts.push.start');
}

async function togglePush() {
  const toggle = $('push-toggle');
  const message = $('fence-error');
  message.hidden = true;
  toggle.disabled = true;
  try {
    if (pushRegistration) await unsubscribeThisBrowser(pushRegistration);
    else pushRegistration = await subscribeThisBrowser();
  } catch (error) {
    if (error instanceof PushUnavailable) return renderPush();
    if (!(error instanceof ApiError) || error.status >= 500 || error.code === 'network') return report(error);
    return say(message, error.message, error.code);
  } finally {
    toggle.disabled = false;
  }
  await load();
}
