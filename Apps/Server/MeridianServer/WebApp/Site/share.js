// The page of a share link, `/s/<token>`, for someone without an account: the owner's position on the map (and the
// track since the link was made, when the link shows it), moved by the fixes that arrive over the live socket, which
// the link's token signs in to (it may read the link's own channel and nothing else). Once the link expires or is
// revoked the page says so and shows nothing; while the owner's sharing is paused it shows no position and asks
// again now and then. API: GET /v1/shared/{token} (docs/api/openapi.yaml); live: docs/realtime-protocol.md.
import * as L from '/vendor/leaflet/leaflet.esm.js';
import { $ } from './dom.js';
import { age, apply, load, t } from './i18n.js';
import { LiveSocket } from './live.js';

const PAUSED_RETRY_MS = 30000;
// The most points the track keeps: live fixes beyond it drop the oldest (a page left open for days stays light).
const TRACK_POINTS = 5000;
const RENDER_AGE_MS = 15000;
// The page's state for each error code of an ended link (any other 404: no such link), and its text.
const ENDED_STATES = { share_link_revoked: 'revoked', share_link_expired: 'expired' };
const ENDED_TEXTS = { revoked: 'share.revoked', expired: 'share.expired', missing: 'share.missing' };

const token = tokenOfPage();
let map = null;
let marker = null;
let markerElement = null;
let track = null;
let fix = null; // the newest fix shown
let live = null;
let channel = null;
let retry = null;
let expiry = null;
let ended = false;

/** The token in the page's address; null when it isn't one (a malformed `%` escape): no such link. */
function tokenOfPage() {
  try {
    return decodeURIComponent(location.pathname.split('/').filter(Boolean).pop() || '');
  } catch {
    return null;
  }
}

async function start() {
  const [config] = await Promise.all([
    fetch('/app/config.json', { signal: AbortSignal.timeout(15000) }).then((r) => r.json()), load(null),
  ]);
  apply();
  map = L.map('map', { zoomControl: true }).setView([50.4501, 30.5234], 13);
  if (config.tileURL) L.tileLayer(config.tileURL, { maxZoom: 19, attribution: config.tileAttribution }).addTo(map);
  setInterval(renderAge, RENDER_AGE_MS);
  if (token === null) return end('missing');
  await refresh();
}

/** Reads the link's view and shows it: the position, or why there is none. */
async function refresh() {
  clearTimeout(retry);
  if (ended) return;
  let response;
  try {
    response = await fetch(`/v1/shared/${encodeURIComponent(token)}`, {
      headers: { Accept: 'application/json' }, credentials: 'omit', cache: 'no-store',
      signal: AbortSignal.timeout(15000),
    });
  } catch {
    return later(5000);
  }
  if (response.status === 410 || response.status === 404) {
    const body = await response.json().catch(() => null);
    const code = body && body.error ? body.error.code : '';
    return end(ENDED_STATES[code] || 'missing');
  }
  if (response.status === 429) {
    const wait = Number(response.headers.get('Retry-After')) || 5;
    return later(wait * 1000);
  }
  if (!response.ok) return later(5000);
  const view = await response.json();
  $('share-label').textContent = view.label || '';
  $('share-until').textContent = t('share.until', new Date(view.until).toLocaleString());
  expireAt(view.until);
  if (view.paused) {
    clearPosition();
    state('paused', t('share.paused'));
    return later(PAUSED_RETRY_MS);
  }
  state('active', t('share.active'));
  if (Array.isArray(view.track)) drawTrack(view.track);
  if (view.position) show(view.position);
  else if (view.privateZoneAt != null) inPrivateZone(view.privateZoneAt);
  connect(view.channel);
}

/** At the link's end the position goes at once, and the server is asked (it answers that the link expired),
 * whether or not the socket hears anything. A clock behind the server's is asked again a little later. */
function expireAt(until) {
  clearTimeout(expiry);
  const wait = until - Date.now();
  expiry = setTimeout(() => {
    clearPosition();
    refresh();
  }, wait > 0 ? wait + 250 : 5000);
}

function later(milliseconds) {
  clearTimeout(retry);
  retry = setTimeout(refresh, milliseconds);
}

function state(name, text) {
  document.body.dataset.state = name;
  $('share-state').textContent = text;
}

/** The link ended (or never was): nothing of the owner stays on the page. */
function end(name) {
  ended = true;
  clearTimeout(retry);
  clearTimeout(expiry);
  if (live) live.stop();
  live = null;
  clearPosition();
  $('share-label').textContent = '';
  $('share-until').textContent = '';
  state(name, t(ENDED_TEXTS[name]));
}

function clearPosition() {
  if (marker) marker.remove();
  if (track) track.remove();
  marker = null;
  markerElement = null;
  track = null;
  fix = null;
  $('share-seen').textContent = '';
}

function connect(name) {
  if (live && channel === name) {
    live.subscribe(name); // again after a revocation (a pause that ended)
    return;
  }
  channel = name;
  live = new LiveSocket(() => token, {
    onEvent: (_, payload) => located(payload),
    onSubscribed: () => { document.body.dataset.live = 'subscribed'; },
    onRevoked: () => {
      document.body.dataset.live = 'revoked';
      refresh();
    },
    onReload: () => refresh(),
    onState: (connected) => {
      const badge = $('live-state');
      badge.textContent = t(connected ? 'live.connected' : 'live.offline');
      badge.classList.toggle('on', connected);
    },
  });
  live.start();
  live.subscribe(name);
}

/**
 * A live event: the newest of its fixes moves the marker (and extends the track); one whose newest fix lies in the
 * owner's privacy zone (`privateZoneAt`, later than every fix shown) takes the marker away and says so.
 */
function located(payload) {
  if (ended || !payload || !Array.isArray(payload.fixes)) return;
  const fixes = [...payload.fixes].sort((a, b) => a.timestamp - b.timestamp);
  if (track) {
    for (const each of fixes) track.addLatLng([each.latitude, each.longitude]);
    const points = track.getLatLngs();
    if (points.length > TRACK_POINTS) track.setLatLngs(points.slice(points.length - TRACK_POINTS));
  }
  const newest = fixes[fixes.length - 1];
  if (payload.privateZoneAt != null && (!newest || payload.privateZoneAt > newest.timestamp)) {
    inPrivateZone(payload.privateZoneAt);
  } else if (newest) {
    show(newest);
  }
}

/** The owner is in one of their privacy zones since `timestamp`: no position is shown, and the page says why. */
function inPrivateZone(timestamp) {
  if (fix && fix.timestamp > timestamp) return;
  if (marker) marker.remove();
  marker = null;
  markerElement = null;
  fix = { timestamp };
  $('share-seen').textContent = '';
  state('private', t('share.privateZone'));
}

function show(newest) {
  if (fix && fix.timestamp > newest.timestamp) return;
  if (document.body.dataset.state === 'private') state('active', t('share.active'));
  fix = newest;
  const position = [newest.latitude, newest.longitude];
  if (!marker) {
    markerElement = document.createElement('div');
    markerElement.className = 'shared-position';
    marker = L.marker(position, {
      icon: L.divIcon({ className: 'person-icon', html: markerElement, iconSize: null }), keyboard: false,
    }).addTo(map);
    map.setView(position, 15);
  } else {
    marker.setLatLng(position);
    map.panTo(position);
  }
  markerElement.dataset.lat = String(newest.latitude);
  markerElement.dataset.lon = String(newest.longitude);
  markerElement.dataset.timestamp = String(newest.timestamp);
  renderAge();
}

function drawTrack(fixes) {
  if (track) track.remove();
  track = L.polyline(fixes.map((each) => [each.latitude, each.longitude]), {
    className: 'shared-track', color: '#e0572b', weight: 4,
  }).addTo(map);
}

function renderAge() {
  $('share-seen').textContent = fix ? t('share.seen', age(fix.timestamp)) : '';
}

start().then(() => { document.body.dataset.ready = 'share'; }, (error) => {
  document.body.dataset.ready = 'failed';
  $('share-state').textContent = String(error);
});
