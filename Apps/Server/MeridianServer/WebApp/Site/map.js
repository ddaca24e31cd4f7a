// The live map: the signed-in person and the people who share their location with them, as markers that move as
// fixes arrive over the live socket (`user:<id>` carries a person's fixes; `sharing:<me>` tells at once that someone
// may be seen again), the list of those people, following one of them, and the strip that shows one group's members.
// API: /v1/sharing/visible, /v1/users/{id}/location (docs/api/openapi.yaml); live: docs/realtime-protocol.md.
import * as L from '/vendor/leaflet/leaflet.esm.js';
import { ApiError, currentToken, request } from './api.js';
import { $, button, element, syncButtons } from './dom.js';
import { age, plural, t } from './i18n.js';
import { LiveSocket } from './live.js';
import { groupName, session } from './session.js';

const REFRESH_VISIBLE_MS = 20000;
const RENDER_AGES_MS = 15000;

let map = null;
let report = () => {};
let live = null; // the socket, while signed in
let timers = [];
let people = new Map(); // userId → {userId, name, isMe, fix, marker, element}
let followed = null; // the userId kept at the centre
let centred = false; // the map was centred on the first marker
let selectedGroup = null; // the group whose members are shown (null: everyone)
let zooming = false; // a zoom (animated) is under way
let channelHandlers = new Map(); // channel → what another page does with its events (watchChannel)

/**
 * Makes the Leaflet map in `#map` (once it is shown: Leaflet measures it) with the tiles of `config`; `onError`
 * shows a failed request.
 */
export function createMap(config, onError) {
  report = onError;
  map = L.map('map', { zoomControl: true }).setView([50.4501, 30.5234], 13);
  // The tiles' attribution goes with the tiles: a map without tiles credits no tile server.
  if (config.tileURL) L.tileLayer(config.tileURL, { maxZoom: 19, attribution: config.tileAttribution }).addTo(map);
  map.on('dragstart', () => { if (followed) follow(null); });
  map.on('zoomstart', () => { zooming = true; });
  map.on('zoomend', () => { zooming = false; });
  map.on('moveend', () => {
    const centre = map.getCenter();
    $('map').dataset.centre = `${centre.lat.toFixed(6)},${centre.lng.toFixed(6)}`;
  });
  return map;
}

/** Starts the live map of the signed-in `me` (GET /v1/me): the socket, their own marker and the people visible. */
export async function startMap(me) {
  const sharingChannel = `sharing:${me.account.id}`;
  live = new LiveSocket(currentToken, {
    onEvent: (channel, payload) => {
      if (channelHandlers.has(channel)) return channelHandlers.get(channel)(payload);
      return channel === sharingChannel ? refreshVisible() : located(payload);
    },
    onRevoked: (channel) => {
      const userId = personOf(channel);
      if (userId) forget(userId);
    },
    onReload: (channel) => {
      if (channelHandlers.has(channel)) return channelHandlers.get(channel)(null);
      return channel === sharingChannel ? refreshVisible() : refreshLocation(personOf(channel));
    },
    onState: (connected) => {
      const badge = $('live-state');
      badge.textContent = t(connected ? 'live.connected' : 'live.offline');
      badge.classList.toggle('on', connected);
    },
  });
  live.start();
  live.subscribe(sharingChannel);
  watch(me.account.id, t('me'), true, me.lastFixAt != null);
  await refreshVisible();
  timers.push(setInterval(refreshVisible, REFRESH_VISIBLE_MS), setInterval(renderAges, RENDER_AGES_MS));
}

/**
 * Hands the events of `channel` (not a person's) to `onEvent(payload)` — `null` when they must be fetched again
 * over HTTP — on the map's socket, until sign-out.
 */
export function watchChannel(channel, onEvent) {
  channelHandlers.set(channel, onEvent);
  if (live) live.subscribe(channel);
}

/** Stops the live map and forgets its people (sign-out). */
export function stopMap() {
  if (live) live.stop();
  live = null;
  channelHandlers = new Map();
  for (const timer of timers) clearInterval(timer);
  timers = [];
  for (const person of people.values()) if (person.marker) person.marker.remove();
  people = new Map();
  followed = null;
  centred = false;
  selectedGroup = null;
}

/** Writes the page's texts again (the language changed). */
export function renderMap() {
  renderPeople();
  const badge = $('live-state');
  badge.textContent = t(badge.classList.contains('on') ? 'live.connected' : 'live.offline');
}

/** The name of `userId` as the map knows it (someone who shares with the viewer), else null. */
export function personName(userId) {
  const person = people.get(userId);
  return (person && person.name) || null;
}

/** The viewer's groups changed: a group shown that is gone shows everyone again; the strip and list follow. */
export function groupsChanged() {
  if (selectedGroup && !session.groups.some((group) => group.id === selectedGroup)) selectedGroup = null;
  renderPeople();
}

/** The person whose fixes `channel` carries (`user:<id>`, `seen_<precision>:<id>`), or null. */
function personOf(channel) {
  const colon = channel.indexOf(':');
  const namespace = channel.slice(0, colon);
  return namespace === 'user' || namespace.startsWith('seen_') ? channel.slice(colon + 1) : null;
}

/**
 * Starts showing `userId`: subscribes to `channel` — the one the visible list names for the precision the viewer
 * sees them at, privacy zones applied (`seen_<precision>:<id>`), else `user:<id>` — and fetches the last fix when one
 * is known (`located`; the visible list says so), else the first fix arrives on the channel. A person whose channel
 * changed (another precision, a first privacy zone) is watched on the new one.
 */
function watch(userId, name, isMe = false, located = true, channel = null) {
  const wanted = channel || `user:${userId}`;
  const known = people.get(userId);
  if (known) {
    if (name) known.name = name;
    if (known.channel === wanted) return;
    live.unsubscribe(known.channel);
    known.channel = wanted;
    live.subscribe(wanted);
    if (located) refreshLocation(userId);
    return;
  }
  people.set(userId, { userId, name: name || '', isMe, fix: null, marker: null, channel: wanted });
  live.subscribe(wanted);
  if (located) refreshLocation(userId);
}

/** Stops showing `userId` (its sharing ended): the marker goes at once. */
function forget(userId) {
  const person = people.get(userId);
  if (!person || person.isMe) return;
  if (person.marker) person.marker.remove();
  if (followed === userId) followed = null;
  people.delete(userId);
  live.unsubscribe(person.channel);
  renderPeople();
}

/** Asks who is visible now (GET /v1/sharing/visible): newcomers are watched, those gone forgotten. */
export async function refreshVisible() {
  if (!live) return;
  try {
    const visible = await request('GET', '/v1/sharing/visible');
    if (!live) return;
    const ids = new Set(visible.users.map((user) => user.userId));
    for (const user of visible.users) {
      watch(user.userId, user.fullName, false, user.lastFixAt != null, user.channel);
    }
    for (const person of [...people.values()]) if (!person.isMe && !ids.has(person.userId)) forget(person.userId);
    renderPeople();
  } catch (error) { report(error); }
}

async function refreshLocation(userId) {
  try {
    const answer = await request('GET', `/v1/users/${encodeURIComponent(userId)}/location`);
    if (answer.fix) place(userId, answer.fix);
    else if (answer.privateZoneAt != null) inPrivateZone(userId, answer.privateZoneAt);
  } catch (error) {
    if (!(error instanceof ApiError && error.status === 404)) report(error);
  }
}

/**
 * A person's event: the fixes just stored for that user, as the viewer may see them; the newest one moves the
 * marker. One whose newest fix lies in a privacy zone (`privateZoneAt`, later than every fix shown) hides the marker.
 */
function located(payload) {
  if (!payload || !Array.isArray(payload.fixes)) return;
  const newest = payload.fixes.length === 0 ? null
    : payload.fixes.reduce((a, b) => (b.timestamp > a.timestamp ? b : a));
  if (payload.privateZoneAt != null && (!newest || payload.privateZoneAt > newest.timestamp)) {
    inPrivateZone(payload.userId, payload.privateZoneAt);
  } else if (newest) {
    place(payload.userId, newest);
  }
}

/** `userId` is in one of their privacy zones since `timestamp`: no position, so no marker. */
function inPrivateZone(userId, timestamp) {
  const person = people.get(userId);
  if (!person || (person.fix && person.fix.timestamp > timestamp)) return;
  person.fix = null;
  if (person.marker) person.marker.remove();
  renderPeople();
}

function place(userId, fix) {
  const person = people.get(userId);
  if (!person || !fix || (person.fix && person.fix.timestamp > fix.timestamp)) return;
  person.fix = fix;
  const position = [fix.latitude, fix.longitude];
  if (!person.marker) {
    person.element = markerElement(person);
    person.marker = L.marker(position, {
      icon: L.divIcon({ className: 'person-icon', html: person.element, iconSize: null }),
      title: person.name, keyboard: true,
    });
    if (!centred) {
      map.setView(position, 15);
      centred = true;
    }
  } else {
    person.marker.setLatLng(position);
  }
  if (followed === userId) centreOn(position);
  person.element.dataset.lat = String(fix.latitude);
  person.element.dataset.lon = String(fix.longitude);
  person.element.dataset.timestamp = String(fix.timestamp);
  renderPeople();
}

/** Keeps `userId`'s marker at the map's centre as it moves (null: stop); dragging the map stops it too. */
function follow(userId) {
  followed = userId;
  const person = userId && people.get(userId);
  if (person && person.fix) centreOn([person.fix.latitude, person.fix.longitude]);
  renderPeople();
}

/** Pans to `position`, after the zoom under way if there is one (its end would undo the pan). */
function centreOn(position) {
  if (zooming) map.once('zoomend', () => map.panTo(position)); else map.panTo(position);
}

function markerElement(person) {
  return element('div', { className: person.isMe ? 'person me' : 'person', data: { userId: person.userId } },
    element('span', { className: 'initials' }), element('span', { className: 'age' }));
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
  if (!live) return;
  const rows = [];
  let shown = 0;
  for (const person of people.values()) {
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
        const following = followed === person.userId;
        row.append(' ', button(t(following ? 'people.unfollow' : 'people.follow'), () => {
          follow(following ? null : person.userId);
        }, { className: 'link follow', data: { following: String(following) } }));
      }
      rows.push(row);
    }
  }
  $('people').replaceChildren(...rows);
  $('people-count').textContent = plural('live.people', shown);
  renderAges();
  renderGroups();
}

function renderAges() {
  if (!live) return;
  for (const person of people.values()) {
    if (person.element && person.fix) person.element.querySelector('.age').textContent = age(person.fix.timestamp);
  }
}

function renderGroups() {
  const groups = session.groups.filter((group) => group.kind !== 'blacklist');
  const items = [['', t('groups.all')], ...groups.map((group) => [group.id, groupName(group)])];
  syncButtons($('groups'), 'group', items, selectedGroup || '', (key) => { selectedGroup = key || null; renderPeople(); });
}
