// The sharing page: pausing and resuming, sharing until a time (for all, or per group), the groups with their members
// and what each sees, finding people to add, and who sees each profile field.
// API: /v1/sharing…, /v1/groups…, /v1/users/search, /v1/me/profile (docs/api/openapi.yaml).
import { request } from './api.js';
import { $, button, element } from './dom.js';
import { currentLanguage, plural, t } from './i18n.js';
import { groupsChanged, personName, refreshVisible } from './map.js';
import { groupName, session } from './session.js';

const PROFILE_FIELDS = ['fullName', 'avatar', 'phone', 'birthday', 'gender', 'status'];
const AUDIENCES = ['everyone', 'groups', 'nobody'];
const PRECISIONS = ['exact', 'approximate', 'town', 'hidden'];

let report = () => {};
let shown = false;
let names = new Map(); // userId → a member's name as far as the viewer may see it (null: none), fetched once

/** Wires the page's controls; `onError` shows a failed request. */
export function setUpSharing(onError) {
  report = onError;
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
}

/** Shows the page (the sharing state and groups asked again) or notes that it is hidden. */
export function showSharing(visible) {
  shown = visible;
  if (visible) refresh();
}

/** Forgets the names fetched (sign-out). */
export function resetSharing() {
  shown = false;
  names = new Map();
}

async function refresh() {
  try {
    const [me, groups] = await Promise.all([request('GET', '/v1/me'), request('GET', '/v1/groups')]);
    session.me = me;
    session.groups = groups.groups;
    renderSharing();
  } catch (error) { report(error); }
}

async function changeSharing(path, body) {
  try {
    session.me.sharing = await request('POST', path, body);
    renderSharing();
  } catch (error) { report(error); }
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
    report(error);
    return;
  }
  const users = answer.users.filter((user) => user.userId !== session.me.account.id);
  $('found-count').textContent = plural('sharing.found', users.length);
  $('found').replaceChildren(...users.map((user) => {
    const select = element('select');
    select.setAttribute('aria-label', t('sharing.addTo'));
    select.replaceChildren(...session.groups.map((group) => element('option', { value: group.id }, groupName(group))));
    const add = button(t('sharing.addMember'), () => changeMember('PUT', select.value, user.userId), {
      className: 'add-member',
    });
    return element('li', { className: 'inline', data: { userId: user.userId } },
      element('span', {}, `${user.fullName || user.phone || `${user.userId.slice(0, 8)}…`} `), select, add);
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
  } catch (error) { report(error); }
}

/** Writes the page: the sharing state, the groups and the profile fields' audiences. */
export function renderSharing() {
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
    const members = element('ul', { className: 'members' }, ...group.members.map((userId) => element('li', {
      data: { userId },
    }, element('span', { className: 'member-name' }, memberName(userId)), ' ',
    button(t('sharing.removeMember'), () => changeMember('DELETE', group.id, userId), {
      className: 'link remove-member',
    }))));
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
  } catch (error) { report(error); }
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
    // How precisely: exactly, about 1 km, the town, or not at all (the most precise of a person's groups wins).
    const precision = element('select', { className: 'group-precision', disabled: !visibility.location },
      ...PRECISIONS.map((value) => element('option', {
        value, selected: (visibility.precision || 'exact') === value,
      }, t(`precision.${value}`))));
    precision.addEventListener('change', () => {
      changeGroup(group.id, { visibility: { ...visibility, precision: precision.value } });
    });
    head.append(' ', element('label', { className: 'muted' }, `${t('groups.precision')} `, precision));
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
    groupsChanged();
  } catch (error) { report(error); }
}

/** Renames a custom group or changes what a group's members see (PATCH /v1/groups/{id}). */
async function changeGroup(id, update) {
  try {
    const group = await request('PATCH', `/v1/groups/${encodeURIComponent(id)}`, update);
    session.groups = session.groups.map((candidate) => (candidate.id === group.id ? group : candidate));
  } catch (error) { report(error); }
  renderSharing();
  groupsChanged();
}

async function deleteGroup(id) {
  try {
    await request('DELETE', `/v1/groups/${encodeURIComponent(id)}`);
    session.groups = session.groups.filter((group) => group.id !== id);
    renderSharing();
    groupsChanged();
  } catch (error) { report(error); }
}

/** A member's name as far as the viewer may see it (their profile, fetched once), else the start of their id. */
function memberName(userId) {
  if (names.has(userId)) return names.get(userId) || `${userId.slice(0, 8)}…`;
  const known = personName(userId);
  if (known) return known;
  const asked = names;
  asked.set(userId, null);
  request('GET', `/v1/users/${encodeURIComponent(userId)}/profile`).then((profile) => {
    asked.set(userId, profile.fullName || null);
    if (asked === names && shown) renderSharing();
  }).catch(() => { /* hidden or gone: the id stays */ });
  return `${userId.slice(0, 8)}…`;
}

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
  } catch (error) { report(error); }
  renderVisibility();
}
