// The places page: the venues (with their running promotions) and the directory's other places around the map's
// centre, within the visible area's radius, loaded again when the centre moves 100 m or more (the promotions
// line's rule). API: /v1/venues…, /v1/places?lat=&lon=&radius= (docs/api/openapi.yaml).
import * as L from '/vendor/leaflet/leaflet.esm.js';
import { download, request } from './api.js';
import { $, button, element, mutedRow, textElement } from './dom.js';
import { currentLanguage, t } from './i18n.js';
import { localized } from './directory.js';

const RELOAD_AFTER_METRES = 100;
const MAX_RADIUS_METRES = 50000;

let map = null;
let report = () => {};
let openPlace = () => {};
let shown = false;
let loaded = null; // {centre, venues, places} of the last load
let layer = null;
let requests = 0; // loads started (the page's data-requests) …
let loads = 0; // … and finished (data-loads)

/** Wires the page to `theMap`; `onError` shows a failed request, `onOpenPlace(id)` opens a directory place. */
export function setUpPlaces(theMap, onError, onOpenPlace) {
  map = theMap;
  report = onError;
  openPlace = onOpenPlace;
  map.on('moveend', () => {
    if (!shown) return;
    const centre = map.getCenter();
    $('view-places').dataset.mapCentre = `${centre.lat.toFixed(6)},${centre.lng.toFixed(6)}`;
    load(false);
  });
}

/** Shows the page (loaded again for the present centre) or hides its markers. */
export function showPlaces(visible) {
  shown = visible;
  if (!visible) {
    if (layer) layer.remove();
    return;
  }
  if (layer) layer.addTo(map);
  load(true);
}

/** Forgets everything (sign-out). */
export function resetPlaces() {
  shown = false;
  loaded = null;
  if (layer) layer.remove();
  layer = null;
  $('venues').replaceChildren();
  $('nearby').replaceChildren();
}

/** What is around the centre, unless it moved less than 100 m since the last load (`force`: load anyway). */
async function load(force) {
  const centre = map.getCenter();
  if (!force && loaded && map.distance(centre, loaded.centre) < RELOAD_AFTER_METRES) return;
  const pending = { centre, venues: [], places: [] };
  loaded = pending;
  requests += 1;
  $('view-places').dataset.requests = String(requests);
  const radius = Math.min(MAX_RADIUS_METRES, Math.max(100,
    Math.round(map.distance(centre, map.getBounds().getNorthEast()))));
  const around = `lat=${centre.lat.toFixed(6)}&lon=${centre.lng.toFixed(6)}&radius=${radius}`;
  let venues;
  let places;
  try {
    [venues, places] = await Promise.all([
      request('GET', `/v1/venues?${around}&pageSize=50&lang=${currentLanguage()}`),
      request('GET', `/v1/places?${around}&sort=distance&limit=100`),
    ]);
  } catch (error) { report(error); return; }
  if (loaded !== pending) return;
  pending.venues = venues.items || [];
  pending.places = (places.items || []).filter((item) => item.place.kind !== 'venue' && item.place.location);
  loads += 1;
  const page = $('view-places');
  page.dataset.loads = String(loads);
  page.dataset.centre = `${centre.lat.toFixed(6)},${centre.lng.toFixed(6)}`;
  render();
}

/** Markers and lists of what was loaded. */
function render() {
  if (!loaded) return;
  if (layer) layer.remove();
  layer = L.layerGroup();
  for (const venue of loaded.venues) {
    L.circleMarker([venue.location.lat, venue.location.lon], { className: 'venue-marker', radius: 7, color: '#2e9d5b' })
      .bindTooltip(textElement(venue.name)).on('click', () => openVenue(venue.id)).addTo(layer);
  }
  for (const item of loaded.places) {
    const { place } = item;
    L.circleMarker([place.location.lat, place.location.lon], { className: 'place-marker', radius: 7, color: '#8a4fd8' })
      .bindTooltip(textElement(localized(place.name))).on('click', () => openPlace(place.id)).addTo(layer);
  }
  if (shown) layer.addTo(map);
  const venueRows = loaded.venues.map((venue) => element('li', { data: { venueId: venue.id } },
    button(venue.name, () => openVenue(venue.id), { className: 'link' }),
    element('span', { className: 'muted' }, ` · ${t('places.metres', Math.round(venue.distance ?? 0))}`),
    element('ul', { className: 'promotions' })));
  $('venues').replaceChildren(...(venueRows.length ? venueRows : [mutedRow(t('places.none'))]));
  const placeRows = loaded.places.map((item) => element('li', { data: { placeId: item.place.id } },
    button(localized(item.place.name), () => openPlace(item.place.id), { className: 'link' }),
    element('span', { className: 'muted' }, ` · ${t('places.metres', Math.round(item.distance ?? 0))}`)));
  $('nearby').replaceChildren(...(placeRows.length ? placeRows : [mutedRow(t('places.noPlaces'))]));
}

/** A venue's running promotions, under its row. */
async function openVenue(id) {
  const row = document.querySelector(`#venues li[data-venue-id="${CSS.escape(id)}"]`);
  if (!row) return;
  let answer;
  try { answer = await request('GET', `/v1/venues/${encodeURIComponent(id)}/promotions`); } catch (error) {
    report(error);
    return;
  }
  const items = answer.promotions.map((promotion) => {
    const price = promotion.newPrice ? ` — ${money(promotion.newPrice)}` : '';
    const old = promotion.oldPrice ? ` (${money(promotion.oldPrice)})` : '';
    const qr = element('img', { className: 'qr', alt: t('places.qr', promotion.promoCode), hidden: true });
    showQR(qr, promotion.id);
    return element('li', { className: 'promotion', data: { promotionId: promotion.id } },
      `${promotion.name}${price}${old} · ${t('places.code', promotion.promoCode)}`, qr);
  });
  row.querySelector('.promotions').replaceChildren(...(items.length ? items : [mutedRow(t('places.noPromotions'))]));
}

/** The promotion's code as a QR image (fetched with the token, shown from a blob URL the page policy allows). */
export async function showQR(image, id) {
  let blob;
  try { blob = await download(`/v1/promotions/${encodeURIComponent(id)}/qr?format=png&scale=4`); } catch {
    return; // no QR image: the code is written beside it
  }
  const url = URL.createObjectURL(blob);
  image.addEventListener('load', () => { image.hidden = false; URL.revokeObjectURL(url); }, { once: true });
  image.addEventListener('error', () => URL.revokeObjectURL(url), { once: true });
  image.src = url;
}

/** An amount of minor units in the page's language: "45,00 ₴". */
export function money(value) {
  try {
    return new Intl.NumberFormat(currentLanguage(), { style: 'currency', currency: value.currency })
      .format(value.amount / 100);
  } catch {
    return `${value.amount / 100} ${value.currency}`;
  }
}
