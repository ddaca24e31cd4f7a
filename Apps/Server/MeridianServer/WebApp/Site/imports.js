// The history page's imports: a file chosen is uploaded to POST /v1/history/imports (answered 202 with a job at
// once), and the account's last imports are listed with their progress (bytes and points read, stored, found stored
// already) or why they failed, each running one asked again every POLL_MS (GET /v1/history/imports/{id}) until it
// ends; polling stops at sign-out. When an import ends the history is shown again (`onImported`).
// API: /v1/history/imports (docs/api/openapi.yaml).
import { request, upload } from './api.js';
import { $, element, mutedRow } from './dom.js';
import { currentLanguage, plural, t } from './i18n.js';

const POLL_MS = 1000;
const UPLOAD_TIMEOUT_MS = 30 * 60 * 1000;
const RUNNING = new Set(['checking', 'storing']);
const STATES = {
  checking: 'imports.checking',
  storing: 'imports.storing',
  done: 'imports.done',
  failed: 'imports.failed',
  interrupted: 'imports.interrupted',
};

let report = () => {};
let imported = () => {};
let jobs = null; // the account's last jobs, newest first (null: not loaded)
let generation = 0; // bumped at sign-out: a request or poll of before is dropped
let timer = null;
let uploading = false;

/** Wires the file picker; `onError` shows a failed request, `onImported` is called when an import ends. */
export function setUpImports(onError, onImported) {
  report = onError;
  imported = onImported;
  $('import-file').addEventListener('change', () => {
    const input = $('import-file');
    const file = input.files && input.files[0];
    if (file) start(file).finally(() => { input.value = ''; });
  });
}

/** Lists the imports when the page is shown. */
export function showImports(visible) {
  if (visible) list();
}

/** Forgets the imports and stops polling (sign-out). */
export function resetImports() {
  generation += 1;
  clearTimeout(timer);
  timer = null;
  jobs = null;
  uploading = false;
  render();
}

async function list() {
  const mine = generation;
  let answer;
  try {
    answer = await request('GET', '/v1/history/imports');
  } catch (error) { report(error); return; }
  if (mine !== generation) return;
  jobs = answer.items;
  render();
  schedule();
}

/** Uploads `file`; its job is listed first and followed. */
async function start(file) {
  const mine = generation;
  uploading = true;
  render();
  try {
    const job = await upload('/v1/history/imports', file, { timeoutMs: UPLOAD_TIMEOUT_MS });
    if (mine !== generation) return;
    jobs = [job, ...(jobs || []).filter((other) => other.id !== job.id)];
  } catch (error) {
    if (mine === generation) report(error);
  } finally {
    if (mine === generation) uploading = false;
  }
  if (mine !== generation) return;
  render();
  schedule();
}

/** Asks for every running job again in POLL_MS, while one runs. */
function schedule() {
  clearTimeout(timer);
  timer = null;
  if (!jobs || !jobs.some((job) => RUNNING.has(job.state))) return;
  const mine = generation;
  timer = setTimeout(() => poll(mine), POLL_MS);
}

async function poll(mine) {
  let ended = false;
  for (const job of jobs.filter((candidate) => RUNNING.has(candidate.state))) {
    let now;
    try {
      now = await request('GET', `/v1/history/imports/${encodeURIComponent(job.id)}`);
    } catch (error) {
      if (mine === generation) report(error);
      return; // asked again when the page is shown again
    }
    if (mine !== generation) return;
    jobs = jobs.map((other) => (other.id === now.id ? now : other));
    if (!RUNNING.has(now.state)) ended = true;
  }
  render();
  schedule();
  if (ended) imported();
}

/** Writes the list again (its texts in the page's language). */
export function renderImports() { render(); }

function render() {
  $('import-file').disabled = uploading;
  $('import-uploading').hidden = !uploading;
  if (!jobs) {
    $('import-jobs').replaceChildren();
    return;
  }
  $('import-jobs').replaceChildren(...(jobs.length === 0 ? [mutedRow(t('imports.none'))] : []),
    ...jobs.map((job) => element('li', { className: 'import-job', data: { id: job.id, state: job.state } },
      element('strong', {}, t(STATES[job.state])), ' ', when(job.createdAt),
      element('br'), progress(job),
      job.error ? element('div', { className: 'error import-error' }, job.error.message) : null)));
}

function when(timestamp) {
  return new Intl.DateTimeFormat(currentLanguage(), { dateStyle: 'short', timeStyle: 'short' })
    .format(new Date(timestamp));
}

/** "1.2 MB of 3.4 MB · 12,000 points read · 11,990 new points stored · 10 already stored". */
function progress(job) {
  const size = new Intl.NumberFormat(currentLanguage(), {
    style: 'unit', unit: 'megabyte', maximumFractionDigits: 1,
  });
  const parts = [];
  if (job.state !== 'done') parts.push(`${size.format(job.bytesRead / 1e6)} / ${size.format(job.bytes / 1e6)}`);
  else parts.push(size.format(job.bytes / 1e6));
  parts.push(plural('imports.read', job.read));
  if (job.state !== 'checking') {
    parts.push(plural('imports.stored', job.stored));
    if (job.duplicates > 0) parts.push(plural('imports.duplicates', job.duplicates));
    const withheld = job.summary && job.summary.withheld;
    if (withheld > 0) parts.push(plural('imports.withheld', withheld));
  }
  return element('span', { className: 'import-progress' }, parts.join(' · '));
}
