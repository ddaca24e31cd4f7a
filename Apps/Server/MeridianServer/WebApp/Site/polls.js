// The polls page: the feed (newest or most voted first, paged), one poll with its two option images and results,
// voting (and changing the vote until the poll closes) and comments. API: /v1/polls… (docs/api/openapi.yaml).
import { ApiError, request, upload } from './api.js';
import { $, button, element, mutedRow } from './dom.js';
import { currentLanguage, plural, t } from './i18n.js';
import { Pager } from './pager.js';

const ORDERS = ['newest', 'most_voted'];

let report = () => {};
let order = 'newest';
let feed = null; // the feed's Pager
let open = null; // {summary, comments}
let generation = 0;

/** Wires the page's controls; `onError` shows a failed request. */
export function setUpPolls(onError) {
  report = onError;
  feed = new Pager({ button: $('polls-more'), onMore: renderFeed, onError: (error) => report(error) });
  $('poll-back').addEventListener('click', closePoll);
  $('comment-form').addEventListener('submit', (event) => { event.preventDefault(); postComment(); });
  $('poll-new').addEventListener('click', () => { $('poll-form').hidden = !$('poll-form').hidden; });
  $('poll-form').addEventListener('submit', (event) => { event.preventDefault(); postPoll(); });
}

/** Shows the feed again from its first page (the page was opened or the language changed). */
export function showPolls() {
  renderOrders();
  if (open) renderPoll(); else loadFeed();
}

/** Forgets everything (sign-out). */
export function resetPolls() {
  generation += 1;
  feed.reset();
  open = null;
  $('polls').replaceChildren();
  $('poll').hidden = true;
  $('poll-feed').hidden = false;
}

function renderOrders() {
  const strip = $('poll-orders');
  if (!strip.children.length) {
    strip.replaceChildren(...ORDERS.map((name) => button('', () => {
      order = name;
      closePoll();
    }, { data: { order: name } })));
  }
  for (const node of strip.children) {
    node.textContent = t(`polls.${node.dataset.order}`);
    node.classList.toggle('active', node.dataset.order === order);
  }
}

/** The feed's first page in the order chosen (the More button adds the next ones). */
async function loadFeed() {
  const current = ++generation;
  try {
    if (!(await feed.open(`/v1/polls?order=${order}&limit=10`))) return;
  } catch (error) {
    report(error);
    return;
  }
  if (current !== generation) return;
  renderFeed();
}

function authorName(author) {
  return (author && author.fullName) || t('polls.someone');
}

function renderFeed() {
  renderOrders();
  const list = $('polls');
  list.dataset.order = order;
  list.replaceChildren(...(feed.items.length ? feed.items.map((summary) => element('li', {
    className: 'poll-row', data: { pollId: summary.poll.id },
  }, button(summary.poll.title, () => openPoll(summary.poll.id), { className: 'link' }), element('div', {
    className: 'muted',
  }, `${authorName(summary.author)} · ${plural('polls.votes', summary.results.total)} · `
    + plural('polls.comments', summary.comments)))) : [mutedRow(t('polls.none'))]));
}

async function openPoll(id) {
  const current = ++generation;
  let summary;
  let comments;
  try {
    [summary, comments] = await Promise.all([
      request('GET', `/v1/polls/${encodeURIComponent(id)}`),
      request('GET', `/v1/polls/${encodeURIComponent(id)}/comments?limit=100`),
    ]);
  } catch (error) {
    report(error);
    return;
  }
  if (current !== generation) return;
  open = { summary, comments: comments.items };
  renderPoll();
}

function closePoll() {
  open = null;
  $('poll').hidden = true;
  $('poll-feed').hidden = false;
  loadFeed();
}

function isClosed(summary) {
  return summary.closesAt !== undefined && summary.closesAt <= Date.now();
}

function renderPoll() {
  const { summary, comments } = open;
  const { poll, results } = summary;
  $('poll-feed').hidden = true;
  const article = $('poll');
  article.hidden = false;
  article.dataset.pollId = poll.id;
  article.dataset.myChoice = summary.myChoice === undefined ? '' : String(summary.myChoice);
  $('poll-title').textContent = poll.title;
  $('poll-author').textContent = authorName(summary.author);
  $('poll-description').textContent = poll.description || '';
  const percent = new Intl.NumberFormat(currentLanguage(), { style: 'percent' });
  const closed = isClosed(summary);
  $('poll-options').replaceChildren(...poll.options.map((option, choice) => {
    const share = results.percentages[choice] ?? 0;
    const chosen = summary.myChoice === choice;
    const image = option.imageUrl ? element('img', { src: option.imageUrl, alt: option.text, className: 'poll-image' })
      : null;
    const bar = element('div', { className: 'bar' });
    bar.style.width = `${share}%`;
    const voteButton = button(t(chosen ? 'polls.yourVote' : 'polls.vote'), () => vote(choice), {
      className: 'vote', disabled: chosen || closed,
    });
    const className = chosen ? 'poll-option chosen' : 'poll-option';
    return element('div', { className, data: { choice: String(choice) } },
      image, element('div', { className: 'caption' }, option.text),
      element('div', { className: 'meter' }, bar),
      element('div', { className: 'result' }, element('strong', { className: 'percent' }, percent.format(share / 100)),
        ` · ${plural('polls.votes', results.counts[choice] ?? 0)}`),
      voteButton);
  }));
  $('poll-total').textContent = closed ? `${plural('polls.votes', results.total)} · ${t('polls.closed')}`
    : plural('polls.votes', results.total);
  $('poll-comments-title').textContent = plural('polls.comments', comments.length);
  $('poll-comments').replaceChildren(...comments.map((entry) => element('li', {
    className: 'comment', data: { commentId: entry.comment.id },
  }, element('strong', {}, authorName(entry.author)), ' ',
  element('span', { className: 'text' }, entry.comment.text))));
  $('comment-form').hidden = closed;
}

/** Uploads the two images (POST /v1/blobs), posts the poll and opens it; a refusal is shown under the form. */
async function postPoll() {
  const error = $('poll-form-error');
  error.hidden = true;
  const files = [$('poll-image-0').files[0], $('poll-image-1').files[0]];
  if (files.some((file) => !file)) return;
  try {
    const images = await Promise.all(files.map((file) => upload('/v1/blobs', file)));
    const description = $('poll-description-field').value.trim();
    const summary = await request('POST', '/v1/polls', {
      title: $('poll-title-field').value.trim(),
      ...(description ? { description } : {}),
      options: [0, 1].map((index) => ({ text: $(`poll-option-${index}`).value.trim(), imageUrl: images[index].url })),
    });
    $('poll-form').reset();
    $('poll-form').hidden = true;
    openPoll(summary.poll.id);
  } catch (failure) {
    if (!(failure instanceof ApiError) || failure.code === 'network' || failure.status === 401) {
      report(failure);
      return;
    }
    error.textContent = t('polls.refused', failure.message);
    error.hidden = false;
  }
}

async function vote(choice) {
  const summary = open && open.summary;
  if (!summary) return;
  try {
    const receipt = await request('POST', `/v1/polls/${encodeURIComponent(summary.poll.id)}/vote`, { choice });
    if (!open || open.summary !== summary) return;
    summary.results = receipt.results;
    summary.myChoice = receipt.myChoice;
    renderPoll();
  } catch (error) { report(error); }
}

async function postComment() {
  const summary = open && open.summary;
  const field = $('comment-text');
  const text = field.value.trim();
  if (!summary || !text) return;
  try {
    const comment = await request('POST', `/v1/polls/${encodeURIComponent(summary.poll.id)}/comments`, { text });
    if (!open || open.summary !== summary) return;
    field.value = '';
    open.comments.push(comment);
    renderPoll();
  } catch (error) { report(error); }
}
