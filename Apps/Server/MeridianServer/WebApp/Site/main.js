// The page: sign-in, the live map, the history and the sharing switches. Leaflet is Debian's libjs-leaflet, served
// by the server at /vendor/leaflet.
import * as L from '/vendor/leaflet/leaflet.esm.js';
import { ApiError, currentToken, download, request, setToken } from './api.js';
import { age, apply, currentLanguage, load, offeredLanguages, plural, t } from './i18n.js';
import { button, element, textElement } from './dom.js';
import { LiveSocket } from './live.js';
import { openPlace, resetDirectory, setUpDirectory, showDirectory } from './directory.js';
import { resetPlaces, setUpPlaces, showPlaces } from './places.js';
import { resetPolls, setUpPolls, showPolls } from './polls.js';
import { resetRewards, setUpRewards, showRewards } from './rewards.js';
import { loadWhere, resetWhere } from './where.js';

const $ = (id) => document.getElementById(id);
const LANGUAGE_NAMES = { en: 'English', ru: 'Русский', uk: 'Українська' };
const PRESETS = ['today', 'yesterday', 'thisMonth', 'lastMonth', 'thisYear', 'lastYear', 'allTime'];
const REFRESH_VISIBLE_MS = 20000;
const CLUSTER_BELOW_ZOOM = 12;
const VIEWS = ['map', 'history', 'sharing', 'places', 'polls', 'rewards', 'directory'];

let config = { tileURL: null, tileAttribution: '', languages: ['en'] };
let session = null; // {me, groups, people: Map(userId → person), live, timers}
let map = null;
let view = 'map';
let historyPreset = 'today'; // a preset's name, or `custom:<from day>:<to day>` (both days included)
let historyLayer = null;
let selectedGroup = null;
let zooming = false; // a zoom (animated) is under way

// ---------------------------------------------------------------- start

async function start() {
  const stored = localStorage.getItem('meridian.language');
  const [configuration] = await Promise.all([
    fetch('/app/config.json', { signal: AbortSignal.timeout(15000) }).then((r) => r.json()), load(stored),
  ]);
  config = configuration;
  fillLanguages();
  apply();
  $('language').addEventListener('change', () => switchLanguage($('language').value));
  $('email-form').addEventListener('submit', (event) => { event.preventDefault(); signInWithEmail(); });
  $('phone-form').addEventListener('submit', (event) => { event.preventDefault(); requestCode(); });
  $('code-form').addEventListener('submit', (event) => { event.preventDefault(); signInWithCode(); });
  $('signout').addEventListener('click', signOut);
  for (const button of document.querySelectorAll('#nav [data-view]')) {
    button.addEventListener('click', () => show(button.dataset.view));
  }
  for (const button of document.querySelectorAll('[data-export]')) {
    button.addEventListener('click', () => exportHistory(button.dataset.export));
  }
  $('range-form').addEventListener('submit', (event) => { event.preventDefault(); showRange(); });
  $('pause').addEventListener('click', () => changeSharing('/v1/sharing/pause'));
  $('resume').addEventListener('click', () => changeSharing('/v1/sharing/resume'));
  $('share-hour').addEventListener('click', () => changeSharing('/v1/sharing/until', { until: Date.now() + 3600000 }));
  $('share-day').addEventListener('click', () => {
    const midnight = new Date();
    midnight.setHours(24, 0, 0, 0);
    changeSharing('/v1/sharing/until', { until: midnight.getTime() });
  });
  $('until-form').addEventListener('submit', (event) => { event.preventDefault(); shareUntil(); });
  $('people-form').addEventListener('submit', (event) => { event.preventDefault(); findPeople(); });
  $('new-group-form').addEventListener('submit', (event) => { event.preventDefault(); createGroup(); });
  setUpPolls(showError);
  setUpDirectory(showError);
  setUpRewards(showError);
  document.body.dataset.ready = 'signin';
}

function fillLanguages() {
  const select = $('language');
  select.replaceChildren(...offeredLanguages().map((code) => {
    const option = document.createElement('option');
    option.value = code;
    option.textContent = LANGUAGE_NAMES[code] || code;
    return option;
  }));
  select.value = currentLanguage();
}

async function switchLanguage(language) {
  await load(language);
  localStorage.setItem('meridian.language', language);
  fillLanguages();
  apply();
  if (session) renderAll();
}

// ---------------------------------------------------------------- sign-in

function signInFailed(error) {
  const message = $('signin-error');
  message.textContent = t('signin.failed', error instanceof ApiError ? error.message : String(error));
  message.hidden = false;
}

async function signInWithEmail() {
  try {
    const answer = await request('POST', '/v1/auth/login', { email: $('email').value, password: $('password').value });
    await signedIn(answer.token);
  } catch (error) { signInFailed(error); }
}

async function requestCode() {
  try {
    await request('POST', '/v1/auth/otp/request', { phone: $('phone').value });
    $('code-form').hidden = false;
    $('code').focus();
  } catch (error) { signInFailed(error); }
}

async function signInWithCode() {
  try {
    const answer = await request('POST', '/v1/auth/otp/verify', { phone: $('phone').value, code: $('code').value });
    await signedIn(answer.token);
  } catch (error) { signInFailed(error); }
}

async function signedIn(token) {
  setToken(token);
  $('signin-error').hidden = true;
  $('password').value = '';
  $('code').value = '';
  const [me, groups] = await Promise.all([request('GET', '/v1/me'), request('GET', '/v1/groups')]);
  session = { me, groups: groups.groups, people: new Map(), timers: [] };
  // `user:<id>` carries a person's fixes; `sharing:<me>` tells at once that someone may be seen again (a resume).
  const sharingChannel = `sharing:${me.account.id}`;
  session.live = new LiveSocket(currentToken, {
    onEvent: (channel, payload) => (channel === sharingChannel ? refreshVisible() : located(payload)),
    onRevoked: (channel) => forget(channel.slice('user:'.length)),
    onReload: (channel) => (channel === sharingChannel ? refreshVisible() : refreshLocation(channel.slice('user:'.length))),
    onState: (connected) => {
      const badge = $('live-state');
      badge.textContent = t(connected ? 'live.connected' : 'live.offline');
      badge.classList.toggle('on', connected);
    },
  });
  $('signin').hidden = true;
  $('app').hidden = false;
  $('nav').hidden = false;
  $('signout').hidden = false;
  ensureMap();
  session.live.start();
  session.live.subscribe(sharingChannel);
  watch(me.account.id, t('me'), true, me.lastFixAt != null);
  await refreshVisible();
  session.timers.push(setInterval(refreshVisible, REFRESH_VISIBLE_MS));
  session.timers.push(setInterval(renderAges, 15000));
  show('map');
  renderAll();
  document.body.dataset.ready = 'app';
}

async function signOut() {
  try { await request('POST', '/v1/auth/logout'); } catch { /* the token is dropped anyway */ }
  setToken(null);
  if (session) {
    session.live.stop();
    for (const timer of session.timers) clearInterval(timer);
    for (const person of session.people.values()) if (person.marker) person.marker.remove();
  }
  if (historyLayer) historyLayer.remove();
  historyLayer = null;
  session = null;
  resetPolls();
  resetDirectory();
  resetPlaces();
  resetRewards();
  resetWhere();
  $('app').hidden = true;
  $('nav').hidden = true;
  $('signout').hidden = true;
  $('code-form').hidden = true;
  $('signin').hidden = false;
  document.body.dataset.ready = 'signin';
}

// ---------------------------------------------------------------- live map

function ensureMap() {
  if (map) return;
  map = L.map('map', { zoomControl: true }).setView([50.4501, 30.5234], 13);
  setUpPlaces(map, showError, (id) => {
    show('directory');
    openPlace(id);
  });
  // The tiles' attribution goes with the tiles: a map without tiles credits no tile server.
  if (config.tileURL) L.tileLayer(config.tileURL, { maxZoom: 19, attribution: config.tileAttribution }).addTo(map);
  map.on('zoomend', () => { if (view === 'history') drawHistory(); });
  map.on('dragstart', () => { if (session && session.followed) follow(null); });
  map.on('zoomstart', () => { zooming = true; });
  map.on('zoomend', () => { zooming = false; });
  map.on('moveend', () => {
    const centre = map.getCenter();
    $('map').dataset.centre = `${centre.lat.toFixed(6)},${centre.lng.toFixed(6)}`;
  });
}

/**
 * Starts showing `userId`: subscribes to its channel and fetches its last fix when one is known (`located`; the
 * visible list says so), else the first fix arrives on the channel.
 */
function watch(userId, name, isMe = false, located = true) {
  if (session.people.has(userId)) {
    if (name) session.people.get(userId).name = name;
    return;
  }
  session.people.set(userId, { userId, name: name || '', isMe, fix: null, marker: null });
  session.live.subscribe(`user:${userId}`);
  if (located) refreshLocation(userId);
}

/** Stops showing `userId` (its sharing ended): the marker goes at once. */
function forget(userId) {
  const person = session && session.people.get(userId);
  if (!person || person.isMe) return;
  if (person.marker) person.marker.remove();
  if (session.followed === userId) session.followed = null;
  session.people.delete(userId);
  session.live.unsubscribe(`user:${userId}`);
  renderPeople();
}

async function refreshVisible() {
  if (!session) return;
  try {
    const visible = await request('GET', '/v1/sharing/visible');
    const ids = new Set(visible.users.map((user) => user.userId));
    for (const user of visible.users) watch(user.userId, user.fullName, false, user.lastFixAt != null);
    for (const person of [...session.people.values()]) if (!person.isMe && !ids.has(person.userId)) forget(person.userId);
    renderPeople();
  } catch (error) { showError(error); }
}

async function refreshLocation(userId) {
  try {
    const answer = await request('GET', `/v1/users/${encodeURIComponent(userId)}/location`);
    place(userId, answer.fix);
  } catch (error) {
    if (!(error instanceof ApiError && error.status === 404)) showError(error);
  }
}

/** A `user:<id>` event: the fixes just stored for that user; the newest one moves the marker. */
function located(payload) {
  if (!payload || !Array.isArray(payload.fixes) || payload.fixes.length === 0) return;
  const newest = payload.fixes.reduce((a, b) => (b.timestamp > a.timestamp ? b : a));
  place(payload.userId, newest);
}

function place(userId, fix) {
  const person = session && session.people.get(userId);
  if (!person || !fix || (person.fix && person.fix.timestamp > fix.timestamp)) return;
  person.fix = fix;
  const position = [fix.latitude, fix.longitude];
  if (!person.marker) {
    person.element = markerElement(person);
    person.marker = L.marker(position, {
      icon: L.divIcon({ className: 'person-icon', html: person.element, iconSize: null }),
      title: person.name, keyboard: true,
    });
    if (!session.centred) {
      map.setView(position, 15);
      session.centred = true;
    }
  } else {
    person.marker.setLatLng(position);
  }
  if (session.followed === userId) centreOn(position);
  person.element.dataset.lat = String(fix.latitude);
  person.element.dataset.lon = String(fix.longitude);
  person.element.dataset.timestamp = String(fix.timestamp);
  renderPeople();
}

/** Keeps `userId`'s marker at the map's centre as it moves (null: stop); dragging the map stops it too. */
function follow(userId) {
  session.followed = userId;
  const person = userId && session.people.get(userId);
  if (person && person.fix) centreOn([person.fix.latitude, person.fix.longitude]);
  renderPeople();
}

/** Pans to `position`, after the zoom under way if there is one (its end would undo the pan). */
function centreOn(position) {
  if (zooming) map.once('zoomend', () => map.panTo(position)); else map.panTo(position);
}

function markerElement(person) {
  const element = document.createElement('div');
  element.className = person.isMe ? 'person me' : 'person';
  element.dataset.userId = person.userId;
  const initials = document.createElement('span');
  initials.className = 'initials';
  const label = document.createElement('span');
  label.className = 'age';
  element.append(initials, label);
  return element;
}

function initials(name) {
  const words = name.trim().split(/\s+/).filter(Boolean);
  if (words.length === 0) return '?';
  return words.slice(0, 2).map((word) => word[0].toUpperCase()).join('');
}

function inSelectedGroup(person) {
  if (person.isMe || !selectedGroup) return true;
  const group = session.groups.find((g) => g.id === selectedGroup);
  return !!group && group.members.includes(person.userId);
}

function renderPeople() {
  if (!session) return;
  const list = $('people');
  const rows = [];
  let shown = 0;
  for (const person of session.people.values()) {
    const visible = !!person.fix && inSelectedGroup(person);
    if (person.marker) {
      const label = person.isMe ? t('me') : (person.name || '?');
      person.element.querySelector('.initials').textContent = person.isMe ? t('me') : initials(person.name || '?');
      person.element.title = label;
      if (visible && !map.hasLayer(person.marker)) person.marker.addTo(map);
      if (!visible && map.hasLayer(person.marker)) person.marker.remove();
      if (visible && !person.isMe) shown += 1; // the count is of the markers shown
    }
    if (!person.isMe && inSelectedGroup(person)) {
      const name = element('span', { className: 'name' }, person.name || person.userId);
      const row = element('li', { data: { userId: person.userId } }, name);
      if (person.fix) {
        name.title = t('nav.map');
        name.addEventListener('click', () => map.setView([person.fix.latitude, person.fix.longitude], 16));
        const following = session.followed === person.userId;
        row.append(' ', button(t(following ? 'people.unfollow' : 'people.follow'), () => {
          follow(following ? null : person.userId);
        }, { className: 'link follow', data: { following: String(following) } }));
      }
      rows.push(row);
    }
  }
  list.replaceChildren(...rows);
  $('people-count').textContent = plural('live.people', shown);
  renderAges();
  renderGroups();
}

function renderAges() {
  if (!session) return;
  for (const person of session.people.values()) {
    if (person.element && person.fix) person.element.querySelector('.age').textContent = age(person.fix.timestamp);
  }
}

function groupName(group) {
  return group.kind === 'custom' ? group.name : t(`groups.${group.kind}`);
}

/**
 * Keeps `strip`'s buttons those of `items` (`[key, text]`), the one of `active` highlighted: buttons are made again
 * only when the keys change, so a click is never lost to a re-render while events arrive.
 */
function syncButtons(strip, attribute, items, active, onClick) {
  const keys = items.map(([key]) => key).join('\n');
  if (strip.dataset.keys !== keys) {
    strip.dataset.keys = keys;
    strip.replaceChildren(...items.map(([key]) => {
      const element = document.createElement('button');
      element.type = 'button';
      element.dataset[attribute] = key;
      element.addEventListener('click', () => onClick(key));
      return element;
    }));
  }
  items.forEach(([key, text], index) => {
    const element = strip.children[index];
    element.textContent = text;
    element.classList.toggle('active', key === active);
  });
}

function renderGroups() {
  const groups = session.groups.filter((group) => group.kind !== 'blacklist');
  const items = [['', t('groups.all')], ...groups.map((group) => [group.id, groupName(group)])];
  syncButtons($('groups'), 'group', items, selectedGroup || '', (key) => { selectedGroup = key || null; renderPeople(); });
}

// ---------------------------------------------------------------- history

function historyQuery(selection) {
  const zone = Intl.DateTimeFormat().resolvedOptions().timeZone || 'UTC';
  const range = customRange(selection);
  const filter = range ? `from=${range.from}&to=${range.to}` : `preset=${selection}`;
  return `${filter}&timeZone=${encodeURIComponent(zone)}`;
}

/** A custom selection's instants: from the first day's local midnight to the midnight after the last day. */
function customRange(selection) {
  const match = /^custom:(\d{4}-\d{2}-\d{2}):(\d{4}-\d{2}-\d{2})$/.exec(selection);
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
  historyPreset = `custom:${from}:${to}`;
  renderHistory();
  loadHistory();
}

async function loadHistory() {
  const preset = historyPreset;
  const fixes = [];
  let visits = [];
  loadWhere(historyQuery(preset), showError);
  try {
    const stays = request('GET', `/v1/history/visits?${historyQuery(preset)}`);
    let cursor = null;
    do {
      const page = await request('GET', `/v1/history?${historyQuery(preset)}&limit=1000` +
        (cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''));
      fixes.push(...page.fixes);
      cursor = page.nextCursor;
    } while (cursor && fixes.length < 100000 && preset === historyPreset && session);
    visits = (await stays).visits;
  } catch (error) { showError(error); return; }
  if (preset !== historyPreset || !session) return;
  fixes.sort((a, b) => a.timestamp - b.timestamp);
  session.history = { preset, fixes, visits };
  const summary = $('history-summary');
  summary.dataset.count = String(fixes.length);
  summary.dataset.preset = customRange(preset) ? 'custom' : preset;
  summary.dataset.range = customRange(preset) ? customRange(preset).days.join('/') : '';
  if (view === 'history' && fixes.length > 0) {
    map.fitBounds(L.latLngBounds(fixes.map((fix) => [fix.latitude, fix.longitude])), { padding: [30, 30], maxZoom: 17 });
  }
  drawHistory();
  renderHistory();
}

/** The geohash precision of the clusters shown at `zoom` (2 for the world … 6 for a town). */
function clusterPrecision(zoom) { return Math.max(2, Math.min(6, Math.floor(zoom / 2))); }

/** The history on the map: the track as a line, or, below CLUSTER_BELOW_ZOOM, the fixes' geohash clusters; stays. */
async function drawHistory() {
  if (!session || !session.history) return;
  const { preset, fixes, visits } = session.history;
  const generation = (session.historyGeneration = (session.historyGeneration || 0) + 1);
  const layer = L.layerGroup();
  if (fixes.length > 0 && map.getZoom() < CLUSTER_BELOW_ZOOM) {
    const precision = clusterPrecision(map.getZoom());
    let answer;
    try {
      answer = await request('GET', `/v1/history/clusters?precision=${precision}&${historyQuery(preset)}`);
    } catch (error) { showError(error); return; }
    if (generation !== session.historyGeneration) return;
    const largest = Math.max(1, ...answer.clusters.map((cluster) => cluster.count));
    for (const cluster of answer.clusters) {
      L.circleMarker([cluster.latitude, cluster.longitude], {
        className: 'history-cluster', radius: 6 + 14 * Math.sqrt(cluster.count / largest), color: '#e0572b',
      }).bindTooltip(textElement(plural('history.clusterFixes', cluster.count))).addTo(layer);
    }
  } else if (fixes.length > 0) {
    const line = fixes.map((fix) => [fix.latitude, fix.longitude]);
    L.polyline(line, { className: 'history-track', color: '#e0572b', weight: 4 }).addTo(layer);
    for (const end of [line[0], line[line.length - 1]]) {
      L.circleMarker(end, { className: 'history-end', radius: 6, color: '#e0572b' }).addTo(layer);
    }
  }
  for (const visit of visits) {
    L.circleMarker(visitPosition(visit), {
      className: 'history-visit', radius: 9, color: '#2f6fde', fillOpacity: 0.4,
    }).bindTooltip(textElement(visitText(visit))).addTo(layer);
  }
  if (historyLayer) historyLayer.remove();
  historyLayer = layer;
  if (view === 'history') historyLayer.addTo(map);
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

function renderHistory() {
  const items = PRESETS.map((preset) => [preset, t(`history.${preset}`)]);
  syncButtons($('presets'), 'preset', items, historyPreset, (preset) => {
    historyPreset = preset;
    renderHistory();
    loadHistory();
  });
  const history = session && session.history;
  $('history-summary').textContent = history ? plural('history.fixes', history.fixes.length) : '';
  const visits = history ? history.visits : [];
  $('visits').replaceChildren(...(visits.length === 0 && history ? [t('history.noVisits')] : []).map((text) => {
    const row = document.createElement('li');
    row.className = 'muted';
    row.textContent = text;
    return row;
  }), ...visits.map((visit) => {
    const row = document.createElement('li');
    row.className = 'visit';
    row.textContent = visitText(visit);
    row.addEventListener('click', () => map.setView(visitPosition(visit), 17));
    return row;
  }));
}

async function exportHistory(format) {
  try {
    const blob = await download(`/v1/history/export?format=${format}&${historyQuery(historyPreset)}`);
    const link = document.createElement('a');
    link.href = URL.createObjectURL(blob);
    const range = customRange(historyPreset);
    link.download = `meridian-history-${range ? range.days.join('_') : historyPreset}.${format}`;
    document.body.append(link);
    link.click();
    link.remove();
    setTimeout(() => URL.revokeObjectURL(link.href), 10000);
  } catch (error) { showError(error); }
}

// ---------------------------------------------------------------- sharing

async function changeSharing(path, body) {
  try {
    session.me.sharing = await request('POST', path, body);
    renderSharing();
  } catch (error) { showError(error); }
}

/** Shares until the local date and time typed in the form; a time already past is refused here. */
function shareUntil() {
  const until = new Date($('until-at').value).getTime();
  const error = $('until-error');
  error.hidden = Number.isFinite(until) && until > Date.now();
  if (!error.hidden) {
    error.textContent = t('sharing.untilPast');
    return;
  }
  changeSharing('/v1/sharing/until', { until });
}

/** People found by name or phone number (GET /v1/users/search), each with a group to add them to. */
async function findPeople() {
  const query = $('people-query').value.trim();
  let answer;
  try { answer = await request('GET', `/v1/users/search?q=${encodeURIComponent(query)}`); } catch (error) {
    showError(error);
    return;
  }
  const users = answer.users.filter((user) => user.userId !== session.me.account.id);
  $('found-count').textContent = plural('sharing.found', users.length);
  $('found').replaceChildren(...users.map((user) => {
    const row = document.createElement('li');
    row.dataset.userId = user.userId;
    row.className = 'inline';
    const name = document.createElement('span');
    name.textContent = `${user.fullName || user.phone || `${user.userId.slice(0, 8)}…`} `;
    const select = document.createElement('select');
    select.setAttribute('aria-label', t('sharing.addTo'));
    select.replaceChildren(...session.groups.map((group) => {
      const option = document.createElement('option');
      option.value = group.id;
      option.textContent = groupName(group);
      return option;
    }));
    const add = document.createElement('button');
    add.type = 'button';
    add.className = 'add-member';
    add.textContent = t('sharing.addMember');
    add.addEventListener('click', () => changeMember('PUT', select.value, user.userId));
    row.append(name, select, add);
    return row;
  }));
}

/** Adds (`PUT`) or removes (`DELETE`) a member of one of the viewer's groups. */
async function changeMember(method, groupId, userId) {
  try {
    const path = `/v1/groups/${encodeURIComponent(groupId)}/members/${encodeURIComponent(userId)}`;
    const group = await request(method, path);
    session.groups = session.groups.map((candidate) => (candidate.id === group.id ? group : candidate));
    renderSharing();
    refreshVisible();
  } catch (error) { showError(error); }
}

function renderSharing() {
  const sharing = session.me.sharing || {};
  const state = $('sharing-state');
  state.dataset.paused = String(!!sharing.paused);
  state.dataset.until = sharing.until ? String(sharing.until) : '';
  if (sharing.paused) state.textContent = t('sharing.paused');
  else if (sharing.until) state.textContent = t('sharing.until', new Date(sharing.until).toLocaleString(currentLanguage()));
  else state.textContent = t('sharing.on');
  $('group-list').replaceChildren(...session.groups.map((group) => {
    const row = element('li', { data: { group: group.id } }, groupHead(group));
    if (group.kind !== 'blacklist') row.append(groupUntil(group, sharing));
    const members = document.createElement('ul');
    members.className = 'members';
    members.replaceChildren(...group.members.map((userId) => {
      const member = document.createElement('li');
      member.dataset.userId = userId;
      const name = document.createElement('span');
      name.className = 'member-name';
      name.textContent = memberName(userId);
      const remove = document.createElement('button');
      remove.type = 'button';
      remove.className = 'link remove-member';
      remove.textContent = t('sharing.removeMember');
      remove.addEventListener('click', () => changeMember('DELETE', group.id, userId));
      member.append(name, ' ', remove);
      return member;
    }));
    row.append(members);
    return row;
  }));
  renderVisibility();
}

/**
 * A group's sharing deadline (not for the Blacklist): the instant it stops seeing the location ("expired" once past),
 * a local date and time to set it to (a time already past is refused here) and a button that lifts it.
 */
function groupUntil(group, sharing) {
  const until = (sharing.groupUntil || {})[group.id];
  const box = element('div', { className: 'group-until', data: { until: until ? String(until) : '', expired: '' } });
  if (until) {
    const expired = until <= Date.now();
    box.dataset.expired = String(expired);
    const when = new Date(until).toLocaleString(currentLanguage());
    box.append(element('span', { className: 'group-until-state muted' },
      t(expired ? 'groups.untilExpired' : 'groups.until', when)), ' ',
    button(t('groups.untilClear'), () => changeGroupUntil('DELETE', group.id), { className: 'link group-until-clear' }));
  }
  const field = element('input', { type: 'datetime-local', className: 'group-until-at', required: true });
  const error = element('p', { className: 'error group-until-error', role: 'alert', hidden: true });
  const form = element('form', { className: 'range' },
    element('label', {}, element('span', {}, t('groups.untilLabel')), field),
    element('button', { type: 'submit', className: 'group-until-apply' }, t('groups.untilApply')));
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    const at = new Date(field.value).getTime();
    error.hidden = Number.isFinite(at) && at > Date.now();
    if (!error.hidden) error.textContent = t('sharing.untilPast');
    else changeGroupUntil('POST', group.id, at);
  });
  box.append(form, error);
  return box;
}

/** Sets (`POST` with `until`) or lifts (`DELETE`) the instant one group stops seeing the location. */
async function changeGroupUntil(method, groupId, until) {
  try {
    session.me.sharing = method === 'POST'
      ? await request('POST', '/v1/sharing/until', { until, groupId })
      : await request('DELETE', `/v1/sharing/until/${encodeURIComponent(groupId)}`);
    renderSharing();
  } catch (error) { showError(error); }
}

/**
 * A group's name and member count; whether its members see the viewer's location (not for the Blacklist, which sees
 * nothing); for a custom group, rename and delete.
 */
function groupHead(group) {
  const head = element('div', { className: 'group-head' });
  const title = element('span', { className: 'group-title' },
    `${groupName(group)} — ${plural('groups.members', group.members.length)}`);
  head.append(title);
  if (group.kind !== 'blacklist') {
    const visibility = group.visibility || { location: false, fields: [] };
    const box = element('input', { type: 'checkbox', className: 'group-location', checked: !!visibility.location });
    box.addEventListener('change', () => {
      changeGroup(group.id, { visibility: { ...visibility, location: box.checked } });
    });
    head.append(' ', element('label', { className: 'muted' }, box, ` ${t('groups.seesLocation')}`));
  }
  if (group.kind === 'custom') {
    head.append(' ', button(t('groups.rename'), () => {
      const field = element('input', { className: 'group-name', value: group.name, maxLength: 64, required: true });
      const form = element('form', { className: 'inline' }, field, ' ',
        element('button', { type: 'submit', className: 'save-group' }, t('groups.save')));
      form.addEventListener('submit', (event) => {
        event.preventDefault();
        if (field.value.trim()) changeGroup(group.id, { name: field.value.trim() });
      });
      head.replaceChildren(form);
      field.focus();
    }, { className: 'link rename-group' }), ' ', button(t('groups.delete'), () => deleteGroup(group.id), {
      className: 'link delete-group',
    }));
  }
  return head;
}

async function createGroup() {
  const field = $('new-group-name');
  const name = field.value.trim();
  if (!name) return;
  try {
    const group = await request('POST', '/v1/groups', { name });
    field.value = '';
    session.groups = [...session.groups, group];
    renderSharing();
    renderGroups();
  } catch (error) { showError(error); }
}

/** Renames a custom group or changes what a group's members see (PATCH /v1/groups/{id}). */
async function changeGroup(id, update) {
  try {
    const group = await request('PATCH', `/v1/groups/${encodeURIComponent(id)}`, update);
    session.groups = session.groups.map((candidate) => (candidate.id === group.id ? group : candidate));
  } catch (error) { showError(error); }
  renderSharing();
  renderGroups();
}

async function deleteGroup(id) {
  try {
    await request('DELETE', `/v1/groups/${encodeURIComponent(id)}`);
    session.groups = session.groups.filter((group) => group.id !== id);
    if (selectedGroup === id) selectedGroup = null;
    renderSharing();
    renderPeople();
  } catch (error) { showError(error); }
}

/** A member's name as far as the viewer may see it (their profile, fetched once), else the start of their id. */
function memberName(userId) {
  const names = (session.names ||= new Map());
  if (names.has(userId)) return names.get(userId) || `${userId.slice(0, 8)}…`;
  const person = session.people.get(userId);
  if (person && person.name) return person.name;
  names.set(userId, null);
  request('GET', `/v1/users/${encodeURIComponent(userId)}/profile`).then((profile) => {
    names.set(userId, profile.fullName || null);
    if (session && view === 'sharing') renderSharing();
  }).catch(() => { /* hidden or gone: the id stays */ });
  return `${userId.slice(0, 8)}…`;
}

const PROFILE_FIELDS = ['fullName', 'avatar', 'phone', 'birthday', 'gender', 'status'];
const AUDIENCES = ['everyone', 'groups', 'nobody'];

/**
 * One row per profile field: its audience (PATCH /v1/me/profile) and, for each group but the Blacklist, whether
 * that group's members see it when the audience is "my groups" (the group's `visibility.fields`, PATCH
 * /v1/groups/{id}).
 */
function renderVisibility() {
  const audience = (session.me.profile && session.me.profile.audience) || {};
  const groups = session.groups.filter((group) => group.kind !== 'blacklist');
  const head = element('tr', {}, element('th', {}, t('visibility.field')), element('th', {}, t('visibility.audience')),
    ...groups.map((group) => element('th', { className: 'group-column', data: { group: group.id } },
      groupName(group))));
  $('visibility').replaceChildren(head, ...PROFILE_FIELDS.map((field) => {
    const select = element('select', { data: { field } });
    select.setAttribute('aria-label', t(`field.${field}`));
    select.replaceChildren(...AUDIENCES.map((value) => element('option', { value }, t(`audience.${value}`))));
    select.value = audience[field] || 'groups';
    select.addEventListener('change', () => changeAudience(field, select.value));
    const byGroup = select.value === 'groups';
    return element('tr', { data: { field } }, element('td', {}, t(`field.${field}`)), element('td', {}, select),
      ...groups.map((group) => {
        const fields = (group.visibility && group.visibility.fields) || [];
        const box = element('input', {
          type: 'checkbox', className: 'group-field', checked: fields.includes(field), disabled: !byGroup,
          title: byGroup ? '' : t('visibility.onlyForGroups'),
        });
        box.dataset.group = group.id;
        box.dataset.field = field;
        box.setAttribute('aria-label', t('visibility.groupSees', groupName(group)));
        box.addEventListener('change', () => changeGroupField(group, field, box.checked));
        return element('td', {}, box);
      }));
  }));
}

/** Adds `field` to (or removes it from) the fields `group`'s members see. */
function changeGroupField(group, field, sees) {
  const visibility = group.visibility || { location: false, fields: [] };
  const fields = (visibility.fields || []).filter((candidate) => candidate !== field);
  if (sees) fields.push(field);
  changeGroup(group.id, { visibility: { ...visibility, fields } });
}

async function changeAudience(field, value) {
  try {
    session.me.profile = await request('PATCH', '/v1/me/profile', { audience: { [field]: value } });
  } catch (error) { showError(error); }
  renderVisibility();
}

// ---------------------------------------------------------------- views

function show(name) {
  view = name;
  for (const button of document.querySelectorAll('#nav [data-view]')) {
    button.classList.toggle('active', button.dataset.view === name);
  }
  for (const candidate of VIEWS) $(`view-${candidate}`).hidden = candidate !== name;
  showPlaces(name === 'places');
  if (historyLayer) {
    if (name === 'history') historyLayer.addTo(map); else historyLayer.remove();
  }
  if (name === 'history') loadHistory();
  if (name === 'sharing') refreshSharing();
  if (name === 'polls') showPolls();
  if (name === 'rewards') showRewards();
  if (name === 'directory') showDirectory();
  map.invalidateSize();
}

async function refreshSharing() {
  try {
    const [me, groups] = await Promise.all([request('GET', '/v1/me'), request('GET', '/v1/groups')]);
    session.me = me;
    session.groups = groups.groups;
    renderSharing();
  } catch (error) { showError(error); }
}

function renderAll() {
  renderPeople();
  renderHistory();
  renderSharing();
  if (view === 'history') loadWhere(historyQuery(historyPreset), showError); // place names in the new language
  if (view === 'places') showPlaces(true); // the venues' names come in the page's language
  if (view === 'polls') showPolls();
  if (view === 'rewards') showRewards();
  if (view === 'directory') showDirectory();
  const badge = $('live-state');
  badge.textContent = t(badge.classList.contains('on') ? 'live.connected' : 'live.offline');
}

function showError(error) {
  const element = $('app-error');
  element.textContent = error instanceof ApiError && error.code === 'network' ? t('error.network') : error.message;
  element.hidden = false;
  setTimeout(() => { element.hidden = true; }, 8000);
  if (error instanceof ApiError && error.status === 401) signOut();
}

start().catch((error) => {
  const message = $('signin-error');
  message.textContent = String(error);
  message.hidden = false;
});
