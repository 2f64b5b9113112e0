'use strict';
/*
 * The kdapack dashboard: the job list, live charts of a job's step events, starting, cancelling and resuming jobs,
 * streamed completions and, where the server has one, the cluster's members. Plain JavaScript; every API call carries
 * the token typed into the page (kept in sessionStorage, never in a URL); every value from the server reaches the page
 * as text (textContent), never as markup.
 */
(function () {
  const TOKEN_KEY = 'kdapack.token';
  const JOBS_EVERY_MS = 2000;
  const CLUSTER_EVERY_MS = 10000;
  const REDRAW_EVERY_MS = 100;
  const RECONNECT_FIRST_MS = 500;
  const RECONNECT_MAX_MS = 10000;
  const $ = (id) => document.getElementById(id);

  let token = sessionStorage.getItem(TOKEN_KEY);
  let jobsTimer = null;
  let clusterTimer = null;
  let resumable = [];
  let follow = null;      // the selected job's stream and series
  let completion = null;  // the AbortController of the completion in progress

  class Unauthorized extends Error {}

  /** fetch() with the bearer token; a 401 forgets the token and shows the prompt again. */
  async function api(method, path, options) {
    const opts = options || {};
    const headers = Object.assign({'Authorization': 'Bearer ' + token}, opts.headers || {});
    if (opts.contentType) {
      headers['Content-Type'] = opts.contentType;
    }
    const response = await fetch(path, {method: method, headers: headers, body: opts.body, signal: opts.signal,
      cache: 'no-store', credentials: 'omit', redirect: 'error'});
    if (response.status === 401) {
      signOut('the server refused the token');
      throw new Unauthorized('401');
    }
    return response;
  }

  /** The {error, field} body of a refused request, or a stand-in when the body is not JSON. */
  async function errorOf(response) {
    try {
      const body = await response.json();
      return {error: String(body.error), field: body.field == null ? null : String(body.field)};
    } catch (e) {
      return {error: 'HTTP ' + response.status, field: null};
    }
  }

  function text(parent, tag, value, className) {
    const element = document.createElement(tag);
    element.textContent = value == null ? '' : String(value);
    if (className) {
      element.className = className;
    }
    parent.appendChild(element);
    return element;
  }

  function number(value, digits) {
    return typeof value === 'number' && isFinite(value) ? value.toFixed(digits) : '';
  }

  // ---- token -------------------------------------------------------------------------------------------------

  function showLogin(message) {
    $('app').hidden = true;
    $('sign-out').hidden = true;
    $('login').hidden = false;
    $('login-error').textContent = message || '';
    $('token-input').value = '';
    $('token-input').focus();
  }

  async function signIn(candidate) {
    token = candidate;
    try {
      const response = await api('GET', '/v1/jobs');
      if (!response.ok) {
        throw new Error((await errorOf(response)).error);
      }
    } catch (e) {
      if (!(e instanceof Unauthorized)) {
        showLogin('cannot reach the server: ' + e.message);
      }
      return;
    }
    sessionStorage.setItem(TOKEN_KEY, token);
    $('login').hidden = true;
    $('app').hidden = false;
    $('sign-out').hidden = false;
    refreshJobs();
    refreshModels();
    refreshCluster();
    jobsTimer = setInterval(refreshJobs, JOBS_EVERY_MS);
    clusterTimer = setInterval(refreshCluster, CLUSTER_EVERY_MS);
  }

  function signOut(message) {
    sessionStorage.removeItem(TOKEN_KEY);
    token = null;
    clearInterval(jobsTimer);
    clearInterval(clusterTimer);
    unfollow();
    $('jobs-body').replaceChildren();
    showLogin(message);
  }

  // ---- job list ----------------------------------------------------------------------------------------------

  async function refreshJobs() {
    if (token == null) {
      return;
    }
    try {
      const response = await api('GET', '/v1/jobs');
      if (!response.ok) {
        $('jobs-error').textContent = (await errorOf(response)).error;
        return;
      }
      const body = await response.json();
      resumable = body.resumable || [];
      renderJobs(body.jobs || [], resumable);
      $('jobs-error').textContent = '';
      $('server-state').textContent = body.jobs.length + ' jobs';
    } catch (e) {
      if (!(e instanceof Unauthorized)) {
        $('jobs-error').textContent = 'cannot list jobs: ' + e.message;
      }
    }
  }

  function renderJobs(jobs, onDisk) {
    const rows = [];
    const known = new Set();
    for (const job of jobs) {
      known.add(job.id);
      rows.push(job);
    }
    for (const id of onDisk) {
      if (!known.has(id)) {
        rows.push({id: id, state: 'on disk', step: null, total_steps: null});
      }
    }
    const body = $('jobs-body');
    body.replaceChildren();
    for (const job of rows) {
      const row = document.createElement('tr');
      row.dataset.job = job.id;
      if (follow && follow.jobId === job.id) {
        row.className = 'selected';
      }
      const idCell = document.createElement('td');
      const link = text(idCell, 'button', job.id, 'link');
      link.type = 'button';
      link.addEventListener('click', () => select(job.id));
      row.appendChild(idCell);
      text(row, 'td', job.state, 'state');
      text(row, 'td', job.step == null ? '' : job.step + ' / ' + job.total_steps, 'step');
      text(row, 'td', number(job.last_loss, 4), 'loss');
      text(row, 'td', number(job.last_tokens_per_s, 0), 'speed');
      text(row, 'td', job.node || job.member || job.address || '', 'node');
      const actions = document.createElement('td');
      if (isActive(job.state)) {
        const cancel = text(actions, 'button', 'Cancel', 'cancel');
        cancel.type = 'button';
        cancel.addEventListener('click', () => cancelJob(job.id));
      }
      if (onDisk.indexOf(job.id) >= 0) {
        const resume = text(actions, 'button', 'Resume', 'resume');
        resume.type = 'button';
        resume.addEventListener('click', () => resumeJob(job.id));
      }
      row.appendChild(actions);
      body.appendChild(row);
      if (follow && follow.jobId === job.id) {
        showJobState(job);
      }
    }
    $('jobs-empty').hidden = rows.length > 0;
    // "runs on" only where the server says where jobs run (a cluster).
    $('jobs').classList.toggle('no-node', !rows.some((job) => job.node || job.member || job.address));
  }

  function isActive(state) {
    return state === 'queued' || state === 'starting' || state === 'running';
  }

  function showJobState(job) {
    $('job-state').textContent = job.state;
    $('job-cancel').disabled = !isActive(job.state);
    $('job-resume').disabled = resumable.indexOf(job.id) < 0;
    $('job-error').textContent = job.error || '';
  }

  async function cancelJob(id) {
    const response = await api('DELETE', '/v1/jobs/' + encodeURIComponent(id));
    if (!response.ok) {
      $('jobs-error').textContent = (await errorOf(response)).error;
    }
    refreshJobs();
  }

  async function resumeJob(id) {
    const response = await api('POST', '/v1/jobs/' + encodeURIComponent(id) + '/resume');
    if (!response.ok) {
      $('jobs-error').textContent = (await errorOf(response)).error;
      return;
    }
    await refreshJobs();
    if (follow && follow.jobId === id && follow.ended) {
      // The new run's stream continues after the last step drawn.
      follow.ended = false;
      connect(follow);
    } else {
      select(id);
    }
  }

  // ---- a job's charts, fed by its event stream ---------------------------------------------------------------

  function select(id) {
    unfollow();
    $('job-panel').hidden = false;
    $('job-title').textContent = id;
    $('job-state').textContent = '';
    $('job-error').textContent = '';
    follow = newFollow(id);
    connect(follow);
    refreshJobs();
  }

  function unfollow() {
    if (follow) {
      follow.wanted = false;
      if (follow.controller) {
        follow.controller.abort();
      }
      follow.charts.forEach((chart) => chart.destroy());
      follow = null;
    }
  }

  function newFollow(id) {
    const series = {step: [], loss: [], mtp: [], val: [], valMtp: [], lr: [], grad: [], speed: []};
    const charts = [
      chart('chart-loss', 'loss', [series.step, series.loss, series.mtp, series.val, series.valMtp],
        [['loss', '#1f77b4'], ['mtp_loss', '#d62728'], ['val_loss', '#2ca02c', true], ['val_mtp_loss', '#9467bd', true]]),
      chart('chart-lr', 'lr', [series.step, series.lr], [['lr', '#8c564b']]),
      chart('chart-grad', 'grad_norm', [series.step, series.grad], [['grad_norm', '#e377c2']]),
      chart('chart-speed', 'tokens_per_s', [series.step, series.speed], [['tokens_per_s', '#17becf']]),
    ];
    const f = {jobId: id, series: series, charts: charts, lastStep: 0, resent: 0, connections: 0, ended: false,
      wanted: true, controller: null, redraw: null};
    setCounters(f);
    return f;
  }

  function chart(elementId, title, data, lines) {
    const element = $(elementId);
    element.replaceChildren();
    const series = [{label: 'step'}];
    for (const [label, color, pointsOnly] of lines) {
      series.push(pointsOnly
        ? {label: label, stroke: color, width: 0, points: {show: true, size: 6, fill: color}}
        : {label: label, stroke: color, width: 1.5, points: {show: false}});
    }
    return new uPlot({
      title: title,
      width: Math.max(320, element.clientWidth || 480),
      height: 220,
      scales: {x: {time: false}},
      axes: [{label: 'step'}, {}],
      series: series,
    }, data, element);
  }

  function setCounters(f) {
    const charts = $('charts');
    charts.dataset.points = String(f.charts[0].data[0].length);
    charts.dataset.resent = String(f.resent);
    charts.dataset.connections = String(f.connections);
  }

  function scheduleRedraw(f) {
    if (f.redraw == null) {
      f.redraw = setTimeout(() => {
        f.redraw = null;
        if (follow !== f) {
          return;
        }
        const s = f.series;
        f.charts[0].setData([s.step, s.loss, s.mtp, s.val, s.valMtp]);
        f.charts[1].setData([s.step, s.lr]);
        f.charts[2].setData([s.step, s.grad]);
        f.charts[3].setData([s.step, s.speed]);
        setCounters(f);
      }, REDRAW_EVERY_MS);
    }
  }

  function onStreamEvent(f, event) {
    if (event.type === 'step') {
      const step = JSON.parse(event.data);
      if (step.step <= f.lastStep) {
        f.resent++; // the server sent a step again: counted, never drawn twice
        setCounters(f);
        return;
      }
      const s = f.series;
      s.step.push(step.step);
      s.loss.push(step.loss);
      s.mtp.push(step.mtp_loss == null ? null : step.mtp_loss);
      s.val.push(step.val_loss == null ? null : step.val_loss);
      s.valMtp.push(step.val_mtp_loss == null ? null : step.val_mtp_loss);
      s.lr.push(step.lr);
      s.grad.push(step.grad_norm);
      s.speed.push(step.tokens_per_s);
      f.lastStep = step.step;
      scheduleRedraw(f);
    } else if (event.type === 'end') {
      f.ended = true;
      const end = JSON.parse(event.data);
      $('stream-state').textContent = 'ended: ' + end.state;
      refreshJobs();
      refreshModels(); // the run's last checkpoint may be a new model
    }
  }

  /**
   * Follows the job's event stream: the history first, then live steps. When the connection drops before the end
   * event, it reconnects (backing off) with Last-Event-ID set to the last step drawn, so the server resumes after it.
   */
  async function connect(f) {
    let wait = RECONNECT_FIRST_MS;
    while (f.wanted && !f.ended) {
      f.controller = new AbortController();
      const headers = {'Accept': 'text/event-stream'};
      if (f.lastStep > 0) {
        headers['Last-Event-ID'] = String(f.lastStep);
      }
      try {
        const response = await api('GET', '/v1/jobs/' + encodeURIComponent(f.jobId) + '/events',
          {headers: headers, signal: f.controller.signal});
        if (!response.ok) {
          $('job-error').textContent = (await errorOf(response)).error;
          if (response.status === 404) {
            return;
          }
        } else {
          f.connections++;
          setCounters(f);
          $('stream-state').textContent = 'live';
          wait = RECONNECT_FIRST_MS;
          await KdapackSse.read(response, (event) => onStreamEvent(f, event));
        }
      } catch (e) {
        if (e instanceof Unauthorized) {
          return;
        }
      }
      if (!f.wanted || f.ended) {
        return;
      }
      $('stream-state').textContent = 'reconnecting';
      await new Promise((resolve) => setTimeout(resolve, wait));
      wait = Math.min(2 * wait, RECONNECT_MAX_MS);
    }
  }

  // ---- starting a job ----------------------------------------------------------------------------------------

  async function startJob() {
    const doc = $('config-doc').value;
    const json = doc.trim() === '' || doc.trim().charAt(0) === '{';
    clearConfigError();
    let response;
    try {
      response = await api('POST', '/v1/jobs', {body: doc.trim() === '' ? '{}' : doc,
        contentType: json ? 'application/json' : 'application/yaml'});
    } catch (e) {
      if (!(e instanceof Unauthorized)) {
        showConfigError({error: 'cannot reach the server: ' + e.message, field: null});
      }
      return;
    }
    if (!response.ok) {
      showConfigError(await errorOf(response));
      return;
    }
    const job = await response.json();
    select(job.id);
  }

  function clearConfigError() {
    $('config-error').hidden = true;
    $('config-doc').removeAttribute('aria-invalid');
    $('config-error').removeAttribute('data-field');
  }

  /** Shows the server's message beside the document, names the key and selects the line that sets it. */
  function showConfigError(error) {
    const box = $('config-error');
    box.hidden = false;
    box.dataset.field = error.field || '';
    $('config-error-field').textContent = error.field || '(the document)';
    $('config-error-message').textContent = error.error;
    $('config-doc').setAttribute('aria-invalid', 'true');
    const at = error.field ? lineOf($('config-doc').value, error.field) : null;
    $('config-error-line').textContent = at ? 'line ' + at.line : '';
    if (at) {
      $('config-doc').setSelectionRange(at.start, at.end);
    }
  }

  /**
   * The line of `doc` that sets the last key of a dotted field name (train.optimizer.lr → lr), if any: a YAML line
   * that starts with the key, else the key quoted anywhere (JSON on one line).
   */
  function lineOf(doc, field) {
    const key = field.split('.').pop().replace(/\[\d+\]$/, '').replace(/[^A-Za-z0-9_]/g, '');
    if (key === '') {
      return null;
    }
    const match = new RegExp('^\\s*(-\\s*)?"?' + key + '"?\\s*:', 'm').exec(doc)
      || new RegExp('"' + key + '"\\s*:').exec(doc);
    if (!match) {
      return null;
    }
    const end = doc.indexOf('\n', match.index);
    return {line: doc.slice(0, match.index).split('\n').length, start: match.index,
      end: end < 0 ? doc.length : end};
  }

  // ---- completions -------------------------------------------------------------------------------------------

  async function refreshModels() {
    try {
      const response = await api('GET', '/v1/models');
      const select = $('prompt-model');
      if (!response.ok) {
        $('prompt-error').textContent = (await errorOf(response)).error;
        return;
      }
      const body = await response.json();
      const chosen = select.value;
      select.replaceChildren();
      for (const model of body.data || []) {
        const step = model.live ? 'live, step ' + model.weights_step : 'step ' + model.checkpoint_step;
        const option = text(select, 'option', model.id + ' (' + step + ')');
        option.value = model.id;
      }
      if (chosen) {
        select.value = chosen;
      }
    } catch (e) {
      // the prompt box stays usable once a model appears; the job list shows connection errors
    }
  }

  async function complete() {
    const out = $('completion');
    out.textContent = '';
    $('prompt-error').textContent = '';
    completion = new AbortController();
    $('prompt-submit').disabled = true;
    $('prompt-stop').disabled = false;
    const request = {model: $('prompt-model').value, prompt: $('prompt-text').value,
      max_tokens: Number($('prompt-max-tokens').value), temperature: Number($('prompt-temperature').value),
      stream: true};
    try {
      const response = await api('POST', '/v1/completions', {body: JSON.stringify(request),
        contentType: 'application/json', signal: completion.signal});
      if (!response.ok) {
        const error = await errorOf(response);
        $('prompt-error').textContent = (error.field ? error.field + ': ' : '') + error.error;
        return;
      }
      await KdapackSse.read(response, (event) => {
        if (event.data === '[DONE]') {
          out.dataset.done = 'true';
          return;
        }
        const chunk = JSON.parse(event.data);
        if (chunk.error) {
          $('prompt-error').textContent = chunk.error;
          return;
        }
        for (const choice of chunk.choices || []) {
          out.textContent += choice.text;
        }
      });
    } catch (e) {
      if (!(e instanceof Unauthorized) && e.name !== 'AbortError') {
        $('prompt-error').textContent = 'completion failed: ' + e.message;
      }
    } finally {
      completion = null;
      $('prompt-submit').disabled = false;
      $('prompt-stop').disabled = true;
    }
  }

  // ---- cluster -----------------------------------------------------------------------------------------------

  /** GET /v1/cluster where the server has it (the panel stays hidden on 404, or on any other failure). */
  async function refreshCluster() {
    const panel = $('cluster-panel');
    let body;
    try {
      const response = await api('GET', '/v1/cluster');
      if (!response.ok) {
        panel.hidden = true;
        if (response.status === 404) {
          clearInterval(clusterTimer); // this server has no cluster
        }
        return;
      }
      body = await response.json();
    } catch (e) {
      panel.hidden = true;
      return;
    }
    panel.hidden = false;
    const members = Array.isArray(body.members) ? body.members : [];
    const columns = [];
    for (const member of members) {
      for (const key of Object.keys(member)) {
        if (columns.indexOf(key) < 0) {
          columns.push(key);
        }
      }
    }
    const table = $('cluster-members');
    const head = document.createElement('tr');
    columns.forEach((key) => text(head, 'th', key));
    table.tHead.replaceChildren(head);
    table.tBodies[0].replaceChildren();
    for (const member of members) {
      const row = document.createElement('tr');
      columns.forEach((key) => text(row, 'td', typeof member[key] === 'object' ? JSON.stringify(member[key])
        : member[key]));
      table.tBodies[0].appendChild(row);
    }
    const rest = Object.assign({}, body);
    delete rest.members;
    $('cluster-other').hidden = Object.keys(rest).length === 0;
    $('cluster-other').textContent = JSON.stringify(rest, null, 2);
  }

  // ---- wiring ------------------------------------------------------------------------------------------------

  /**
   * Test hooks (integration-tests DashboardBrowserTest): dropStream() aborts the selected job's event-stream
   * connection as a network failure would, and the page reconnects through the same path as after a real drop;
   * chartSteps() is the x series the charts hold.
   */
  window.kdapackDashboard = {
    dropStream: function () {
      if (follow && follow.controller) {
        follow.controller.abort();
        return true;
      }
      return false;
    },
    chartSteps: function () {
      return follow ? Array.from(follow.charts[0].data[0]) : [];
    },
  };

  document.addEventListener('DOMContentLoaded', () => {
    $('login-form').addEventListener('submit', (event) => {
      event.preventDefault();
      const candidate = $('token-input').value.trim();
      if (candidate !== '') {
        signIn(candidate);
      }
    });
    $('sign-out').addEventListener('click', () => signOut(''));
    $('config-submit').addEventListener('click', startJob);
    $('job-cancel').addEventListener('click', () => follow && cancelJob(follow.jobId));
    $('job-resume').addEventListener('click', () => follow && resumeJob(follow.jobId));
    $('prompt-submit').addEventListener('click', complete);
    $('prompt-model').addEventListener('focus', refreshModels);
    $('prompt-stop').addEventListener('click', () => completion && completion.abort());
    $('config-doc').value = '{}';
    if (token) {
      signIn(token);
    } else {
      showLogin('');
    }
  });
})();
