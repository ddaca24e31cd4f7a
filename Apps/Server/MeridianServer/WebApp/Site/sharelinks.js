// The share links of the sharing page: a link for someone without an account (the map at /s/<token>) made with a
// label, how long it lasts and whether it shows the track since it was made; its address shown once, to copy (the
// server keeps only the token's hash); the links listed with their state and end, each active one revocable and with
// the count of pages open on it now (read again every 15 s while the list is on screen).
// API: /v1/share-links (docs/api/openapi.yaml).
import { request } from './api.js';
import { $, button, element, mutedRow } from './dom.js';
import { currentLanguage, plural, t } from './i18n.js';

const HOUR = 3600000;
const DURATIONS = { hour: HOUR, hours8: 8 * HOUR, day: 24 * HOUR, week: 7 * 24 * HOUR }; // how long a link lasts
const DURATION_TEXTS = {
  hour: 'shareLinks.hour', hours8: 'shareLinks.hours8', day: 'shareLinks.day', week: 'shareLinks.week',
};
const STATES = { active: 'shareLinks.active', expired: 'shareLinks.expired', revoked: 'shareLinks.revoked' };

let report = () => {};
let links = []; // GET /v1/share-links
let created = null; // the address of the link just made: shown until the next one or sign-out
let refresh = null; // the timer that reads the links again while they are on screen
const REFRESH_EVERY = 15000;
// How precisely a link may show the position (a link that shows nothing is no link).
const LINK_PRECISIONS = ['exact', 'approximate', 'town'];

/** Wires the share-link form; `onError` shows a failed request. */
export function setUpShareLinks(onError) {
  report = onError;
  $('share-link-form').addEventListener('submit', (event) => {
    event.preventDefault();
    createLink();
  });
  $('share-link-copy').addEventListener('click', copyAddress);
}

/** Reads the links again and shows them. */
export async function showShareLinks() {
  clearTimeout(refresh);
  try {
    links = (await request('GET', '/v1/share-links')).items;
    renderShareLinks();
  } catch (error) { report(error); }
  // The count of open pages moves: read again while the list is shown (a hidden list stops the timer).
  refresh = setTimeout(() => { if ($('share-links').offsetParent !== null) showShareLinks(); }, REFRESH_EVERY);
}

/** Forgets the links and the address shown (sign-out). */
export function resetShareLinks() {
  clearTimeout(refresh);
  links = [];
  created = null;
}

async function createLink() {
  const label = $('share-link-label').value.trim();
  const until = Date.now() + DURATIONS[$('share-link-duration').value];
  const body = { until, track: $('share-link-track').checked, precision: $('share-link-precision').value || 'exact' };
  if (label) body.label = label;
  try {
    const answer = await request('POST', '/v1/share-links', body);
    created = new URL(answer.url, window.location.origin).href;
    $('share-link-label').value = '';
    await showShareLinks();
  } catch (error) { report(error); }
}

async function revoke(link) {
  try {
    await request('DELETE', `/v1/share-links/${encodeURIComponent(link.id)}`);
    await showShareLinks();
  } catch (error) { report(error); }
}

async function copyAddress() {
  if (!created) return;
  try {
    await navigator.clipboard.writeText(created);
    $('share-link-copied').hidden = false;
  } catch {
    $('share-link-address').select(); // no clipboard (a page not served over HTTPS): selected for the user to copy
  }
}

/** The form's choices, the address of the link just made and the list, in the page's language. */
export function renderShareLinks() {
  const duration = $('share-link-duration');
  const chosen = duration.value || 'day';
  duration.replaceChildren(...Object.keys(DURATIONS).map((key) => element('option', { value: key },
    t(DURATION_TEXTS[key]))));
  duration.value = chosen;
  const precision = $('share-link-precision');
  const precise = precision.value || 'exact';
  precision.replaceChildren(...LINK_PRECISIONS.map((value) => element('option', { value }, t(`precision.${value}`))));
  precision.value = precise;
  $('share-link-created').hidden = !created;
  $('share-link-address').value = created ?? '';
  $('share-link-copied').hidden = true;
  const format = new Intl.DateTimeFormat(currentLanguage(), { dateStyle: 'medium', timeStyle: 'short' });
  const list = $('share-links');
  if (!links.length) {
    list.replaceChildren(mutedRow(t('shareLinks.none')));
    return;
  }
  list.replaceChildren(...links.map((link) => {
    const end = link.state === 'revoked' && link.revokedAt ? link.revokedAt : link.until;
    const row = element('li', { className: 'share-link', data: { id: link.id, state: link.state } },
      element('span', { className: 'name' }, link.label || t('shareLinks.unlabelled')), ' ',
      element('span', { className: `badge state-${link.state}` }, t(STATES[link.state])), ' ',
      element('span', { className: 'muted' }, t('shareLinks.until', format.format(new Date(end)))),
      link.track ? element('span', { className: 'muted' }, ` · ${t('shareLinks.withTrack')}`) : null,
      link.precision && link.precision !== 'exact'
        ? element('span', { className: 'muted precision' }, ` · ${t(`precision.${link.precision}`)}`) : null,
      link.state === 'active' && link.viewers !== undefined
        ? element('span', { className: 'muted viewers' }, ` · ${plural('shareLinks.viewers', link.viewers)}`) : null);
    if (link.state === 'active') row.append(' ', button(t('shareLinks.revoke'), () => revoke(link)));
    return row;
  }));
}
