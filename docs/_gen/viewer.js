// The trace viewer's script, inlined into viewer.html by docs/_gen/viewer.py (no external scripts).
const DATA = JSON.parse(document.getElementById('tp-data').textContent);
let trace = null, step = 0;
const $ = (id) => document.getElementById(id);
function params(){ const p = new URLSearchParams(location.hash.slice(1)); return [p.get('trace'), parseInt(p.get('step')||'0')]; }
function load(name, at){
  trace = DATA.traces[name] || DATA.traces[Object.keys(DATA.traces)[0]];
  $('pick').value = trace.name; $('title').textContent = trace.title + ' — configuration ' + trace.config;
  const used = new Set(), first = {};
  trace.steps.forEach((s, i) => { s.taken.forEach(t => { if (!(t[0] in first)) first[t[0]] = i; });
    Object.entries(s.current).forEach(([m, v]) => { if (v.length) used.add(m); }); });
  const panels = Array.from(document.querySelectorAll('.machine'));
  panels.sort((a, b) => (first[a.dataset.machine] ?? 99) - (first[b.dataset.machine] ?? 99));
  panels.forEach(div => { div.hidden = !used.has(div.dataset.machine); $('machines').appendChild(div); });
  $('list').innerHTML = '';
  trace.steps.forEach((s, i) => { const li = document.createElement('li'); li.value = i; li.textContent = s.action;
    li.onclick = () => show(i); $('list').appendChild(li); });
  show(Math.min(Math.max(at || 0, 0), trace.steps.length - 1));
}
function show(i){
  step = i; const s = trace.steps[i];
  $('counter').textContent = 'step ' + i + ' / ' + (trace.steps.length - 1);
  document.body.dataset.step = i; document.body.dataset.last = trace.steps.length - 1;
  $('action').textContent = s.action; $('action').className = s.crash ? 'crash' : '';
  document.querySelectorAll('#list li').forEach((li, k) => li.className = k === i ? 'now' : '');
  document.querySelectorAll('.tp-current,.tp-taken').forEach(e => e.classList.remove('tp-current', 'tp-taken'));
  document.querySelectorAll('.machine').forEach(div => {
    const m = div.dataset.machine, current = s.current[m] || [];
    div.classList.toggle('tp-active', i > 0 && s.taken.some(t => t[0] === m));
    div.dataset.current = current.join(' ');
    current.forEach(st => { const g = div.querySelector('[id="state:' + st + '"]'); if (g) g.classList.add('tp-current'); });
    s.taken.filter(t => t[0] === m && t[1]).forEach(t => div.querySelectorAll('[id^="edge:' + t[1] + ':"][id$=":' + t[2] + '"]')
      .forEach(e => e.classList.add('tp-taken')));
  });
  $('changes').innerHTML = '';
  s.changes.forEach(c => Object.entries(c.fields).forEach(([f, pair]) => { const d = document.createElement('div');
    d.className = c.created ? 'new' : ''; const name = c.kind + (c.key ? '/' + c.key : '');
    d.textContent = (c.created ? '+ ' + name + '.' + f + ' = ' + JSON.stringify(pair[1])
                                : name + '.' + f + ': ' + JSON.stringify(pair[0]) + ' → ' + JSON.stringify(pair[1]));
    $('changes').appendChild(d); }));
  if (!s.changes.length) $('changes').textContent = '(nothing changed)';
  if (i === 0) $('changes').textContent = '(the initial state: ' + s.changes.length + ' records; see the whole snapshot)';
  $('snapshot').textContent = JSON.stringify(s.snapshot, null, 1);
  history.replaceState(null, '', '#trace=' + trace.name + '&step=' + i);
}
$('first').onclick = () => show(0);
$('prev').onclick = () => show(Math.max(step - 1, 0));
$('next').onclick = () => show(Math.min(step + 1, trace.steps.length - 1));
$('last').onclick = () => show(trace.steps.length - 1);
$('pick').onchange = () => load($('pick').value, 0);
document.addEventListener('keydown', e => { if (e.key === 'ArrowRight') $('next').click(); if (e.key === 'ArrowLeft') $('prev').click(); });
window.addEventListener('hashchange', () => { const [n, k] = params(); if (!trace || n !== trace.name || k !== step) load(n, k); });
const [n0, k0] = params(); load(n0, k0);
