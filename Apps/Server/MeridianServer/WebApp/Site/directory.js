// The directory page: top-level places, a place with its breadcrumbs, children, rating and reviews, search by
// keywords, favourites, the viewer's own review, and news (all of it on the top level, a place's subtree's on its page,
// the favourites' on theirs). API: /v1/places…, /v1/me/favourites, /v1/news (docs/api/openapi.yaml).
import { request } from './api.js';
import { $, button, element, mutedRow } from './dom.js';
import { currentLanguage, plural, t } from './i18n.js';
import { Pager } from './pager.js';

let report = () => {};
let shown = { mode: 'top' }; // {mode: 'top' | 'search' | 'favourites' | 'place', query?, id?}
let list = null; // the Pager of the places shown
let news = null; // the Pager of their news
let state = null; // what else the mode loaded: {detail?, reviews} (null until it is loaded)
let favourites = null; // Set of place ids, loaded once per sign-in
let generation = 0;

/** Wires the page's controls; `onError` shows a failed request. */
export function setUpDirectory(onError) {
  report = onError;
  $('directory-search').addEventListener('submit', (event) => {
    event.preventDefault();
    const query = $('directory-query').value.trim();
    go(query ? { mode: 'search', query } : { mode: 'top' });
  });
  $('directory-favourites').addEventListener('click', () => go({ mode: 'favourites' }));
  list = new Pager({
    button: $('directory-more'), onMore: () => { if (state) render(); }, onError: (error) => report(error),
  });
  news = new Pager({ button: $('news-more'), onMore: renderNews, onError: (error) => report(error) });
  $('favourite').addEventListener('click', toggleFavourite);
  $('review-form').addEventListener('submit', (event) => { event.preventDefault(); saveReview(); });
}

/** Shows what was shown last (the page was opened or the language changed). */
export function showDirectory() {
  if (state) render(); else load();
}

/** Forgets everything (sign-out). */
export function resetDirectory() {
  generation += 1;
  shown = { mode: 'top' };
  state = null;
  list.reset();
  news.reset();
  favourites = null;
  $('directory').replaceChildren();
  $('news').replaceChildren();
  $('news-part').hidden = true;
}

/** Opens the directory's place `id` (e.g. from the places page's map). */
export function openPlace(id) {
  go({ mode: 'place', id });
}

function go(next) {
  shown = next;
  state = null;
  load();
}

/** A localized text (`{en: …, ru: …}`) in the page's language, else English, else any. */
export function localized(text) {
  if (!text) return '';
  return text[currentLanguage()] ?? text.en ?? Object.values(text)[0] ?? '';
}

function listPath() {
  switch (shown.mode) {
    case 'search': return `/v1/places?q=${encodeURIComponent(shown.query)}`;
    case 'favourites': return '/v1/me/favourites?limit=20';
    case 'place': return `/v1/places/${encodeURIComponent(shown.id)}/children?limit=20`;
    default: return '/v1/places?parent=none&limit=20';
  }
}

/** The news of what is shown: a place's subtree, the favourites' subtrees, or all (none beside search results). */
function newsPath() {
  switch (shown.mode) {
    case 'place': return `/v1/news?place=${encodeURIComponent(shown.id)}&limit=5`;
    case 'favourites': return '/v1/news?scope=favourites&limit=5';
    case 'top': return '/v1/news?limit=5';
    default: return null;
  }
}

/** The first pages of what is shown (the More buttons add the next ones), the place, its reviews, the favourites. */
async function load() {
  const current = ++generation;
  const id = shown.mode === 'place' ? encodeURIComponent(shown.id) : null;
  try {
    const [listed, detail, reviews, saved, newsListed] = await Promise.all([
      list.open(listPath()),
      id ? request('GET', `/v1/places/${id}`) : null,
      id ? request('GET', `/v1/places/${id}/reviews?limit=50`) : null,
      favourites ? null : request('GET', '/v1/me/favourites?limit=100'),
      news.open(newsPath()),
    ]);
    if (current !== generation || !listed || !newsListed) return;
    if (saved) favourites = new Set(saved.items.map((item) => item.place.id));
    state = { detail, reviews: reviews ? reviews.items : [] };
    render();
  } catch (error) { report(error); }
}

/** "★ 4.5 · 2 reviews", or "No reviews yet". */
function ratingText(rating) {
  if (!rating || !rating.count) return t('directory.noReviews');
  const average = new Intl.NumberFormat(currentLanguage(), { maximumFractionDigits: 1, minimumFractionDigits: 1 })
    .format(rating.average);
  return `★ ${average} · ${plural('directory.reviews', rating.count)}`;
}

function render() {
  const page = $('view-directory');
  page.dataset.mode = shown.mode;
  page.dataset.placeId = shown.mode === 'place' ? shown.id : '';
  renderCrumbs();
  renderPlace();
  renderNews();
  const headings = { top: 'directory.top', search: 'directory.found', favourites: 'directory.favourites' };
  $('places-heading').textContent = shown.mode === 'place' ? (list.items.length ? t('directory.inside') : '')
    : t(headings[shown.mode]);
  const rows = list.items.map((item) => element('li', {
    className: 'directory-place', data: { placeId: item.place.id },
  }, button(localized(item.place.name), () => go({ mode: 'place', id: item.place.id }), { className: 'link' }),
  element('div', { className: 'muted rating' }, ratingText(item.rating))));
  if (!rows.length && shown.mode !== 'place') rows.push(mutedRow(t('directory.none')));
  $('directory').replaceChildren(...rows);
}

/** Directory › University › Faculty › (this place): every level but the last can be opened. */
function renderCrumbs() {
  const crumbs = $('crumbs');
  if (shown.mode !== 'place' || !state.detail) {
    crumbs.replaceChildren();
    return;
  }
  const trail = [button(t('nav.directory'), () => go({ mode: 'top' }), { className: 'link', data: { placeId: '' } })];
  for (const ancestor of state.detail.ancestors || []) {
    trail.push(' › ', button(localized(ancestor.title), () => go({ mode: 'place', id: ancestor.id }), {
      className: 'link', data: { placeId: ancestor.id },
    }));
  }
  trail.push(' › ', element('span', { className: 'current' }, localized(state.detail.item.place.name)));
  crumbs.replaceChildren(...trail);
}

function renderPlace() {
  const article = $('place');
  const detail = shown.mode === 'place' && state.detail;
  article.hidden = !detail;
  $('reviews-part').hidden = !detail;
  if (!detail) return;
  const { place } = detail.item;
  $('place-title').textContent = localized(place.name);
  const favourite = favourites && favourites.has(place.id);
  const star = $('favourite');
  star.dataset.favourite = String(!!favourite);
  star.textContent = t(favourite ? 'directory.unfavourite' : 'directory.favourite');
  $('place-rating').textContent = ratingText(detail.item.rating);
  $('place-description').textContent = localized(place.description);
  $('place-contacts').replaceChildren(...[place.address, place.phone, place.email].filter(Boolean)
    .map((text) => element('div', {}, text)), ...(place.site && /^https?:\/\//.test(place.site)
    ? [element('a', { href: place.site, rel: 'noopener noreferrer', target: '_blank' }, place.site)] : []));
  const date = new Intl.DateTimeFormat(currentLanguage(), { dateStyle: 'medium' });
  $('reviews-title').textContent = plural('directory.reviews', (state.reviews || []).length);
  $('reviews').replaceChildren(...(state.reviews || []).map((review) => element('li', {
    className: 'review', data: { reviewId: review.id },
  }, element('span', { className: 'grade', title: String(review.grade) }, '★'.repeat(review.grade) +
    '☆'.repeat(5 - review.grade)), ' ',
  element('span', { className: 'muted' }, date.format(new Date(review.createdAt))),
  review.text ? element('div', { className: 'text' }, review.text) : null)));
}

/** The news items loaded, newest first: title, date and body as text. */
function renderNews() {
  $('news-part').hidden = !news.items.length;
  const date = new Intl.DateTimeFormat(currentLanguage(), { dateStyle: 'medium' });
  $('news-title').textContent = t('directory.news');
  $('news').replaceChildren(...news.items.map((item) => element('li', {
    className: 'news', data: { newsId: item.id },
  }, element('strong', { className: 'title' }, localized(item.title)), ' ',
  element('span', { className: 'muted' }, date.format(new Date(item.publishedAt))),
  localized(item.body) ? element('div', { className: 'text' }, localized(item.body)) : null)));
}

async function toggleFavourite() {
  if (shown.mode !== 'place' || !favourites) return;
  const id = shown.id;
  const keep = !favourites.has(id);
  try {
    await request(keep ? 'PUT' : 'DELETE', `/v1/me/favourites/${encodeURIComponent(id)}`);
    if (keep) favourites.add(id); else favourites.delete(id);
    if (shown.mode === 'place' && shown.id === id) renderPlace();
  } catch (error) { report(error); }
}

async function saveReview() {
  if (shown.mode !== 'place') return;
  const id = shown.id;
  const text = $('review-text').value.trim();
  const body = { grade: Number($('review-grade').value), ...(text ? { text } : {}) };
  try {
    await request('PUT', `/v1/places/${encodeURIComponent(id)}/reviews/me`, body);
    $('review-text').value = '';
    if (shown.mode === 'place' && shown.id === id) go({ mode: 'place', id });
  } catch (error) { report(error); }
}
