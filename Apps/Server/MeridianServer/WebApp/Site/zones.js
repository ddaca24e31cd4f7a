// The privacy zones on the sharing page: circles where others never see the viewer — shown to them as "in a private
// zone" or not at all, and stored or not — each drawn on the map around the point clicked, listed and deleted.
// API: /v1/me/privacy-zones (docs/api/openapi.yaml).
import * as L from '/vendor/leaflet/leaflet.esm.js';
import { request } from './api.js';
import { $, button, element, mutedRow, textElement } from './dom.js';
import { currentLanguage, t } from './i18n.js';

const ZONE_STYLE = { color: '#2b8a3e', weight: 2, fillOpacity: 0.12 };
const DRAFT_STYLE = { color: '#e0572b', weight: 2, fillOpacity: 0.1, dashArray: '6 4' };
const DISPLAYS = ['privateZone', 'hidden'];

let map = null;
let report = () => {};
let shown = false;
let zones = []; // GET /v1/me/privacy-zones's items
let layer = null; // the zones on the map
let centre = null; // the point clicked for the next zone
let draft = null; // its circle
let generation = 0;

/** Wires the zones to `theMap`; `onError` shows a failed request. */
export function setUpZones(theMap, onError) {
  map = theMap;
  report = onError;
  layer = L.layerGroup();
  map.on('click', (event) => {
    if (!shown) return;
    centre = event.latlng;
    renderDraft();
  });
  $('zone-radius').addEventListener('input', renderDraft);
  $('zone-form').addEventListener('submit', (event) => {
    event.preventDefault();
    createZone();
  });
  fillDisplays();
}

/** Shows the zones (drawn, loaded again) with the sharing page, or hides their drawings. */
export function showZones(visible) {
  shown = visible;
  if (!layer) return;
  if (!visible) {
    layer.remove();
    if (draft) draft.remove();
    return;
  }
  layer.addTo(map);
  if (draft) draft.addTo(map);
  load();
}

/** Forgets everything (sign-out). */
export function resetZones() {
  generation += 1;
  shown = false;
  zones = [];
  centre = null;
  if (draft) draft.remove();
  draft = null;
  if (layer) layer.clearLayers();
  $('zone-list').replaceChildren();
  $('zone-error').hidden = true;
}

/** Writes the texts again (the language changed). */
export function renderZones() {
  fillDisplays();
  if (!shown) return;
  renderList();
  renderDraft();
}

function fillDisplays() {
  const select = $('zone-display');
  const chosen = select.value || 'privateZone';
  select.replaceChildren(...DISPLAYS.map((display) => element('option', {
    value: display, selected: display === chosen,
  }, t(`zones.display.${display}`))));
}

async function load() {
  const current = ++generation;
  try {
    const list = await request('GET', '/v1/me/privacy-zones');
    if (current !== generation) return;
    zones = list.items || [];
    renderList();
  } catch (error) { report(error); }
}

/** "200 m · shown as in a private zone · not stored" */
function describe(zone) {
  const radius = t('zones.radiusValue', new Intl.NumberFormat(currentLanguage()).format(Math.round(zone.radius)));
  const parts = [radius, t(`zones.shown.${zone.display}`)];
  if (!zone.store) parts.push(t('zones.notStored'));
  return parts.join(' · ');
}

function renderList() {
  layer.clearLayers();
  for (const zone of zones) {
    L.circle([zone.latitude, zone.longitude], { radius: zone.radius, ...ZONE_STYLE })
      .bindTooltip(textElement(zone.name)).addTo(layer);
  }
  $('zone-list').replaceChildren(...(zones.length ? zones.map((zone) => element('li', {
    className: 'zone', data: { zoneId: zone.id, display: zone.display, store: String(zone.store) },
  }, element('strong', { className: 'name' }, zone.name), ' ',
  element('span', { className: 'muted' }, describe(zone)), ' ',
  button(t('zones.delete'), () => deleteZone(zone), { className: 'link delete' })))
    : [mutedRow(t('zones.none'))]));
}

/** The circle of the zone being drawn: around the point clicked, of the radius typed. */
function renderDraft() {
  if (draft) draft.remove();
  draft = null;
  $('zone-centre').textContent = t(centre ? 'zones.centreChosen' : 'zones.clickMap');
  const radius = Number($('zone-radius').value);
  if (!centre || !(radius > 0)) return;
  draft = L.circle(centre, { radius, ...DRAFT_STYLE });
  if (shown) draft.addTo(map);
}

async function createZone() {
  const error = $('zone-error');
  error.hidden = true;
  if (!centre) {
    error.textContent = t('zones.clickMap');
    error.hidden = false;
    return;
  }
  try {
    const zone = await request('POST', '/v1/me/privacy-zones', {
      name: $('zone-name').value.trim(), latitude: centre.lat, longitude: centre.lng,
      radius: Number($('zone-radius').value), display: $('zone-display').value, store: !$('zone-no-store').checked,
    });
    zones = [...zones, zone];
    centre = null;
    $('zone-name').value = '';
    $('zone-no-store').checked = false;
    renderList();
    renderDraft();
  } catch (failure) {
    error.textContent = failure.message;
    error.hidden = false;
  }
}

async function deleteZone(zone) {
  try {
    await request('DELETE', `/v1/me/privacy-zones/${encodeURIComponent(zone.id)}`);
    zones = zones.filter((candidate) => candidate.id !== zone.id);
    renderList();
  } catch (error) { report(error); }
}
