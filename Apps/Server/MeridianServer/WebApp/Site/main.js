// The page's wiring: the language, signing in and out, and the views — one module each (map, history, sharing,
// places, polls, rewards, directory, alerts, advertiser) — with the navigation between them. Leaflet is Debian's
// libjs-leaflet, served by the server at /vendor/leaflet.
import { ApiError, request, setToken } from './api.js';
import { $ } from './dom.js';
import { apply, currentLanguage, load, offeredLanguages, t } from './i18n.js';
import { session } from './session.js';
import { finishSingleSignOn, hideSignIn, renderSignIn, setUpSignIn, showSignIn, showStartFailure } from './signin.js';
import { createMap, renderMap, startMap, stopMap } from './map.js';
import { renderHistoryTexts, resetHistory, setUpHistory, showHistory } from './history.js';
import { renderSharing, resetSharing, setUpSharing, showSharing } from './sharing.js';
import { renderShareLinks, resetShareLinks, setUpShareLinks, showShareLinks } from './sharelinks.js';
import { resetPlaces, setUpPlaces, showPlaces } from './places.js';
import { resetPolls, setUpPolls, showPolls } from './polls.js';
import { resetRewards, setUpRewards, showRewards } from './rewards.js';
import { openPlace, resetDirectory, setUpDirectory, showDirectory } from './directory.js';
import { renderAlerts, resetAlerts, setUpAlerts, showAlerts } from './alerts.js';
import { renderZones, resetZones, setUpZones, showZones } from './zones.js';
import { renderAdvertiser, resetAdvertiser, setUpAdvertiser, showAdvertiser } from './advertiser.js';

const LANGUAGE_NAMES = { en: 'English', ru: 'Русский', uk: 'Українська' };
const VIEWS = ['map', 'history', 'sharing', 'places', 'polls', 'rewards', 'directory', 'alerts', 'advertiser'];

let config = { tileURL: null, tileAttribution: '', languages: ['en'] };
let map = null; // made at the first sign-in (Leaflet measures its shown container)
let view = 'map';

async function start() {
  const stored = localStorage.getItem('meridian.language');
  const [configuration] = await Promise.all([
    fetch('/app/config.json', { signal: AbortSignal.timeout(15000) }).then((r) => r.json()), load(stored),
  ]);
  config = configuration;
  fillLanguages();
  apply();
  $('language').addEventListener('change', () => switchLanguage($('language').value));
  $('signout').addEventListener('click', signOut);
  for (const button of document.querySelectorAll('#nav [data-view]')) {
    button.addEventListener('click', () => show(button.dataset.view));
  }
  await setUpSignIn(signedIn);
  setUpSharing(showError);
  setUpShareLinks(showError);
  setUpPolls(showError);
  setUpDirectory(showError);
  setUpRewards(showError);
  if (await finishSingleSignOn()) return;
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
  renderSignIn();
  if (session.me) renderAll();
}

async function signedIn(token) {
  setToken(token);
  const [me, groups] = await Promise.all([request('GET', '/v1/me'), request('GET', '/v1/groups')]);
  session.me = me;
  session.groups = groups.groups;
  hideSignIn();
  $('app').hidden = false;
  $('nav').hidden = false;
  $('signout').hidden = false;
  if (!map) {
    map = createMap(config, showError);
    setUpPlaces(map, showError, (id) => {
      show('directory');
      openPlace(id);
    });
    setUpHistory(map, showError);
    setUpAlerts(map, showError);
    setUpZones(map, showError);
    setUpAdvertiser(map, showError);
  }
  await startMap(me);
  show('map');
  renderAll();
  document.body.dataset.ready = 'app';
}

async function signOut() {
  try { await request('POST', '/v1/auth/logout'); } catch { /* the token is dropped anyway */ }
  setToken(null);
  stopMap();
  resetHistory();
  resetSharing();
  resetShareLinks();
  session.me = null;
  session.groups = [];
  resetPolls();
  resetDirectory();
  resetPlaces();
  resetRewards();
  resetAlerts();
  resetZones();
  resetAdvertiser();
  $('app').hidden = true;
  $('nav').hidden = true;
  $('signout').hidden = true;
  showSignIn();
  document.body.dataset.ready = 'signin';
}

function show(name) {
  view = name;
  for (const button of document.querySelectorAll('#nav [data-view]')) {
    button.classList.toggle('active', button.dataset.view === name);
  }
  for (const candidate of VIEWS) $(`view-${candidate}`).hidden = candidate !== name;
  showPlaces(name === 'places');
  showHistory(name === 'history');
  showSharing(name === 'sharing');
  if (name === 'sharing') showShareLinks();
  showAlerts(name === 'alerts');
  showZones(name === 'sharing');
  showAdvertiser(name === 'advertiser');
  $('app').dataset.view = name; // the advertiser's charts take a wider side panel
  if (name === 'polls') showPolls();
  if (name === 'rewards') showRewards();
  if (name === 'directory') showDirectory();
  map.invalidateSize();
}

/** Every view's texts again (signed in, or the language changed). */
function renderAll() {
  renderMap();
  renderHistoryTexts();
  renderSharing();
  renderShareLinks();
  if (view === 'places') showPlaces(true); // the venues' names come in the page's language
  if (view === 'polls') showPolls();
  if (view === 'rewards') showRewards();
  if (view === 'directory') showDirectory();
  renderAlerts();
  renderZones();
  renderAdvertiser();
}

function showError(error) {
  const element = $('app-error');
  element.textContent = error instanceof ApiError && error.code === 'network' ? t('error.network') : error.message;
  element.hidden = false;
  setTimeout(() => { element.hidden = true; }, 8000);
  if (error instanceof ApiError && error.status === 401) signOut();
}

start().catch(showStartFailure);
