// The Belay dashboard: a task list with filters and live state, a task page with the live event timeline, the
// operator view, the side-effect ledger, results and artifacts, a question form and cancellation, and a new-task
// form. Hash routes: #/tasks, #/tasks/<id>, #/new. Data comes only from the REST API, with the user's key.

import { ApiError, followEvents, get, getKey, onUnauthorized, post, setKey, taskPath } from './api.js';
import { badge, clear, el, fill, jsonBlock, progressBar, relativeTime, time } from './dom.js';
import { schemaForm } from './schema-form.js';

const main = document.getElementById('main');
const who = document.getElementById('who');
const TERMINAL = new Set(['completed', 'failed', 'cancelled']);
const STATUSES = ['queued', 'working', 'input_required', 'completed', 'failed', 'cancelled'];

/** Cleanups of the current view (timers, streams), run when the route changes. */
let cleanups = [];
function onLeave(fn) {
  cleanups.push(fn);
}

let taskTypesCache = null;
async function taskTypes() {
  if (!taskTypesCache) taskTypesCache = get('/v1/task-types').then((r) => r.body.task_types);
  try {
    return await taskTypesCache;
  } catch (e) {
    taskTypesCache = null;
    throw e;
  }
}

function errorBox(e) {
  const msg = e instanceof ApiError ? `${e.message}${e.code && e.status ? ` (${e.status} ${e.code})` : ''}` : String(e && e.message ? e.message : e);
  return el('div', { class: 'error', role: 'alert' }, msg);
}

function issuesOf(e) {
  return e instanceof ApiError && Array.isArray(e.problem.issues) ? e.problem.issues : [];
}

// ---- key ---------------------------------------------------------------------------------------------------------

function takeKeyFromHash() {
  // `belay serve` prints /dashboard/#key=...: the fragment never reaches the server; keep it and clean the URL.
  const m = /(?:^#|&)key=([^&]+)/.exec(location.hash);
  if (m) {
    setKey(decodeURIComponent(m[1]));
    history.replaceState(null, '', `${location.pathname}#/tasks`);
  }
}

function renderWho() {
  clear(who);
  const key = getKey();
  if (!key) return;
  who.append(
    el('span', { class: 'muted', title: 'API key kept in this browser' }, `key …${key.slice(-4)}`),
    el('button', { class: 'link', type: 'button', onclick: () => (setKey(null), route()) }, 'Sign out'),
  );
}

function keyView(message) {
  const input = el('input', { id: 'api-key', name: 'api-key', type: 'password', autocomplete: 'off', required: true, placeholder: 'belay_dev_…' });
  const form = el(
    'form',
    {
      class: 'card narrow',
      onsubmit: (ev) => {
        ev.preventDefault();
        setKey(input.value.trim());
        taskTypesCache = null;
        route();
      },
    },
    el('h1', {}, 'Sign in'),
    el('p', { class: 'muted' }, 'Paste a Belay API key. It stays in this browser (localStorage) and is sent only to this server. `belay serve` prints a link with the development key.'),
    message ? el('div', { class: 'error' }, message) : null,
    el('div', { class: 'field' }, el('label', { for: 'api-key', class: 'field-label' }, 'API key'), input),
    el('button', { type: 'submit', class: 'primary' }, 'Continue'),
  );
  fill(main, form);
  input.focus();
}

onUnauthorized(() => {
  setKey(null);
  renderWho();
  for (const fn of cleanups.splice(0)) fn();
  keyView('The server refused that key (401). Enter another one.');
});

// ---- task list ---------------------------------------------------------------------------------------------------

function listView(params) {
  const status = params.get('status') || '';
  const type = params.get('type') || '';
  const statusSelect = el('select', { id: 'filter-status', name: 'status' }, el('option', { value: '' }, 'Any status'), STATUSES.map((s) => el('option', { value: s, selected: s === status }, s.replace('_', ' '))));
  const typeSelect = el('select', { id: 'filter-type', name: 'type' }, el('option', { value: '' }, 'Any type'));
  const liveBox = el('input', { type: 'checkbox', id: 'live', checked: true });
  const tbody = el('tbody');
  const state = el('div', { class: 'list-state muted' });
  const more = el('button', { type: 'button', class: 'secondary', hidden: true }, 'Load more');
  const applyFilters = () => {
    const q = new URLSearchParams();
    if (statusSelect.value) q.set('status', statusSelect.value);
    if (typeSelect.value) q.set('type', typeSelect.value);
    location.hash = `#/tasks${q.toString() ? `?${q}` : ''}`;
  };
  statusSelect.addEventListener('change', applyFilters);
  typeSelect.addEventListener('change', applyFilters);
  taskTypes()
    .then((types) => {
      for (const name of [...new Set(types.map((t) => t.name))]) typeSelect.append(el('option', { value: name, selected: name === type }, name));
    })
    .catch(() => {});

  fill(main, 
    el('div', { class: 'page-head' }, el('h1', {}, 'Tasks'), el('a', { class: 'button primary', href: '#/new' }, 'New task')),
    el(
      'div',
      { class: 'filters card' },
      el('label', { for: 'filter-status' }, 'Status'),
      statusSelect,
      el('label', { for: 'filter-type' }, 'Type'),
      typeSelect,
      el('span', { class: 'spacer' }),
      el('label', { class: 'check', for: 'live' }, liveBox, ' Live'),
      state,
    ),
    el(
      'div',
      { class: 'card flush' },
      el('table', { class: 'tasks' }, el('thead', {}, el('tr', {}, ['Task', 'Type', 'Status', 'Progress', 'Step', 'Created', 'Updated'].map((h) => el('th', {}, h)))), tbody),
    ),
    el('div', { class: 'center' }, more),
  );

  let pages = 1;
  let busy = false;
  async function load() {
    if (busy) return;
    busy = true;
    try {
      const q = new URLSearchParams({ limit: '25' });
      if (status) q.set('status', status);
      if (type) q.set('type', type);
      const tasks = [];
      let cursor = null;
      for (let i = 0; i < pages; i++) {
        if (cursor) q.set('cursor', cursor);
        const page = (await get(`/v1/agent-tasks?${q}`)).body;
        tasks.push(...page.tasks);
        cursor = page.next_cursor;
        if (!cursor) break;
      }
      more.hidden = !cursor;
      clear(tbody);
      if (tasks.length === 0) tbody.append(el('tr', {}, el('td', { colspan: 7, class: 'empty' }, status || type ? 'No tasks match these filters.' : 'No tasks yet. Start one with “New task”.')));
      for (const t of tasks) {
        const href = `#/tasks/${encodeURIComponent(t.id)}`;
        tbody.append(
          el(
            'tr',
            { 'data-id': t.id, 'data-status': t.status, class: 'clickable', onclick: (ev) => ev.target.closest('a') || (location.hash = href) },
            el('td', {}, el('a', { href, class: 'mono' }, t.id)),
            el('td', {}, t.type, el('span', { class: 'muted' }, ` v${t.type_version}`)),
            el('td', {}, badge(t.status), t.cancel_requested_at && !TERMINAL.has(t.status) ? el('span', { class: 'muted small' }, ' cancelling') : null),
            el('td', { class: 'progress-cell' }, progressBar(t.progress, { compact: true })),
            el('td', {}, t.step && t.step.name ? `${t.step.index + 1}/${t.step.total} ${t.step.name}` : ''),
            el('td', {}, time(t.created_at)),
            el('td', {}, time(t.updated_at)),
          ),
        );
      }
      state.textContent = `updated ${new Date().toLocaleTimeString()}`;
    } catch (e) {
      if (!(e instanceof ApiError && e.status === 401)) {
        fill(tbody, el('tr', {}, el('td', { colspan: 7 }, errorBox(e))));
      }
    } finally {
      busy = false;
    }
  }
  more.addEventListener('click', () => {
    pages++;
    void load();
  });
  void load();
  const timer = setInterval(() => {
    if (liveBox.checked && document.visibilityState === 'visible') void load();
  }, 2000);
  onLeave(() => clearInterval(timer));
}

// ---- new task ----------------------------------------------------------------------------------------------------

async function newTaskView(params) {
  fill(main, el('div', { class: 'page-head' }, el('h1', {}, 'New task')), el('p', { class: 'muted' }, 'Loading task types…'));
  let types;
  try {
    types = await taskTypes();
  } catch (e) {
    fill(main, el('h1', {}, 'New task'), errorBox(e));
    return;
  }
  const latest = types.filter((t) => t.latest);
  const chosen = latest.find((t) => t.name === params.get('type')) || latest[0];
  const typeSelect = el('select', { id: 'task-type', name: 'type' }, latest.map((t) => el('option', { value: t.name, selected: t === chosen }, `${t.name} (v${t.version})`)));
  typeSelect.addEventListener('change', () => (location.hash = `#/new?type=${encodeURIComponent(typeSelect.value)}`));
  if (!chosen) {
    fill(main, el('h1', {}, 'New task'), el('p', {}, 'No task types are registered on this server.'));
    return;
  }
  const form = schemaForm(chosen.input_schema);
  const keyInput = el('input', { id: 'idempotency-key', name: 'idempotency-key', value: crypto.randomUUID(), class: 'mono' });
  const contextInput = el('input', { id: 'context-id', name: 'context-id', placeholder: 'optional' });
  const result = el('div');
  const submit = el('button', { type: 'submit', class: 'primary' }, 'Start task');
  const formNode = el(
    'form',
    {
      class: 'card',
      id: 'new-task-form',
      // Our own checks, next to each field, instead of the browser's bubbles; the server checks again.
      novalidate: true,
      onsubmit: async (ev) => {
        ev.preventDefault();
        clear(result);
        const { value, errors } = form.read();
        if (errors.length) return;
        submit.disabled = true;
        try {
          const r = await post('/v1/agent-tasks', { type: chosen.name, input: value, ...(contextInput.value.trim() ? { context_id: contextInput.value.trim() } : {}) }, { headers: { 'idempotency-key': keyInput.value.trim() } });
          location.hash = `#/tasks/${encodeURIComponent(r.body.id)}`;
        } catch (e) {
          form.showErrors(issuesOf(e));
          result.append(errorBox(e));
          submit.disabled = false;
        }
      },
    },
    el('div', { class: 'field' }, el('label', { for: 'task-type', class: 'field-label' }, 'Task type'), typeSelect),
    chosen.description ? el('p', { class: 'muted' }, chosen.description) : null,
    el('div', { class: 'steps-preview' }, el('span', { class: 'muted' }, 'Steps: '), chosen.steps.map((s, i) => el('span', { class: 'step-pill' }, `${i + 1}. ${s}`))),
    el('h2', {}, 'Input'),
    form.node,
    el(
      'details',
      { class: 'advanced' },
      el('summary', {}, 'Advanced'),
      el('div', { class: 'field' }, el('label', { for: 'idempotency-key', class: 'field-label' }, 'Idempotency key'), keyInput, el('div', { class: 'hint' }, 'Sending the same key and input again returns the same task instead of starting a second one.')),
      el('div', { class: 'field' }, el('label', { for: 'context-id', class: 'field-label' }, 'Context id'), contextInput),
    ),
    result,
    el('div', { class: 'actions' }, submit, el('a', { href: '#/tasks', class: 'button secondary' }, 'Cancel')),
  );
  fill(main, el('div', { class: 'page-head' }, el('h1', {}, 'New task')), formNode);
}

// ---- task page ---------------------------------------------------------------------------------------------------

const KIND_LABELS = {
  created: 'created',
  started: 'started',
  progress: 'progress',
  input_required: 'input required',
  input_received: 'input received',
  retry_scheduled: 'retry scheduled',
  cancel_requested: 'cancel requested',
  completed: 'completed',
  failed: 'failed',
  canceled: 'cancelled',
};

function eventSummary(e) {
  const parts = [];
  const step = e.completed_step ? `finished ${e.completed_step}` : e.step_name ? e.step_name : null;
  if (step) parts.push(step);
  if (e.progress && (typeof e.progress.current === 'number' || e.progress.message)) {
    parts.push(`${typeof e.progress.current === 'number' ? `${e.progress.current}${typeof e.progress.total === 'number' ? `/${e.progress.total}` : ''}` : ''}${e.progress.message ? ` ${e.progress.message}` : ''}`.trim());
  }
  if (e.question) parts.push(typeof e.question === 'string' ? e.question : JSON.stringify(e.question));
  if (e.kind === 'input_received' && e.key) parts.push(`answer to “${e.key}”${e.early ? ' (early)' : ''}`);
  if (e.reason) parts.push(`reason: ${e.reason}`);
  if (Array.isArray(e.effects_applied)) parts.push(`${e.effects_applied.length} effects applied${Array.isArray(e.effects_uncertain) && e.effects_uncertain.length ? `, ${e.effects_uncertain.length} uncertain` : ''}`);
  if (e.error) parts.push(`${e.error.code}: ${e.error.message}`);
  if (e.kind === 'retry_scheduled' && e.retry_at) parts.push(`retry ${relativeTime(e.retry_at)}`);
  return parts.filter(Boolean).join(' · ');
}

/** The timeline is kept per task for this browser tab, so a reload resumes the stream after the last event seen. */
const timelineKey = (id) => `belay.timeline.${id}`;
function loadTimeline(id) {
  try {
    const events = JSON.parse(sessionStorage.getItem(timelineKey(id)) || '[]');
    // Only a gap-free prefix 1..n is trusted; anything else is dropped and replayed from the server.
    return Array.isArray(events) && events.every((e, i) => e && e.seq === i + 1) ? events : [];
  } catch {
    return [];
  }
}
function saveTimeline(id, events) {
  try {
    sessionStorage.setItem(timelineKey(id), JSON.stringify(events.slice(0, 5000)));
  } catch {
    // storage full: the next load replays from the server
  }
}

function taskView(id) {
  let task = null;
  let types = null;
  let operatorAllowed = true;
  const events = loadTimeline(id);

  const header = el('div', { class: 'page-head' });
  const overview = el('section', { class: 'card', id: 'overview' });
  const question = el('section', { class: 'card question', id: 'question', hidden: true });
  const outcome = el('section', { class: 'card', id: 'outcome', hidden: true });
  const timelineList = el('ol', { class: 'timeline', id: 'timeline' });
  const streamState = el('span', { class: 'stream-state', id: 'stream-state' }, 'connecting');
  const timeline = el('section', { class: 'card', id: 'timeline-card' }, el('div', { class: 'card-head' }, el('h2', {}, 'Timeline'), streamState), timelineList);
  const operator = el('section', { class: 'card', id: 'operator' });
  const effects = el('section', { class: 'card', id: 'effects' });
  const input = el('section', { class: 'card', id: 'input-card' });
  const flash = el('div', { id: 'flash' });
  const connection = el('div', { id: 'connection-error' });

  fill(main, 
    el('a', { href: '#/tasks', class: 'back' }, '← Tasks'),
    header,
    connection,
    flash,
    el('div', { class: 'task-grid' }, el('div', { class: 'col-main' }, overview, question, outcome, timeline), el('div', { class: 'col-side' }, operator, effects, input)),
  );

  function renderEvent(e) {
    timelineList.append(
      el(
        'li',
        { class: `event kind-${e.kind}`, 'data-seq': e.seq, 'data-kind': e.kind },
        el('span', { class: 'seq mono' }, `#${e.seq}`),
        el('span', { class: `kind kind-${e.kind}` }, KIND_LABELS[e.kind] || e.kind),
        el('span', { class: 'summary' }, eventSummary(e)),
        el('time', { datetime: e.at, title: new Date(e.at).toLocaleString(), class: 'muted' }, new Date(e.at).toLocaleTimeString()),
      ),
    );
  }
  for (const e of events) renderEvent(e);

  function renderHeader() {
    const canCancel = task && !TERMINAL.has(task.status);
    fill(header, 
      el('div', {}, el('h1', { class: 'mono task-id' }, id), task ? el('div', { class: 'muted' }, `${task.type} v${task.type_version} · created ${relativeTime(task.created_at)} by ${task.created_by}`) : null),
      el(
        'div',
        { class: 'head-actions' },
        task ? badge(task.status) : null,
        canCancel
          ? el('button', { type: 'button', class: 'danger', id: 'cancel-task', disabled: Boolean(task.cancel_requested_at), onclick: cancelTask }, task.cancel_requested_at ? 'Cancelling…' : 'Cancel task')
          : null,
      ),
    );
  }

  function renderOverview() {
    const t = task;
    const stepNames = types ? (types.find((x) => x.name === t.type && x.version === t.type_version) || {}).steps || [] : [];
    const steps = stepNames.length
      ? el(
          'ol',
          { class: 'steps' },
          stepNames.map((name, i) => {
            const done = t.status === 'completed' || i < t.step.index;
            const current = !TERMINAL.has(t.status) && i === t.step.index;
            return el('li', { class: done ? 'done' : current ? 'current' : TERMINAL.has(t.status) && i === t.step.index ? 'stopped' : '' }, name);
          }),
        )
      : null;
    fill(overview, 
      el('div', { class: 'card-head' }, el('h2', {}, 'Progress'), t.step && t.step.name ? el('span', { class: 'muted', id: 'step-label' }, `step ${t.step.index + 1} of ${t.step.total}: ${t.step.name}`) : null),
      el('div', { id: 'task-progress' }, progressBar(t.progress)),
      steps,
      t.cancel_requested_at && !TERMINAL.has(t.status) ? el('p', { class: 'warn' }, `Cancellation requested ${relativeTime(t.cancel_requested_at)}; the worker stops before its next side effect.`) : null,
      el(
        'dl',
        { class: 'facts' },
        el('dt', {}, 'Status'),
        el('dd', { id: 'task-status' }, t.status, el('span', { class: 'muted' }, ` (${t.state})`)),
        el('dt', {}, 'Version'),
        el('dd', { id: 'task-version' }, String(t.version)),
        el('dt', {}, 'Updated'),
        el('dd', {}, time(t.updated_at)),
        t.terminal_at ? [el('dt', {}, 'Finished'), el('dd', {}, time(t.terminal_at))] : null,
        t.expires_at ? [el('dt', {}, 'Expires'), el('dd', {}, time(t.expires_at))] : null,
        t.context_id ? [el('dt', {}, 'Context'), el('dd', { class: 'mono' }, t.context_id)] : null,
      ),
    );
  }

  let questionVersion = null;
  function renderQuestion() {
    const q = task.input_request;
    if (!q) {
      question.hidden = true;
      questionVersion = null;
      clear(question);
      return;
    }
    // Keep what the user is typing unless the question itself changed.
    if (questionVersion === q.version && question.childElementCount) return;
    questionVersion = q.version;
    const form = schemaForm(q.schema);
    const feedback = el('div');
    const submit = el('button', { type: 'submit', class: 'primary', id: 'submit-answer' }, 'Submit answer');
    question.hidden = false;
    fill(question, 
      el('div', { class: 'card-head' }, el('h2', {}, 'Input required'), el('span', { class: 'muted' }, `deadline ${relativeTime(q.deadline_at)} (then ${q.on_deadline})`)),
      el('p', { class: 'question-text' }, typeof q.question === 'string' ? q.question : JSON.stringify(q.question)),
      q.context !== null && q.context !== undefined ? jsonBlock(q.context, { summary: 'Context', open: true }) : null,
      el(
        'form',
        {
          id: 'answer-form',
          novalidate: true,
          onsubmit: async (ev) => {
            ev.preventDefault();
            clear(feedback);
            const { value, errors } = form.read();
            if (errors.length) return;
            submit.disabled = true;
            try {
              await post(taskPath(id, '/input'), { answer: value, version: q.version, key: q.key });
              feedback.append(el('div', { class: 'ok' }, 'Answer sent.'));
              await refresh();
            } catch (e) {
              form.showErrors(issuesOf(e));
              feedback.append(errorBox(e));
              submit.disabled = false;
              if (e instanceof ApiError && e.status === 409) await refresh();
            }
          },
        },
        form.node,
        feedback,
        el('div', { class: 'actions' }, submit),
      ),
    );
  }

  async function renderOutcome() {
    if (!TERMINAL.has(task.status)) {
      outcome.hidden = true;
      return;
    }
    let r;
    try {
      r = (await get(taskPath(id, '/result'))).body;
    } catch (e) {
      outcome.hidden = false;
      fill(outcome, el('h2', {}, 'Result'), errorBox(e));
      return;
    }
    outcome.hidden = false;
    const download = (a) => {
      const blob = new Blob([typeof a.data === 'string' ? a.data : JSON.stringify(a.data, null, 2)], { type: a.media_type || 'application/json' });
      return el('a', { href: URL.createObjectURL(blob), download: `${a.name}.${/json/.test(a.media_type) ? 'json' : 'txt'}`, class: 'small' }, 'download');
    };
    fill(outcome, 
      el('div', { class: 'card-head' }, el('h2', {}, r.status === 'completed' ? 'Result' : 'Outcome'), badge(r.status)),
      r.error ? el('div', { class: r.status === 'cancelled' ? 'warn' : 'error' }, `${r.error.code}: ${r.error.message}`) : null,
      r.error && r.error.details ? jsonBlock(r.error.details, { summary: 'Details', open: false }) : null,
      r.result !== null && r.result !== undefined ? jsonBlock(r.result, { summary: 'Result', open: true }) : null,
      el('h3', {}, `Artifacts (${r.artifacts.length})`),
      r.artifacts.length
        ? el(
            'ul',
            { class: 'artifacts', id: 'artifacts' },
            r.artifacts.map((a) => el('li', { 'data-name': a.name }, el('div', { class: 'artifact-head' }, el('strong', {}, a.name), el('span', { class: 'muted' }, ` ${a.media_type} `), download(a)), jsonBlock(a.data, { summary: 'Content', open: true }))),
          )
        : el('p', { class: 'muted' }, 'None.'),
    );
  }

  function renderOperator() {
    const o = task.operator;
    if (!o) {
      fill(operator, el('h2', {}, 'Operator'), el('p', { class: 'muted' }, 'Lease, fence and checkpoint are shown to admin keys only.'));
      return;
    }
    fill(operator, 
      el('h2', {}, 'Operator'),
      el(
        'dl',
        { class: 'facts' },
        el('dt', {}, 'Lease owner'),
        el('dd', { class: 'mono', id: 'lease-owner' }, o.lease_owner || '—'),
        el('dt', {}, 'Lease until'),
        el('dd', {}, o.lease_until ? time(o.lease_until) : '—'),
        el('dt', {}, 'Fence'),
        el('dd', { id: 'fence' }, String(o.fence)),
        el('dt', {}, 'Version'),
        el('dd', { id: 'op-version' }, String(task.version)),
        el('dt', {}, 'Attempts'),
        el('dd', {}, String(o.attempts)),
        el('dt', {}, 'Wake at'),
        el('dd', {}, o.wake_at ? time(o.wake_at) : '—'),
        el('dt', {}, 'Next seq'),
        el('dd', {}, String(o.next_seq)),
      ),
      jsonBlock(o.checkpoint, { summary: 'Checkpoint', open: false }),
    );
    operator.querySelector('pre').id = 'checkpoint';
  }

  async function renderEffects() {
    let list;
    try {
      list = (await get(taskPath(id, '/effects'))).body.effects;
    } catch (e) {
      fill(effects, el('h2', {}, 'Side effects'), errorBox(e));
      return;
    }
    const applied = list.filter((x) => x.status === 'applied').length;
    fill(effects, 
      el('div', { class: 'card-head' }, el('h2', {}, 'Side effects'), el('span', { class: 'muted', id: 'effects-count' }, `${applied} applied${list.length > applied ? `, ${list.length - applied} uncertain` : ''}`)),
      list.length
        ? el(
            'div',
            { class: 'scroll' },
            el(
            'table',
            { class: 'effects', id: 'effects-table' },
            el('thead', {}, el('tr', {}, el('th', {}, 'Key'), el('th', {}, 'Status'), el('th', {}, 'Applied'))),
            el(
              'tbody',
              {},
              list.map((x) => el('tr', { 'data-status': x.status, title: JSON.stringify(x.result) }, el('td', { class: 'mono' }, x.key), el('td', {}, el('span', { class: `badge effect-${x.status}` }, x.status)), el('td', {}, x.applied_at ? time(x.applied_at) : '—'))),
            ),
            ),
          )
        : el('p', { class: 'muted' }, 'No side effects yet. Each one is recorded once in the run-once ledger.'),
    );
  }

  function renderInput() {
    fill(input, el('h2', {}, 'Input'), task.input !== undefined ? jsonBlock(task.input) : el('p', { class: 'muted' }, '—'));
  }

  async function fetchTask() {
    if (operatorAllowed) {
      try {
        return (await get(taskPath(id, '?view=operator'))).body;
      } catch (e) {
        if (!(e instanceof ApiError && e.status === 403)) throw e;
        operatorAllowed = false;
      }
    }
    return (await get(taskPath(id))).body;
  }

  let refreshing = null;
  let again = false;
  async function refresh() {
    // One refresh at a time; events that arrive meanwhile ask for one more.
    if (refreshing) {
      again = true;
      return refreshing;
    }
    refreshing = (async () => {
      do {
        again = false;
        try {
          const [t, ty] = await Promise.all([fetchTask(), types ? Promise.resolve(types) : taskTypes().catch(() => [])]);
          task = t;
          types = ty;
          renderHeader();
          renderOverview();
          renderQuestion();
          renderOperator();
          renderInput();
          await Promise.all([renderEffects(), renderOutcome()]);
          main.dataset.taskStatus = task.status;
          main.dataset.taskVersion = String(task.version);
          clear(connection);
          if (TERMINAL.has(task.status)) clear(flash);
        } catch (e) {
          if (e instanceof ApiError && e.status === 401) return;
          fill(connection, errorBox(e));
          if (e instanceof ApiError && (e.status === 404 || e.status === 410)) {
            sessionStorage.removeItem(timelineKey(id));
            stop();
            return;
          }
        }
      } while (again);
    })();
    try {
      await refreshing;
    } finally {
      refreshing = null;
    }
  }

  async function cancelTask() {
    if (!confirm(`Cancel task ${id}? Side effects already applied stay applied and are listed.`)) return;
    clear(flash);
    try {
      const r = await post(taskPath(id, '/cancellation'), {});
      flash.append(el('div', { class: r.body.cancellation === 'requested' ? 'warn' : 'ok' }, r.body.cancellation === 'requested' ? 'Cancellation requested: the worker stops at its next check.' : `Cancellation: ${r.body.cancellation.replace('_', ' ')}.`));
    } catch (e) {
      flash.append(errorBox(e));
    }
    await refresh();
  }

  let pending = null;
  const scheduleRefresh = () => {
    if (pending) return;
    pending = setTimeout(() => {
      pending = null;
      void refresh();
    }, 120);
  };

  const stateLabels = { connecting: 'connecting…', live: 'live', reconnecting: 'reconnecting…', ended: 'complete', error: 'stream error' };
  main.dataset.lastEventId = '';
  const stop = followEvents(id, {
    after: events.length ? events[events.length - 1].seq : 0,
    onRequest: ({ lastEventId }) => {
      main.dataset.lastEventId = String(lastEventId);
      main.dataset.streamRequests = String(Number(main.dataset.streamRequests || 0) + 1);
    },
    onEvent: (e) => {
      events.push(e);
      saveTimeline(id, events);
      renderEvent(e);
      main.dataset.lastSeq = String(e.seq);
      scheduleRefresh();
    },
    onStatus: (s, detail) => {
      streamState.textContent = s === 'error' && detail ? `stream error: ${detail.message}` : stateLabels[s] || s;
      streamState.className = `stream-state state-${s}`;
      streamState.dataset.state = s;
      if (s === 'ended') scheduleRefresh();
    },
  });
  onLeave(() => {
    stop();
    clearTimeout(pending);
  });
  // A safety net beside the stream: times, leases and deadlines move without events.
  const timer = setInterval(() => {
    if (document.visibilityState === 'visible' && task && !TERMINAL.has(task.status)) void refresh();
  }, 5000);
  onLeave(() => clearInterval(timer));
  void refresh();
}

// ---- router ------------------------------------------------------------------------------------------------------

function route() {
  for (const fn of cleanups.splice(0)) fn();
  takeKeyFromHash();
  renderWho();
  delete main.dataset.taskStatus;
  delete main.dataset.lastSeq;
  delete main.dataset.streamRequests;
  if (!getKey()) return keyView();
  const hash = location.hash.replace(/^#/, '') || '/tasks';
  const [path, query] = hash.split('?');
  const params = new URLSearchParams(query || '');
  for (const a of document.querySelectorAll('[data-nav]')) a.classList.toggle('active', path.startsWith(`/${a.dataset.nav}`));
  const m = /^\/tasks\/(.+)$/.exec(path);
  if (m) return taskView(decodeURIComponent(m[1]));
  if (path === '/new') return void newTaskView(params);
  return listView(params);
}

window.addEventListener('hashchange', route);
route();
