// yoi dashboard: live updates and keys over pages that work without it (docs/dashboard.md).
(() => {
  'use strict';
  const $ = (s, r = document) => r.querySelector(s), $$ = (s, r = document) => [...r.querySelectorAll(s)];
  const body = document.body, pageKind = body.dataset.page, ticket = body.dataset.ticket;
  const live = $('#live'), say = $('#announce'), pauseBtn = $('#pause');
  const KINDS = ['ticket_created', 'ticket_ready', 'ticket_queued', 'ticket_returned_to_planning',
    'ticket_state_changed', 'relation_changed', 'ticket_edited', 'ticket_closed', 'ticket_merged',
    'ticket_retried', 'ticket_attention', 'ticket_commented', 'ticket_event', 'message'];
  let last = Number(body.dataset.seq || 0), es = null, paused = false, retry = 0, hiddenAt = 0;
  const touched = new Set(); let flushTimer = 0, news = [], sayTimer = 0;
  $$('.js-only').forEach(e => { e.hidden = false; });
  const show = (state, text) => { if (live) { live.dataset.state = state; live.textContent = text; } };

  function connect() {
    if (es) es.close();
    es = null;
    if (paused) return;
    let url = '/live/events?after=' + last;
    if (ticket) url += '&ticket=' + encodeURIComponent(ticket);
    es = new EventSource(url);
    es.onopen = () => { retry = 0; show('live', 'live'); };
    es.onerror = () => {
      show('reconnecting', 'reconnecting…');
      if (es && es.readyState === EventSource.CLOSED) {
        clearTimeout(retry);
        retry = setTimeout(connect, 1000);
      }
    };
    KINDS.forEach(k => es.addEventListener(k, onEvent));
  }

  function onEvent(m) {
    let e; try { e = JSON.parse(m.data); } catch { return; }
    if (!(e.seq > last)) return; // seen already
    last = e.seq;
    touched.add(e.ticket);
    news.push(e.ticket.slice(-6) + ' ' + e.kind.replace(/^ticket_/, '').replace(/_/g, ' '));
    clearTimeout(flushTimer);
    flushTimer = setTimeout(flush, 50);
    if (!sayTimer) sayTimer = setTimeout(announce, 2000);
  }

  function announce() {
    sayTimer = 0;
    if (!news.length || !say) return;
    say.textContent = news[0] + (news.length > 1 ? '; ' + (news.length - 1) + ' more updates' : '');
    news = [];
  }

  const fetchHtml = async url => {
    const r = await fetch(url, { credentials: 'same-origin', headers: { Accept: 'text/html' } });
    if (!r.ok) throw new Error(r.status);
    const t = document.createElement('template');
    t.innerHTML = await r.text();
    return t.content;
  };

  // Swap keeping checkbox state and focus.
  function swap(old, neu) {
    const a = document.activeElement, had = old.contains(a) && a !== body;
    $$('input[type=checkbox]', old).forEach(c => { const n = $(`input[value="${c.value}"]`, neu); if (n) n.checked = c.checked; });
    old.replaceWith(neu);
    if (had) { const same = a.id ? neu.querySelector('#' + CSS.escape(a.id)) : $(a.className ? '.' + a.classList[0] : 'a', neu); if (same) same.focus({ preventScroll: true }); }
  }

  async function flush() {
    const ids = [...touched]; touched.clear();
    try {
      if (pageKind === 'board') await board(ids);
      else if (ticket) await ticketPage();
      else if (pageKind === 'queue' || pageKind === 'tickets' || pageKind === 'pods' || pageKind === 'skills') await wholeMain();
    } catch (err) { ids.forEach(i => touched.add(i)); flushTimer = setTimeout(flush, 1000); }
  }

  async function board(ids) {
    const lanes = $('.lanes'); if (!lanes || !ids.length) return;
    const f = lanes.dataset.filters;
    const frag = await fetchHtml('/fragments/cards?ids=' + ids.join(',') + (f ? '&' + f : ''));
    const got = new Set();
    $$('li.card', frag).forEach(card => {
      const id = card.id.slice(2);
      got.add(id);
      const old = document.getElementById(card.id), ol = $(`ol.cards[data-lane="${card.dataset.state}"]`);
      if (old && old.parentElement === ol) { swap(old, card); return; }
      if (!ol) { if (old) old.remove(); return; }
      const desc = card.dataset.state === 'done', more = !!$('a.more', ol.parentElement);
      const after = $$('li.card', ol).find(c => desc ? c.id < card.id : c.id > card.id);
      if (!after && more) { if (old) old.remove(); return; } // beyond this page of the lane
      const focused = old && old.contains(document.activeElement);
      if (old) old.remove();
      ol.insertBefore(card, after || null);
      if (focused) $('a', card).focus({ preventScroll: true });
    });
    ids.forEach(id => { if (!got.has(id)) { const o = document.getElementById('t-' + id); if (o && !o.contains(document.activeElement)) o.remove(); } });
    const counts = await fetchHtml('/fragments/counts');
    $$('[data-count]', counts).forEach(c => $$(`[data-count="${c.dataset.count}"]`).forEach(n => { n.textContent = c.textContent; }));
    ['#capacity', '#router-line'].forEach(s => { const n = $(s, counts), o = $(s); if (n && o) o.textContent = n.textContent; });
  }

  async function ticketPage() {
    const frag = await fetchHtml('/fragments/ticket/' + encodeURIComponent(ticket) + location.search);
    [...frag.children].forEach(n => { const o = n.id && document.getElementById(n.id); if (o && !o.contains(document.activeElement)) swap(o, n); });
  }

  async function wholeMain() {
    const doc = await fetchHtml(location.pathname + location.search), m = $('main', doc) || $('#main', doc), o = $('#main');
    if (m && o && !o.contains(document.activeElement)) swap(o, m);
  }

  if (pauseBtn) pauseBtn.addEventListener('click', () => {
    paused = !paused;
    pauseBtn.setAttribute('aria-pressed', String(paused));
    pauseBtn.textContent = paused ? 'Resume updates' : 'Pause updates';
    if (paused) { if (es) es.close(); es = null; show('paused', 'paused'); } else connect();
  });
  document.addEventListener('visibilitychange', () => {
    if (document.hidden) { hiddenAt = Date.now(); setTimeout(() => { if (document.hidden && Date.now() - hiddenAt >= 60000 && es) { es.close(); es = null; } }, 60000); }
    else if (!es && !paused) connect();
  });

  // ---- keys ----
  const dlg = $('#keys-dialog'), off = $('#keys-off');
  const keysOff = () => localStorage.getItem('yoi-keys-off') === '1';
  if (off) { off.checked = keysOff(); off.addEventListener('change', () => localStorage.setItem('yoi-keys-off', off.checked ? '1' : '0')); }
  const keysBtn = $('#keys'); if (keysBtn && dlg) keysBtn.addEventListener('click', () => dlg.showModal());
  const links = () => $$('.card > a, table.tickets td a');
  let g = 0;
  document.addEventListener('keydown', ev => {
    if (ev.ctrlKey || ev.metaKey || ev.altKey || keysOff()) return;
    const t = ev.target;
    if (t.closest && t.closest('input, textarea, select, dialog, [contenteditable]')) return;
    const k = ev.key, all = links(), i = all.indexOf(t.closest ? t.closest('a') : null);
    const go = n => { if (n) { n.focus(); ev.preventDefault(); } };
    if (g) { g = 0; const to = { b: '/', q: '/queue', t: '/tickets' }[k]; if (to) { location.href = to; ev.preventDefault(); } return; }
    if (k === 'j' || k === 'ArrowDown') go(all[i + 1] || (i < 0 ? all[0] : null));
    else if (k === 'k' || k === 'ArrowUp') go(all[i - 1]);
    else if (k === 'h' || k === 'l' || k === 'ArrowLeft' || k === 'ArrowRight') {
      const lanes = $$('section.lane'), lane = t.closest && t.closest('section.lane');
      const n = lanes[lanes.indexOf(lane) + (k === 'h' || k === 'ArrowLeft' ? -1 : 1)];
      if (lane && n) go($('.card > a', n));
    } else if (k === 'x') { const c = t.closest && $('input[type=checkbox]', t.closest('li, tr') || t); if (c) { c.checked = !c.checked; ev.preventDefault(); } }
    else if (k === '/') go($('#filter'));
    else if (k === '?' && dlg) { dlg.showModal(); ev.preventDefault(); }
    else if (k === 'g') g = 1;
  });

  // A running attempt's log sends no events.
  if (ticket) setInterval(() => { if (!paused && $('#attempts[data-running]')) ticketPage().catch(() => {}); }, 2000);
  connect();
})();
