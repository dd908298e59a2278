// yoi dashboard, the New ticket page: the check and the preview follow typing, and the
// dependency field searches open tickets. Without it the page works by its buttons
// (docs/dashboard.md, "New ticket").
(() => {
  'use strict';
  const form = document.getElementById('ticket-form'), body = document.getElementById('new-body');
  const out = document.getElementById('brief-check');
  if (!form || !body || !out) return;
  const later = (f, ms) => { let t = 0; return () => { clearTimeout(t); t = setTimeout(f, ms); }; };
  // "Create and mark ready" is offered once a check shows every required section filled, as
  // the page without JavaScript offers it after "Preview and check"; the store still decides.
  const actions = form.querySelector('.actions'), create = document.getElementById('create');
  const offerReady = () => {
    if (!actions || !create) return; // an edit is saved, never marked ready from here
    let b = document.getElementById('create-ready');
    const ready = !!out.querySelector('#lint-ready');
    if (ready && !b) {
      b = document.createElement('button');
      Object.assign(b, { type: 'submit', name: 'intent', value: 'create_ready', id: 'create-ready' });
      b.textContent = 'Create and mark ready';
      actions.appendChild(b);
    } else if (!ready && b) b.remove();
  };
  let asked = 0;
  const check = () => {
    const n = ++asked, data = new URLSearchParams();
    data.set('csrf', form.elements.csrf.value);
    data.set('body', body.value);
    fetch('/tickets/new/preview', { method: 'POST', body: data, credentials: 'same-origin' })
      .then(r => (r.ok ? r.text() : null))
      .then(html => { if (html !== null && n === asked) { out.innerHTML = html; offerReady(); } })
      .catch(() => {});
  };
  body.addEventListener('input', later(check, 250));

  const deps = document.getElementById('new-deps'), found = document.getElementById('dep-results');
  if (!deps || !found) return;
  deps.removeAttribute('list');
  const words = () => deps.value.split(/[\s,]+/);
  let sought = 0;
  const search = () => {
    const n = ++sought, q = words().pop();
    if (q.length < 2) { found.innerHTML = ''; return; }
    fetch('/fragments/ticket-picks?q=' + encodeURIComponent(q), { credentials: 'same-origin' })
      .then(r => (r.ok ? r.text() : ''))
      .then(html => { if (n === sought) found.innerHTML = html; })
      .catch(() => {});
  };
  deps.addEventListener('input', later(search, 200));
  found.addEventListener('click', e => {
    const b = e.target.closest('button[data-id]');
    if (!b) return;
    e.preventDefault();
    const w = words();
    w[w.length - 1] = b.dataset.id;
    deps.value = w.filter(Boolean).join(' ') + ' ';
    found.innerHTML = '';
    deps.focus();
  });
})();
